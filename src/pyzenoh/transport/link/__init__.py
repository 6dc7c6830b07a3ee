"""Sans-IO unicast transport link: handshake, framing, SNs, fragments, lease (zenoh-wire.md 2).

One :class:`Link` is one TCP connection, in the *opener* role (the side that connected:
a client) or the *acceptor* role (the side that listened: a router). It never touches a
socket or a clock: the caller feeds it bytes with :meth:`Link.receive_data`, passes the
current time as float seconds, writes whatever :meth:`Link.data_to_send` returns, and calls
:meth:`Link.handle_timer` at :meth:`Link.next_deadline`. Everything the peer did comes back
as events (:class:`Established`, :class:`Received`, :class:`LinkClosed`).

Outgoing network messages (objects or pre-encoded bytes) are queued in send order by
:meth:`Link.send` and packed when :meth:`Link.data_to_send` is called: several messages
per FRAME, one FRAME per batch, FRAGMENTs (one per batch) for a message that does not fit
in one batch. With QoS each priority is its own lane, sent highest first; without QoS
there is one lane and messages keep their send order whatever their priority. A batch
never holds two FRAMEs: some implementations (zenoh-pico) read everything after a FRAME
header as that frame.

:class:`Link` is composed: a :class:`.state.LinkState` (every field) and one part per
concern, each in a module named for it and built with the state (and the parts it calls):

* :mod:`.config` -- limits and defaults, :class:`Role`, :class:`LinkConfig`, SN masks;
* :mod:`.events` -- what a link reports (:data:`Event`);
* :mod:`.state` -- the link's fields, its :class:`State`, reassembly buffers and the
  shared :class:`ReassemblyBudget`, writing a transport message, ending the link;
* :mod:`.handshake` -- InitSyn/InitAck/OpenSyn/OpenAck, negotiation, usrpwd, initial SNs;
* :mod:`.receive` -- batches in, SN checks, FRAMEs to events, FRAGMENTs reassembled;
* :mod:`.transmit` -- queuing per channel, FRAMEs packed into batches, fragmentation;
* :mod:`.timers` -- handshake timeout, lease expiry, keepalives, stale reassembly.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from pyzenoh.codec import NetworkMessage
from pyzenoh.codec.batch import LENGTH_PREFIX as LENGTH_PREFIX
from pyzenoh.codec.transport import DEFAULT_RESOLUTION as DEFAULT_RESOLUTION
from pyzenoh.codec.transport import PRIORITY_DATA as PRIORITY_DATA
from pyzenoh.errors import CloseReason
from pyzenoh.transport.link.config import (
    DEFAULT_HANDSHAKE_TIMEOUT_S,
    DEFAULT_LEASE_MS,
    DEFAULT_MAX_MESSAGE_SIZE,
    DEFAULT_REASSEMBLY_TIMEOUT_S,
    KEEPALIVES_PER_LEASE,
    MAX_BATCH_SIZE,
    MIN_BATCH_SIZE,
    NUM_PRIORITIES,
    PATCH_LEVEL,
    LinkConfig,
    Role,
    sn_mask,
)
from pyzenoh.transport.link.events import (
    Established,
    Event,
    LinkClosed,
    Received,
    ReceivedPush,
    ReceivedRun,
)
from pyzenoh.transport.link.handshake import COOKIE_LEN, Handshake, initial_sn
from pyzenoh.transport.link.receive import Receiver
from pyzenoh.transport.link.state import LinkState, ReassemblyBudget, State
from pyzenoh.transport.link.timers import Timers
from pyzenoh.transport.link.transmit import MAX_FRAME_HEADER, Transmitter

__all__ = [
    "COOKIE_LEN",
    "DEFAULT_HANDSHAKE_TIMEOUT_S",
    "DEFAULT_LEASE_MS",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "DEFAULT_REASSEMBLY_TIMEOUT_S",
    "DEFAULT_RESOLUTION",
    "KEEPALIVES_PER_LEASE",
    "LENGTH_PREFIX",
    "MAX_BATCH_SIZE",
    "MAX_FRAME_HEADER",
    "MIN_BATCH_SIZE",
    "NUM_PRIORITIES",
    "PATCH_LEVEL",
    "PRIORITY_DATA",
    "Established",
    "Event",
    "Link",
    "LinkClosed",
    "LinkConfig",
    "LinkState",
    "ReassemblyBudget",
    "Received",
    "ReceivedPush",
    "ReceivedRun",
    "Role",
    "State",
    "initial_sn",
    "sn_mask",
]


class Link:
    """A sans-IO Zenoh unicast link in the opener or acceptor role: its state
    (:class:`LinkState`) and the parts that act on it, each built with it: the handshake,
    the receiver (which hands handshake messages to the handshake), the transmitter and
    the timers. This class is their one entry point; the hot paths may hold a part
    (``link.tx``, ``link.rx``) to skip one call."""

    __slots__ = ("handshake", "rx", "s", "timers", "tx")

    def __init__(
        self,
        config: LinkConfig,
        role: Role,
        now: float,
        *,
        random_bytes: Callable[[int], bytes] = os.urandom,
        keep_raw: bool = True,
        reassembly_budget: ReassemblyBudget | None = None,
    ) -> None:
        s = self.s = LinkState(
            config, role, now, random_bytes=random_bytes, keep_raw=keep_raw, reassembly_budget=reassembly_budget
        )
        self.handshake = Handshake(s)
        self.rx = Receiver(s, self.handshake)
        self.tx = Transmitter(s)
        self.timers = Timers(s)

    # --- what the link is ---------------------------------------------------------------

    @property
    def config(self) -> LinkConfig:
        return self.s.config

    @property
    def role(self) -> Role:
        return self.s.role

    @property
    def state(self) -> State:
        return self.s.state

    @property
    def peer(self) -> Established | None:
        """What the handshake established (None before)."""
        return self.s.peer

    @property
    def close_event(self) -> LinkClosed | None:
        return self.s.close_event

    @property
    def is_established(self) -> bool:
        return self.s.state is State.ESTABLISHED

    @property
    def is_closed(self) -> bool:
        return self.s.state is State.CLOSED

    @property
    def batch_size(self) -> int:
        return self.s.batch_size

    # --- bytes in, bytes out, time ------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview, now: float) -> list[Event]:
        """Bytes read from the connection (any split). Returns what they caused."""
        return self.rx.receive_data(data, now)

    def send(self, message: NetworkMessage | bytes, *, reliable: bool = True, priority: int | None = None) -> None:
        """Queue a network message (see :meth:`Transmitter.send`)."""
        self.tx.send(message, reliable=reliable, priority=priority)

    def send_run(
        self, data: bytes, ends: Sequence[int], *, reliable: bool = True, priority: int = PRIORITY_DATA
    ) -> None:
        """Queue several encoded messages at once (see :meth:`Transmitter.send_run`)."""
        self.tx.send_run(data, ends, reliable=reliable, priority=priority)

    def batch_now(self, raw: bytes, *, reliable: bool, priority: int) -> bytes | None:
        """An express message's batch, or None (see :meth:`Transmitter.batch_now`)."""
        return self.tx.batch_now(raw, reliable=reliable, priority=priority)

    def data_to_send(self) -> bytes:
        """Every byte that should now be written to the connection."""
        return self.tx.data_to_send()

    @property
    def pending_bytes(self) -> int:
        return self.tx.pending_bytes

    @property
    def has_output(self) -> bool:
        return self.tx.has_output

    def handle_timer(self, now: float) -> list[Event]:
        return self.timers.handle_timer(now)

    def refresh_lease(self, now: float) -> None:
        self.timers.refresh_lease(now)

    def next_deadline(self) -> float | None:
        return self.timers.next_deadline()

    def connection_lost(self, detail: str = "connection lost") -> list[Event]:
        """The byte stream ended (EOF or error) without a CLOSE."""
        if self.s.state is State.CLOSED:
            return []
        return [self.s.closed(CloseReason.GENERIC, True, detail)]

    def close(self, reason: int = CloseReason.GENERIC) -> list[Event]:
        """Flush queued messages, then CLOSE. The caller closes the socket afterwards."""
        s = self.s
        if s.state is State.CLOSED:
            return []
        if s.state is State.ESTABLISHED:
            self.tx.pack()
        events: list[Event] = []
        s.fail(reason, "closed locally", events)
        return events
