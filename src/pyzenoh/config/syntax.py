"""The string syntaxes a configuration checks, as eclipse-zenoh 1.10.2 parses them.

Each ``*_why`` function returns why a string is not of its syntax (None: it is), for
:class:`~pyzenoh.config.nodes.TextV`. tests/config/test_differential.py compares each
with zenoh on generated strings.
"""

from __future__ import annotations

import ipaddress
import re

from pyzenoh.config.nodes import U64
from pyzenoh.keyexpr.canon import is_canonical

_ZID = re.compile(r"[1-9a-f][0-9a-f]{0,31}")


def zid_why(s: str) -> str | None:
    if _ZID.fullmatch(s):
        return None
    if not s:
        return "empty"
    if s != s.lower():
        return "uppercase hexadecimal is not accepted"
    if s.startswith("0"):
        return "leading 0s are not valid"
    if len(s) > 32:
        return "longer than 16 bytes"
    return "not hexadecimal"


def keyexpr_why(s: str) -> str | None:
    return None if is_canonical(s) else "not a canonical key expression"


def nonwild_why(s: str) -> str | None:
    if not is_canonical(s):
        return "not a canonical key expression"
    if any(c in ("*", "**") or "$*" in c for c in s.split("/")):
        return "wildcards are not allowed"
    return None


def _params_ok(s: str) -> bool:
    # zenoh's parameters: ';'-separated, at least one non-empty item, no empty key.
    items = [p for p in s.split(";") if p]
    return bool(items) and all(p.partition("=")[0] for p in items)


def endpoint_why(s: str) -> str | None:
    """Why ``s`` is not an endpoint in zenoh's syntax, ``<proto>/<address>[?<metadata>][#<config>]``."""
    form = "expected <protocol>/<address>[?<metadata>][#<config>]"
    p = s.find("/")
    if p <= 0 or p == len(s) - 1:
        return form
    m, c = s.find("?"), s.find("#")
    if m < 0 and c < 0:
        return None
    if m >= 0 and c < 0:
        parts = [s[m + 1 :]] if m > p else []
    elif c >= 0 and m < 0:
        parts = [s[c + 1 :]] if c > p else []
    else:
        parts = [s[m + 1 : c], s[c + 1 :]] if p < m < c else []
    if not parts or not all(parts):
        return form
    if not all(_params_ok(x) for x in parts):
        return "metadata and config must hold key=value items with non-empty keys"
    return None


_V4 = re.compile(r"(0|[1-9][0-9]{0,2})(\.(0|[1-9][0-9]{0,2})){3}")
_PORT = re.compile(r"[0-9]+")


def socket_address_why(s: str) -> str | None:
    """Why ``s`` is not an IP:PORT (``[v6]:PORT``) socket address, as Rust parses them."""
    host, sep, port = s.rpartition(":")
    if not sep or not _PORT.fullmatch(port) or int(port) > 0xFFFF:
        return "expected IP:PORT"
    if host.startswith("[") and host.endswith("]"):
        addr, percent, scope = host[1:-1].partition("%")
        try:
            ok = isinstance(ipaddress.ip_address(addr), ipaddress.IPv6Address)
        except ValueError:
            ok = False
        # Rust takes a numeric scope id only ("[fe80::1%2]:7446").
        ok = ok and (not percent or (scope.isascii() and scope.isdigit()))
    else:
        ok = _V4.fullmatch(host) is not None and all(int(x) < 256 for x in host.split("."))
    return None if ok else "expected IP:PORT (IPv6 in brackets)"


def _u64_text(s: str) -> bool:
    """Whether Rust's ``u64::from_str`` takes ``s`` (digits, an optional leading +)."""
    digits = s.removeprefix("+")
    return digits.isascii() and digits.isdigit() and int(digits) <= U64[1]


def range_why(s: str) -> str | None:
    lo, sep, hi = s.partition("..")
    if not sep:
        return "expected START..END"
    if not all(not b or _u64_text(b) for b in (lo, hi)):
        return "bounds must be unsigned integers (or empty)"
    return None
