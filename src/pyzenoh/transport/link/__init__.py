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

:class:`Link` is made of one class per concern, each in a module named for it; they all
share the fields of :class:`.state.LinkBase`:

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
from pyzenoh.transport.link.handshake import COOKIE_LEN, initial_sn
from pyzenoh.transport.link.receive import Receiving
from pyzenoh.transport.link.state import ReassemblyBudget, State
from pyzenoh.transport.link.timers import Timers
from pyzenoh.transport.link.transmit import MAX_FRAME_HEADER, Transmitting

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
    "ReassemblyBudget",
    "Received",
    "ReceivedPush",
    "ReceivedRun",
    "Role",
    "State",
    "initial_sn",
    "sn_mask",
]


class Link(Receiving, Transmitting, Timers):
    """A sans-IO Zenoh unicast link in the opener or acceptor role (its fields and
    constructor: :class:`.state.LinkBase`)."""

    def connection_lost(self, detail: str = "connection lost") -> list[Event]:
        """The byte stream ended (EOF or error) without a CLOSE."""
        if self.state is State.CLOSED:
            return []
        return [self._closed(CloseReason.GENERIC, True, detail)]

    def close(self, reason: int = CloseReason.GENERIC) -> list[Event]:
        """Flush queued messages, then CLOSE. The caller closes the socket afterwards."""
        if self.state is State.CLOSED:
            return []
        if self.state is State.ESTABLISHED:
            self._pack()
        events: list[Event] = []
        self._fail(reason, "closed locally", events)
        return events
