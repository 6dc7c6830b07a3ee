"""The interceptors' JSON5 sections as zenohd 1.10.2 reads them: ``downsampling``,
``low_pass_filter`` and ``qos/network``. Field names, required fields and the errors
were checked against zenoh 1.10.2's config (docs/interceptors.md): an empty list where
zenohd wants a non-empty one, an unknown field or value, a missing field, or an id given
twice is refused."""

from __future__ import annotations

from typing import Any

from pyzenoh.errors import UsageError
from pyzenoh.interceptors.downsampling import DownsamplingItem, Rule
from pyzenoh.interceptors.low_pass import LowPassItem
from pyzenoh.interceptors.qos_overwrite import CONGESTION, PRIORITIES, QOS_KINDS, QosItem
from pyzenoh.interceptors.subjects import LINK_PROTOCOLS, Flow, Kind, Rewrite, Subjects, bad
from pyzenoh.keyexpr.canon import validate

_SUBJECT_FIELDS = {"id", "interfaces", "link_protocols", "flows", "messages"}


def _fields(path: str, item: Any, allowed: set[str], required: set[str]) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise bad(path, "expected an object")
    unknown = set(item) - allowed
    if unknown:
        raise bad(path, f"unknown field {min(unknown)!r}")
    missing = required - set(item)
    if missing:
        raise bad(path, f"missing field {min(missing)!r}")
    return item


def _nonempty(path: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise bad(path, "expected a list")
    if not value:
        raise bad(path, "Given collection was empty")
    return value


def _strings(path: str, value: Any, allowed: frozenset[str] | None = None) -> frozenset[str]:
    out = set()
    for v in _nonempty(path, value):
        if not isinstance(v, str) or (allowed is not None and v not in allowed):
            raise bad(path, f"unknown variant {v!r}")
        out.add(v)
    return frozenset(out)


def _subjects(path: str, item: dict[str, Any]) -> Subjects:
    ifs = item.get("interfaces")
    lps = item.get("link_protocols")
    flows = item.get("flows")
    return Subjects(
        interfaces=None if ifs is None else _strings(f"{path}/interfaces", ifs),
        link_protocols=None if lps is None else _strings(f"{path}/link_protocols", lps, LINK_PROTOCOLS),
        flows=frozenset(Flow)
        if flows is None
        else frozenset(Flow(f) for f in _strings(f"{path}/flows", flows, frozenset(f.value for f in Flow))),
    )


def _kinds(path: str, value: Any, allowed: frozenset[Kind]) -> frozenset[Kind]:
    return frozenset(Kind(v) for v in _strings(path, value, frozenset(k.value for k in allowed)))


def _keys(path: str, value: Any) -> tuple[str, ...]:
    out = []
    for k in _nonempty(path, value):
        if not isinstance(k, str):
            raise bad(path, "expected key expressions")
        out.append(validate(k))
    return tuple(out)


def _ids(section: str, items: list[Any]) -> list[str]:
    ids: list[str] = []
    for i, item in enumerate(items):
        ident = item.get("id") if isinstance(item, dict) else None
        if ident is not None and ident in ids:
            raise UsageError(f"Invalid {section} config: id {ident!r} is repeated")
        ids.append(str(ident) if ident is not None else str(i))
    return ids


def _list(section: str, value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad(section, "expected a list")
    return value


def parse_downsampling(value: Any) -> tuple[DownsamplingItem, ...]:
    items = _list("downsampling", value)
    out = []
    for ident, (i, item) in zip(_ids("Downsampling", items), enumerate(items), strict=True):
        path = f"downsampling/{i}"
        item = _fields(path, item, _SUBJECT_FIELDS | {"rules"}, {"messages", "rules"})
        rules = []
        for j, r in enumerate(_nonempty(f"{path}/rules", item["rules"])):
            r = _fields(f"{path}/rules/{j}", r, {"key_expr", "freq"}, {"key_expr", "freq"})
            if not isinstance(r["freq"], int | float) or isinstance(r["freq"], bool):
                raise bad(f"{path}/rules/{j}/freq", "expected a number")
            rules.append(Rule(validate(r["key_expr"]), float(r["freq"])))
        out.append(
            DownsamplingItem(
                ident,
                _subjects(path, item),
                _kinds(f"{path}/messages", item["messages"], frozenset(Kind)),
                tuple(rules),
            )
        )
    return tuple(out)


def parse_low_pass(value: Any) -> tuple[LowPassItem, ...]:
    items = _list("low_pass_filter", value)
    out = []
    for ident, (i, item) in zip(_ids("LowPassFilter", items), enumerate(items), strict=True):
        path = f"low_pass_filter/{i}"
        item = _fields(
            path, item, _SUBJECT_FIELDS | {"key_exprs", "size_limit"}, {"messages", "key_exprs", "size_limit"}
        )
        limit = item["size_limit"]
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            raise bad(f"{path}/size_limit", "expected a non-negative integer")
        out.append(
            LowPassItem(
                ident,
                _subjects(path, item),
                _kinds(f"{path}/messages", item["messages"], frozenset(Kind)),
                _keys(f"{path}/key_exprs", item["key_exprs"]),
                limit,
            )
        )
    return tuple(out)


def _range(path: str, value: Any) -> tuple[int | None, int | None]:
    if value is None:
        return None, None
    if not isinstance(value, str) or ".." not in value:
        raise bad(path, "invalid range")
    lo, hi = value.split("..", 1)
    try:
        return (int(lo) if lo else None), (int(hi) if hi else None)
    except ValueError:
        raise bad(path, "invalid range bound") from None


def parse_qos_network(value: Any) -> tuple[QosItem, ...]:
    items = _list("qos/network", value)
    out = []
    fields = _SUBJECT_FIELDS | {"zids", "key_exprs", "overwrite", "qos", "payload_size"}
    for ident, (i, item) in zip(_ids("QosOverwrite", items), enumerate(items), strict=True):
        path = f"qos/network/{i}"
        item = _fields(path, item, fields, {"messages", "overwrite"})
        ow = _fields(f"{path}/overwrite", item["overwrite"], {"priority", "congestion_control", "express"}, set())
        prio = ow.get("priority")
        if prio is not None and prio not in PRIORITIES:
            raise bad(f"{path}/overwrite/priority", f"unknown variant {prio!r}")
        cc = ow.get("congestion_control")
        if cc is not None and cc not in CONGESTION:
            raise bad(f"{path}/overwrite/congestion_control", f"unknown variant {cc!r}")
        express = ow.get("express")
        if express is not None and not isinstance(express, bool):
            raise bad(f"{path}/overwrite/express", "expected a boolean")
        keys = item.get("key_exprs")
        lo, hi = _range(f"{path}/payload_size", item.get("payload_size"))
        out.append(
            QosItem(
                ident,
                _subjects(path, item),
                _kinds(f"{path}/messages", item["messages"], QOS_KINDS),
                None if keys is None else _keys(f"{path}/key_exprs", keys),
                lo,
                hi,
                Rewrite(
                    ident, None if prio is None else PRIORITIES[prio], None if cc is None else CONGESTION[cc], express
                ),
                None if item.get("zids") is None else tuple(str(z) for z in item["zids"]),
                bool(item.get("qos")),
            )
        )
    return tuple(out)
