"""Whether a router serves its admin space: ``adminspace/enabled`` (on unless ``false``,
as zenohd), and off too when ``adminspace/permissions/read`` is ``false``.
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
    # permissions/read: false makes zenohd answer no admin query: serve none either.
    permissions = node.get("permissions")
    if isinstance(permissions, Mapping) and permissions.get("read") is False:
        return False
    return value
