"""Draining the core: after every call into it, its outgoing messages go to the links
and its deliveries to the user sinks; a sink that fills up pauses reading from every
link until it has room again (flow control); the core's next deadline arms a timer.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pyzenoh.codec import NetworkMessage
from pyzenoh.session.core import END, SampleBatch, SessionCore
from pyzenoh.session.core.state import EncodedRun
from pyzenoh.session.handlers import Sink
from pyzenoh.session.runtime.intercepting import LinkPolicies
from pyzenoh.session.runtime.multicast import GroupLink
from pyzenoh.session.runtime.state import RuntimeState
from pyzenoh.transport.multilink import choose_link
from pyzenoh.transport.tcp import TcpLink


class CorePump:
    """The core's output to the links (``s.links``) and sinks, the flows that pause
    reading (its own), and the core's timer (its own)."""

    def __init__(self, s: RuntimeState, core: SessionCore) -> None:
        self.s = s
        self.core = core
        self._timer: asyncio.TimerHandle | None = None
        self._timer_when = 0.0
        self._pumping = False
        self._scheduled = False
        #: the flows (by id) that are full: while any is, no link is read
        self.blocked: set[int] = set()

    def pump(self) -> None:
        self._scheduled = False
        if self._pumping:
            return  # the outer pump picks up whatever this call would have moved
        self._pumping = True
        core = self.core
        s = self.s
        try:
            while core.outbox or core.deliveries:
                links = s.links
                one = s.link if len(links) == 1 and not s.extra_links else None
                policies = s.policies
                for msg, reliable, prio, droppable, express, fid in core.take_outbox():
                    if policies is not None:
                        self._send_intercepted(policies, msg, reliable, prio, droppable, express, fid)
                    elif isinstance(msg, EncodedRun):
                        self._send_run(msg, reliable, prio, droppable, express, fid)
                    elif one is not None:
                        one.send(msg, reliable=reliable, priority=prio, drop_if_full=droppable, express=express)
                    elif s.extra_links:  # a session with several links: zenoh's choice of one
                        for link in self._targets(fid, reliable, prio):
                            link.send(msg, reliable=reliable, priority=prio, drop_if_full=droppable, express=express)
                    elif fid is None:
                        for link in links.values():
                            link.send(msg, reliable=reliable, priority=prio, drop_if_full=droppable, express=express)
                    else:
                        target = links.get(fid)
                        if target is not None:
                            target.send(msg, reliable=reliable, priority=prio, drop_if_full=droppable, express=express)
                for sink, item in core.take_deliveries():
                    if item is END:
                        sink.close()
                        if sink.flow is sink:
                            self._unblock(sink)
                        continue
                    if isinstance(item, SampleBatch):
                        sink.push_many(item.samples)
                    else:
                        sink.push(item)
                    if sink.full:
                        self._block(sink)
        finally:
            self._pumping = False
        self._rearm()

    def soon(self) -> None:
        """Pump once the loop is done with what it is running (received messages
        arriving together are pumped once)."""
        if not self._scheduled:
            self._scheduled = True
            self.s.loop.call_soon(self.pump)

    def _send_run(
        self, run: EncodedRun, reliable: bool, prio: int, droppable: bool, express: bool, fid: int | None
    ) -> None:
        for link in self._targets(fid, reliable, prio):
            link.send_run(run.data, run.ends, reliable=reliable, priority=prio, drop_if_full=droppable, express=express)

    def _send_intercepted(
        self,
        policies: LinkPolicies,
        msg: NetworkMessage | bytes | EncodedRun,
        reliable: bool,
        prio: int,
        droppable: bool,
        express: bool,
        fid: int | None,
    ) -> None:
        """What :meth:`pump` sends, with each link's egress interceptors asked per message
        (a run of encoded PUSHes message by message)."""
        links = self.s.links
        fids = list(links) if fid is None else [fid] if fid in links else []
        targets = [(tfid, link) for tfid in fids for link in self._targets(tfid, reliable, prio)]
        now = self.s.loop.time()
        if isinstance(msg, EncodedRun):
            starts = [0, *msg.ends[:-1]]
            items: list[NetworkMessage | bytes] = [bytes(msg.data[a:b]) for a, b in zip(starts, msg.ends, strict=True)]
        else:
            items = [msg]
        for tfid, link in targets:
            for item in items:
                out = policies.egress(tfid, item, prio, now)
                if out is not None:
                    link.send(out[0], reliable=reliable, priority=out[1], drop_if_full=droppable, express=express)

    def _targets(self, fid: int | None, reliable: bool, priority: int) -> list[TcpLink | GroupLink]:
        """The link of face ``fid`` a message takes (every face's when None): with several
        links, the one zenoh's choice picks (transport/multilink.py)."""
        s = self.s
        fids = list(s.links) if fid is None else [fid] if fid in s.links else []
        out: list[TcpLink | GroupLink] = []
        for f in fids:
            extra = s.extra_links.get(f)
            first = s.links[f]
            if not extra:
                out.append(first)
            else:
                assert isinstance(first, TcpLink)  # a group's face has one link
                out.append(choose_link([first, *extra], reliable, priority))
        return out

    # --- flow control --------------------------------------------------------------------------

    def pause_if_blocked(self, link: TcpLink) -> None:
        """A link that opens, or becomes the first, while a flow is full is not read."""
        if self.blocked:
            link.pause_reading()

    def _block(self, sink: Sink) -> None:
        flow = sink.flow
        key = id(flow)
        if key in self.blocked:
            return
        self.blocked.add(key)
        flow.on_space = lambda: self.s.in_loop(lambda: self._unblock(flow))
        for link in self.s.all_links():
            link.pause_reading()
        # The consumer's thread may have drained the flow between ``full`` and setting
        # on_space above: its space event then found no callback and will not come again.
        if not flow.full:
            self._unblock(flow)

    def _unblock(self, flow: Any) -> None:
        self.blocked.discard(id(flow))
        if not self.blocked:
            for link in self.s.all_links():
                link.resume_reading()

    # --- the core's timer ----------------------------------------------------------------------

    def _rearm(self) -> None:
        deadline = self.core.next_deadline()
        if deadline is None or self.s.closed:
            return
        if self._timer is not None:
            if deadline >= self._timer_when:
                return
            self._timer.cancel()
        self._timer_when = deadline
        self._timer = self.s.loop.call_at(deadline, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self.core.handle_timer(max(self.s.loop.time(), self._timer_when))
        self.pump()

    def stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
