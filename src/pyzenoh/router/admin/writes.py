"""Admin-space writes (``adminspace.rs``): a PUT on ``@/<zid>/router/config/<path>`` inserts
its UTF-8 JSON5 payload at ``<path>`` of the router's config, a DELETE removes ``<path>``;
both only when ``adminspace/permissions/write`` is true (otherwise logged, nothing
changes). A numeric last part addresses a list item (zenoh's
``try_insert_json5_array_item`` / ``try_remove_json5_array_item``).

Pure: :func:`config_write` takes the tree and returns the new one; the router decides what
the change starts or stops (plugins, storages).
"""

from __future__ import annotations

from typing import Any

from pyzenoh.config import insert_problems, loads
from pyzenoh.config.paths import get_at, insert_at, remove_at
from pyzenoh.errors import UsageError

__all__ = ["config_path", "config_write"]


def config_path(root: str, key: str) -> str | None:
    """The config path a write on ``key`` addresses (None: not under ``root/config/``)."""
    prefix = f"{root}/config/"
    if not key.startswith(prefix) or len(key) == len(prefix):
        return None
    return key[len(prefix) :]


def config_write(tree: dict[str, Any], path: str, payload: bytes | None) -> dict[str, Any]:
    """The tree after a PUT (``payload``) or DELETE (None) at ``path``; UsageError if refused."""
    if payload is None:
        return remove_at(tree, path)
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"non UTF-8 config value on {path}") from None
    value = loads(text)
    parent, _, last = path.strip("/").rpartition("/")
    if last.isdigit() and isinstance(get_at(tree, parent), list):
        # try_insert_json5_array_item: the list with that item must still be valid
        new = insert_at(tree, path, value)
        check_path, check_value = parent, get_at(new, parent)
    else:
        new, check_path, check_value = {}, path, value
    problems = insert_problems(check_path, check_value)  # zenoh checks the value it inserts
    if problems:
        raise UsageError("; ".join(p.text for p in problems))
    return new if new else insert_at(tree, path, value)
