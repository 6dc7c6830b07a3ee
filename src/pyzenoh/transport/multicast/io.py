"""asyncio glue for one multicast group: the sockets and the clock around :class:`MulticastTransport`.

As zenoh-link-udp's multicast: one socket bound to the group's address and port to read
(reuse address, membership on the interface), one unicast socket to send (its source
address is how the others key us), multicast loopback on so members on one host meet.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
from collections.abc import Callable
from typing import Any

from typing_extensions import override

from pyzenoh.codec.network import NetworkMessage
from pyzenoh.transport.multicast.state import Event, MulticastTransport

log = logging.getLogger(__name__)


def _iface_address(iface: str) -> str:
    # Only the loopback interface is resolved by name here; an address is taken as it is.
    return "127.0.0.1" if iface == "lo" else iface


#: The receive buffer asked for (the kernel caps it at net.core.rmem_max): a fragmented
#: message is a burst of 64 kB datagrams, and the default (212 kB on Linux) loses the
#: tail of a 300 kB one when two members send at once (measured on lo).
RECEIVE_BUFFER = 4 * 1024 * 1024


def _room(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)


def open_group_sockets(group: str, port: int, iface: str) -> tuple[socket.socket, socket.socket]:
    """One socket bound to the group to read, one unicast socket to send (IPv4 groups: an
    IPv6 group is refused by the configuration, see :func:`pyzenoh.config.policy.is_group_endpoint`)."""
    local = _iface_address(iface)
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    _room(rx)
    rx.bind((group, port))
    rx.setsockopt(
        socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, struct.pack("4s4s", *map(socket.inet_aton, (group, local)))
    )
    rx.setblocking(False)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    tx.bind((local, 0))
    tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(local))
    tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
    tx.setblocking(False)
    return rx, tx


class _Receiver(asyncio.DatagramProtocol):
    def __init__(self, group: MulticastGroup) -> None:
        self._group = group

    @override
    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        self._group._received(data, (str(addr[0]), int(addr[1])))


class MulticastGroup:
    """Runs a transport on ``group:port`` via ``iface``; ``on_event`` sees what the state reports."""

    def __init__(
        self, transport: MulticastTransport, group: str, port: int, iface: str, on_event: Callable[[Event], None]
    ) -> None:
        self.transport = transport
        self._group, self._port, self._iface = group, port, iface
        self._on_event = on_event
        self._rx: socket.socket | None = None
        self._tx: socket.socket | None = None
        self._own: tuple[str, int] = ("", 0)
        self._endpoint: asyncio.DatagramTransport | None = None
        self._timer: asyncio.Task[None] | None = None
        self.send_failures = 0  # datagrams the socket refused (buffer full, no route)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._rx, self._tx = open_group_sockets(self._group, self._port, self._iface)
        host, port = self._tx.getsockname()[:2]
        self._own = (str(host), int(port))
        self._endpoint, _ = await loop.create_datagram_endpoint(lambda: _Receiver(self), sock=self._rx)
        self._timer = asyncio.create_task(self._tick())

    def send(self, messages: tuple[NetworkMessage, ...], reliable: bool = True) -> None:
        raws = []
        for msg in messages:
            out = bytearray()
            msg.write(out)
            raws.append(bytes(out))
        self.send_raw(raws, reliable)

    def send_raw(self, raws: list[bytes], reliable: bool = True) -> None:
        """Encoded network messages, in FRAMEs (or FRAGMENTs) of this member's."""
        for datagram in self.transport.datagrams(raws, reliable):
            self._sendto(datagram)

    @property
    def local_address(self) -> tuple[str, int]:
        """Where this member sends from: how the others know it."""
        return self._own

    async def close(self) -> None:
        """Leave the group: a CLOSE to it, then the sockets (again: nothing)."""
        if self._tx is not None and self._timer is not None:
            self._sendto(self.transport.close_datagram())  # as zenoh's members leave a group
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await timer
        self.abort()

    def abort(self) -> None:
        """The sockets closed at once, nothing sent (a failed open)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._endpoint is not None:
            self._endpoint.close()
            self._endpoint = None
        elif self._rx is not None:
            self._rx.close()
        self._rx = None
        if self._tx is not None:
            self._tx.close()
            self._tx = None

    def _sendto(self, datagram: bytes) -> None:
        if self._tx is None:
            return  # closed
        # A full socket buffer loses the datagram, as UDP may anyway; so does a network
        # that cannot carry it (no route for the group): counted, never raised into the sender.
        try:
            self._tx.sendto(datagram, (self._group, self._port))
        except (BlockingIOError, InterruptedError):
            self.send_failures += 1
        except OSError as exc:
            self.send_failures += 1
            if self.send_failures == 1:
                log.warning("multicast %s:%d: a datagram could not be sent: %s", self._group, self._port, exc)

    def _received(self, data: bytes, addr: tuple[str, int]) -> None:
        if addr == self._own:
            return  # our own datagram looped back
        now = asyncio.get_running_loop().time()
        for event in self.transport.on_datagram(f"udp/{addr[0]}:{addr[1]}", data, now):
            self._on_event(event)

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            datagrams, events = self.transport.poll(loop.time())
            for d in datagrams:
                self._sendto(d)
            for e in events:
                self._on_event(e)
            await asyncio.sleep(max(0.0, self.transport.next_deadline() - loop.time()))
