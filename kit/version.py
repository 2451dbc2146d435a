"""The kit's version and the IUT protocol version it speaks (imported by the package and
by ``kit.protocol``, so that reading them loads nothing else)."""

PROTOCOL_VERSION = 1

# Versioned with the protocol: the major number is the protocol version the kit speaks, the
# minor number counts additions to the port interface that keep every earlier port working.
KIT_VERSION = f"{PROTOCOL_VERSION}.0"
