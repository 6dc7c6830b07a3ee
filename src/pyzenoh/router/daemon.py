"""The router daemon: TCP links <-> the sans-IO routing core, in one asyncio loop.

Each accepted (or connected) link becomes a face of :class:`~pyzenoh.routing.RoutingCore`
once its handshake finishes; here live the links' life cycle (listeners, connectors with
their retries, admission, the handshake's end and the close), local faces (the msgq
bridge plugs in through :meth:`RouterDaemon.add_local_face`), the core's timers, the
admin space and scouting. Its parts are objects it composes, each named for its rule:
:mod:`.state` (the faces), :mod:`.forwarding` (what a received message goes through:
the routing core, then :mod:`.delivery` to the faces), :mod:`.recorded` (the same,
recorded), :mod:`.view` (what the admin space reads).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import time
from collections.abc import Awaitable, Callable

from pyzenoh.codec import (
    NetworkMessage,
    WhatAmI,
    ZenohId,
)
from pyzenoh.config.policy import is_group_endpoint
from pyzenoh.errors import CloseReason, PeerError, UsageError
from pyzenoh.interceptors import FaceAttrs
from pyzenoh.recording.protocol import RouterRecorder
from pyzenoh.router.admin import AdminSpace
from pyzenoh.router.admission import Admission
from pyzenoh.router.backpressure import BLOCK_WAIT_SHARE
from pyzenoh.router.config import RouterConfig
from pyzenoh.router.delivery import Delivery
from pyzenoh.router.discovery import RouterDiscovery
from pyzenoh.router.forwarding import Forwarding, Ingress
from pyzenoh.router.memory import MemoryKeeper
from pyzenoh.router.multicast import MulticastListener
from pyzenoh.router.recorded import RecordedForwarding
from pyzenoh.router.scouting import Responder, start_responder
from pyzenoh.router.state import DaemonFace, DaemonFaces, LocalSink, RouterStats
from pyzenoh.router.view import RouterView
from pyzenoh.routing import RoutingConfig, RoutingCore
from pyzenoh.routing.access_control import AccessControl, FaceSubject, interface_names
from pyzenoh.scouting.core import hello_locators
from pyzenoh.scouting.udp import list_interfaces
from pyzenoh.security.multilink import MultiLinkKey
from pyzenoh.transport.dial import connect
from pyzenoh.transport.endpoint import Endpoint, prepare_tls
from pyzenoh.transport.link import (
    Established,
    Event,
    LinkClosed,
    LinkConfig,
    ReassemblyBudget,
    Received,
    ReceivedPush,
    ReceivedRun,
    Role,
)
from pyzenoh.transport.listener import TcpListener, listen
from pyzenoh.transport.multilink import Gathered, Gathering, share_sequence_numbers
from pyzenoh.transport.tcp import TcpLink
from pyzenoh.transport.udp import UdpListener

log = logging.getLogger(__name__)


#: A non-loopback address standing for "another host" when choosing what to announce.
NON_LOOPBACK_PEER = ipaddress.ip_address("192.0.2.1")


class RouterDaemon:
    """Runs a :class:`RoutingCore` over TCP listeners and connectors."""

    def __init__(self, config: RouterConfig, *, recorder: RouterRecorder | None = None) -> None:
        self.config = config
        self.zid = ZenohId.from_str(config.id) if config.id else ZenohId.random(os.urandom(16))
        self.stats = RouterStats()
        # zenohd's access control: off unless enabled (then every link's face gets a subject).
        self.access_control: AccessControl | None = None
        if config.access_control.enabled:
            self.access_control = AccessControl(config.access_control)
            self.stats.access_control_denied = self.access_control.denied_by_rule
        if config.interceptors is not None:
            self.stats.intercepted = config.interceptors.counts
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
                max_route_cache=config.max_route_cache,
                timestamping=config.timestamping,
                enforce_budget=config.enforce_budget,
                gossip=config.gossip,
            ),
            access_control=self.access_control,
            interceptors=config.interceptors,
        )
        self.link_config = LinkConfig(
            zid=self.zid,
            whatami=WhatAmI.ROUTER,
            lease_ms=config.lease_ms,
            keepalives_per_lease=config.keep_alive,
            batch_size=config.batch_size,
            qos=config.qos,
            compression=config.compression,
            handshake_timeout_s=config.accept_timeout_ms / 1000.0,
            max_message_size=config.max_fragmented_message,
            # Runs of PUSHes are routed as units, stamped ones too (a router neighbour's,
            # which keep their timestamps); a lone PUSH is forwarded from its bytes
            # (routing/lanes.py).
            push_runs=config.fast_lanes,
            stamped_runs=config.fast_lanes,
            lone_pushes=config.fast_lanes,
            reassembly_timeout_s=config.reassembly_timeout_ms / 1000.0,
            usrpwd=config.usrpwd,
            open_gate=self._refusal,
            multilink=MultiLinkKey() if config.max_links > 1 else None,
        )
        if config.usrpwd is not None and not config.usrpwd.users and config.listen:
            log.warning(
                "transport/auth/usrpwd has user/password but no dictionary_file: as zenohd, "
                "this router requires credentials it cannot check and refuses every session it accepts"
            )
        self.reassembly_budget = ReassemblyBudget(config.max_reassembly_bytes)
        self.recorder = recorder
        self.faces = DaemonFaces()
        self._face_of_link = self.faces.by_link  # read for every message received
        self.delivery = Delivery(
            self.faces,
            self.stats,
            config.send_queue_max_bytes,
            config.block_wait_before_close_us / 1e6 * BLOCK_WAIT_SHARE,
            self._close_face,
            config.drop_wait_before_drop_us / 1e6,
        )
        forwarding = Forwarding(self.core, self.delivery, self.stats, self._rearm)
        #: What received input goes through: forwarding, wrapped in recording when recording.
        self.ingress: Ingress = (
            forwarding
            if recorder is None
            else RecordedForwarding(forwarding, recorder, self.access_control, config.interceptors is not None)
        )
        #: What the admin space reads of this router.
        self.view = RouterView(
            self.zid,
            config,
            self.stats,
            self.faces,
            self.core,
            self.locators,
            self.access_control,
            lambda: [g.view() for g in self.groups],
        )
        self.listeners: list[TcpListener] = []
        self.groups: list[MulticastListener] = []  # udp/<group> listeners (router/multicast.py)
        self._timer: asyncio.TimerHandle | None = None
        self._timer_when = 0.0
        self._connectors: list[asyncio.Task[None]] = []
        self._stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self.admin: AdminSpace | None = None
        #: Awaited once the admin space is up and before anything listens: the router app
        #: starts its plugins there, as zenoh's runtime does before opening its listeners.
        self.before_listen: Callable[[], Awaitable[None]] | None = None
        self._scouting: Responder | None = None
        self.discovery = RouterDiscovery(config.scouting, self.zid, self.faces.has_zid, self._dial_scouted)
        self.admission = Admission(config, self.stats.refused)
        # long-lived objects out of the collector's scans; memory back after departures
        self.memory = MemoryKeeper(self._compact, config.gc_freeze_interval_ms)
        # the links of new multilink sessions, held until they are all there (max_links > 1)
        self.gathering: Gathering | None = None

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.memory.start(self._loop)
        if self.config.max_links > 1:
            self.gathering = Gathering(self._loop, self.config.max_links, self._gathered, self._on_event)
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
        if self.before_listen is not None:
            await self.before_listen()
        for endpoint in self.config.listen:
            if is_group_endpoint(endpoint):
                group = MulticastListener(
                    self, endpoint, self.config.lease_ms, self.config.multicast_join_interval_ms / 1000, self.now
                )
                await group.start()
                self.groups.append(group)
                continue
            listener = await listen(
                endpoint,
                self.link_config,
                self._on_event,
                max_queue_bytes=self.config.send_queue_max_bytes,
                admit=self._admit,
                reassembly_budget=self.reassembly_budget,
                tls=self.config.tls,
                reuse_port=self.config.reuse_port,
            )
            if isinstance(listener, UdpListener):
                listener.udp.counters = self.stats.udp_dropped  # counted in the router's metrics
            self.listeners.append(listener)
            log.info("listening on %s", ", ".join(str(e) for e in listener.endpoints))
        # Answers SCOUTs with HELLO (zenoh.scout(), clients with no endpoints).
        self._scouting = await start_responder(self.config.scouting, self.zid, WhatAmI.ROUTER, self.listen_endpoints)
        # Dials what it scouts, when scouting/multicast/autoconnect lists kinds for a router.
        self.discovery.start()
        for endpoint in self.config.connect:
            self._connectors.append(asyncio.create_task(self._keep_connected(endpoint)))
        log.info("router %s started", self.zid)

    async def stop(self) -> None:
        """CLOSE every session, stop listening, flush the recorder."""
        self._stopping = True
        await self.discovery.aclose()
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
        links = list(self.faces.links())
        await asyncio.gather(*(link.aclose(CloseReason.GENERIC) for link in links), return_exceptions=True)
        for listener in self.listeners:
            await listener.close(close_links=True)
        for group in self.groups:
            await group.close()
        self.groups.clear()
        if self._timer is not None:
            self._timer.cancel()
        self.memory.stop()
        if self.gathering is not None:
            self.gathering.close()
        self.ingress.close()
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
                link = await self._dial(endpoint)
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

    async def _dial(self, endpoint: str) -> TcpLink:
        """A link to ``endpoint``, its events handled as every link's."""
        cfg = self.config
        return await connect(
            endpoint,
            self.link_config,
            self._on_event,
            max_queue_bytes=cfg.send_queue_max_bytes,
            reassembly_budget=self.reassembly_budget,
            tls=cfg.tls,
        )

    async def _dial_scouted(self, locator: str) -> asyncio.Future[LinkClosed]:
        return (await self._dial(locator)).closed

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
        self.ingress.sends(self.core.handle_timer(self.now()))

    # --- links -------------------------------------------------------------------------

    def _on_event(self, link: TcpLink, ev: Event) -> None:
        match ev:
            case ReceivedPush():  # every ping-pong message: checked first
                face_id = self._face_of_link.get(id(link))
                if face_id is not None:
                    self.ingress.lone(face_id, ev)
                else:
                    self._early(link, ev)
            case Received():
                face_id = self._face_of_link.get(id(link))
                if face_id is not None:
                    self.ingress.message(face_id, ev.message, ev.raw, ev.reliable)
                else:
                    self._early(link, ev)
            case ReceivedRun():
                face_id = self._face_of_link.get(id(link))
                if face_id is not None:
                    self.ingress.run(face_id, ev.run, ev.reliable)
                else:
                    self._early(link, ev)
            case Established():
                self._on_established(link, ev)
            case LinkClosed():
                self._on_closed(link, ev)

    # --- admission -----------------------------------------------------------------------

    def _admit(self, link: TcpLink) -> bool:
        """An accepted connection may start its handshake (False: dropped at once)."""
        return self.admission.admit(id(link), link.remote_address[0] if link.remote_address else "")

    def _refusal(self, zid: ZenohId, whatami: WhatAmI, multilink: bytes | None = None) -> int | None:
        """Why a session with ``zid`` may not open (None: it may). The links this router
        accepts ask before their OpenAck (LinkConfig.open_gate), as zenohd answers an
        OpenSyn it refuses with CLOSE: a peer refused after its OpenAck dials again at once.
        A link of a session already open is let in when it proves the session's MultiLink
        key and the session has fewer than ``transport/unicast/max_links`` links."""
        if zid == self.zid:
            log.info("refusing a session that claims this router's own id %s", zid)
            return CloseReason.CONNECTION_TO_SELF
        if self.faces.has_zid(zid):
            if self._joins(zid, multilink) is not None:
                return None
            # A peer with max_links > 1 dials its other endpoints every retry period: the
            # first refusal is logged, the rest counted (admin space: refused/max_links).
            count = self.stats.refused["max_links"] = self.stats.refused.get("max_links", 0) + 1
            log.log(
                logging.INFO if count == 1 else logging.DEBUG,
                "refusing another link from %s %s (transport/unicast/max_links %d%s)",
                whatami,
                zid,
                self.config.max_links,
                "" if multilink is not None or self.config.max_links == 1 else "; it did not offer MultiLink",
            )
            return CloseReason.MAX_LINKS
        return None

    def _joins(self, zid: ZenohId, multilink: bytes | None) -> DaemonFace | None:
        """The face a new link of ``zid`` joins (zenoh's multilink), if it may."""
        if multilink is None:
            return None
        face = self.faces.of_zid(zid)
        if face is None or face.multilink != multilink or len(face.all_links()) >= self.config.max_links:
            return None
        return face

    def _join(self, face: DaemonFace, link: TcpLink) -> None:
        """``link`` carries ``face``'s session too."""
        first = face.link
        assert first is not None
        share_sequence_numbers(link, first)
        self.faces.join(face, link)
        self.stats.links_accepted += 1
        log.info(
            "face %d: link %d of %s %s, from %s",
            face.face_id,
            len(face.all_links()),
            face.whatami,
            face.zid,
            link.remote_address,
        )

    def _on_established(self, link: TcpLink, ev: Established) -> None:
        self.admission.established(id(link))
        joined = self._joins(ev.zid, ev.multilink)
        if joined is not None:
            self._join(joined, link)
            return
        if self.faces.linked >= self.config.max_sessions:
            self.admission.refuse("max_sessions", _address(link.remote_address))
            link.close(CloseReason.MAX_SESSIONS)
            return
        refused = self._refusal(ev.zid, ev.whatami, ev.multilink)  # dialled (accepted ones: the gate)
        if refused is not None:
            link.close(refused)
            return
        if self.gathering is not None and self.gathering.offer(link, ev):
            return  # a new multilink session: opened with its other links (_gathered)
        self._open_face(link, ev)

    def _early(self, link: TcpLink, ev: Event) -> None:
        """Data of a link with no face: kept if the link is held (a multilink session
        gathering its links), else dropped (its face is gone)."""
        if self.gathering is not None:
            self.gathering.keep(link, ev)

    def _gathered(self, links: Gathered) -> None:
        """A multilink session's links, gathered: one face, all its links from the start
        (what each read while held comes after, through _on_event)."""
        (link, ev), *others = links
        if self.faces.has_zid(ev.zid):  # cannot be (its links were held), but never two faces
            for other, _ in links:
                other.close(CloseReason.MAX_LINKS)
            return
        self._open_face(link, ev, [other for other, _ in others])

    def _open_face(self, link: TcpLink, ev: Established, others: list[TcpLink] | None = None) -> None:
        face_id = self.faces.new_id()
        subject = self._subject(link, ev)
        face = DaemonFace(face_id, link, ev.zid, ev.whatami, subject=subject, multilink=ev.multilink)
        self.faces.add(face)
        for other in others or ():
            self._join(face, other)
        self.stats.links_accepted += 1
        log.info(
            "face %d: %s %s from %s%s",
            face_id,
            ev.whatami,
            ev.zid,
            link.remote_address,
            "" if ev.username is None else f" (usrpwd user {ev.username!r})",
        )
        self.ingress.opened(
            face_id, str(ev.zid), str(ev.whatami), _address(link.remote_address, link.protocol), subject
        )
        try:
            sends = self.core.add_face(
                face_id, ev.zid, ev.whatami, self.now(), subject=subject, link=self._face_attrs(face_id, link)
            )
        except PeerError as exc:
            log.warning("refusing %s %s: %s", ev.whatami, ev.zid, exc)
            self.faces.remove(face_id)
            self.ingress.closed(face_id, f"{_reason_name(exc.close_reason)}: {exc}", subject)
            self.ingress.sends([])
            for closing in [link, *(others or ())]:
                closing.close(exc.close_reason)
            return
        self.ingress.sends(sends)

    def _face_attrs(self, face_id: int, link: TcpLink) -> FaceAttrs | None:
        """What the interceptors know of a new session's transport (None when none is
        configured): its protocol and, as for access control, the interfaces holding the
        link's local address."""
        if self.config.interceptors is None:
            return None
        local = link.local_address[0] if link.local_address else None
        return FaceAttrs(face_id, link.protocol, tuple(interface_names(local, list_interfaces())))

    def _subject(self, link: TcpLink, ev: Established) -> FaceSubject | None:
        """What access control knows of a new session (None when it is off). As zenohd,
        the interface is the one holding the link's local address."""
        if self.access_control is None:
            return None
        local = link.local_address[0] if link.local_address else None
        return FaceSubject(
            ev.zid, interface_names(local, list_interfaces()), link.protocol, link.cert_common_name, ev.username
        )

    def _on_closed(self, link: TcpLink, ev: LinkClosed) -> None:
        if self.admission.in_handshake(id(link)):
            self.stats.handshakes_failed += 1
        if ev.auth_failed:  # once per connection; the detail never holds a password
            self.stats.auth_failed += 1
            log.warning(
                "usrpwd: %s %s: %s",
                "refused" if link.role is Role.ACCEPTOR else "refused by",
                _address(link.remote_address, link.protocol),
                ev.detail,
            )
        self.admission.closed(id(link))
        face_id = self.faces.of_link(link)
        if face_id is None:
            if self.gathering is not None:
                self.gathering.closed(link)
            return
        face = self.faces.get(face_id)
        assert face is not None
        if face.extra_links:  # one of a session's links: it goes on over the others
            self.faces.leave(face, link)
            log.info("face %d (%s): a link closed (%s), %d left", face_id, face.zid, ev.detail, len(face.all_links()))
            return
        self.faces.remove(face_id)
        self.stats.links_closed += 1
        reason = _reason_name(ev.reason)
        self.stats.by_reason[reason] = self.stats.by_reason.get(reason, 0) + 1
        log.info("face %d (%s) closed: %s %s", face_id, face.zid, reason, ev.detail)
        self.ingress.closed(face_id, f"{reason}: {ev.detail}".strip(), face.subject)
        self.delivery.face_closed(face_id)
        self.memory.face_closed(self.core.entity_count(face_id))
        self.ingress.sends(self.core.remove_face(face_id, self.now()))

    def _compact(self) -> None:
        """Before memory is released: the routing tables shrink to what they hold."""
        self.stats.memory_releases += 1
        self.core.compact()

    # --- local faces (bridges) -----------------------------------------------------------

    def add_local_face(
        self, zid: ZenohId, sink: LocalSink, whatami: WhatAmI = WhatAmI.CLIENT, name: str = "local"
    ) -> int:
        """Attach an in-process session: ``sink`` receives every Send routed to it."""
        face_id = self.faces.new_id()
        self.faces.add(DaemonFace(face_id, None, zid, whatami, sink))
        self.ingress.opened(face_id, str(zid), str(whatami), f"local/{name}", None)
        self.ingress.sends(self.core.add_face(face_id, zid, whatami, self.now()))
        return face_id

    def remove_local_face(self, face_id: int) -> None:
        """Detach a local face added by :meth:`add_local_face` (its entities go)."""
        face = self.faces.get(face_id)
        if face is None or face.link is not None:
            return
        self.faces.remove(face_id)
        self.ingress.closed(face_id, "local face removed", None)
        self.ingress.sends(self.core.remove_face(face_id, self.now()))

    def local_input(self, face_id: int, message: NetworkMessage) -> None:
        """A message from a local face, routed like one received from a link."""
        self.ingress.message(face_id, message, None)

    def _close_face(self, face_id: int, reason: int) -> None:
        face = self.faces.get(face_id)
        if face is not None:
            for link in face.all_links():  # the session: every link of it
                link.close(reason)


def _address(addr: tuple[str, int] | None, protocol: str = "tcp") -> str:
    if addr is None:
        return ""
    host, port = addr[0], addr[1]
    return f"{protocol}/[{host}]:{port}" if ":" in host else f"{protocol}/{host}:{port}"


def _reason_name(reason: int) -> str:
    return CloseReason(reason).name if reason in CloseReason._value2member_map_ else str(reason)
