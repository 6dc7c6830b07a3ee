"""What subscribers and gets receive: samples, replies, and who sent them.

:class:`Sample` (with its :class:`SourceInfo`: the publishing entity's
:class:`EntityGlobalId` and sequence number), :class:`Reply` (a Sample or a
:class:`ReplyError`) and :class:`MatchingStatus`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyzenoh.codec import primitives as _p
from pyzenoh.codec.primitives import ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session.types.enums import CongestionControl, Priority, SampleKind
from pyzenoh.session.types.payload import DEFAULT_ENCODING, Encoding, ZBytes
from pyzenoh.session.types.timestamp import Timestamp

if TYPE_CHECKING:
    from pyzenoh.session.types.stack import TimestampStack

EntityId = int
SourceSn = int


@dataclass(frozen=True, slots=True)
class EntityGlobalId:
    """A zenoh entity (session, publisher, subscriber ...) by session zid and entity id."""

    zid: ZenohId
    eid: EntityId


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """Who published a sample (or sent a query): the entity and its sequence number."""

    source_id: EntityGlobalId
    source_sn: SourceSn

    def __post_init__(self) -> None:
        if not isinstance(self.source_id, EntityGlobalId):
            raise UsageError(f"source_id must be an EntityGlobalId, not {self.source_id!r}")
        if not isinstance(self.source_sn, int) or not 0 <= self.source_sn < (1 << 32):
            raise UsageError(f"source_sn must be a 32-bit unsigned integer, not {self.source_sn!r}")

    @property
    def wire(self) -> _p.SourceInfo:
        return _p.SourceInfo(self.source_id.zid, self.source_id.eid, self.source_sn)

    @classmethod
    def from_wire(cls, info: _p.SourceInfo) -> SourceInfo:
        return cls(EntityGlobalId(info.zid, info.eid), info.sn)


@dataclass(frozen=True, slots=True)
class Sample:
    key_expr: KeyExpr
    payload: ZBytes
    kind: SampleKind = SampleKind.PUT
    encoding: Encoding = DEFAULT_ENCODING
    timestamp: Timestamp | None = None
    congestion_control: CongestionControl = CongestionControl.DROP
    priority: Priority = Priority.DATA
    express: bool = False
    attachment: ZBytes | None = None
    source_info: SourceInfo | None = None
    #: interception records carried by the message (``timestamp_instrumentation``)
    timestamp_stack: TimestampStack | None = None


@dataclass(frozen=True, slots=True)
class ReplyError:
    payload: ZBytes
    encoding: Encoding = DEFAULT_ENCODING
    timestamp_stack: TimestampStack | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """One answer to a get: ``ok`` (a Sample) or ``err`` (a ReplyError)."""

    result: Sample | ReplyError
    replier_id: EntityGlobalId | None = None

    @property
    def ok(self) -> Sample | None:
        return self.result if isinstance(self.result, Sample) else None

    @property
    def err(self) -> ReplyError | None:
        return self.result if isinstance(self.result, ReplyError) else None


@dataclass(frozen=True, slots=True)
class MatchingStatus:
    """Whether a publisher or querier has a match (``.matching``, as zenoh-python's); its
    truth value is that too, so ``if pub.matching_status:`` reads as it says."""

    matching: bool

    def __bool__(self) -> bool:
        return self.matching
