"""The @adv protocol bits both sides share: key expressions, sequence numbers, parameters.

Advanced publishers and subscribers meet on ``<key>/@adv/<pub|sub>/<zid>/<eid|uhlc>/_``
(:func:`parse_adv` splits such a key up). Sequence numbers are u32 that wrap, ordered as
zenoh-ext's ``WrappingSn`` (:func:`sn_cmp`). A recovery or history query asks a cache
for ``_sn`` (a range of sequence numbers), ``_max`` (the last N samples) and ``_time``
(a time range: ``[now(-10s)..]``, RFC 3339 times, ``[a;duration]``).
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pyzenoh.ext.advanced.config import HistoryConfig
from pyzenoh.session import ZenohId

#: How long the subscriber's queries wait for replies (zenoh-ext's default query_timeout).
QUERY_TIMEOUT_S = 10.0

ADV = "@adv"
UHLC = "uhlc"
EMPTY = "_"
SN_MOD = 1 << 32
_SN_HALF = (1 << 31) - 1  # u32::MAX / 2


# --- key expressions ----------------------------------------------------------------------


def join_key(key: str, *chunks: str) -> str:
    return "/".join((key, *chunks))


@dataclass(frozen=True, slots=True)
class AdvKey:
    """``<key>/@adv/<entity>/<zid>/<eid>/<meta>`` split up."""

    entity: str
    zid: str
    eid: str


def parse_adv(key: str) -> AdvKey | None:
    chunks = key.split("/")
    for i in range(1, len(chunks) - 3):
        if chunks[i] == ADV:
            return AdvKey(chunks[i + 1], chunks[i + 2], chunks[i + 3])
    return None


def zid_of(text: str) -> ZenohId | None:
    try:
        zid = ZenohId.from_str(text)
    except Exception:  # noqa: BLE001  (any malformed id is just not a zid)
        return None
    return zid


def eid_of(text: str) -> int | None:
    if not text.isdigit():
        return None
    value = int(text)
    return value if value < SN_MOD else None


# --- sequence numbers ---------------------------------------------------------------------


def sn_cmp(a: int, b: int) -> int:
    """zenoh-ext's WrappingSn order: -1, 0 or 1."""
    sub = (a - b) % SN_MOD
    if sub == 0:
        return 0
    return 1 if sub <= _SN_HALF else -1


def sn_add(a: int, n: int) -> int:
    return (a + n) % SN_MOD


def sn_sorted(sns: Iterator[int] | list[int]) -> list[int]:
    return sorted(sns, key=functools.cmp_to_key(sn_cmp))


def _parse_sn(text: str) -> int | None:
    try:
        value = int(text, 10)
    except ValueError:
        return None
    if not text.isdigit() or not 0 <= value < SN_MOD:
        return None
    return value


def sn_range(text: str) -> tuple[int | None, int | None]:
    """``_sn``'s ``a..b`` / ``a..`` / ``..b`` / ``a`` (bounds included; None: unbounded)."""
    if ".." in text:
        start_text, _, end_text = text.partition("..")
        return _parse_sn(start_text), _parse_sn(end_text.split("..")[0])
    sn = _parse_sn(text)
    return sn, sn


def in_sn_range(sn: int, rng: tuple[int | None, int | None]) -> bool:
    start, end = rng
    if start is not None and sn_cmp(sn, start) < 0:
        return False
    return end is None or sn_cmp(sn, end) <= 0


def sn_selector(start: int | None, end: int | None) -> str:
    return f"_sn={'' if start is None else start}..{'' if end is None else end}"


# --- time ranges and history parameters ---------------------------------------------------


_UNITS = {"u": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def _duration(text: str) -> float:
    m = re.fullmatch(r"(.*?)(u|ms|s|m|h|d|w)?", text)
    assert m is not None
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


def _time_expr(text: str, now: float) -> float:
    """A time in seconds since the epoch: ``now()``, ``now(-10s)`` or an RFC 3339 time."""
    if text.startswith("now(") and text.endswith(")"):
        inner = text[4:-1]
        if not inner:
            return now
        if inner.startswith("-"):
            return now - _duration(inner[1:])
        return now + _duration(inner)
    value = _dt.datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.UTC)
    return value.timestamp()


def time_filter(text: str) -> Callable[[float], bool] | None:
    """``_time``'s range (``[a..b]``, ``]a..b[``, ``[a;duration]``) as a predicate on
    seconds since the epoch; None if it does not parse (then nothing is filtered)."""
    try:
        if len(text) < 4 or text[0] not in "[]" or text[-1] not in "[]":
            return None
        incl_start, incl_end = text[0] == "[", text[-1] == "]"
        body = text[1:-1]
        now = time.time()
        start: float | None
        end: float | None
        if ".." in body:
            a, _, b = body.partition("..")
            start = _time_expr(a, now) if a else None
            end = _time_expr(b, now) if b else None
        elif ";" in body:
            a, _, d = body.partition(";")
            if not a:
                return None
            start = _time_expr(a, now)
            end = start + _duration(d)
        else:
            return None
    except (ValueError, KeyError):
        return None

    def contains(t: float) -> bool:
        if start is not None and (start > t if incl_start else start >= t):
            return False
        if end is not None:
            return end >= t if incl_end else end > t
        return True

    return contains


def _seconds_text(secs: float) -> str:
    """A duration as Rust's f64 Display writes it (``10``, ``1.5``)."""
    text = repr(float(secs))
    return text.removesuffix(".0")


def history_params(conf: HistoryConfig) -> str:
    params = []
    if conf.max_samples is not None:
        params.append(f"_max={conf.max_samples}")
    if conf.max_age is not None:
        params.append(f"_time=[now({_seconds_text(-conf.max_age)}s)..]")
    return ";".join(params)
