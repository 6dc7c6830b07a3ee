"""asyncio glue for scouting: UDP sockets around :mod:`pyzenoh.scouting.core`.

* :func:`start_udp_responder` answers SCOUTs arriving on the multicast group (joined on
  the configured interfaces) and, optionally, on a unicast UDP address of our own;
* :class:`UdpScouter` (``async with scout(...) as s: async for hello in s``) sends SCOUTs
  to the group (and to optional unicast targets) on zenoh's schedule and yields HELLOs;
* :func:`list_interfaces` asks the OS for interfaces and addresses (Linux: ioctl and
  ``/proc``; elsewhere only loopback is known).

Sockets are set up as zenoh sets them: the group socket is bound to ``group:port`` with
SO_REUSEADDR (so several nodes on one host share the port, and unicast datagrams to the
port never reach it); each interface gets a wildcard-bound socket with IP_MULTICAST_IF
set, which sends SCOUTs, receives HELLOs and sends our HELLOs.
"""

from __future__ import annotations

import argparse
import array
import asyncio
import contextlib
import errno
import ipaddress
import json
import logging
import socket
import struct
import sys
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, Self

from typing_extensions import override

from pyzenoh.codec.primitives import WhatAmI, ZenohId
from pyzenoh.codec.scouting import Hello, WhatAmIMatcher
from pyzenoh.errors import UsageError
from pyzenoh.scouting.core import (
    DEFAULT_ADDRESS,
    DEFAULT_INTERFACE,
    DEFAULT_TTL,
    Interface,
    IPAddress,
    ResponderCore,
    ScouterCore,
    best_match,
    multicast_interfaces,
    parse_socket_address,
    peer_ip,
)

log = logging.getLogger(__name__)

Address = tuple[str, int]

#: Seconds an interface list stays fresh for the responder (one SCOUT per second and
#: per scouter is the normal load; an ioctl per datagram under a flood is not).
INTERFACE_CACHE_S = 5.0
#: HELLOs a scouter keeps before its reader takes them; more are dropped (they repeat).
SCOUTER_QUEUE = 256

# Linux <linux/sockios.h>, <net/if.h>
_SIOCGIFCONF = 0x8912
_SIOCGIFFLAGS = 0x8913
_IFF_UP = 0x1
_IFF_LOOPBACK = 0x8
_IFF_RUNNING = 0x40
_IFF_MULTICAST = 0x1000
_IFREQ_SIZE = 40 if struct.calcsize("P") == 8 else 32  # struct ifreq: 16-byte name + union
_MAX_IFCONF = 64 * 1024


# --- interfaces ----------------------------------------------------------------------------


def list_interfaces() -> list[Interface]:
    """Interfaces in index order with their addresses (IPv4 first) and flags."""
    try:
        names = [name for _, name in sorted(socket.if_nameindex())]
        v4 = _ipv4_addresses()
        v6 = _ipv6_addresses()
    except (OSError, AttributeError, ImportError) as exc:
        log.debug("cannot list interfaces (%s): only loopback is known", exc)
        lo = ipaddress.IPv4Address("127.0.0.1")
        return [Interface("lo", (lo,), multicast=False, loopback=True)]
    out: list[Interface] = []
    for name in names:
        flags = _flags(name)
        addrs: tuple[IPAddress, ...] = (*v4.get(name, ()), *v6.get(name, ()))
        out.append(
            Interface(
                name,
                addrs,
                up=bool(flags & _IFF_UP),
                running=bool(flags & _IFF_RUNNING),
                multicast=bool(flags & _IFF_MULTICAST),
                loopback=bool(flags & _IFF_LOOPBACK),
            )
        )
    return out


def _ipv4_addresses() -> dict[str, list[IPAddress]]:
    if not sys.platform.startswith("linux"):
        raise OSError("interface addresses are only read on Linux")
    import fcntl

    buf = array.array("B", bytes(_MAX_IFCONF))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("iL", _MAX_IFCONF, buf.buffer_info()[0])
        size = struct.unpack("iL", fcntl.ioctl(s.fileno(), _SIOCGIFCONF, req))[0]
    data = buf.tobytes()[:size]
    out: dict[str, list[IPAddress]] = {}
    for off in range(0, len(data) - _IFREQ_SIZE + 1, _IFREQ_SIZE):
        label = data[off : off + 16].split(b"\0", 1)[0].decode("ascii", "replace")
        addr = ipaddress.IPv4Address(data[off + 20 : off + 24])
        out.setdefault(label.split(":", 1)[0], []).append(addr)  # "eth0:1" is an alias
    return out


def _ipv6_addresses() -> dict[str, list[IPAddress]]:
    out: dict[str, list[IPAddress]] = {}
    try:
        with open("/proc/net/if_inet6", encoding="ascii") as f:
            lines = f.read(1 << 20).splitlines()
    except OSError:
        return out
    for line in lines:
        fields = line.split()
        if len(fields) == 6 and len(fields[0]) == 32:
            with contextlib.suppress(ValueError):
                out.setdefault(fields[5], []).append(ipaddress.IPv6Address(bytes.fromhex(fields[0])))
    return out


def _flags(name: str) -> int:
    import fcntl

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            req = struct.pack("16sH", name.encode()[:15], 0)
            return int(struct.unpack("16sH", fcntl.ioctl(s.fileno(), _SIOCGIFFLAGS, req)[:18])[1])
    except OSError:
        return 0


class InterfaceCache:
    """``list_interfaces()`` re-read at most every :data:`INTERFACE_CACHE_S` seconds."""

    def __init__(self, source: Callable[[], Sequence[Interface]] = list_interfaces) -> None:
        self._source = source
        self._value: Sequence[Interface] = ()
        self._when: float | None = None

    def get(self, now: float) -> Sequence[Interface]:
        if self._when is None or now - self._when >= INTERFACE_CACHE_S:
            self._value = self._source()
            self._when = now
        return self._value


# --- sockets -------------------------------------------------------------------------------


def open_multicast_socket(group: IPAddress, port: int, ifaces: Sequence[IPAddress], ttl: int) -> socket.socket:
    """The group socket: bound to ``group:port`` and joined on each interface address."""
    fam = socket.AF_INET if group.version == 4 else socket.AF_INET6
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((str(group), port))
        joined = 0
        if group.version == 6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, group.packed + struct.pack("@I", 0))
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, ttl)
            joined = 1
        else:
            for iface in ifaces:
                if iface.version != 4:
                    log.warning("cannot join IPv4 group %s on IPv6 interface %s", group, iface)
                    continue
                try:
                    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, group.packed + iface.packed)
                    joined += 1
                except OSError as exc:
                    log.warning("cannot join %s on interface %s: %s", group, iface, exc)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, ttl)
        if not joined:
            raise OSError(f"could not join multicast group {group} on any of {list(map(str, ifaces))}")
        s.setblocking(False)
        return s
    except BaseException:
        s.close()
        raise


def open_unicast_socket(iface: IPAddress, ttl: int, bind: Address | None = None) -> socket.socket:
    """A socket sending to the group through ``iface`` (wildcard-bound unless ``bind``)."""
    fam = socket.AF_INET if iface.version == 4 else socket.AF_INET6
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        if iface.version == 4:
            if not iface.is_unspecified:
                s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, iface.packed)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, ttl)
        else:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, ttl)
        s.bind(bind if bind is not None else ("0.0.0.0" if fam == socket.AF_INET else "::", 0))
        s.setblocking(False)
        return s
    except BaseException:
        s.close()
        raise


class _Datagrams(asyncio.DatagramProtocol):
    def __init__(self, on_datagram: Callable[[bytes, Address], None]) -> None:
        self._on_datagram = on_datagram

    @override
    def datagram_received(self, data: bytes, addr: tuple[str | int, ...]) -> None:
        host, port = addr[0], addr[1]
        if isinstance(host, str) and isinstance(port, int):
            self._on_datagram(data, (host, port))

    @override
    def error_received(self, exc: Exception) -> None:
        log.debug("scouting socket error: %s", exc)


async def _endpoint(sock: socket.socket, on_datagram: Callable[[bytes, Address], None]) -> asyncio.DatagramTransport:
    loop = asyncio.get_running_loop()
    try:
        transport, _ = await loop.create_datagram_endpoint(lambda: _Datagrams(on_datagram), sock=sock)
    except BaseException:
        sock.close()
        raise
    return transport


def _close_all(transports: Iterable[asyncio.BaseTransport]) -> None:
    for t in transports:
        t.close()


# --- responder -----------------------------------------------------------------------------


class UdpResponder:
    """A running responder; :meth:`close` stops it. Built by :func:`start_udp_responder`."""

    def __init__(
        self,
        core: ResponderCore,
        locators: Callable[[], Sequence[str]],
        interfaces: InterfaceCache,
    ) -> None:
        self.core = core
        self._locators = locators
        self._interfaces = interfaces
        self._mcast: asyncio.DatagramTransport | None = None
        self._ucast: list[tuple[IPAddress, asyncio.DatagramTransport]] = []
        self._unicast: asyncio.DatagramTransport | None = None
        self._own: set[Address] = set()
        self.multicast_address: Address | None = None
        self.unicast_address: Address | None = None
        self.scout_interfaces: list[IPAddress] = []
        self.closed = False

    def _answer(self, data: bytes, source: Address, reply_from: asyncio.DatagramTransport | None) -> None:
        if self.closed or source in self._own:
            return
        ip = peer_ip(source[0])
        if ip is None:
            return
        now = asyncio.get_running_loop().time()
        try:
            endpoints = list(self._locators())
        except Exception:  # a failing locator source must not stop the answering
            log.exception("scouting: the locator source failed")
            return
        reply = self.core.on_datagram(data, ip, endpoints, self._interfaces.get(now), now)
        if reply is None:
            return
        transport = reply_from
        if transport is None:
            same_family = [(a, t) for a, t in self._ucast if a.version == ip.version]
            if not same_family:
                return
            transport = same_family[best_match(ip, [a for a, _ in same_family])][1]
        transport.sendto(reply, source)

    def close(self) -> None:
        """Stop answering and close every socket (idempotent)."""
        if self.closed:
            return
        self.closed = True
        _close_all(t for t in (self._mcast, self._unicast) if t is not None)
        _close_all(t for _, t in self._ucast)
        self._ucast.clear()


async def start_udp_responder(
    zid: ZenohId,
    whatami: WhatAmI,
    locators: Callable[[], Sequence[str]],
    *,
    address: str = DEFAULT_ADDRESS,
    interface: str = DEFAULT_INTERFACE,
    ttl: int = DEFAULT_TTL,
    multicast: bool = True,
    unicast: str | None = None,
    interfaces: Callable[[], Sequence[Interface]] = list_interfaces,
) -> UdpResponder:
    """Answer SCOUTs for the node ``zid``; ``locators()`` gives its listen endpoints.

    ``multicast=False`` with ``unicast="HOST:PORT"`` runs only the unicast responder.
    Raises OSError when a socket cannot be opened, UsageError on bad arguments.
    """
    if not multicast and unicast is None:
        raise UsageError("a scouting responder needs multicast, a unicast address, or both")
    loop = asyncio.get_running_loop()
    cache = InterfaceCache(interfaces)
    resp = UdpResponder(ResponderCore(zid, whatami), locators, cache)
    try:
        if multicast:
            group, port = parse_socket_address(address, "scouting/multicast/address")
            ifaces = multicast_interfaces(interface, cache.get(loop.time()))
            if not ifaces:
                raise OSError(errno.ENODEV, f"no interface matches scouting/multicast/interface {interface!r}")
            resp.scout_interfaces = ifaces
            for iface in ifaces:
                try:
                    sock = open_unicast_socket(iface, ttl)
                except OSError as exc:
                    log.warning("no scouting socket for interface %s: %s", iface, exc)
                    continue
                t = await _endpoint(sock, lambda d, a: None)  # HELLOs go out; nothing comes in
                resp._ucast.append((iface, t))
                resp._own.add((str(iface), sock.getsockname()[1]))
            if not resp._ucast:
                raise OSError("could not open a scouting socket on any interface")
            msock = open_multicast_socket(group, port, ifaces, ttl)
            resp._mcast = await _endpoint(msock, lambda d, a: resp._answer(d, a, None))
            resp.multicast_address = (str(group), port)
        if unicast is not None:
            host, port = parse_socket_address(unicast, "pyzenoh/scouting/unicast")
            usock = open_unicast_socket(host, ttl, (str(host), port))
            holder: list[asyncio.DatagramTransport] = []
            t = await _endpoint(usock, lambda d, a: resp._answer(d, a, holder[0] if holder else None))
            holder.append(t)
            resp._unicast = t
            bound = usock.getsockname()
            resp.unicast_address = (str(bound[0]), int(bound[1]))
    except BaseException:
        resp.close()
        raise
    log.info(
        "scouting: answering SCOUTs as %s %s on %s%s",
        whatami,
        zid,
        f"{address} via {', '.join(map(str, resp.scout_interfaces))}" if multicast else "",
        f" and udp {resp.unicast_address[0]}:{resp.unicast_address[1]}" if resp.unicast_address else "",
    )
    return resp


# --- scouter -------------------------------------------------------------------------------


class UdpScouter:
    """SCOUTs sent on zenoh's schedule; iterate (``async for``) to get matching HELLOs.

    Ends (StopAsyncIteration) after ``timeout`` seconds when one is given, or at
    :meth:`close`. Use as an async context manager so its sockets are always closed.
    """

    def __init__(
        self,
        what: WhatAmIMatcher | str = WhatAmIMatcher.ROUTER | WhatAmIMatcher.PEER,
        *,
        address: str = DEFAULT_ADDRESS,
        interface: str = DEFAULT_INTERFACE,
        ttl: int = DEFAULT_TTL,
        multicast: bool = True,
        targets: Sequence[str] = (),
        timeout: float | None = None,
        interfaces: Callable[[], Sequence[Interface]] = list_interfaces,
    ) -> None:
        self.what = WhatAmIMatcher.parse(what)
        self.group = parse_socket_address(address, "scouting/multicast/address")
        self.targets = [parse_socket_address(t, "scouting target") for t in targets]
        if not multicast and not self.targets:
            raise UsageError("scouting needs multicast or at least one unicast target")
        self.interface = interface
        self.ttl = ttl
        self.multicast = multicast
        self.timeout = timeout
        self._interfaces = interfaces
        self._core: ScouterCore | None = None
        self._sockets: list[tuple[IPAddress, asyncio.DatagramTransport]] = []
        self._queue: asyncio.Queue[Hello] = asyncio.Queue(SCOUTER_QUEUE)
        self._end: float | None = None
        self._closed = False
        self.dropped = 0

    async def start(self) -> Self:
        loop = asyncio.get_running_loop()
        now = loop.time()
        ifaces: list[IPAddress] = []
        if self.multicast:
            ifaces = multicast_interfaces(self.interface, self._interfaces())
            if not ifaces:
                raise OSError(errno.ENODEV, f"no interface matches scouting/multicast/interface {self.interface!r}")
        families = {a.version for a, _ in self.targets}
        for fam in sorted(families - {a.version for a in ifaces}):  # targets need a socket
            ifaces.append(ipaddress.IPv4Address("0.0.0.0") if fam == 4 else ipaddress.IPv6Address("::"))
        try:
            for iface in ifaces:
                try:
                    sock = open_unicast_socket(iface, self.ttl)
                except OSError as exc:
                    log.debug("no scouting socket for interface %s: %s", iface, exc)
                    continue
                self._sockets.append((iface, await _endpoint(sock, self._on_datagram)))
            if not self._sockets:
                raise OSError("could not open a scouting socket on any interface")
        except BaseException:
            self.close()
            raise
        self._core = ScouterCore(self.what, now)
        self._end = None if self.timeout is None else now + self.timeout
        return self

    def _on_datagram(self, data: bytes, source: Address) -> None:
        if self._core is None or self._closed:
            return
        hello = self._core.on_datagram(data)
        if hello is None:
            return
        try:
            self._queue.put_nowait(hello)
        except asyncio.QueueFull:
            self.dropped += 1

    def _send_due(self, now: float) -> None:
        core = self._core
        if core is None or not core.handle_timer(now):
            return
        group_ip, group_port = self.group
        for iface, t in self._sockets:
            if self.multicast and iface.version == group_ip.version:
                t.sendto(core.scout, (str(group_ip), group_port))
        for ip, port in self.targets:
            for iface, t in self._sockets:
                if iface.version == ip.version:
                    t.sendto(core.scout, (str(ip), port))
                    break

    def __aiter__(self) -> UdpScouter:
        return self

    async def __anext__(self) -> Hello:
        if self._core is None:
            raise UsageError("start() the scouter (or use it with async with) first")
        loop = asyncio.get_running_loop()
        while not self._closed:
            if not self._queue.empty():
                return self._queue.get_nowait()
            now = loop.time()
            if self._end is not None and now >= self._end:
                break
            self._send_due(now)
            wake = self._core.next_deadline()
            if self._end is not None:
                wake = min(wake, self._end)
            with contextlib.suppress(TimeoutError):
                return await asyncio.wait_for(self._queue.get(), max(wake - now, 0.0))
        raise StopAsyncIteration

    def close(self) -> None:
        self._closed = True
        _close_all(t for _, t in self._sockets)
        self._sockets.clear()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def scout(
    what: WhatAmIMatcher | str = WhatAmIMatcher.ROUTER | WhatAmIMatcher.PEER,
    *,
    address: str = DEFAULT_ADDRESS,
    interface: str = DEFAULT_INTERFACE,
    ttl: int = DEFAULT_TTL,
    multicast: bool = True,
    targets: Sequence[str] = (),
    timeout: float | None = None,
    interfaces: Callable[[], Sequence[Interface]] = list_interfaces,
) -> UdpScouter:
    """``async with scout("router", timeout=3.0) as s: async for hello in s: ...``"""
    return UdpScouter(
        what,
        address=address,
        interface=interface,
        ttl=ttl,
        multicast=multicast,
        targets=targets,
        timeout=timeout,
        interfaces=interfaces,
    )


# --- ``pyzenoh scout`` -----------------------------------------------------------------------


def register_cli(subparsers: Any) -> None:
    """``pyzenoh scout``: print the nodes answering SCOUTs (registered by pyzenoh.cli)."""
    p = subparsers.add_parser("scout", help="find Zenoh nodes by multicast scouting (SCOUT/HELLO)")
    p.add_argument(
        "--what",
        default="router|peer",
        help="kinds of node to find, e.g. router, peer, router|peer|client (default router|peer)",
    )
    p.add_argument("--timeout", type=float, default=3.0, help="seconds to scout (default 3)")
    p.add_argument("--address", default=DEFAULT_ADDRESS, help=f"multicast group (default {DEFAULT_ADDRESS})")
    p.add_argument(
        "--interface",
        default=DEFAULT_INTERFACE,
        help="interface name(s) or address(es), comma-separated (default auto)",
    )
    p.add_argument("--ttl", type=int, default=DEFAULT_TTL, help="multicast TTL (default 1)")
    p.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="HOST:PORT",
        help="also send SCOUTs straight to this UDP address, repeatable",
    )
    p.add_argument("--no-multicast", action="store_true", help="only scout the --target addresses")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(handler=_cli_scout)


def _cli_scout(args: argparse.Namespace) -> int:
    try:
        found = asyncio.run(_cli_scout_async(args))
    except (UsageError, OSError) as exc:
        log.error("%s", exc)
        return 2
    return 0 if found else 1


async def _cli_scout_async(args: argparse.Namespace) -> int:
    seen: set[tuple[str, str, tuple[str, ...]]] = set()
    async with scout(
        args.what,
        address=args.address,
        interface=args.interface,
        ttl=args.ttl,
        multicast=not args.no_multicast,
        targets=args.target,
        timeout=max(args.timeout, 0.0),
    ) as scouter:
        async for hello in scouter:
            key = (str(hello.zid), str(hello.whatami), hello.locators)
            if key in seen:  # every node answers each SCOUT round: print it once
                continue
            seen.add(key)
            if args.json:
                print(json.dumps({"zid": key[0], "whatami": key[1], "locators": list(key[2])}), flush=True)
            else:
                print(f"{key[0]}  {key[1]:<6}  {' '.join(key[2]) or '-'}", flush=True)
    return len(seen)
