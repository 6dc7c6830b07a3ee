"""Whether a router serves its admin space: ``adminspace/enabled`` (on unless ``false``,
as zenohd); whether it answers reads there: ``adminspace/permissions/read`` (zenohd then
declares its queryable all the same and answers every query with RESPONSE_FINAL alone).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyzenoh.errors import UsageError


def admin_enabled(tree: Mapping[str, Any]) -> bool:
    """``adminspace/enabled`` of a router config tree; on unless it is ``false`` (as zenohd)."""
    node = tree.get("adminspace")
    if node is None:
        return True
    if not isinstance(node, Mapping):
        raise UsageError("config adminspace must be an object")
    value = node.get("enabled")
    if value is None:
        value = True
    if not isinstance(value, bool):
        raise UsageError(f"config adminspace/enabled must be true or false, got {value!r}")
    return value


def admin_readable(tree: Mapping[str, Any]) -> bool:
    """``adminspace/permissions/read`` (true unless ``false``)."""
    node = tree.get("adminspace")
    permissions = node.get("permissions") if isinstance(node, Mapping) else None
    return not (isinstance(permissions, Mapping) and permissions.get("read") is False)
