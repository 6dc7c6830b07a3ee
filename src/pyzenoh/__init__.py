"""pyzenoh: a pure-Python Eclipse Zenoh 1.x implementation."""

from __future__ import annotations

__version__ = "0.1.0"

