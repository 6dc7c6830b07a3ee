"""Sans-IO scouting: settings, interface selection, HELLO contents, responder and scouter.

Nothing here opens a socket or reads a clock: the asyncio glue (:mod:`.udp`) passes in
datagrams, the interface list and ``now`` (seconds), and sends what comes back.

Behaviour of eclipse-zenoh 1.10.2, measured on loopback (zenoh-mesh.md 3) and read from
``zenoh/src/net/runtime/orchestrator.rs``:

* a node answers a SCOUT only when the SCOUT's ``what`` includes its own kind, with one
  HELLO sent unicast back to the SCOUT's source address, from the scout socket whose
  interface address best matches the source (longest run of equal leading octets);
* the HELLO lists the listen locators; a wildcard listener (``0.0.0.0`` / ``[::]``) is
  expanded to the addresses of the interfaces that are up, loopback addresses only when
  the SCOUT came from a loopback address; explicitly configured addresses are always
  listed as they are (1.10.2 advertised ``tcp/127.0.0.1:P`` to a non-loopback scouter);
* a scouter sends its SCOUT at once, then after 1 s, 2 s, 4 s, then every 8 s, and
  reports every HELLO matching its ``what`` (the same node again at every round);
* nodes never send a HELLO on their own.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyzenoh.codec.primitives import WhatAmI, ZenohId
from pyzenoh.codec.scouting import (
    PROTOCOL_VERSION,
    Hello,
    Scout,
    ScoutingDecodeError,
    WhatAmIMatcher,
    decode_scouting_message,
    encode_scouting_message,
)
from pyzenoh.errors import UsageError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_ADDRESS = "224.0.0.224:7446"
#: Changes pyzenoh's default group (a config's ``scouting/multicast/address`` still wins):
#: a lab, or a test suite running in parallel, keeps its nodes apart with it.
ADDRESS_ENV = "PYZENOH_SCOUTING_ADDRESS"
DEFAULT_INTERFACE = "auto"
DEFAULT_TTL = 1
DEFAULT_TIMEOUT_MS = 3_000
DEFAULT_DELAY_MS = 500

#: SCOUT periods of zenoh's scout loop (orchestrator.rs SCOUT_*_PERIOD).
SCOUT_INITIAL_PERIOD_S = 1.0
SCOUT_MAX_PERIOD_S = 8.0
SCOUT_PERIOD_FACTOR = 2.0

#: HELLOs a responder sends per second at most (burst of the same size): a SCOUT with a
#: forged source would otherwise make us a reflector (3 bytes in, ~100 bytes out).
MAX_ANSWERS_PER_S = 200.0

NO_KINDS = WhatAmIMatcher(0)
#: zenoh's per-mode defaults for ``scouting/multicast/autoconnect`` (defaults.rs).
_AUTOCONNECT_DEFAULT = {
    "router": WhatAmIMatcher.empty(),
    "peer": WhatAmIMatcher.all(),
    "client": WhatAmIMatcher.all(),
}
_MODES = ("router", "peer", "client")


# --- settings ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScoutingSettings:
    """zenoh's ``scouting`` keys for one node (defaults: a router's, as zenohd runs it).

    ``unicast`` is pyzenoh's own (``pyzenoh/scouting/unicast``, ``"HOST:PORT"``): a UDP
    socket that also answers SCOUTs sent straight to it, for networks without multicast.
    """

    enabled: bool = True
    address: str = DEFAULT_ADDRESS
    interface: str = DEFAULT_INTERFACE
    ttl: int = DEFAULT_TTL
    listen: bool = True
    autoconnect: WhatAmIMatcher = NO_KINDS  # routers autoconnect to nothing
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    delay_ms: int = DEFAULT_DELAY_MS
    unicast: str | None = None
    #: the kinds ``autoconnect_strategy`` says "greater-zid" for (zenoh's default: none,
    #: "always")
    greater_zid_only: WhatAmIMatcher = NO_KINDS

    def __post_init__(self) -> None:
        group, _ = parse_socket_address(self.address, "scouting/multicast/address")
        if not group.is_multicast:
            raise UsageError(f"scouting/multicast/address {self.address!r} is not a multicast group")
        if not 0 <= self.ttl <= 255:
            raise UsageError(f"scouting/multicast/ttl {self.ttl} out of range 0..255")
        if self.timeout_ms < 0 or self.delay_ms < 0:
            raise UsageError("scouting/timeout and scouting/delay must be >= 0")
        if not self.interface.strip():
            raise UsageError("scouting/multicast/interface is empty")
        if self.unicast is not None:
            parse_socket_address(self.unicast, "pyzenoh/scouting/unicast")

    def should_autoconnect(self, own: ZenohId, other: ZenohId, whatami: WhatAmI) -> bool:
        """zenoh's ``AutoConnect::should_autoconnect``: ``other``'s kind is among the
        autoconnect kinds and, where the strategy is "greater-zid", ``own`` is the
        greater zid (so of two such nodes only one dials)."""
        if other == own or not self.autoconnect.matches(whatami):
            return False
        return not self.greater_zid_only.matches(whatami) or own.value > other.value

    @property
    def group(self) -> tuple[IPAddress, int]:
        return parse_socket_address(self.address, "scouting/multicast/address")

    @property
    def timeout_s(self) -> float:
        return self.timeout_ms / 1000.0


def default_address() -> str:
    """zenoh's multicast group, unless :data:`ADDRESS_ENV` names another."""
    return os.environ.get(ADDRESS_ENV) or DEFAULT_ADDRESS


def parse_scouting(tree: Mapping[str, Any], mode: str) -> ScoutingSettings:
    """Read zenoh's ``scouting`` keys (and ``pyzenoh/scouting``) for a node in ``mode``.

    Mode-dependent keys (``listen``, ``autoconnect``) take a single value or a
    ``{router: .., peer: .., client: ..}`` object, as zenoh's config does. Bad values
    raise :class:`~pyzenoh.errors.UsageError`.
    """
    if mode not in _MODES:
        raise UsageError(f"unknown mode {mode!r}")
    if not isinstance(tree, Mapping):
        raise UsageError("a config must be a JSON object")
    scouting = _section(tree, "scouting")
    mcast = _section(scouting, "multicast", "scouting/")
    own = _section(_section(tree, "pyzenoh"), "scouting", "pyzenoh/")
    enabled = _bool(mcast.get("enabled"), True, "scouting/multicast/enabled")
    address = _str(mcast.get("address"), default_address(), "scouting/multicast/address")
    interface = _str(mcast.get("interface"), DEFAULT_INTERFACE, "scouting/multicast/interface")
    ttl = _int(mcast.get("ttl"), DEFAULT_TTL, "scouting/multicast/ttl")
    listen = _bool(_by_mode(mcast.get("listen"), mode), True, "scouting/multicast/listen")
    raw_auto = _by_mode(mcast.get("autoconnect"), mode)
    if raw_auto is None:
        autoconnect = _AUTOCONNECT_DEFAULT[mode]
    elif isinstance(raw_auto, str | list):
        autoconnect = WhatAmIMatcher.parse(raw_auto)
    else:
        raise UsageError("scouting/multicast/autoconnect must list router, peer or client")
    timeout = _int(scouting.get("timeout"), DEFAULT_TIMEOUT_MS, "scouting/timeout")
    delay = _int(scouting.get("delay"), DEFAULT_DELAY_MS, "scouting/delay")
    unicast = own.get("unicast")
    if unicast is not None and not isinstance(unicast, str):
        raise UsageError('pyzenoh/scouting/unicast must be a "HOST:PORT" string')
    strategy = _strategy(_by_strategy_mode(mcast.get("autoconnect_strategy"), mode))
    return ScoutingSettings(enabled, address, interface, ttl, listen, autoconnect, timeout, delay, unicast, strategy)


_STRATEGIES = ("always", "greater-zid")
_TARGETS = {"to_router": WhatAmI.ROUTER, "to_peer": WhatAmI.PEER, "to_client": WhatAmI.CLIENT}


def _by_strategy_mode(value: Any, mode: str) -> Any:
    """``autoconnect_strategy`` is a strategy, a ``{to_router: ..}`` map, or either of
    them per mode (``{peer: {to_peer: "greater-zid"}}``)."""
    if isinstance(value, Mapping) and value and set(value) <= set(_MODES):
        return value.get(mode)
    return value


def _strategy(value: Any) -> WhatAmIMatcher:
    """The kinds a strategy value says "greater-zid" for."""
    if value is None:
        return NO_KINDS
    if isinstance(value, str):
        per_target = {kind: value for kind in _TARGETS}
    elif isinstance(value, Mapping):
        per_target = {k: v for k, v in value.items() if v is not None}
    else:
        raise UsageError('scouting/multicast/autoconnect_strategy must be "always", "greater-zid" or a map of them')
    greater = NO_KINDS
    for target, strategy in per_target.items():
        if target not in _TARGETS:
            continue  # zenoh drops unknown targets (the config check names them)
        if strategy not in _STRATEGIES:
            raise UsageError(
                f"scouting/multicast/autoconnect_strategy/{target}: {strategy!r} is not one of {_STRATEGIES}"
            )
        if strategy == "greater-zid":
            greater |= WhatAmIMatcher.parse(_TARGETS[target])
    return greater


def _section(tree: Mapping[str, Any], key: str, prefix: str = "") -> Mapping[str, Any]:
    value = tree.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise UsageError(f"config {prefix}{key} must be an object")
    return value


def _by_mode(value: Any, mode: str) -> Any:
    if isinstance(value, Mapping):
        unknown = set(value) - set(_MODES)
        if unknown:
            raise UsageError(f"unknown modes {sorted(unknown)} in a mode-dependent value")
        return value.get(mode)
    return value


def _bool(value: Any, default: bool, name: str) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise UsageError(f"config {name} must be true or false, got {value!r}")
    return value


def _int(value: Any, default: int, name: str) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"config {name} must be an integer >= 0, got {value!r}")
    return value


def _str(value: Any, default: str, name: str) -> str:
    if value is None:
        return default
    if not isinstance(value, str):
        raise UsageError(f"config {name} must be a string, got {value!r}")
    return value


def parse_socket_address(text: str, name: str = "address") -> tuple[IPAddress, int]:
    """``"224.0.0.224:7446"`` or ``"[ff02::1]:7446"`` -> (address, port)."""
    host, sep, port_text = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        ip = ipaddress.ip_address(host) if sep else None
        port = int(port_text)
    except ValueError:
        ip = None
        port = -1
    if ip is None or not 0 <= port <= 0xFFFF:
        raise UsageError(f"{name} {text!r} is not IP:PORT")
    return ip, port


# --- interfaces ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Interface:
    """One network interface as the OS reports it (the glue builds these)."""

    name: str
    addresses: tuple[IPAddress, ...]
    up: bool = True
    running: bool = True
    multicast: bool = True
    loopback: bool = False

    @property
    def active(self) -> bool:
        return self.up and self.running


def multicast_interfaces(spec: str, interfaces: Sequence[Interface]) -> list[IPAddress]:
    """The interface addresses scouting sockets use, from ``scouting/multicast/interface``.

    ``"auto"``: the first IPv4 address of each active multicast-capable interface (zenoh's
    rule, which skips ``lo`` when it has no MULTICAST flag); when there is none, the IPv4
    wildcard (the kernel picks; zenoh would pick ``[::]``, useless for an IPv4 group).
    Otherwise a comma-separated list of interface names (first IPv4 address) or addresses;
    unknown names are skipped, as zenoh does.
    """
    if spec.strip() == "auto":
        found: list[IPAddress] = [a for a in (_first_v4(i) for i in interfaces if i.active and i.multicast) if a]
        return found or [ipaddress.IPv4Address("0.0.0.0")]
    out: list[IPAddress] = []
    for raw in spec.split(","):
        name = raw.strip()
        if not name:
            continue
        try:
            out.append(ipaddress.ip_address(name))
            continue
        except ValueError:
            pass
        v4s = [_first_v4(i) for i in interfaces if i.name == name]
        out.extend(a for a in v4s[:1] if a is not None)
    return list(dict.fromkeys(out))


def _first_v4(iface: Interface) -> ipaddress.IPv4Address | None:
    for a in iface.addresses:
        if isinstance(a, ipaddress.IPv4Address):
            return a
    return None


def best_match(peer: IPAddress, candidates: Sequence[IPAddress]) -> int:
    """Index of the candidate sharing the most leading octets with ``peer`` (the last one
    on ties, as Rust's ``max_by``); ``candidates`` must not be empty."""
    pb = peer.packed
    best, best_len = 0, -1
    for i, cand in enumerate(candidates):
        n = 0
        for x, y in zip(pb, cand.packed, strict=False):
            if x != y:
                break
            n += 1
        if n >= best_len:
            best, best_len = i, n
    return best


# --- HELLO locators ------------------------------------------------------------------------

_PRIVATE_V4 = tuple(ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
_LINK_LOCAL_V4 = ipaddress.ip_network("169.254.0.0/16")
_LINK_LOCAL_V6 = ipaddress.ip_network("fe80::/10")
_BROADCAST_V4 = ipaddress.IPv4Address("255.255.255.255")


def hello_locators(endpoints: Sequence[str], interfaces: Sequence[Interface], peer: IPAddress) -> list[str]:
    """The locators a HELLO to ``peer`` lists, from our listen endpoints."""
    with_loopback = peer.is_loopback
    out: list[str] = []
    for ep in endpoints:
        proto, _, rest = ep.partition("/")
        rest = rest.split("#", 1)[0]  # a config part is never advertised
        address, qmark, metadata = rest.partition("?")
        host, port = _split_host_port(address)
        ip = _ip_or_none(host)
        if ip is None or not ip.is_unspecified:
            out.append(f"{proto}/{address}{qmark}{metadata}")
            continue
        for a in _expand(ip, interfaces, with_loopback):
            host_text = f"[{a}]" if a.version == 6 else str(a)
            out.append(f"{proto}/{host_text}:{port}{qmark}{metadata}")
    return list(dict.fromkeys(out))


def _expand(wildcard: IPAddress, interfaces: Sequence[Interface], loopback: bool) -> list[IPAddress]:
    addrs = [a for i in interfaces if i.active for a in i.addresses]
    v4 = [a for a in addrs if isinstance(a, ipaddress.IPv4Address) and (loopback or not a.is_loopback)]
    if wildcard.version == 4:
        return [a for a in v4 if not a.is_multicast]
    # zenoh's order for [::]: global IPv6, public IPv4, link-local IPv6, private IPv4
    v4 = [a for a in v4 if a not in _LINK_LOCAL_V4 and not a.is_multicast and a != _BROADCAST_V4]
    v6 = [
        a
        for a in addrs
        if isinstance(a, ipaddress.IPv6Address) and not a.is_multicast and (loopback or not a.is_loopback)
    ]
    private = [a for a in v4 if any(a in n for n in _PRIVATE_V4)]
    return (
        [a for a in v6 if a not in _LINK_LOCAL_V6]
        + [a for a in v4 if a not in private]
        + [a for a in v6 if a in _LINK_LOCAL_V6]
        + private
    )


def _split_host_port(address: str) -> tuple[str, str]:
    if address.startswith("["):
        host, _, tail = address[1:].partition("]")
        return host, tail[1:] if tail.startswith(":") else ""
    host, _, port = address.rpartition(":")
    return host, port


def _ip_or_none(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None


def peer_ip(host: str) -> IPAddress | None:
    """The address of a datagram's source as asyncio reports it (may carry ``%scope``)."""
    return _ip_or_none(host)


# --- responder -----------------------------------------------------------------------------


@dataclass(slots=True)
class ResponderStats:
    answered: int = 0
    not_for_us: int = 0
    malformed: int = 0
    rate_limited: int = 0


class ResponderCore:
    """Decides the answer to each datagram reaching a scouting responder."""

    def __init__(
        self,
        zid: ZenohId,
        whatami: WhatAmI,
        *,
        max_answers_per_s: float = MAX_ANSWERS_PER_S,
    ) -> None:
        self.zid = zid
        self.whatami = whatami
        self.stats = ResponderStats()
        self._rate = max_answers_per_s
        self._tokens = max_answers_per_s
        self._last: float | None = None

    def on_datagram(
        self,
        data: bytes,
        peer: IPAddress,
        endpoints: Sequence[str],
        interfaces: Sequence[Interface],
        now: float,
    ) -> bytes | None:
        """The HELLO datagram to send back to ``peer``, or None (not a SCOUT for us)."""
        try:
            msg = decode_scouting_message(data)
        except ScoutingDecodeError:
            self.stats.malformed += 1
            return None
        if not isinstance(msg, Scout) or not msg.what.matches(self.whatami):
            self.stats.not_for_us += 1
            return None
        if not self._take_token(now):
            self.stats.rate_limited += 1
            return None
        self.stats.answered += 1
        hello = Hello(self.whatami, self.zid, tuple(hello_locators(endpoints, interfaces, peer)))
        return encode_scouting_message(hello)

    def _take_token(self, now: float) -> bool:
        if self._last is not None:
            self._tokens = min(self._rate, self._tokens + (now - self._last) * self._rate)
        self._last = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True


# --- scouter -------------------------------------------------------------------------------


class ScouterCore:
    """When to send SCOUTs, and which received datagrams are HELLOs to report."""

    def __init__(self, what: WhatAmIMatcher, now: float, zid: ZenohId | None = None) -> None:
        if not what:
            raise UsageError("scouting for nothing: the WhatAmI matcher is empty")
        self.what = what
        self.scout = encode_scouting_message(Scout(what, zid, PROTOCOL_VERSION))
        self._next = now  # the first SCOUT goes at once
        self._period = SCOUT_INITIAL_PERIOD_S
        self.ignored = 0

    def next_deadline(self) -> float:
        return self._next

    def handle_timer(self, now: float) -> bool:
        """True when a SCOUT is due now (the caller sends :attr:`scout` everywhere)."""
        if now < self._next:
            return False
        self._next = now + self._period
        self._period = min(self._period * SCOUT_PERIOD_FACTOR, SCOUT_MAX_PERIOD_S)
        return True

    def on_datagram(self, data: bytes) -> Hello | None:
        """A HELLO from a node of a kind we asked for, else None (counted in ``ignored``)."""
        try:
            msg = decode_scouting_message(data)
        except ScoutingDecodeError:
            self.ignored += 1
            return None
        if isinstance(msg, Hello) and self.what.matches(msg.whatami):
            return msg
        self.ignored += 1
        return None
