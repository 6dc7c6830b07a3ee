"""Editing a JSON config tree at a ``a/b/c`` path: what ``--cfg KEY:VALUE`` and admin-space
writes on ``@/<zid>/router/config/**`` do (zenoh's ``insert_json5`` / ``remove``, and their
``try_insert_json5_array_item`` / ``try_remove_json5_array_item`` for list items).

Pure functions over plain dicts and lists: the tree given is never changed, a new one is
returned. A path is split as zenoh splits it (empty parts dropped, so a leading ``/`` is
ignored); the empty path stands for the whole config.
"""

from __future__ import annotations

import copy
from typing import Any

from pyzenoh.config.schema import split_key
from pyzenoh.errors import UsageError

__all__ = ["get_at", "insert_at", "remove_at"]


def _index(part: str, items: list[Any], *, insert: bool) -> int:
    if not part.isdigit():
        raise UsageError(f"'{part}' is not an index into a list")
    index = int(part)
    if index > len(items) or (index == len(items) and not insert):
        raise UsageError(f"index {index} is out of range (the list has {len(items)} items)")
    return index


def get_at(tree: Any, key: str) -> Any:
    """The value at ``key`` (None when absent)."""
    node = tree
    for part in split_key(key):
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def insert_at(tree: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A copy of ``tree`` with ``value`` at ``key``; missing objects on the way are created.
    Under a list, a numeric part replaces that item (its length: appends one)."""
    parts = split_key(key)
    if not parts:
        if not isinstance(value, dict):
            raise UsageError("the whole config must be an object")
        return copy.deepcopy(value)
    out = copy.deepcopy(tree)
    node: Any = out
    for i, part in enumerate(parts[:-1]):
        if isinstance(node, dict):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            node = child
        elif isinstance(node, list):
            node = node[_index(part, node, insert=False)]
        else:
            raise UsageError(f"'{'/'.join(parts[: i + 1])}' is inside a {type(node).__name__}, not an object")
    last = parts[-1]
    if isinstance(node, dict):
        node[last] = copy.deepcopy(value)
    elif isinstance(node, list):
        index = _index(last, node, insert=True)
        if index == len(node):
            node.append(copy.deepcopy(value))
        else:
            node[index] = copy.deepcopy(value)
    else:
        raise UsageError(f"'{key}' is inside a {type(node).__name__}, not an object")
    return out


def remove_at(tree: dict[str, Any], key: str) -> dict[str, Any]:
    """A copy of ``tree`` without ``key`` (UsageError when it is not there)."""
    parts = split_key(key)
    if not parts:
        raise UsageError("the whole config cannot be removed")
    out = copy.deepcopy(tree)
    parent = get_at(out, "/".join(parts[:-1]))
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        del parent[int(last)]
    else:
        raise UsageError(f"no config key '{'/'.join(parts)}' to remove")
    return out
