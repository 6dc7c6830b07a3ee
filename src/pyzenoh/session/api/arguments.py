"""Arguments of the session API made into core calls, for the blocking and asyncio APIs.

Each ``*_of`` function checks one user argument (a Priority, a Locality, a Timestamp ...)
and turns it into what the sans-IO core takes; ``put_body``/``del_body`` build a
publication's PUT or DEL; :func:`get_call` checks a get's arguments in the caller's
thread and returns the call to run in the loop; ``check_token``/``attach_token`` tie an
operation to a :class:`~pyzenoh.session.cancel.CancellationToken`.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from pyzenoh.codec import Del, Put
from pyzenoh.codec import Encoding as WireEncoding
from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import instrumentation as ins
from pyzenoh.session import types as t
from pyzenoh.session.cancel import CancellationToken
from pyzenoh.session.core import LOCAL_AND_REMOTE
from pyzenoh.session.handlers import Sink
from pyzenoh.session.runtime import Runtime

log = logging.getLogger(__name__)

#: Bound on waiting for the background loop to answer a declaration or a query call.
CALL_TIMEOUT_S = 30.0


def prio_of(priority: t.Priority | None) -> int:
    if priority is None:
        return t.Priority.DATA.value
    if not isinstance(priority, t.Priority):
        raise UsageError(f"priority must be a Priority, not {priority!r}")
    return priority.value


def block_of(cc: t.CongestionControl | None, default: bool = False) -> bool:
    if cc is None:
        return default
    if not isinstance(cc, t.CongestionControl):
        raise UsageError(f"congestion_control must be a CongestionControl, not {cc!r}")
    return cc is not t.CongestionControl.DROP


def put_body(
    payload: Any, encoding: Any, attachment: Any, timestamp: t.Timestamp | None, source_info: t.SourceInfo | None = None
) -> Put:
    return Put(
        t.to_payload(payload),
        t.to_encoding(encoding),
        timestamp_of(timestamp),
        source_info_of(source_info),
        attachment=None if attachment is None else t.to_payload(attachment),
    )


def del_body(attachment: Any, timestamp: t.Timestamp | None, source_info: t.SourceInfo | None = None) -> Del:
    return Del(
        timestamp_of(timestamp),
        source_info_of(source_info),
        attachment=None if attachment is None else t.to_payload(attachment),
    )


def timestamp_of(value: t.Timestamp | None) -> Any:
    if value is None:
        return None
    if not isinstance(value, t.Timestamp):
        raise UsageError(f"timestamp must be a Timestamp, not {value!r}")
    return value.wire


def source_info_of(value: t.SourceInfo | None) -> Any:
    if value is None:
        return None
    if not isinstance(value, t.SourceInfo):
        raise UsageError(f"source_info must be a SourceInfo, not {value!r}")
    return value.wire


def locality_of(value: t.Locality | None, name: str) -> int:
    """The Locality value of an ``allowed_origin``/``allowed_destination`` argument."""
    if value is None:
        return LOCAL_AND_REMOTE
    if not isinstance(value, t.Locality):
        raise UsageError(f"{name} must be a Locality, not {value!r}")
    return value.value


def ts_stack_of(rt: Runtime, instrumentation: ins.TimestampInstrumentation | None) -> bytes | None:
    """The timestamp-stack extension a message sent now carries (with its Send record)."""
    if instrumentation is None:
        return None
    return ins.start(instrumentation, rt.zid, time.time_ns(), rt.core.ts_callback, rt.whatami)


def check_token(token: CancellationToken | None) -> None:
    if token is not None:
        if not isinstance(token, CancellationToken):
            raise UsageError(f"cancellation_token must be a CancellationToken, not {token!r}")
        if token.is_cancelled:
            raise UsageError("the cancellation token is already cancelled")


def cancel_in(rt: Runtime, fn: Callable[[], None]) -> None:
    """Run a core cancellation in the loop and wait for the callbacks it ends."""
    if not rt.closed:

        def run() -> None:
            fn()
            rt.pump()  # the END reaches the handler before cancel() returns

        try:
            rt.call(run, CALL_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001  (the session may be closing: nothing left to cancel)
            log.debug("cancellation: %s", exc)
    dispatcher = rt.callbacks.started
    if dispatcher is not None:
        dispatcher.barrier(CALL_TIMEOUT_S)


def attach_token(rt: Runtime, token: CancellationToken | None, fn: Callable[[], None]) -> None:
    """Let ``token`` cancel an operation that was just started (``fn`` cancels it)."""
    if token is None:
        return
    op = functools.partial(cancel_in, rt, fn)
    try:
        token._register(op)
    except UsageError:
        op()  # cancelled while the operation started: end it now
        raise


def consolidation_of(value: Any) -> int:
    if value is None:
        return t.ConsolidationMode.AUTO.value
    mode = getattr(value, "mode", value)
    if not isinstance(mode, t.ConsolidationMode):
        raise UsageError(f"consolidation must be a ConsolidationMode, not {value!r}")
    return mode.value


def target_of(value: t.QueryTarget | None) -> int:
    if value is None:
        return 0
    if not isinstance(value, t.QueryTarget):
        raise UsageError(f"target must be a QueryTarget, not {value!r}")
    return value.value


def selector_of(value: t.Selector | KeyExpr | str) -> t.Selector:
    return value if isinstance(value, t.Selector) else t.Selector(value)


def timeout_of(value: float | None) -> float | None:
    if value is None:
        return None
    if value < 0:
        raise UsageError("timeout must be >= 0")
    return float(value)


def get_call(
    rt: Runtime,
    selector: t.Selector | KeyExpr | str,
    sink: Sink,
    target: t.QueryTarget | None,
    consolidation: Any,
    accept_replies: t.ReplyKeyExpr | None,
    timeout: float | None,
    congestion_control: t.CongestionControl | None,
    priority: t.Priority | None,
    express: bool | None,
    payload: Any,
    encoding: t.Encoding | str | None,
    attachment: Any,
    *,
    allowed_destination: t.Locality | None = None,
    source_info: t.SourceInfo | None = None,
    timestamp_instrumentation: ins.TimestampInstrumentation | None = None,
) -> Callable[[], int]:
    """Validate get() arguments in the caller's thread; the returned call runs in the loop."""
    sel = selector_of(selector)
    key = str(sel.key_expr)
    params = str(sel.parameters)
    tgt = target_of(target)
    cons = consolidation_of(consolidation)
    to = timeout_of(timeout)
    data = None if payload is None else t.to_payload(payload)
    enc: WireEncoding = t.to_encoding(encoding)
    att = None if attachment is None else t.to_payload(attachment)
    prio = prio_of(priority)
    block = block_of(congestion_control, default=True)
    any_key = accept_replies is t.ReplyKeyExpr.ANY
    dest = locality_of(allowed_destination, "allowed_destination")
    source = source_info_of(source_info)
    stack = ts_stack_of(rt, timestamp_instrumentation)

    def call() -> int:
        return rt.core.get(
            key,
            params,
            sink,
            rt.loop.time(),
            target=tgt,
            consolidation=cons,
            timeout_s=to,
            payload=data,
            encoding=enc,
            attachment=att,
            priority=prio,
            block=block,
            express=bool(express),
            accept_any=any_key,
            destination=dest,
            source_info=source,
            ts_stack=stack,
        )

    return call
