"""The validator's building blocks: schema nodes and the problems they report.

A schema is a tree of :class:`Node` objects; ``node.check(value, path, out)`` appends a
:class:`Problem` to ``out`` for everything wrong with ``value`` (each naming its full key
path). A problem that zenoh 1.10.2 itself would let through carries a ``stricter`` tag,
one of :data:`STRICTER`: the differential tests use the tag to tell a deliberate
strictness from a disagreement.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from typing_extensions import override

MODES = ("router", "peer", "client")

U16 = (0, 0xFFFF)
U32 = (0, (1 << 32) - 1)
U64 = (0, (1 << 64) - 1)
I64 = (-(1 << 63), (1 << 63) - 1)

#: Where pyzenoh refuses what zenoh 1.10.2 accepts (the tag of such a problem -> why).
STRICTER: dict[str, str] = {
    "number": "a number where zenoh's JSON5 reader would cast it: a fraction or an out-of-range value "
    "for an integer (zenoh truncates and saturates: lease -1 is 0, batch_size 70000 is 65535), "
    "NaN or Infinity",
    "list": "a list where an object is expected (serde would take the object's fields, in order, from it)",
    "lax": "an unknown key in the few zenoh structs that drop unknown keys silently (connect/retry, "
    "listen/retry, {strategy, locators} endpoint groups, autoconnect_strategy maps, qos/publication and "
    "qos/network items, transport_weights and stats/filters items, plugins_loading/search_dirs items)",
}


class Problem:
    """One thing wrong with a configuration: ``text`` names the key path; ``stricter``
    is a :data:`STRICTER` tag when zenoh 1.10.2 would accept the value."""

    __slots__ = ("stricter", "text")

    def __init__(self, text: str, stricter: str = "") -> None:
        self.text = text
        self.stricter = stricter

    @override
    def __str__(self) -> str:
        return self.text

    @override
    def __repr__(self) -> str:
        return f"Problem({self.text!r}{', ' + repr(self.stricter) if self.stricter else ''})"


Problems = list[Problem]


# --- values in messages --------------------------------------------------------------------


def show(value: Any) -> str:
    """A value as a message shows it (short)."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    try:
        text = json.dumps(value)
    except ValueError:
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def join(path: str, key: str | int) -> str:
    return f"{path}/{key}" if path else str(key)


def bad(path: str, expect: str, value: Any) -> str:
    return f"{path or '<root>'}: expected {expect}, got {show(value)}"


#: Keys pyzenoh once read outside ``pyzenoh/`` -> where they live now.
MOVED = {"transport/link/tx/queue/max_bytes": "pyzenoh/limits/send_queue_max_bytes"}


def unknown_key(path: str, known: Mapping[str, Any] | Sequence[str]) -> str:
    """``unknown config key 'a/b' (did you mean 'c'?)``."""
    if path in MOVED:
        return f"unknown config key '{path}' (pyzenoh's own keys live under pyzenoh/: '{MOVED[path]}')"
    key = path.rsplit("/", 1)[-1]
    close = difflib.get_close_matches(key, [k for k in known if k != key], n=1, cutoff=0.75)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"unknown config key '{path}'{hint}"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# --- schema nodes --------------------------------------------------------------------------


class PerMode:
    """A mode-dependent default: the value zenohd uses for each mode."""

    __slots__ = ("values",)

    def __init__(self, router: Any, peer: Any, client: Any) -> None:
        self.values = {"router": router, "peer": peer, "client": client}


class Node:
    """One value of the schema. ``null``: JSON null is allowed (zenoh's ``Option``);
    ``default``: what zenohd uses when the key is absent or null (for the policy)."""

    expect = "a value"

    def __init__(self, *, null: bool = False, default: Any = None) -> None:
        self.null = null
        self.default = default

    def check(self, value: Any, path: str, out: Problems) -> None:
        if value is None:
            if not self.null:
                out.append(Problem(bad(path, self.expect, value)))
            return
        self._check(value, path, out)

    def _check(self, value: Any, path: str, out: Problems) -> None:
        return

    def canon(self, value: Any) -> Any:
        """A form in which equal settings compare equal (2 == 2.0, matcher order)."""
        return canon_json(value)


def canon_json(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [canon_json(v) for v in value]
    if isinstance(value, dict):
        return {k: canon_json(v) for k, v in sorted(value.items())}
    return value


class AnyV(Node):
    """Free-form JSON (``metadata``, ``plugins``): zenoh reads it as a JSON value, which
    refuses integers outside the i64 range (and 1e400, which Python reads as inf)."""

    expect = "any JSON value"

    @override
    def _check(self, value: Any, path: str, out: Problems) -> None:
        stack: list[tuple[Any, str]] = [(value, path)]
        while stack:
            item, where = stack.pop()
            if isinstance(item, dict):
                stack.extend((v, join(where, k)) for k, v in item.items())
            elif isinstance(item, list):
                stack.extend((v, join(where, i)) for i, v in enumerate(item))
            elif isinstance(item, int) and not isinstance(item, bool) and not I64[0] <= item <= I64[1]:
                out.append(Problem(bad(where, "a number that fits a 64-bit signed integer", item)))
            elif isinstance(item, float) and not math.isfinite(item):
                out.append(Problem(bad(where, "a finite number", item), "number"))


class BoolV(Node):
    expect = "true or false"

    @override
    def _check(self, value: Any, path: str, out: Problems) -> None:
        if not isinstance(value, bool):
            out.append(Problem(bad(path, self.expect, value)))


class IntV(Node):
    """An integer from ``lo`` to ``hi`` held in a Rust integer of range ``typ``.

    zenoh's reader casts any JSON number into the Rust type (truncating fractions and
    saturating at its bounds); its validators then check ``lo``..``hi``. pyzenoh wants a
    JSON integer from ``lo`` to ``hi``: refusing a value zenoh would cast is tagged.
    """

    def __init__(
        self, lo: int, hi: int, *, typ: tuple[int, int] | None = None, null: bool = False, default: Any = None
    ) -> None:
        super().__init__(null=null, default=default)
        self.lo, self.hi = lo, hi
        self.typ = typ or (lo, hi)
        if lo == 0 and hi in (U64[1], U32[1]):
            self.expect = "an unsigned integer" + ("" if hi == U64[1] else f" up to {hi}")
        elif (lo, hi) == I64:
            self.expect = "an integer"
        elif hi >= U32[1]:
            self.expect = f"an integer >= {lo}"
        else:
            self.expect = f"an integer from {lo} to {hi}"

    @override
    def _check(self, value: Any, path: str, out: Problems) -> None:
        if isinstance(value, int) and not isinstance(value, bool) and self.lo <= value <= self.hi:
            return
        cast = _is_number(value) and not (isinstance(value, int) and self.typ[0] <= value <= self.typ[1])
        out.append(Problem(bad(path, self.expect, value), "number" if cast else ""))


class FloatV(Node):
    """A Rust f64: any finite JSON number. ``untagged``: inside one of zenoh's untagged
    enums (a mode-dependent value), where its reader refuses integers outside the i64 range."""

    expect = "a number"

    def __init__(
        self, *, lo: float | None = None, untagged: bool = False, null: bool = False, default: Any = None
    ) -> None:
        super().__init__(null=null, default=default)
        self.lo = lo
        self.untagged = untagged
        if lo is not None:
            self.expect = f"a number > {lo:g}" if lo == 0 else f"a number >= {lo:g}"

    @override
    def _check(self, value: Any, path: str, out: Problems) -> None:
        if not _is_number(value) or (self.untagged and isinstance(value, int) and not I64[0] <= value <= I64[1]):
            out.append(Problem(bad(path, self.expect, value)))
        elif isinstance(value, float) and not math.isfinite(value):
            out.append(Problem(bad(path, "a finite number", value), "number"))
        elif self.lo is not None and not (value > 0 if self.lo == 0 else value >= self.lo):
            out.append(Problem(bad(path, self.expect, value)))


class StrV(Node):
    expect = "a string"

    def __init__(
        self, *, nonempty: bool = False, max_bytes: int | None = None, null: bool = False, default: Any = None
    ) -> None:
        super().__init__(null=null, default=default)
        self.nonempty = nonempty
        self.max_bytes = max_bytes
        if nonempty:
            self.expect = "a non-empty string"
        if max_bytes is not None:
            self.expect += f" of at most {max_bytes} bytes"

    @override
    def _check(self, value: Any, path: str, out: Problems) -> None:
        if (
            not isinstance(value, str)
            or (self.nonempty and not value)
            or (self.max_bytes is not None and len(value.encode()) > self.max_bytes)
        ):
            out.append(Problem(bad(path, self.expect, value)))


class EnumV(Node):
    def __init__(self, *values: str, null: bool = False, default: Any = None, note: str = "") -> None:
        super().__init__(null=null, default=default)
        self.values = values
        self.expect = "one of " + ", ".join(f'"{v}"' for v in values) + note

    @override
    def _check(self, value: Any, path: str, out: Problems) -> None:
        if not isinstance(value, str) or value not in self.values:
            out.append(Problem(bad(path, self.expect, value)))


class TextV(Node):
    """A string checked by a function that returns why it is bad (None: fine)."""

    def __init__(
        self, expect: str, why: Callable[[str], str | None], *, null: bool = False, default: Any = None
    ) -> None:
        super().__init__(null=null, default=default)
        self.expect = expect
        self.why = why

    @override
    def _check(self, value: Any, path: str, out: Problems) -> None:
        if not isinstance(value, str):
            out.append(Problem(bad(path, self.expect, value)))
            return
        reason = self.why(value)
        if reason is not None:
            out.append(Problem(f"{path}: {show(value)} is not {self.expect}: {reason}"))


class ListV(Node):
    def __init__(
        self, item: Node, *, nonempty: bool = False, unordered: bool = False, null: bool = False, default: Any = None
    ) -> None:
        super().__init__(null=null, default=[] if default is None and not null else default)
        self.item = item
        self.nonempty = nonempty
        self.unordered = unordered
        self.expect = ("a non-empty list" if nonempty else "a list") + f" of {_plural(item.expect)}"

    @override
    def _check(self, value: Any, path: str, out: Problems) -> None:
        if not isinstance(value, list) or (self.nonempty and not value):
            out.append(Problem(bad(path, self.expect, value)))
            return
        for i, item in enumerate(value):
            self.item.check(item, join(path, i), out)

    @override
    def canon(self, value: Any) -> Any:
        items = [self.item.canon(v) for v in value] if isinstance(value, list) else value
        if self.unordered and isinstance(items, list):
            return sorted({json.dumps(v, sort_keys=True) for v in items})
        return items


def _plural(expect: str) -> str:
    for article in ("an ", "a "):
        if expect.startswith(article):
            return expect[len(article) :] + ("" if expect.endswith("s") else "s")
    return expect


class ObjV(Node):
    """An object with known keys (zenoh's ``deny_unknown_fields`` structs).

    ``required`` keys must be present; the others may be absent. ``lax``: zenoh drops
    unknown keys here silently (pyzenoh refuses them, tagged). ``rule`` checks the object
    as a whole (zenoh's validators) and says what is wrong (None: fine); a rule about one
    key starts with ``key:`` so that the message names its path.
    """

    expect = "an object"

    def __init__(
        self,
        fields: Mapping[str, Node],
        *,
        required: Sequence[str] = (),
        lax: bool = False,
        null: bool = False,
        rule: Callable[[dict[str, Any]], str | None] | None = None,
    ) -> None:
        super().__init__(null=null)
        self.fields = dict(fields)
        self.required = tuple(required)
        self.lax = lax
        self.rule = rule

    @override
    def _check(self, value: Any, path: str, out: Problems) -> None:
        if not isinstance(value, dict):
            out.append(Problem(bad(path, self.expect, value), "list" if isinstance(value, list) else ""))
            return
        for key, item in value.items():
            node = self.fields.get(key)
            if node is None:
                out.append(Problem(unknown_key(join(path, key), self.fields), "lax" if self.lax else ""))
            else:
                node.check(item, join(path, key), out)
        for key in self.required:
            if key not in value:
                out.append(Problem(f"{path or '<root>'}: missing key '{key}'"))
        problem = self.rule(value) if self.rule is not None else None
        if problem is not None:
            named = path and problem.split(":")[0] in self.fields
            out.append(Problem(f"{path}/{problem}" if named else f"{path or '<root>'}: {problem}"))


class ModeV(Node):
    """zenoh's ModeDependentValue: one value, or ``{router: .., peer: .., client: ..}``."""

    def __init__(self, inner: Node, *, null: bool = False, default: Any = None) -> None:
        super().__init__(null=null, default=default)
        self.inner = inner
        self.expect = f"{inner.expect}, or an object of them per mode (router, peer, client)"

    @override
    def _check(self, value: Any, path: str, out: Problems) -> None:
        target = isinstance(self.inner, TargetV)
        if isinstance(value, dict) and (not target or not value or set(value) & set(MODES)):
            # A strategy map that names a mode is meant per mode; zenoh would read it as a
            # map of targets, dropping every key (so these problems are tagged "lax").
            sub: Problems = []
            for mode, item in value.items():
                if mode not in MODES:
                    sub.append(Problem(unknown_key(join(path, mode), MODES)))
                elif item is not None:  # null per mode: that mode keeps its default
                    self.inner.check(item, join(path, mode), sub)
            for p in sub:
                out.append(Problem(p.text, p.stricter or ("lax" if target else "")))
            return
        if isinstance(value, dict | list) and not isinstance(self.inner, ListV | TargetV):
            out.append(Problem(bad(path, self.expect, value)))
            return
        self.inner.check(value, path, out)

    def for_mode(self, value: Any, mode: str) -> Any:
        if isinstance(value, dict) and (not isinstance(self.inner, TargetV) or set(value) & set(MODES)):
            value = value.get(mode)
        if value is None:
            d = self.default
            value = d.values[mode] if isinstance(d, PerMode) else d
        return value

    @override
    def canon(self, value: Any) -> Any:
        return self.inner.canon(value)


class MatcherV(ListV):
    """A WhatAmIMatcher: a list of "router", "peer", "client" (1.10.2 refuses "router|peer")."""

    def __init__(self) -> None:
        super().__init__(EnumV(*MODES), unordered=True)
        self.expect = 'a list of "router", "peer", "client"'


STRATEGIES = ("always", "greater-zid")
TARGETS = tuple(f"to_{m}" for m in MODES)


class TargetV(Node):
    """An autoconnect strategy: a name, or ``{to_router: .., to_peer: .., to_client: ..}``
    (zenoh drops unknown keys of such maps: refusing them is tagged "lax")."""

    expect = 'one of "always", "greater-zid", or an object of them per target (to_router, to_peer, to_client)'

    @override
    def _check(self, value: Any, path: str, out: Problems) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key not in TARGETS:
                    out.append(Problem(unknown_key(join(path, key), TARGETS), "lax"))
                elif item is not None and item not in STRATEGIES:
                    out.append(Problem(bad(join(path, key), 'one of "always", "greater-zid"', item)))
        elif not isinstance(value, str) or value not in STRATEGIES:
            out.append(Problem(bad(path, self.expect, value)))

    @override
    def canon(self, value: Any) -> Any:
        if isinstance(value, str):
            return {t: value for t in TARGETS}
        if isinstance(value, dict):
            return {t: value.get(t) or "always" for t in TARGETS}
        return value


class ChoiceV(Node):
    """A value of several shapes, picked by its JSON type (zenoh's untagged enums)."""

    def __init__(
        self,
        expect: str,
        *,
        text: Node | None = None,
        number: Node | None = None,
        obj: Node | None = None,
        array: Node | None = None,
        null: bool = False,
        default: Any = None,
    ) -> None:
        super().__init__(null=null, default=default)
        self.expect = expect
        self.text, self.number, self.obj, self.array = text, number, obj, array

    @override
    def _check(self, value: Any, path: str, out: Problems) -> None:
        node: Node | None
        if isinstance(value, str):
            node = self.text
        elif isinstance(value, dict):
            node = self.obj
        elif isinstance(value, list):
            node = self.array
        elif _is_number(value):
            node = self.number
        else:
            node = None
        if node is None:
            out.append(Problem(bad(path, self.expect, value)))
        else:
            node.check(value, path, out)
