// The JS kit's version: the same number as the Python kit's (kit/version.py). The major
// number is the IUT protocol version the kit speaks; the minor counts changes that keep
// earlier bindings working, the scenario language's meaning included (kit/CHANGELOG.md of
// the dsh-conformance sources has a line for each).
export const KIT_VERSION = '1.4'
