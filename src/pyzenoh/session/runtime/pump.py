"""Draining the core: after every call into it, its outgoing messages go to the links
and its deliveries to the user sinks; a sink that fills up pauses reading from every
link until it has room again (flow control); the core's next deadline arms a timer.
"""

from __future__ import annotations

from typing import Any

from pyzenoh.session.core import END, SampleBatch
from pyzenoh.session.core.state import EncodedRun
from pyzenoh.session.handlers import Dispatcher, Sink
from pyzenoh.session.runtime.state import RuntimeBase


class Pump(RuntimeBase):
    """The core's output to links and sinks, flow control, and the core's timer."""

    def pump(self) -> None:
        self._pump_scheduled = False
        if self._pumping:
            return  # the outer pump picks up whatever this call would have moved
        self._pumping = True
        core = self.core
        try:
            while core.outbox or core.deliveries:
                links = self.links
                one = self.link if len(links) == 1 else None
                for msg, reliable, prio, droppable, express, fid in core.take_outbox():
                    if type(msg) is EncodedRun:
                        self._send_run(msg, reliable, prio, droppable, express, fid)
                    elif one is not None:
                        one.send(msg, reliable=reliable, priority=prio, drop_if_full=droppable, express=express)
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
                    if item.__class__ is SampleBatch:
                        sink.push_many(item.samples)
                    else:
                        sink.push(item)
                    if sink.full:
                        self._block(sink)
        finally:
            self._pumping = False
        self._rearm()

    def _send_run(
        self, run: EncodedRun, reliable: bool, prio: int, droppable: bool, express: bool, fid: int | None
    ) -> None:
        if fid is None:
            targets = list(self.links.values())
        else:
            target = self.links.get(fid)
            targets = [] if target is None else [target]
        for link in targets:
            link.send_run(run.data, run.ends, reliable=reliable, priority=prio, drop_if_full=droppable, express=express)

    def _block(self, sink: Sink) -> None:
        flow = sink.flow
        key = id(flow)
        if key in self._blocked:
            return
        self._blocked.add(key)
        flow.on_space = lambda: self.in_loop(lambda: self._unblock(flow))
        for link in self.links.values():
            link.pause_reading()
        # The consumer's thread may have drained the flow between ``full`` and setting
        # on_space above: its space event then found no callback and will not come again.
        if not flow.full:
            self._unblock(flow)

    def _unblock(self, flow: Any) -> None:
        self._blocked.discard(id(flow))
        if not self._blocked:
            for link in self.links.values():
                link.resume_reading()

    def dispatcher(self) -> Dispatcher:
        """The thread that runs this session's sync callbacks (started on first use)."""
        if self._dispatcher is None:
            d = Dispatcher(f"pyzenoh-callbacks-{self.zid}")
            self._dispatcher = d
        return self._dispatcher

    def _rearm(self) -> None:
        deadline = self.core.next_deadline()
        if deadline is None or self.closed:
            return
        if self._timer is not None:
            if deadline >= self._timer_when:
                return
            self._timer.cancel()
        self._timer_when = deadline
        self._timer = self.loop.call_at(deadline, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self.core.handle_timer(max(self.loop.time(), self._timer_when))
        self.pump()
