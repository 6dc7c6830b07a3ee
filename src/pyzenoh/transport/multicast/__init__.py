"""The Zenoh multicast transport (UDP group): sans-IO state in :mod:`.state`."""

from pyzenoh.transport.multicast.state import (
    Delivered,
    MulticastConfig,
    MulticastTransport,
    PeerEvicted,
    PeerJoined,
    PeerLeft,
)

__all__ = ["Delivered", "MulticastConfig", "MulticastTransport", "PeerEvicted", "PeerJoined", "PeerLeft"]
