"""Compare pyzenoh's public names and keyword names with zenoh-python 1.10's stubs.

The stubs are the ``.pyi`` files of the installed eclipse-zenoh wheel. Every public
top-level name (classes, functions, aliases) and every public member of a stub class
(methods, properties, attributes, enum members) is looked up in the matching pyzenoh
module (``zenoh`` -> ``pyzenoh``, ``zenoh.handlers`` -> ``pyzenoh.handlers`` ...);
the parameters of every stub function are compared with ``inspect.signature``.

``python -m tests.session.stubnames [--missing] [--params]`` prints the counts.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

#: stub module -> pyzenoh module
MODULES = {"__init__": "pyzenoh", "handlers": "pyzenoh.handlers", "shm": "pyzenoh.shm", "ext": "pyzenoh.ext"}


def stub_dir() -> Path:
    import zenoh

    return Path(zenoh.__file__).parent


@dataclass
class StubFunction:
    qualname: str
    #: name -> (kind, has default)
    params: dict[str, tuple[str, bool]]


@dataclass
class StubModule:
    name: str
    top: list[str] = field(default_factory=list)
    members: list[str] = field(default_factory=list)  # "Class.member"
    functions: list[StubFunction] = field(default_factory=list)


def _params(node: ast.FunctionDef) -> dict[str, tuple[str, bool]]:
    a = node.args
    out: dict[str, tuple[str, bool]] = {}
    positional = [*a.posonlyargs, *a.args]
    first_default = len(positional) - len(a.defaults)
    for i, arg in enumerate(positional):
        kind = "positional-only" if i < len(a.posonlyargs) else "positional-or-keyword"
        out[arg.arg] = (kind, i >= first_default)
    if a.vararg is not None:
        out[a.vararg.arg] = ("var-positional", False)
    for arg, default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        out[arg.arg] = ("keyword-only", default is not None)
    if a.kwarg is not None:
        out[a.kwarg.arg] = ("var-keyword", False)
    out.pop("self", None)
    out.pop("cls", None)
    return out


def _public(name: str) -> bool:
    return not name.startswith("_")


def parse_stub(path: Path) -> StubModule:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mod = StubModule(path.stem)
    seen_fn: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and _public(node.name):
            mod.top.append(node.name)
            for item in node.body:
                names: list[str] = []
                if isinstance(item, ast.FunctionDef):
                    if _public(item.name):
                        names = [item.name]
                        q = f"{node.name}.{item.name}"
                        if q not in seen_fn:  # overloads: the first one stands for all
                            seen_fn.add(q)
                            is_prop = any(isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list)
                            setter = any(isinstance(d, ast.Attribute) for d in item.decorator_list)
                            if not is_prop and not setter:
                                mod.functions.append(StubFunction(q, _params(item)))
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names = [item.target.id]
                elif isinstance(item, ast.Assign):
                    names = [t.id for t in item.targets if isinstance(t, ast.Name)]
                for n in names:
                    if _public(n) and f"{node.name}.{n}" not in mod.members:
                        mod.members.append(f"{node.name}.{n}")
        elif isinstance(node, ast.FunctionDef) and _public(node.name):
            if node.name not in mod.top:
                mod.top.append(node.name)
                mod.functions.append(StubFunction(node.name, _params(node)))
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and _public(t.id) and t.id not in mod.top:
                    mod.top.append(t.id)
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module is None
            or (isinstance(node, ast.ImportFrom) and node.level == 1)
        ):
            for alias in node.names:  # "from . import ext as ext" re-exports
                name = alias.asname or alias.name
                if _public(name) and name not in mod.top:
                    mod.top.append(name)
    return mod


_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: "positional-only",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional-or-keyword",
    inspect.Parameter.VAR_POSITIONAL: "var-positional",
    inspect.Parameter.KEYWORD_ONLY: "keyword-only",
    inspect.Parameter.VAR_KEYWORD: "var-keyword",
}


def _lookup(module: ModuleType, dotted: str) -> Any:
    obj: Any = module
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


@dataclass
class Report:
    module: str
    present: list[str]
    missing: list[str]
    param_problems: list[str]


def compare(stub: StubModule, target: str) -> Report:
    try:
        module: ModuleType | None = importlib.import_module(target)
    except ImportError:
        module = None
    names = [*stub.top, *stub.members]
    present: list[str] = []
    missing: list[str] = []
    for name in names:
        try:
            if module is None:
                raise AttributeError(name)
            _lookup(module, name)
            present.append(name)
        except Exception as exc:  # noqa: BLE001  (anything that is not a working name counts as missing)
            if type(exc).__name__ == "ShmNotSupportedError":
                present.append(name)  # there, and says shared memory is not supported
            else:
                missing.append(name)
    problems: list[str] = []
    for fn in stub.functions:
        if fn.qualname not in present:
            continue
        assert module is not None
        try:
            obj = _lookup(module, fn.qualname)
        except Exception:  # noqa: BLE001, S112  (shm names: present, unusable by design)
            continue
        if fn.qualname.endswith(".__new__") or inspect.isclass(obj):
            continue
        try:
            sig = inspect.signature(obj)
        except (TypeError, ValueError):
            continue
        have = {
            p.name: (_KINDS[p.kind], p.default is not inspect.Parameter.empty)
            for p in sig.parameters.values()
            if p.name not in ("self", "cls")
        }
        for pname, (kind, _) in fn.params.items():
            if pname not in have and not any(k == "var-keyword" for k, _ in have.values()):
                problems.append(f"{fn.qualname}: no parameter {pname!r}")
            elif pname in have and have[pname][0] != kind and kind != "positional-only":
                problems.append(f"{fn.qualname}: {pname!r} is {have[pname][0]}, stub says {kind}")
    return Report(target, present, missing, problems)


def reports(stub_modules: list[str] | None = None) -> list[Report]:
    d = stub_dir()
    out = []
    for stem, target in MODULES.items():
        if stub_modules is not None and stem not in stub_modules:
            continue
        out.append(compare(parse_stub(d / f"{stem}.pyi"), target))
    return out


def main(argv: list[str]) -> int:
    total_present = total = 0
    for r in reports():
        n = len(r.present) + len(r.missing)
        total += n
        total_present += len(r.present)
        print(f"{r.module}: {len(r.present)}/{n} stub names present, {len(r.param_problems)} parameter differences")
        if "--missing" in argv:
            for name in r.missing:
                print(f"  missing {name}")
        if "--params" in argv:
            for p in r.param_problems:
                print(f"  {p}")
    print(f"total: {total_present}/{total}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
