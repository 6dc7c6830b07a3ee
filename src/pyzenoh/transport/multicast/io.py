"""asyncio glue for one multicast group: the sockets and the clock around :class:`MulticastTransport`.

As zenoh-link-udp's multicast: one socket bound to the group's address and port to read
(reuse address, membership on the interface), one unicast socket to send (its source
address is how the others key us), multicast loopback on so members on one host meet.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import Callable
from typing import Any

from typing_extensions import override

from pyzenoh.codec.network import NetworkMessage
from pyzenoh.transport.multicast.state import Event, MulticastTransport


def _iface_address(iface: str) -> str:
    # Only the loopback interface is resolved by name here; an address is taken as it is.
    return "127.0.0.1" if iface == "lo" else iface


def open_group_sockets(group: str, port: int, iface: str) -> tuple[socket.socket, socket.socket]:
    local = _iface_address(iface)
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
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

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._rx, self._tx = open_group_sockets(self._group, self._port, self._iface)
        host, port = self._tx.getsockname()[:2]
        self._own = (str(host), int(port))
        self._endpoint, _ = await loop.create_datagram_endpoint(lambda: _Receiver(self), sock=self._rx)
        self._timer = asyncio.create_task(self._tick())

    def send(self, messages: tuple[NetworkMessage, ...], reliable: bool = True) -> None:
        self._sendto(self.transport.frame(messages, reliable))

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
        if self._endpoint is not None:
            self._endpoint.close()
        if self._tx is not None:
            self._tx.close()

    def _sendto(self, datagram: bytes) -> None:
        assert self._tx is not None
        # A full socket buffer loses the datagram, as UDP may anyway.
        with contextlib.suppress(BlockingIOError, InterruptedError):
            self._tx.sendto(datagram, (self._group, self._port))

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
