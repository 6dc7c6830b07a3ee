"""Per-face state: key-expression ids, entities, interests, what the face was told, the
queries it waits on; and the limits on what a face may make the tables hold.

A *face* is one open session (client, peer or router neighbour) or a local session; it
holds its region (:mod:`.regions`). The tables every rule shares are :mod:`.tables`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from pyzenoh.codec import (
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    InterestMode,
    InterestOptions,
    UndeclareQueryable,
    UndeclareSubscriber,
    UndeclareToken,
    WhatAmI,
    ZenohId,
)
from pyzenoh.routing.access_control import (
    DECLARE_QUERYABLE,
    DECLARE_SUBSCRIBER,
    LIVELINESS_TOKEN,
    FaceAcl,
)
from pyzenoh.routing.declared import (
    DeclaredResources,
    QueryableInfo,
    aggregate_queryable,
    aggregate_subscriber,
)

if TYPE_CHECKING:
    from pyzenoh.interceptors import FacePolicy
    from pyzenoh.routing.regions import Region

#: Longest full key (prefix chain + suffix) accepted from a face, in characters.
MAX_KEY_LEN = 65_535
#: Accepted declarations between two exact counts of the router-wide total (the count
#: walks every face, so it is not done for each declaration).
DECLARATION_RECOUNT = 256

log = logging.getLogger(__name__)

#: The pseudo-face id of the router region in the holder tables (see :mod:`.routers`);
#: callers use ids >= 0.
NORTH = -1

_K = InterestOptions.KEYEXPRS

#: The access-control message kind of each declaration body it filters (zenohd files an
#: undeclaration under its declaration's kind).
DECLARATION_MESSAGES: dict[type, int] = {
    DeclareSubscriber: DECLARE_SUBSCRIBER,
    UndeclareSubscriber: DECLARE_SUBSCRIBER,
    DeclareQueryable: DECLARE_QUERYABLE,
    UndeclareQueryable: DECLARE_QUERYABLE,
    DeclareToken: LIVELINESS_TOKEN,
    UndeclareToken: LIVELINESS_TOKEN,
}


@dataclass(slots=True)
class InterestState:
    key: str | None  # None: all keys
    options: InterestOptions
    mode: InterestMode
    aggregate: bool


@dataclass(slots=True)
class PendingQuery:
    qid: int
    src: int
    src_rid: int
    qos: int
    budget: int | None
    remaining: dict[int, int] = field(default_factory=dict)  # destination face -> its rid
    replies: int = 0


class FaceView(Protocol):
    """What readers outside the core (the admin space) see of a :class:`Face`: who it
    is and what it declared, read only."""

    @property
    def zid(self) -> ZenohId: ...
    @property
    def whatami(self) -> WhatAmI: ...
    @property
    def subs(self) -> Mapping[int, str]: ...
    @property
    def qabls(self) -> Mapping[int, tuple[str, QueryableInfo]]: ...
    @property
    def tokens(self) -> Mapping[int, str]: ...
    @property
    def interests(self) -> Mapping[int, InterestState]: ...


class Face:
    __slots__ = (
        "acl",
        "fid",
        "intercept_in",
        "intercept_out",
        "interests",
        "key_interests",
        "limits_logged",
        "local_id_of",
        "local_ids",
        "local_qabls",
        "local_subs",
        "local_tokens",
        "next_id",
        "next_rid",
        "outgoing",
        "pending",
        "qabls",
        "region",
        "remote_id_of",
        "remote_ids",
        "subs",
        "tokens",
        "whatami",
        "zid",
    )

    def __init__(self, fid: int, zid: ZenohId, whatami: WhatAmI, region: Region) -> None:
        self.fid = fid
        self.zid = zid
        self.whatami = whatami
        #: What the face's kind changes in the rules (:mod:`.regions`): a router
        #: neighbour's entities, for one, live in the router region (:mod:`.routers`).
        self.region = region
        self.remote_ids: dict[int, str] = {}  # ids the face declared -> full key
        self.remote_id_of: dict[str, int] = {}
        self.local_ids: dict[int, str] = {}  # ids we declared to the face -> full key
        self.local_id_of: dict[str, int] = {}
        self.subs: dict[int, str] = {}
        self.qabls: dict[int, tuple[str, QueryableInfo]] = {}
        self.tokens: dict[int, str] = {}
        self.interests: dict[int, InterestState] = {}  # future-mode interests still active
        self.key_interests: dict[int, str | None] = {}  # K interests (non-Current)
        self.local_subs: DeclaredResources[bool] = DeclaredResources(aggregate_subscriber)
        self.local_qabls: DeclaredResources[QueryableInfo] = DeclaredResources(aggregate_queryable)
        self.local_tokens: dict[str, int] = {}
        self.next_id = 1  # shared by the subscriber, queryable and token ids we declare
        self.next_rid = 0
        self.pending: dict[int, PendingQuery] = {}  # rid we sent to this face -> its query
        self.outgoing: dict[int, PendingQuery] = {}  # qid -> queries this face asked
        self.limits_logged: set[str] = set()  # limits already logged for this face
        #: Access control of what enters and leaves this face (None: nothing is filtered).
        self.acl: FaceAcl | None = None
        #: zenohd's interceptors on what enters and leaves this face's transport (None:
        #: none configured for it; local faces, as zenohd's own sessions, have none).
        self.intercept_in: FacePolicy | None = None
        self.intercept_out: FacePolicy | None = None

    def declaration_count(self) -> int:
        return len(self.subs) + len(self.qabls) + len(self.tokens) + len(self.interests)


def nonwild_split(key: str) -> tuple[str, str]:
    """(non-wild prefix, rest): the prefix is the chunks before the first wild chunk."""
    star = key.find("*")
    if star < 0:
        return key, ""
    slash = key.rfind("/", 0, star)
    if slash < 0:
        return "", key
    return key[:slash], key[slash:]
