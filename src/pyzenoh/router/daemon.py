"""The router daemon: TCP links <-> the sans-IO routing core, in one asyncio loop.

Each accepted (or connected) link becomes a face of :class:`~pyzenoh.routing.RoutingCore`
once its handshake finishes. Every received network message goes to the core with its raw
bytes; every :class:`~pyzenoh.routing.Send` the core returns goes to its face's link, as
the raw bytes when the core says they can be forwarded unchanged. A face whose outgoing
queue passes the hard cap is closed (its peer is too slow); messages whose congestion
control is Drop are dropped before that, so a slow subscriber never slows the others.
A Block message that fills its destination's queue pauses reading from the face it came
from until the destination has room again, as zenohd blocks its sender; a destination
that stays full for half of ``block/wait_before_close`` is closed and the sender resumes.

Local faces (the msgq bridge) plug in through :meth:`RouterDaemon.add_local_face`.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyzenoh.codec import (
    NetworkMessage,
    Push,
    Request,
    WhatAmI,
    ZenohId,
    encode_network_message,
)
from pyzenoh.errors import CloseReason, PeerError, UsageError
from pyzenoh.router.admin import AdminSpace
from pyzenoh.router.admission import Admission
from pyzenoh.router.backpressure import BLOCK_WAIT_SHARE, BlockBackPressure
from pyzenoh.router.config import RouterConfig
from pyzenoh.router.memory import (
    RELEASE_AFTER_ENTITIES,
    RELEASE_DELAY_S,
    release_memory,
)
from pyzenoh.router.scouting import Responder, start_responder
from pyzenoh.routing import RoutingConfig, RoutingCore, Send
from pyzenoh.routing.access_control import (
    DEFAULT_RULE,
    FLOWS,
    MESSAGES,
    NO_KEY_RULE,
    AccessControl,
    Denial,
    FaceSubject,
    interface_names,
)
from pyzenoh.scouting.core import hello_locators
from pyzenoh.scouting.udp import list_interfaces
from pyzenoh.transport.fastpath import PushRun, split_pushes
from pyzenoh.transport.link import (
    Established,
    Event,
    LinkClosed,
    LinkConfig,
    ReassemblyBudget,
    Received,
    ReceivedRun,
    Role,
)
from pyzenoh.transport.tcp import (
    Endpoint,
    TcpLink,
    TcpListener,
    connect,
    listen,
    prepare_tls,
)

log = logging.getLogger(__name__)

#: A face whose queue holds more than this many times the soft cap is closed.
HARD_CAP_FACTOR = 4
#: Recording: the memo of received keys is cleared when it holds this many.
RX_KEY_MEMO_SIZE = 4096
#: Recording: denials held while one message is routed (more are not recorded).
MAX_PENDING_DENIALS = 65_536

#: A non-loopback address standing for "another host" when choosing what to announce.
NON_LOOPBACK_PEER = ipaddress.ip_address("192.0.2.1")

LocalSink = Callable[[Send], None]
_time_ns = time.time_ns


@dataclass(slots=True)
class _Face:
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


class RouterDaemon:
    """Runs a :class:`RoutingCore` over TCP listeners and connectors."""

    def __init__(self, config: RouterConfig, *, recorder: Any = None) -> None:
        self.config = config
        self.zid = ZenohId.from_str(config.id) if config.id else ZenohId.random(os.urandom(16))
        self.stats = RouterStats()
        # zenohd's access control: off unless enabled (then every link's face gets a subject).
        self.access_control: AccessControl | None = None
        if config.access_control.enabled:
            self.access_control = AccessControl(config.access_control)
            self.stats.access_control_denied = self.access_control.denied_by_rule
        self.core = RoutingCore(
            self.zid,
            whatami=WhatAmI.ROUTER,
            locators=self.locators,
            config=RoutingConfig(
                query_timeout=config.queries_default_timeout_ms / 1000.0,
                max_declarations_per_face=config.max_declarations_per_face,
                max_declarations_total=config.max_declarations_total,
                max_pending_queries_per_face=config.max_pending_queries_per_face,
                max_pending_queries_total=config.max_pending_queries_total,
                max_keyexpr_ids_per_face=config.max_keyexpr_ids_per_face,
                timestamping=config.timestamping,
                enforce_budget=config.enforce_budget,
                gossip=config.gossip,
            ),
            access_control=self.access_control,
        )
        self.link_config = LinkConfig(
            zid=self.zid,
            whatami=WhatAmI.ROUTER,
            lease_ms=config.lease_ms,
            keepalives_per_lease=config.keep_alive,
            batch_size=config.batch_size,
            qos=config.qos,
            handshake_timeout_s=config.accept_timeout_ms / 1000.0,
            max_message_size=config.max_fragmented_message,
            # Runs of PUSHes are routed as units (routing/runs.py), stamped ones too (a
            # router neighbour's, which keep their timestamps).
            push_runs=True,
            stamped_runs=True,
            reassembly_timeout_s=config.reassembly_timeout_ms / 1000.0,
            usrpwd=config.usrpwd,
        )
        if config.usrpwd is not None and not config.usrpwd.users and config.listen:
            log.warning("transport/auth/usrpwd has user/password but no dictionary_file: as zenohd, "
                        "this router requires credentials it cannot check and refuses every session it accepts")
        self.reassembly_budget = ReassemblyBudget(config.max_reassembly_bytes)
        self.recorder = recorder
        # Recording access control's decisions: the face of each subject given to the core
        # (by the id of the FaceSubject object), and the denials not recorded yet, as
        # (face, flow, message, key, denial). The listener only runs on denials; see
        # _record_denials for when they are written.
        self._subject_faces: dict[int, int] = {}
        self._denials: list[tuple[int, int, int, str | None, Denial]] = []
        self._recording_denials = recorder is not None and self.access_control is not None
        if self._recording_denials:
            assert self.access_control is not None
            self.access_control.listener = self._on_denied
        # Recording: the full key of the (face, scope, suffix, M) wire expressions of the
        # PUSH/REQUEST received, so that it is not resolved through the core for every
        # message. Key-expression ids change only when the core handles something else
        # (a D_KEYEXPR or U_KEYEXPR, a face coming or going): the memo is cleared then.
        self._rx_keys: dict[tuple[int, int, str, bool], str | None] = {}
        self.listeners: list[TcpListener] = []
        self._faces: dict[int, _Face] = {}
        self._face_of_link: dict[int, int] = {}
        self._next_face = 1
        self._timer: asyncio.TimerHandle | None = None
        self._timer_when = 0.0
        self._connectors: list[asyncio.Task[None]] = []
        self._stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self.admin: AdminSpace | None = None
        self._scouting: Responder | None = None
        # Block back-pressure pauses the face whose message is being routed (-1: none).
        self._ingress = -1
        self.backpressure = BlockBackPressure(
            config.block_wait_before_close_us / 1e6 * BLOCK_WAIT_SHARE, self._link_of, self._on_stalled)
        self.admission = Admission(config, self.stats.refused)
        # Entities gone since memory was last given back (see router/memory.py).
        self._entities_freed = 0
        self._release: asyncio.TimerHandle | None = None

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        # TLS certificates, keys and CAs are checked before anything listens: a bad one
        # stops the start with a UsageError naming it (never a plaintext tls/ listener).
        for endpoint in self.config.listen:
            prepare_tls(Endpoint.parse(endpoint), self.config.tls, server_side=True)
        for endpoint in self.config.connect:
            if endpoint.startswith("tls/"):
                prepare_tls(Endpoint.parse(endpoint), self.config.tls, server_side=False)
        if self.config.adminspace:
            self.admin = AdminSpace(self)
            self.admin.attach()
        for endpoint in self.config.listen:
            listener = await listen(
                endpoint, self.link_config, self._on_event,
                max_queue_bytes=self.config.send_queue_max_bytes, admit=self._admit,
                reassembly_budget=self.reassembly_budget, tls=self.config.tls,
            )  # fmt: skip
            self.listeners.append(listener)
            log.info("listening on %s", ", ".join(str(e) for e in listener.endpoints))
        # Answers SCOUTs with HELLO (zenoh.scout(), clients with no endpoints).
        self._scouting = await start_responder(self.config.scouting, self.zid, WhatAmI.ROUTER,
                                               self.listen_endpoints)  # fmt: skip
        for endpoint in self.config.connect:
            self._connectors.append(asyncio.create_task(self._keep_connected(endpoint)))
        log.info("router %s started", self.zid)

    async def stop(self) -> None:
        """CLOSE every session, stop listening, flush the recorder."""
        self._stopping = True
        if self._scouting is not None:
            self._scouting.close()
            self._scouting = None
        if self.admin is not None:
            self.admin.detach()
            self.admin = None
        for task in self._connectors:
            task.cancel()
        for listener in self.listeners:
            listener.server.close()  # no new session once shutdown begins (as zenohd)
        links = [f.link for f in self._faces.values() if f.link is not None]
        await asyncio.gather(*(link.aclose(CloseReason.GENERIC) for link in links), return_exceptions=True)
        for listener in self.listeners:
            await listener.close(close_links=True)
        if self._timer is not None:
            self._timer.cancel()
        if self._release is not None:
            self._release.cancel()
            self._release = None
        if self.recorder is not None:
            self.recorder.close()
        log.info("router %s stopped", self.zid)

    def listen_endpoints(self) -> list[str]:
        """The endpoints the listeners are bound to (wildcard addresses as they are)."""
        out: list[str] = []
        for listener in self.listeners:
            out.extend(str(e) for e in listener.endpoints)
        return out

    def locators(self) -> list[str]:
        """The locators this router announces to routers and peers (link state, admin
        space): like zenohd, a wildcard listen address becomes the addresses of the
        interfaces that are up, loopback excluded (kept when nothing else is there)."""
        endpoints = self.listen_endpoints()
        if not any("[::]" in e or "0.0.0.0" in e for e in endpoints):
            return endpoints
        return hello_locators(endpoints, list_interfaces(), NON_LOOPBACK_PEER) or endpoints

    async def _keep_connected(self, endpoint: str) -> None:
        """Keep a link to ``endpoint`` up, with zenohd's ``connect/retry`` backoff: the wait
        starts at period_init, grows by period_increase_factor up to period_max, and starts
        again from period_init once a session was established. A refused or failed link
        (handshake refused, closed at once) is retried the same way: never hot-looped."""
        cfg = self.config
        delay = cfg.retry_period_init_ms / 1000.0
        while not self._stopping:
            try:
                link = await connect(
                    endpoint, self.link_config, self._on_event,
                    max_queue_bytes=cfg.send_queue_max_bytes, reassembly_budget=self.reassembly_budget,
                    tls=cfg.tls,
                )  # fmt: skip
            except (OSError, ConnectionError, TimeoutError) as exc:
                log.debug("connect %s failed: %s (retry in %.1f s)", endpoint, exc, delay)
            except UsageError as exc:  # e.g. a TLS file removed since the start
                log.warning("connect %s: %s (retry in %.1f s)", endpoint, exc, delay)
            else:
                established = id(link) in self._face_of_link
                await link.closed
                if established:
                    delay = cfg.retry_period_init_ms / 1000.0
                    log.info("link to %s lost; reconnecting in %.1f s", endpoint, delay)
            await asyncio.sleep(delay)
            delay = min(delay * cfg.retry_period_increase_factor, cfg.retry_period_max_ms / 1000.0)

    # --- time --------------------------------------------------------------------------

    @staticmethod
    def now() -> float:
        """Monotonic seconds (the event loop's clock) for the core's deadlines; the core
        gets wall-clock time separately, for HLC timestamps only."""
        return time.monotonic()

    def _rearm(self) -> None:
        loop = self._loop
        if loop is None:
            return
        deadline = self.core.next_deadline()
        if deadline is None:
            return
        when = loop.time() + max(0.0, deadline - self.now())  # both monotonic
        if self._timer is not None:
            if self._timer_when <= when:
                return
            self._timer.cancel()
        self._timer_when = when
        self._timer = loop.call_at(when, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._rx_keys.clear()
        self._deliver(self.core.handle_timer(self.now()))
        self._rearm()

    # --- links -------------------------------------------------------------------------

    def _on_event(self, link: TcpLink, ev: Event) -> None:
        if isinstance(ev, ReceivedRun):
            face_id = self._face_of_link.get(id(link))
            if face_id is not None:
                self._on_push_run(face_id, ev.run, ev.reliable)
        elif isinstance(ev, Received):
            face_id = self._face_of_link.get(id(link))
            if face_id is not None:
                self._on_message(face_id, ev.message, ev.raw, ev.reliable)
        elif isinstance(ev, Established):
            self._on_established(link, ev)
        elif isinstance(ev, LinkClosed):
            self._on_closed(link, ev)

    # --- admission -----------------------------------------------------------------------

    def _admit(self, link: TcpLink) -> bool:
        """An accepted connection may start its handshake (False: dropped at once)."""
        return self.admission.admit(id(link), link.remote_address[0] if link.remote_address else "")

    def _on_established(self, link: TcpLink, ev: Established) -> None:
        self.admission.established(id(link))
        if sum(1 for f in self._faces.values() if f.link is not None) >= self.config.max_sessions:
            self.admission.refuse("max_sessions", _address(link.remote_address))
            link.close(CloseReason.MAX_SESSIONS)
            return
        if ev.zid == self.zid:
            log.info("refusing a session that claims this router's own id %s", ev.zid)
            link.close(CloseReason.CONNECTION_TO_SELF)
            return
        if any(f.zid == ev.zid for f in self._faces.values()):
            # One session per remote id (zenohd's max_links 1 keeps the first one too).
            log.info("refusing a second session from %s %s", ev.whatami, ev.zid)
            link.close(CloseReason.MAX_LINKS)
            return
        face_id = self._new_face_id()
        self._faces[face_id] = _Face(face_id, link, ev.zid, ev.whatami)
        self._face_of_link[id(link)] = face_id
        self.stats.links_accepted += 1
        log.info("face %d: %s %s from %s%s", face_id, ev.whatami, ev.zid, link.remote_address,
                 "" if ev.username is None else f" (usrpwd user {ev.username!r})")  # fmt: skip
        if self.recorder is not None:
            self.recorder.link_opened(time.time_ns(), face_id, str(ev.zid), str(ev.whatami),
                                      _address(link.remote_address, link.protocol))  # fmt: skip
        self._rx_keys.clear()
        subject = self._faces[face_id].subject = self._subject(link, ev)
        if subject is not None and self._recording_denials:
            self._subject_faces[id(subject)] = face_id
        try:
            sends = self.core.add_face(face_id, ev.zid, ev.whatami, self.now(), subject=subject)
        except PeerError as exc:
            log.warning("refusing %s %s: %s", ev.whatami, ev.zid, exc)
            del self._faces[face_id], self._face_of_link[id(link)]
            self._subject_faces.pop(id(subject), None)
            if self._denials:
                self._record_denials(_time_ns(), -1)
            link.close(exc.close_reason)
            return
        self._deliver(sends)

    def _subject(self, link: TcpLink, ev: Established) -> FaceSubject | None:
        """What access control knows of a new session (None when it is off). As zenohd,
        the interface is the one holding the link's local address."""
        if self.access_control is None:
            return None
        local = link.local_address[0] if link.local_address else None
        return FaceSubject(ev.zid, interface_names(local, list_interfaces()), link.protocol,
                           link.cert_common_name, ev.username)  # fmt: skip

    def _on_closed(self, link: TcpLink, ev: LinkClosed) -> None:
        if self.admission.in_handshake(id(link)):
            self.stats.handshakes_failed += 1
        if ev.auth_failed:  # once per connection; the detail never holds a password
            self.stats.auth_failed += 1
            log.warning("usrpwd: %s %s: %s", "refused" if link.role is Role.ACCEPTOR else "refused by",
                        _address(link.remote_address, link.protocol), ev.detail)  # fmt: skip
        self.admission.closed(id(link))
        face_id = self._face_of_link.pop(id(link), None)
        if face_id is None:
            return
        face = self._faces.pop(face_id)
        self.stats.links_closed += 1
        reason = CloseReason(ev.reason).name if ev.reason in CloseReason._value2member_map_ else str(ev.reason)
        self.stats.by_reason[reason] = self.stats.by_reason.get(reason, 0) + 1
        log.info("face %d (%s) closed: %s %s", face_id, face.zid, reason, ev.detail)
        if self.recorder is not None:
            self.recorder.link_closed(time.time_ns(), face_id, f"{reason}: {ev.detail}".strip())
        self._rx_keys.clear()
        self.backpressure.face_closed(face_id)
        self._note_entities_freed(face_id)
        self._deliver(self.core.remove_face(face_id, self.now()))
        if face.subject is not None:
            self._subject_faces.pop(id(face.subject), None)

    def _note_entities_freed(self, face_id: int) -> None:
        """Give memory back once a flood of entities has gone (after the burst)."""
        if self._loop is None:
            return
        self._entities_freed += self.core.entity_count(face_id)
        if self._entities_freed < RELEASE_AFTER_ENTITIES:
            return
        if self._release is not None:
            self._release.cancel()
        self._release = self._loop.call_later(RELEASE_DELAY_S, self._release_memory)

    def _release_memory(self) -> None:
        self._release = None
        self._entities_freed = 0
        self.core.compact()
        release_memory()

    def _new_face_id(self) -> int:
        face_id = self._next_face
        self._next_face += 1
        return face_id

    # --- local faces (bridges) -----------------------------------------------------------

    def add_local_face(
        self, zid: ZenohId, sink: LocalSink, whatami: WhatAmI = WhatAmI.CLIENT, name: str = "local"
    ) -> int:
        """Attach an in-process session: ``sink`` receives every Send routed to it."""
        face_id = self._new_face_id()
        self._faces[face_id] = _Face(face_id, None, zid, whatami, sink)
        if self.recorder is not None:
            self.recorder.link_opened(time.time_ns(), face_id, str(zid), str(whatami), f"local/{name}")
        self._rx_keys.clear()
        self._deliver(self.core.add_face(face_id, zid, whatami, self.now()))
        return face_id

    def remove_local_face(self, face_id: int) -> None:
        """Detach a local face added by :meth:`add_local_face` (its entities go)."""
        face = self._faces.get(face_id)
        if face is None or face.link is not None:
            return
        del self._faces[face_id]
        self._rx_keys.clear()
        self._deliver(self.core.remove_face(face_id, self.now()))

    def local_input(self, face_id: int, message: NetworkMessage) -> None:
        """A message from a local face, routed like one received from a link."""
        self._on_message(face_id, message, None)

    # --- routing -----------------------------------------------------------------------

    def _on_message(
        self, face_id: int, message: NetworkMessage, raw: bytes | None, reliable: bool = True
    ) -> None:
        self.stats.messages_in += 1
        self._ingress = face_id  # Block back-pressure pauses this face
        try:
            self._route(face_id, message, raw, reliable)
        finally:
            self._ingress = -1

    def _on_push_run(self, face_id: int, run: PushRun, reliable: bool) -> None:
        """A run of same-shape PUSHes, routed as one unit (routing/runs.py)."""
        if self.recorder is not None and self.access_control is not None:
            # Access control's denials are recorded with the message they stopped.
            for message, raw in run.messages():
                self._on_message(face_id, message, raw, reliable)
            return
        self.stats.messages_in += run.count
        self._ingress = face_id  # Block back-pressure pauses this face
        try:
            if self.recorder is not None:
                self._route_run_recorded(face_id, run, reliable)
                return
            try:
                sends = self.core.handle_push_run(face_id, run, self.now(), reliable, wall=time.time())
            except PeerError as exc:
                self._bad_input(face_id, exc)
                sends = []
            self._deliver(sends)
        finally:
            self._ingress = -1

    def _route_run_recorded(self, face_id: int, run: PushRun, reliable: bool) -> None:
        """Route a run and hand the recorder the run and its copies in one call (it
        writes each message's records, as for messages routed one by one)."""
        rec = self.recorder
        rx_ns = _time_ns()
        key = self._rx_key(face_id, run.first)
        try:
            sends = self.core.handle_push_run(face_id, run, self.now(), reliable, wall=rx_ns / 1e9)
        except PeerError as exc:
            rec.routed_run(rx_ns, face_id, key, run.data, run.ends, [])
            self._bad_input(face_id, exc)
            self._deliver([])
            return
        if any(send.ends is None for send in sends):
            # The core routed the run message by message (routing/runs.py says when):
            # its copies are recorded without their cause.
            rec.routed_run(rx_ns, face_id, key, run.data, run.ends, [])
            self._deliver(sends)
            return
        copies: list[tuple[int, bytes, Sequence[int]]] = []
        expected: list[int] | None = None
        for send in sends:
            sent = self._send_run(send)
            if sent:
                assert send.raw is not None and send.ends is not None
                copies.append((send.face, send.raw, send.ends))
            elif sent is not None and expected is None:
                # A copy was dropped: the recording says where the run should have gone.
                expected = sorted({s.face for s in sends})
        rec.routed_run(rx_ns, face_id, key, run.data, run.ends, copies, expected)
        self._rearm()

    def _send_run(self, send: Send) -> bool | None:
        """Queue a Send holding several messages (a routed run) to its face: True when
        queued, False when dropped (queue full, congestion control Drop), None when the
        face is gone or was closed for not reading."""
        assert send.raw is not None and send.ends is not None
        face = self._faces.get(send.face)
        if face is None:
            return None
        if face.sink is not None:  # a local face takes messages one by one
            for message, raw in split_pushes(send.raw, send.ends):
                face.sink(Send(send.face, message, raw, send.priority, send.reliable, send.express, send.block))
            return True
        link = face.link
        assert link is not None
        if self._over_hard_cap(link):
            self._close_slow(send.face, link)
            return None
        if link.send_run(send.raw, send.ends, reliable=send.reliable, priority=send.priority,
                         drop_if_full=not send.block):  # fmt: skip
            self.stats.messages_out += len(send.ends)
            if send.block and link.is_full:
                self._block(send.face, link)
            return True
        self.stats.dropped += len(send.ends)
        return False

    def _over_hard_cap(self, link: TcpLink) -> bool:
        """A face whose queue is past the hard cap is not reading (see _close_slow)."""
        return link.queued_bytes > self.config.send_queue_max_bytes * HARD_CAP_FACTOR

    def _close_slow(self, face_id: int, link: TcpLink) -> None:
        self.stats.faces_closed_slow += 1
        log.warning("face %d is not reading (%d bytes queued); closing it", face_id, link.queued_bytes)
        self._close_face(face_id, CloseReason.UNRESPONSIVE)

    def _rx_key(self, face_id: int, message: Push | Request) -> str | None:
        """The key of a received PUSH or REQUEST, before routing it (routing these changes
        no key table); memoised per wire expression while key tables stay as they are."""
        we = message.wire_expr
        if we.scope == 0:
            return we.suffix or None
        memo = self._rx_keys
        wk = (face_id, we.scope, we.suffix, we.mapping_sender)
        try:
            return memo[wk]
        except KeyError:
            key = self.core.key_of(face_id, message, incoming=True)
            if len(memo) >= RX_KEY_MEMO_SIZE:
                memo.clear()
            memo[wk] = key
            return key

    def _route(self, face_id: int, message: NetworkMessage, raw: bytes | None, reliable: bool) -> None:
        rec = self.recorder
        if rec is None:
            try:
                sends = self.core.handle(
                    face_id, message, self.now(), raw=raw, reliable=reliable, wall=time.time()
                )
            except PeerError as exc:
                self._bad_input(face_id, exc)
                sends = []
            self._deliver(sends)
            return
        # Recording: one wall-clock read gives the rx record's time and the HLC's time.
        # The rx record is written by _deliver, with the copies of a routed PUSH/REQUEST
        # (one recorder call).
        rx_ns = _time_ns()
        if raw is None:
            raw = encode_network_message(message)
        core = self.core
        try:
            sends = core.handle(
                face_id, message, self.now(), raw=raw, reliable=reliable, wall=rx_ns / 1e9
            )
        except PeerError as exc:
            # The bad input is recorded before the close it causes.
            key = core.key_of(face_id, message, incoming=True)
            cause = rec.message(rx_ns, face_id, "rx", key, raw)
            if self._denials:
                self._record_denials(rx_ns, cause)
            self._bad_input(face_id, exc)
            self._deliver([])
            return
        copy_kind: type | None = None
        kind = type(message)
        if kind is Push or kind is Request:
            key = self._rx_key(face_id, message)  # type: ignore[arg-type]
            copy_kind = kind
        else:
            self._rx_keys.clear()  # key tables may have changed
            key = core.key_of(face_id, message, incoming=True)
        if self._denials:
            # Access control denied something while this was routed: the rx record, the
            # denials naming it, then its sends.
            cause = rec.message(rx_ns, face_id, "rx", key, raw)
            self._record_denials(rx_ns, cause)
            self._deliver(sends, rx_ns, face_id, key, None, copy_kind, cause)
        else:
            self._deliver(sends, rx_ns, face_id, key, raw, copy_kind)

    def _bad_input(self, face_id: int, exc: PeerError) -> None:
        self.stats.faces_closed_bad_input += 1
        log.warning("face %d sent bad input (%s); closing it", face_id, exc)
        self._close_face(face_id, exc.close_reason)

    def _deliver(
        self,
        sends: list[Send],
        rx_ns: int = 0,
        rx_face: int = -1,
        rx_key: str | None = None,
        rx_raw: bytes | None = None,
        copy_kind: type | None = None,
        rx_cause: int = -1,
    ) -> None:
        """Hand ``sends`` to their faces (and to the recorder).

        When recording a received message (``rx_raw`` is not None), ``sends`` are what
        routing it produced: its rx record (time ``rx_ns``, face ``rx_face``, key
        ``rx_key``) comes first and is every tx record's ``cause``; one already written
        (access control's denials follow it) is passed as ``rx_cause``, its seq or
        reference, with ``rx_raw`` None. Sends of ``copy_kind`` (the routed copies of a
        PUSH or REQUEST, which keep its key) are recorded after the loop, by the same
        call as the rx record when nothing had to be recorded in between. Before a call that can re-enter the daemon (a local
        face's sink, closing a face) the rx record is written at once, so it keeps its
        place ahead of whatever that call records.
        """
        faces = self._faces
        rec = self.recorder
        encoded: dict[int, bytes] = {}  # one encoding per message object, however many faces
        copies: list[tuple[int, bytes]] = []
        # The rx record is not written yet:
        pending = rec is not None and rx_raw is not None
        cause = rx_cause
        if rec is not None and rx_raw is None and self._denials:
            self._record_denials(_time_ns(), -1)  # not while routing a received message
        route_recorded = False
        for send in sends:
            if send.ends is not None:  # several messages (a routed run)
                self._send_run(send)
                continue
            face = faces.get(send.face)
            if face is None:
                continue
            if face.sink is not None:
                if pending:
                    cause = rec.message(rx_ns, rx_face, "rx", rx_key, rx_raw)
                    pending = False
                face.sink(send)
                if rec is not None:
                    given = send.raw or encode_network_message(send.message)
                    if send.message.__class__ is copy_kind:
                        copies.append((send.face, given))
                    else:
                        self._record_tx(send, given, cause)
                continue
            link = face.link
            assert link is not None
            if self._over_hard_cap(link):
                if pending:  # the rx record comes before the close it causes
                    cause = rec.message(rx_ns, rx_face, "rx", rx_key, rx_raw)
                    pending = False
                self._close_slow(send.face, link)
                continue
            data = send.raw
            if data is None:
                msg_id = id(send.message)
                data = encoded.get(msg_id)
                if data is None:
                    data = encoded[msg_id] = encode_network_message(send.message)
            if link.send(data, reliable=send.reliable, priority=send.priority,
                         drop_if_full=not send.block, express=send.express):  # fmt: skip
                self.stats.messages_out += 1
                if send.block and link.is_full:
                    self._block(send.face, link)
                if rec is not None:
                    if send.message.__class__ is copy_kind:
                        # A forwarded PUSH/REQUEST keeps its key.
                        copies.append((send.face, data))
                    else:
                        if pending:
                            cause = rec.message(rx_ns, rx_face, "rx", rx_key, rx_raw)
                            pending = False
                        self._record_tx(send, data, cause)
            else:
                self.stats.dropped += 1
                if (
                    rec is not None
                    and copy_kind is Push
                    and rx_key is not None
                    and not route_recorded
                ):
                    # The tx records say where a PUSH went; its route (every face with a
                    # subscriber, i.e. every send) is only worth a record when a send is
                    # dropped. One route record per routed message.
                    if pending:
                        cause = rec.message(rx_ns, rx_face, "rx", rx_key, rx_raw)
                        pending = False
                    rec.route(rx_ns, cause, rx_key, sorted({s.face for s in sends}))
                    route_recorded = True
        if pending:
            if copy_kind is None:
                rec.message(rx_ns, rx_face, "rx", rx_key, rx_raw)
            else:
                rec.routed(rx_ns, rx_face, rx_key, rx_raw, copies)
        elif copies:
            rec.messages(rx_ns, "tx", rx_key, copies, cause)
        self._rearm()

    # --- Block back-pressure (router/backpressure.py) -----------------------------------

    def _block(self, dest: int, dest_link: TcpLink) -> None:
        """Pause the face being routed from until ``dest`` has room again."""
        src = self._faces.get(self._ingress)
        if src is None or src.link is None:
            return  # a local face or the timer: nothing to pause (the hard cap still holds)
        self.backpressure.block(src.face_id, src.link, dest, dest_link)

    def _link_of(self, face_id: int) -> TcpLink | None:
        face = self._faces.get(face_id)
        return None if face is None else face.link

    def _on_stalled(self, face_id: int, waited: float) -> None:
        self.stats.faces_closed_slow += 1
        log.warning("face %d stayed full for %.1f s with Block messages queued; closing it", face_id, waited)
        self._close_face(face_id, CloseReason.UNRESPONSIVE)

    # --- recording access control's denials ------------------------------------------------

    def _on_denied(self, subject: FaceSubject, flow: int, message: int, key: str | None, denial: Denial) -> None:
        """AccessControl's listener (set only when recording): held until the daemon
        knows which rx record the denial belongs to (see _record_denials)."""
        face_id = self._subject_faces.get(id(subject))
        if face_id is not None and len(self._denials) < MAX_PENDING_DENIALS:
            self._denials.append((face_id, flow, message, key, denial))

    def _record_denials(self, now_ns: int, cause: int) -> None:
        """Write the denials held: right after the rx record being routed (``cause``), or
        with cause -1 for those met outside routing a received message (a face added or
        removed, a timer)."""
        denials, self._denials = self._denials, []
        rec = self.recorder
        for face_id, flow, message, key, denial in denials:
            try:
                rec.access_denied(now_ns, cause, face_id, FLOWS[flow], MESSAGES[message], key,
                                  _denial_reason(flow, message, denial))  # fmt: skip
            except UsageError as exc:
                log.warning("recording an access control denial failed: %s", exc)

    def _record_tx(self, send: Send, data: bytes, cause: int) -> None:
        key = self.core.key_of(send.face, send.message, incoming=False)
        self.recorder.message(time.time_ns(), send.face, "tx", key, data, cause)

    def _close_face(self, face_id: int, reason: int) -> None:
        face = self._faces.get(face_id)
        if face is not None and face.link is not None:
            face.link.close(reason)


def _denial_reason(flow: int, message: int, denial: Denial) -> str:
    """A recorded denial's reason, e.g. ``ingress put denied by rule 'no-vault'``."""
    what = f"{FLOWS[flow]} {MESSAGES[message]} denied"
    if denial.rule == DEFAULT_RULE:
        return f"{what} by default_permission deny"
    if denial.rule == NO_KEY_RULE:
        return f"{what}: the message names no key expression"
    return f"{what} by rule '{denial.rule}'"


def _address(addr: tuple[str, int] | None, protocol: str = "tcp") -> str:
    if addr is None:
        return ""
    host, port = addr[0], addr[1]
    return f"{protocol}/[{host}]:{port}" if ":" in host else f"{protocol}/{host}:{port}"

