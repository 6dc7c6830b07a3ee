"""What the daemon's parts share: its faces (:class:`DaemonFaces`) and its counters."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from pyzenoh.codec import WhatAmI, ZenohId
from pyzenoh.routing import Send
from pyzenoh.routing.access_control import FaceSubject
from pyzenoh.transport.multilink import choose_link
from pyzenoh.transport.tcp import TcpLink

LocalSink = Callable[[Send], None]


@dataclass(slots=True)
class DaemonFace:
    """A face of the daemon: a TCP link's, or a local one (a bridge's ``sink``)."""

    face_id: int
    link: TcpLink | None
    zid: ZenohId
    whatami: WhatAmI
    sink: LocalSink | None = None
    #: What access control knows of the face (None: access control is off, a local face).
    subject: FaceSubject | None = None
    #: The peer's MultiLink key (security/multilink.py): its links carrying the same key
    #: join this face, up to transport/unicast/max_links. None: one link only.
    multilink: bytes | None = None
    #: The session's links after the first (``link``).
    extra_links: list[TcpLink] = field(default_factory=list)

    def link_for(self, reliable: bool, priority: int) -> TcpLink | None:
        """The link a message goes on (transport/multilink.py: zenoh's choice)."""
        link = self.link
        if not self.extra_links or link is None:
            return link
        return choose_link((link, *self.extra_links), reliable, priority)

    def all_links(self) -> list[TcpLink]:
        return [] if self.link is None else [self.link, *self.extra_links]


class DaemonFaces:
    """The daemon's faces by id, and the face of each link (by the link object's id).

    ``by_id`` and ``by_link`` are read directly on the hot path; only :meth:`add` and
    :meth:`remove` change them. :meth:`view` is what readers outside the daemon get. The
    faces per zid are counted as they come and go: a new session asks whether its zid is
    there, and with 10,000 sessions a scan of every face per handshake was the cost of
    opening them (quadratic).
    """

    __slots__ = ("_extra", "_next", "_view", "_zids", "by_id", "by_link")

    def __init__(self) -> None:
        self.by_id: dict[int, DaemonFace] = {}
        self.by_link: dict[int, int] = {}
        self._zids: dict[ZenohId, int] = {}
        self._extra = 0  # links in by_link beyond each face's first
        self._next = 1
        self._view = MappingProxyType(self.by_id)

    def new_id(self) -> int:
        face_id = self._next
        self._next += 1
        return face_id

    def add(self, face: DaemonFace) -> None:
        self.by_id[face.face_id] = face
        if face.link is not None:
            self.by_link[id(face.link)] = face.face_id
        self._zids[face.zid] = self._zids.get(face.zid, 0) + 1

    def join(self, face: DaemonFace, link: TcpLink) -> None:
        """``link`` is one more link of ``face``'s session (zenoh's multilink)."""
        face.extra_links.append(link)
        self.by_link[id(link)] = face.face_id
        self._extra += 1

    def leave(self, face: DaemonFace, link: TcpLink) -> None:
        """One of ``face``'s links closed while it has others: the session goes on over
        them, as a zenoh transport lives while any of its links does (its first link
        gone, the next one takes its place)."""
        if link is face.link:
            face.link = face.extra_links.pop(0)
        else:
            face.extra_links.remove(link)
        self.by_link.pop(id(link), None)
        self._extra -= 1

    def remove(self, face_id: int) -> DaemonFace | None:
        face = self.by_id.pop(face_id, None)
        if face is not None:
            for extra in face.extra_links:
                self.by_link.pop(id(extra), None)
            self._extra -= len(face.extra_links)
            if face.link is not None:
                self.by_link.pop(id(face.link), None)
            left = self._zids[face.zid] - 1
            if left:
                self._zids[face.zid] = left
            else:
                del self._zids[face.zid]
        return face

    @property
    def linked(self) -> int:
        """How many faces have a link (the sessions; local faces have none)."""
        return len(self.by_link) - self._extra

    def of_link(self, link: TcpLink) -> int | None:
        return self.by_link.get(id(link))

    def get(self, face_id: int) -> DaemonFace | None:
        return self.by_id.get(face_id)

    def links(self) -> Iterator[TcpLink]:
        """The links of the faces that have one (local faces have none)."""
        return (f.link for f in self.by_id.values() if f.link is not None)

    def has_zid(self, zid: ZenohId) -> bool:
        return zid in self._zids

    def of_zid(self, zid: ZenohId) -> DaemonFace | None:
        """The face of a remote node (a scan: only asked when that node opens another link)."""
        if zid not in self._zids:
            return None
        return next((f for f in self.by_id.values() if f.zid == zid and f.link is not None), None)

    def view(self) -> Mapping[int, DaemonFace]:
        """The faces, read only (the admin space's)."""
        return self._view


@dataclass(slots=True)
class RouterStats:
    links_accepted: int = 0
    links_closed: int = 0
    messages_in: int = 0
    messages_out: int = 0
    dropped: int = 0
    #: Drop messages that found their queue full and waited for room (wait_before_drop).
    drop_waits: int = 0
    faces_closed_slow: int = 0
    faces_closed_bad_input: int = 0
    handshakes_failed: int = 0
    #: Memory given back after departures (router/memory.py).
    memory_releases: int = 0
    #: Handshakes ended by usrpwd authentication (refused credentials, in or out).
    auth_failed: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)
    #: Connections refused by a limit (RouterConfig field name -> count).
    refused: dict[str, int] = field(default_factory=dict)
    #: Messages access control denied, by rule id (the access control's own counters).
    access_control_denied: dict[str, int] = field(default_factory=dict)
    #: Messages the interceptors dropped or rewrote, by "<interceptor>/<item id>" (the
    #: interceptors' own counters; each drop is in the routing core's dropped too).
    intercepted: dict[str, int] = field(default_factory=dict)
    #: udp listeners' datagram limits (transport/udp.py), all listeners together, by reason.
    udp_dropped: dict[str, int] = field(default_factory=dict)
