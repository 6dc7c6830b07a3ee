"""What ``Session.info`` tells about the session's transports and links.

A pyzenoh session has one transport (to its router or peer) over one link, and does not
reconnect: ``transports()`` and ``links()`` list that one while it is open, and the event
listeners report it once (``history=True``) and its end (``SampleKind.DELETE``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from typing_extensions import override

from pyzenoh.codec.primitives import WhatAmI, ZenohId
from pyzenoh.session.types import Reliability, SampleKind

__all__ = ["Link", "LinkEvent", "Transport", "TransportEvent", "locator"]


def locator(protocol: str, address: object) -> str:
    """zenoh's locator text of a socket address: ``tcp/127.0.0.1:7447``, ``tcp/[::1]:7447``."""
    if isinstance(address, tuple) and len(address) >= 2:
        host, port = str(address[0]), address[1]
        if ":" in host:
            host = f"[{host}]"
        return f"{protocol}/{host}:{port}"
    return f"{protocol}/{address}"


@dataclass(frozen=True, slots=True)
class Transport:
    """The session's transport: the remote node's id and kind, QoS, multicast (a group's member)."""

    zid: ZenohId
    whatami: WhatAmI
    is_qos: bool
    is_multicast: bool = False
    is_shm: bool = False  # pyzenoh has no shared memory

    @override
    def __repr__(self) -> str:
        # zenoh's Debug format, as zenoh-python prints it
        return (
            f"Transport {{ zid: {self.zid}, whatami: {self.whatami!r}, is_qos: {_rust(self.is_qos)}, "
            f"is_multicast: {_rust(self.is_multicast)}, is_shm: {_rust(self.is_shm)} }}"
        )


@dataclass(frozen=True, slots=True)
class Link:
    """The session's link: locators of both ends, batch size (mtu), TCP or TLS."""

    zid: ZenohId
    src: str
    dst: str
    mtu: int
    group: str | None = None
    is_streamed: bool = True
    interfaces: list[str] = field(default_factory=list)
    auth_identifier: str | None = None
    priorities: tuple[int, int] | None = None
    reliability: Reliability | None = None

    @override
    def __hash__(self) -> int:
        return hash((self.zid, self.src, self.dst))

    @override
    def __repr__(self) -> str:
        # zenoh's Debug format, as zenoh-python prints it
        interfaces = ", ".join(f'"{i}"' for i in self.interfaces)
        prios = None if self.priorities is None else f"({self.priorities[0]}, {self.priorities[1]})"
        reliability = None if self.reliability is None else self.reliability.name.title().replace("_", "")
        return (
            f"Link {{ zid: {self.zid}, src: {self.src}, dst: {self.dst}, group: {_option(self.group)}, "
            f"mtu: {self.mtu}, is_streamed: {_rust(self.is_streamed)}, interfaces: [{interfaces}], "
            f"auth_identifier: {_option(self.auth_identifier)}, priorities: {_option(prios)}, "
            f"reliability: {_option(reliability)} }}"
        )


def _rust(flag: bool) -> str:
    return "true" if flag else "false"


def _option(value: str | None) -> str:
    """Rust's Debug of an Option: ``None`` or ``Some(value)``."""
    return "None" if value is None else f"Some({value})"


@dataclass(frozen=True, slots=True)
class TransportEvent:
    """A transport opened (``SampleKind.PUT``) or closed (``SampleKind.DELETE``)."""

    kind: SampleKind
    transport: Transport

    @override
    def __repr__(self) -> str:
        return f"TransportEvent {{ kind: {self.kind.name}, transport: {self.transport!r} }}"


@dataclass(frozen=True, slots=True)
class LinkEvent:
    """A link added (``SampleKind.PUT``) or removed (``SampleKind.DELETE``)."""

    kind: SampleKind
    link: Link

    @override
    def __repr__(self) -> str:
        return f"LinkEvent {{ kind: {self.kind.name}, link: {self.link!r} }}"
