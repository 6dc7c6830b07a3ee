"""What every interceptor item shares: the faces and flows it applies to, the message it
sees, and the decisions it takes (zenoh 1.10.2 ``net/routing/interceptor``). Sans-IO: no
clock, ``now`` is passed in."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from pyzenoh.errors import UsageError


class Flow(str, Enum):
    INGRESS = "ingress"
    EGRESS = "egress"


class Kind(str, Enum):
    """The message kinds an interceptor item lists in ``messages``."""

    PUT = "put"
    DELETE = "delete"
    QUERY = "query"
    REPLY = "reply"


#: zenohd's ``link_protocols`` values (InterceptorLink, kebab-case).
LINK_PROTOCOLS = frozenset({"tcp", "udp", "tls", "quic", "serial", "unixpipe", "unixsock-stream", "vsock", "ws"})


@dataclass(frozen=True, slots=True)
class FaceAttrs:
    """A transport as the interceptors see it: ``transport`` identifies it (downsampling
    state is per transport), ``interfaces`` are its link's network interface names."""

    transport: int
    link_protocol: str = "tcp"
    interfaces: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Message:
    """The fields of a message that the interceptors read."""

    kind: Kind
    key: str
    payload_size: int = 0
    attachment_size: int = 0


@dataclass(frozen=True, slots=True)
class Subjects:
    """``interfaces``, ``link_protocols`` and ``flows`` of an item; None: all (zenoh's default)."""

    interfaces: frozenset[str] | None = None
    link_protocols: frozenset[str] | None = None
    flows: frozenset[Flow] = frozenset(Flow)

    def applies(self, face: FaceAttrs, flow: Flow) -> bool:
        if flow not in self.flows:
            return False
        if self.link_protocols is not None and face.link_protocol not in self.link_protocols:
            return False
        return self.interfaces is None or not self.interfaces.isdisjoint(face.interfaces)


@dataclass(frozen=True, slots=True)
class Keep:
    pass


@dataclass(frozen=True, slots=True)
class Drop:
    interceptor: str  # "downsampling" | "low_pass_filter"
    item: str  # the item's id, or its index when it has none


@dataclass(frozen=True, slots=True)
class Rewrite:
    """QoS to write over the message's: None keeps that field."""

    item: str
    priority: int | None = None
    congestion_control: int | None = None
    express: bool | None = None

    def then(self, later: Rewrite) -> Rewrite:
        """This rewrite followed by ``later``: its fields write over this one's (items
        apply in order; egress rewrites come after ingress ones)."""
        return Rewrite(
            later.item,
            later.priority if later.priority is not None else self.priority,
            later.congestion_control if later.congestion_control is not None else self.congestion_control,
            later.express if later.express is not None else self.express,
        )


KEEP = Keep()
Decision = Keep | Drop | Rewrite


def bad(path: str, why: str) -> UsageError:
    return UsageError(f"{path}: {why}")
