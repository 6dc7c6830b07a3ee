"""Queries: the :class:`QueryConsolidation` of a get, and the :class:`Query` a queryable
receives, answered through its session (a :class:`Responder`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self

from typing_extensions import override

from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.keyexpr.relations import intersects
from pyzenoh.session.types.enums import (
    CongestionControl,
    ConsolidationMode,
    Priority,
    ReplyKeyExpr,
)
from pyzenoh.session.types.payload import Encoding, ZBytes, to_encoding, to_payload
from pyzenoh.session.types.sample import SourceInfo
from pyzenoh.session.types.selector import Parameters, Selector, to_key_expr
from pyzenoh.session.types.timestamp import Timestamp

if TYPE_CHECKING:
    from pyzenoh.session.types.stack import TimestampStack


class QueryConsolidation:
    """A reply consolidation for gets: ``QueryConsolidation(ConsolidationMode.LATEST)``."""

    __slots__ = ("_mode",)

    AUTO: ClassVar[QueryConsolidation]
    DEFAULT: ClassVar[QueryConsolidation]

    def __init__(self, mode: ConsolidationMode, /) -> None:
        if not isinstance(mode, ConsolidationMode):
            raise UsageError(f"expected a ConsolidationMode, not {mode!r}")
        self._mode = mode

    @property
    def mode(self) -> ConsolidationMode:
        return self._mode

    @override
    def __eq__(self, other: object) -> bool:
        if isinstance(other, QueryConsolidation):
            return self._mode is other._mode
        return NotImplemented

    @override
    def __hash__(self) -> int:
        return hash(self._mode)

    @override
    def __repr__(self) -> str:
        return f"QueryConsolidation({self._mode})"


QueryConsolidation.AUTO = QueryConsolidation(ConsolidationMode.AUTO)
QueryConsolidation.DEFAULT = QueryConsolidation.AUTO


class Responder(Protocol):
    """What a Query needs from its session to answer (thread-safe, non-blocking)."""

    def query_reply(
        self,
        qref: int,
        key: str,
        body: Any,
        priority: Priority | None,
        express: bool,
        block: bool,
    ) -> None: ...

    def query_finalize(self, qref: int) -> None: ...


class Query:
    """A query received by a queryable. Reply with :meth:`reply`, then :meth:`drop` it
    (or use it as a context manager): the querier's get ends once every queryable that
    received the query has dropped it. A Query that is garbage-collected is dropped.
    """

    __slots__ = (
        "__weakref__",
        "_anyke",
        "_done",
        "_qref",
        "_responder",
        "attachment",
        "encoding",
        "key_expr",
        "parameters",
        "payload",
        "source_info",
        "timestamp_stack",
    )

    def __init__(
        self,
        responder: Responder,
        qref: int,
        key_expr: KeyExpr,
        parameters: Parameters,
        payload: ZBytes | None,
        encoding: Encoding | None,
        attachment: ZBytes | None,
    ) -> None:
        self._responder = responder
        self._qref = qref
        self._done = False
        self.key_expr = key_expr
        self.parameters = parameters
        self.payload = payload
        self.encoding = encoding
        self.attachment = attachment
        self.source_info: SourceInfo | None = None
        self.timestamp_stack: TimestampStack | None = None
        self._anyke = "_anyke" in parameters

    @property
    def selector(self) -> Selector:
        return Selector(self.key_expr, self.parameters)

    def accepts_replies(self) -> ReplyKeyExpr:
        return ReplyKeyExpr.ANY if self._anyke else ReplyKeyExpr.MATCHING_QUERY

    def _check(self, key_expr: KeyExpr | str) -> str:
        if self._done:
            raise UsageError("the query was already dropped")
        key = str(to_key_expr(key_expr))
        if not self._anyke and not intersects(str(self.key_expr), key):
            raise UsageError(f"reply key {key!r} does not intersect the query key {self.key_expr}")
        return key

    def reply(
        self,
        key_expr: KeyExpr | str,
        payload: Any,
        *,
        encoding: Encoding | str | None = None,
        congestion_control: CongestionControl | None = None,
        priority: Priority | None = None,
        express: bool | None = None,
        attachment: Any = None,
        timestamp: Timestamp | None = None,
    ) -> None:
        from pyzenoh.codec import Put

        congestion_control, priority = _ignored_qos("reply", congestion_control, priority)
        key = self._check(key_expr)
        body = Put(
            to_payload(payload),
            to_encoding(encoding),
            None if timestamp is None else timestamp.wire,
            attachment=None if attachment is None else to_payload(attachment),
        )
        self._responder.query_reply(
            self._qref, key, body, priority, bool(express), congestion_control is not CongestionControl.DROP
        )

    def reply_del(
        self,
        key_expr: KeyExpr | str,
        *,
        congestion_control: CongestionControl | None = None,
        priority: Priority | None = None,
        express: bool | None = None,
        attachment: Any = None,
        timestamp: Timestamp | None = None,
    ) -> None:
        from pyzenoh.codec import Del

        congestion_control, priority = _ignored_qos("reply_del", congestion_control, priority)
        key = self._check(key_expr)
        body = Del(
            None if timestamp is None else timestamp.wire,
            attachment=None if attachment is None else to_payload(attachment),
        )
        self._responder.query_reply(
            self._qref, key, body, priority, bool(express), congestion_control is not CongestionControl.DROP
        )

    def reply_err(self, payload: Any, *, encoding: Encoding | str | None = None) -> None:
        from pyzenoh.codec import Err

        if self._done:
            raise UsageError("the query was already dropped")
        body = Err(to_payload(payload), to_encoding(encoding))
        self._responder.query_reply(self._qref, "", body, None, False, True)

    def drop(self) -> None:
        """Finish answering: once every receiver dropped it, the querier's get ends."""
        if not self._done:
            self._done = True
            self._responder.query_finalize(self._qref)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.drop()

    def __del__(self) -> None:
        try:
            self.drop()
        except Exception:  # noqa: BLE001, S110  (interpreter shutdown / closed session: nobody to tell)
            pass

    @override
    def __str__(self) -> str:
        return str(self.selector)

    @override
    def __repr__(self) -> str:
        return f"Query({self.selector!s})"


def _ignored_qos(
    method: str, congestion_control: CongestionControl | None, priority: Priority | None
) -> tuple[None, None]:
    """zenoh-python 1.10 deprecates a reply's own congestion control and priority, warns,
    and ignores them (a reply goes with its query's QoS): the same here."""
    import warnings

    if congestion_control is not None:
        warnings.warn(
            f"congestion_control in Query.{method} is deprecated, it will be ignored", DeprecationWarning, stacklevel=3
        )
    if priority is not None:
        warnings.warn(f"priority in Query.{method} is deprecated, it will be ignored", DeprecationWarning, stacklevel=3)
    return None, None
