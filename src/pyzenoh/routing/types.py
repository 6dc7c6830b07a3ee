"""The routing core's public values: what goes out (:class:`Send`), its settings, its
events for observers, its counters, and the errors a face's input can raise."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pyzenoh.codec import NetworkMessage, Push, Request, ZenohId
from pyzenoh.codec.network import QOS_BLOCK, QOS_EXPRESS
from pyzenoh.errors import CloseReason, PeerError, UsageError
from pyzenoh.routing.hlc import DEFAULT_MAX_DELTA


# Not frozen: built for every message routed, and a frozen dataclass's __init__ costs
# three times as much. Treat it as immutable all the same.
@dataclass(slots=True)
class Send:
    """One output: send ``message`` (or, when not None, its pre-encoded ``raw`` bytes) to ``face``.

    ``priority`` (0 Control .. 7 Background), ``express`` and ``block`` (congestion
    control Block, else Drop) come from the message's QoS; ``reliable`` is the channel
    (a routed PUSH keeps the reliability it arrived with).
    """

    face: int
    message: NetworkMessage
    raw: bytes | None = None
    priority: int = 5
    reliable: bool = True
    express: bool = False
    block: bool = False
    #: Set when ``raw`` holds several messages back to back (a routed run of PUSHes;
    #: ``message`` is the first): each one's end offset in ``raw``.
    ends: Sequence[int] | None = None


def make_send(
    face: int,
    msg: NetworkMessage,
    qos: int,
    raw: bytes | None = None,
    reliable: bool = True,
    ends: Sequence[int] | None = None,
) -> Send:
    """A :class:`Send` whose priority, express and block flags come from ``qos``."""
    return Send(face, msg, raw, qos & 0x07, reliable, bool(qos & QOS_EXPRESS), bool(qos & QOS_BLOCK), ends)


#: Entries kept in each route cache before it is flushed (bounds memory under key floods;
#: the default for :attr:`RoutingConfig.max_route_cache`). Sized for 10,000 devices with a
#: few keys each: at 4,096, 10,000 sessions putting on keys of their own flushed the cache
#: before any route was used twice, and every PUSH left the lone lane (bench_scale).
MAX_ROUTE_CACHE = 65_536


@dataclass(frozen=True, slots=True)
class RoutingConfig:
    """Router behaviour knobs. Times are seconds; caps are per face."""

    query_timeout: float = 10.0  # zenohd queries_default_timeout, when a REQUEST has none
    max_declarations_per_face: int = 10_000  # subscribers + queryables + tokens + interests
    max_declarations_total: int = 1_000_000  # the same, over every face
    max_pending_queries_per_face: int = 1_000  # queries a face may have in flight
    max_pending_queries_total: int = 100_000  # the same, over every face
    max_keyexpr_ids_per_face: int = 10_000  # D_KEYEXPR ids, each direction
    timestamping: bool = True  # stamp PUTs that carry no timestamp (router default)
    hlc_id: ZenohId | None = None  # defaults to the router's zid
    hlc_max_delta: float = DEFAULT_MAX_DELTA
    drop_future_timestamp: bool = False  # else re-stamp data stamped too far ahead
    enforce_budget: bool = False  # real routers only forward the Budget ext
    gossip: bool = True  # tell peers each other's locators (scouting/gossip/enabled)
    max_routers: int = 4_096  # nodes in the router graph (a bigger graph is bad input)
    max_route_cache: int = MAX_ROUTE_CACHE  # entries of each route cache (then flushed)

    def __post_init__(self) -> None:
        for name in (
            "max_declarations_per_face",
            "max_declarations_total",
            "max_pending_queries_per_face",
            "max_pending_queries_total",
            "max_keyexpr_ids_per_face",
            "max_routers",
            "max_route_cache",
        ):
            if getattr(self, name) < 1:
                raise UsageError(f"RoutingConfig.{name} must be >= 1")
        if not self.query_timeout >= 0:
            raise UsageError("RoutingConfig.query_timeout must be >= 0")


class FaceLimitExceeded(PeerError):
    """A face went over one of its caps: the link must be closed, then ``remove_face`` called.

    Raised before the offending message changed any state.
    """

    close_reason = CloseReason.GENERIC


class UnsupportedFace(PeerError):
    """A remote the core cannot serve."""

    close_reason = CloseReason.UNSUPPORTED


@dataclass(frozen=True, slots=True)
class PushRouted:
    """Observer event: a PUSH from ``source`` on ``key`` went to ``destinations``.

    ``destinations`` are the faces that had an intersecting subscriber (never the source).
    ``stamped`` is True when the router added (or replaced) the PUT's timestamp.
    """

    source: int
    key: str
    destinations: frozenset[int]
    message: Push
    stamped: bool


@dataclass(frozen=True, slots=True)
class QueryRouted:
    """Observer event: a REQUEST from ``source`` on ``key`` went to ``destinations``."""

    source: int
    key: str
    destinations: frozenset[int]
    message: Request


@dataclass(frozen=True, slots=True)
class Dropped:
    """Observer event: a message from ``face`` was ignored, for ``reason``."""

    face: int
    reason: str
    message: NetworkMessage


@dataclass(frozen=True, slots=True)
class Intercepted:
    """An interceptor dropped ``message`` (``key``) in ``flow`` (``"ingress"`` or
    ``"egress"``) of face ``link``: the source's on the way in, a destination's on the
    way out. ``interceptor`` and ``item`` name what dropped it (``downsampling`` and the
    item's id, ...). Told to the tables' ``intercept_listener`` (the recorder)."""

    link: int
    flow: str
    key: str
    interceptor: str
    item: str
    message: NetworkMessage


RoutingEvent = PushRouted | QueryRouted | Dropped


@dataclass(slots=True)
class RoutingStats:
    """Counters for tests and metrics."""

    sub_index_lookups: int = 0  # subscriber-index queries done to build data routes
    qabl_index_lookups: int = 0
    data_route_hits: int = 0
    route_cache_flushes: int = 0  # a route cache reached max_route_cache and was emptied
    pushes_routed: int = 0
    push_runs_routed: int = 0  # runs of same-shape PUSHes routed as one unit (routing/lanes.py)
    pushes_in_runs: int = 0  # the PUSHes they held (counted in pushes_routed too)
    lone_pushes_routed: int = 0  # lone PUSHes forwarded from their bytes (routing/lanes.py; in pushes_routed too)
    requests_routed: int = 0
    query_timeouts: int = 0
    linkstates_received: int = 0
    tree_computations: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    #: Messages refused by a named limit (RoutingConfig field name -> count).
    limits: dict[str, int] = field(default_factory=dict)
