"""What each session operation asks of the core, decided once for both APIs.

The blocking API (:mod:`.session`, :mod:`.publisher`, :mod:`.querier`) and the asyncio
one (:mod:`pyzenoh.session.aio`, :mod:`pyzenoh.session.aio_entities`) differ only in how
they run a core call: the blocking one hands it to the session's loop thread and waits,
the asyncio one runs it in the caller's loop. Everything else, the argument checks in the
caller's thread and the core call they build, is here, so the two cannot drift apart.
Each function checks its arguments now (raising :class:`~pyzenoh.errors.UsageError`) and
returns the call to run in the loop.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import instrumentation as ins
from pyzenoh.session import types as t
from pyzenoh.session.api.arguments import (
    block_of,
    get_call,
    locality_of,
    prio_of,
    target_of,
    timeout_of,
    ts_stack_of,
)
from pyzenoh.session.handlers import Sink

if TYPE_CHECKING:  # the entities import this module
    from pyzenoh.session.api.publisher import PublisherState
    from pyzenoh.session.api.querier import QuerierSettings
    from pyzenoh.session.runtime import Runtime


class Publication(NamedTuple):
    """A PUT or DELETE ready to go: whether it waits for room, and the core call."""

    block: bool
    send: Callable[[], None]


def publication(
    rt: Runtime,
    key_expr: KeyExpr | str,
    body: Any,
    congestion_control: t.CongestionControl | None,
    priority: t.Priority | None,
    express: bool | None,
    reliability: t.Reliability | None,
    allowed_destination: t.Locality | None,
    timestamp_instrumentation: ins.TimestampInstrumentation | None,
) -> Publication:
    """``Session.put``/``delete``: a body to its key with the call's QoS."""
    key = str(t.to_key_expr(key_expr))
    block = block_of(congestion_control)
    send = functools.partial(
        rt.core.put,
        key,
        body,
        priority=prio_of(priority),
        block=block,
        express=bool(express),
        reliable=reliability is not t.Reliability.BEST_EFFORT,
        destination=locality_of(allowed_destination, "allowed_destination"),
        ts_stack=ts_stack_of(rt, timestamp_instrumentation),
    )
    return Publication(block, send)


def publisher_send(
    rt: Runtime, st: PublisherState, body: Any, timestamp_instrumentation: ins.TimestampInstrumentation | None
) -> Callable[[], None]:
    """A declared publisher's PUT or DELETE body with the publisher's QoS."""
    return functools.partial(
        rt.core.put,
        st.key,
        body,
        priority=st.priority,
        block=st.block,
        express=st.express,
        reliable=st.reliable,
        destination=st.destination,
        ts_stack=ts_stack_of(rt, timestamp_instrumentation),
    )


def is_plain_put(
    encoding: Any, attachment: Any, timestamp: Any, timestamp_instrumentation: Any, source_info: Any
) -> bool:
    """A publisher's put with nothing but a payload: it may join a run of PUSHes that share
    the publisher's precomputed head."""
    return (
        encoding is None
        and attachment is None
        and timestamp is None
        and timestamp_instrumentation is None
        and source_info is None
    )


def subscriber_declaration(
    rt: Runtime, key_expr: KeyExpr, sink: Sink, allowed_origin: t.Locality | None
) -> Callable[[], tuple[int, int]]:
    """Declares a subscriber; the call returns its local id and its wire entity id."""
    key = str(key_expr)
    origin = locality_of(allowed_origin, "allowed_origin")

    def declare() -> tuple[int, int]:
        local = rt.core.declare_subscriber(key, sink, origin)
        return local, rt.core.subscriber_wire_id(local)

    return declare


def queryable_declaration(
    rt: Runtime, key_expr: KeyExpr, complete: bool | None, sink: Sink, allowed_origin: t.Locality | None
) -> Callable[[], tuple[int, int]]:
    """Declares a queryable; the call returns its local id and its wire entity id."""
    key = str(key_expr)
    origin = locality_of(allowed_origin, "allowed_origin")

    def declare() -> tuple[int, int]:
        local = rt.core.declare_queryable(key, bool(complete), sink, origin)
        return local, rt.core.queryable_wire_id(local)

    return declare


def querier_declaration(
    rt: Runtime, key_expr: KeyExpr, settings: QuerierSettings, allowed_destination: t.Locality | None
) -> Callable[[], int]:
    """Declares a querier; the call returns its local id."""
    key = str(key_expr)
    tgt = target_of(settings.target)
    dest = locality_of(allowed_destination, "allowed_destination")
    return lambda: rt.core.declare_querier(key, tgt, dest)


def querier_get(
    rt: Runtime,
    key_expr: KeyExpr,
    settings: QuerierSettings,
    sink: Sink,
    parameters: t.Parameters | dict[str, str] | str | None,
    payload: Any,
    encoding: t.Encoding | str | None,
    attachment: Any,
    source_info: t.SourceInfo | None,
    timestamp_instrumentation: ins.TimestampInstrumentation | None,
) -> Callable[[], int]:
    """A querier's get with the querier's settings; the call returns the request id."""
    qs = settings
    return get_call(
        rt,
        t.Selector(key_expr, parameters),
        sink,
        qs.target,
        qs.consolidation,
        qs.accept,
        qs.timeout,
        qs.block,
        qs.priority,
        qs.express,
        payload,
        encoding,
        attachment,
        allowed_destination=qs.destination,
        source_info=source_info,
        timestamp_instrumentation=timestamp_instrumentation,
    )


def liveliness_get(rt: Runtime, key_expr: KeyExpr, sink: Sink, timeout: float | None) -> Callable[[], int]:
    """A liveliness get; the call returns its id."""
    key = str(key_expr)
    to = timeout_of(timeout)
    return lambda: rt.core.liveliness_get(key, sink, rt.loop.time(), to)


class MatchingRegistration(NamedTuple):
    """Adding a matching listener to a publisher or querier, and removing it."""

    add: Callable[[], None]
    remove: Callable[[], None]


def matching_registration(rt: Runtime, local: int, sink: Sink, *, querier: bool) -> MatchingRegistration:
    core = rt.core
    if querier:
        return MatchingRegistration(
            functools.partial(core.add_querier_matching_listener, local, sink),
            functools.partial(core.remove_querier_matching_listener, local, sink),
        )
    return MatchingRegistration(
        functools.partial(core.add_matching_listener, local, sink),
        functools.partial(core.remove_matching_listener, local, sink),
    )
