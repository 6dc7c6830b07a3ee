"""What the daemon's parts share: its faces, its counters, and the daemon as its mixins
(:mod:`.delivery`, :mod:`.recorded`) see it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pyzenoh.codec import NetworkMessage, Push, Request, WhatAmI, ZenohId
from pyzenoh.dataplane import PushRun
from pyzenoh.errors import PeerError
from pyzenoh.recording.protocol import RouterRecorder
from pyzenoh.router.backpressure import BlockBackPressure
from pyzenoh.router.config import RouterConfig
from pyzenoh.routing import RoutingCore, Send
from pyzenoh.routing.access_control import AccessControl, Denial, FaceSubject
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


@dataclass(slots=True)
class RouterStats:
    links_accepted: int = 0
    links_closed: int = 0
    messages_in: int = 0
    messages_out: int = 0
    dropped: int = 0
    faces_closed_slow: int = 0
    faces_closed_bad_input: int = 0
    handshakes_failed: int = 0
    #: Handshakes ended by usrpwd authentication (refused credentials, in or out).
    auth_failed: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)
    #: Connections refused by a limit (RouterConfig field name -> count).
    refused: dict[str, int] = field(default_factory=dict)
    #: Messages access control denied, by rule id (the access control's own counters).
    access_control_denied: dict[str, int] = field(default_factory=dict)


class Daemon(Protocol):
    """The router daemon as its mixins use it (:class:`~pyzenoh.router.daemon.RouterDaemon`)."""

    config: RouterConfig
    core: RoutingCore
    stats: RouterStats
    recorder: RouterRecorder | None
    access_control: AccessControl | None
    backpressure: BlockBackPressure
    _faces: dict[int, DaemonFace]
    _ingress: int
    _rx_keys: dict[tuple[int, int, str, bool], str | None]
    _subject_faces: dict[int, int]
    _denials: list[tuple[int, int, int, str | None, Denial]]

    @staticmethod
    def now() -> float: ...
    def _rearm(self) -> None: ...
    def _close_face(self, face_id: int, reason: int) -> None: ...
    # delivery.py
    def _on_message(self, face_id: int, message: NetworkMessage, raw: bytes | None, reliable: bool = True) -> None: ...
    def _deliver(
        self,
        sends: list[Send],
        rx_ns: int = 0,
        rx_face: int = -1,
        rx_key: str | None = None,
        rx_raw: bytes | None = None,
        copy_kind: type | None = None,
        rx_cause: int = -1,
    ) -> None: ...
    def _send_run(self, send: Send) -> bool | None: ...
    def _to_face(
        self,
        fid: int,
        data: bytes,
        ends: Sequence[int] | None,
        message: NetworkMessage | None,
        priority: int,
        reliable: bool,
        express: bool,
        block: bool,
    ) -> bool | None: ...
    def _over_hard_cap(self, link: TcpLink) -> bool: ...
    def _close_slow(self, face_id: int, link: TcpLink) -> None: ...
    def _bad_input(self, face_id: int, exc: PeerError) -> None: ...
    def _block(self, dest: int, dest_link: TcpLink) -> None: ...
    # recorded.py
    def _route_recorded(self, face_id: int, message: NetworkMessage, raw: bytes | None, reliable: bool) -> None: ...
    def _route_run_recorded(self, face_id: int, run: PushRun, reliable: bool) -> None: ...
    def _rx_key(self, face_id: int, message: Push | Request) -> str | None: ...
    def _on_denied(self, subject: FaceSubject, flow: int, message: int, key: str | None, denial: Denial) -> None: ...
    def _record_denials(self, now_ns: int, cause: int) -> None: ...
    def _record_tx(self, send: Send, data: bytes, cause: int) -> None: ...
