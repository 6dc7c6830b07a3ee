"""The admin space's counters, kept by :mod:`.face` (the local face that receives queries
and replies)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class AdminStats:
    queries: int = 0
    replies: int = 0
    errors: int = 0
    unresolved: int = 0
    writes: int = 0
    writes_refused: int = 0
