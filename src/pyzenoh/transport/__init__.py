"""Zenoh unicast transport: the sans-IO :mod:`.link` state machine and its :mod:`.tcp` glue."""

from pyzenoh.transport.link import (
    Established,
    Event,
    Link,
    LinkClosed,
    LinkConfig,
    Received,
    Role,
    State,
)

__all__ = ["Established", "Event", "Link", "LinkClosed", "LinkConfig", "Received", "Role", "State"]
