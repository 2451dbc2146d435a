"""The kit's version and the IUT protocol version it speaks (imported by the package and
by ``kit.protocol``, so that reading them loads nothing else)."""

PROTOCOL_VERSION = 1

# Versioned with the protocol: the major number is the protocol version the kit speaks, the
# minor number counts changes that keep every earlier port working: additions to the port
# interface, and changes of what a scenario means that change a port's answers. The Python
# kit and the JS kit (tools/dsh-adapter/kit/version.mjs) carry the same number; each minor
# has its line in kit/CHANGELOG.md.
KIT_VERSION = f"{PROTOCOL_VERSION}.4"
