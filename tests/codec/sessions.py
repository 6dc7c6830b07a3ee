"""Real eclipse-zenoh 1.10.2 byte streams from the shared reference, as batches."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
SESSIONS_FILE = VECTORS / "zenoh-sessions.json"


@dataclass(frozen=True)
class Stream:
    scenario: str
    direction: str
    conn: int
    chunks: tuple[bytes, ...]  # TCP reads, in order

    @property
    def data(self) -> bytes:
        return b"".join(self.chunks)

    @property
    def label(self) -> str:
        return f"{self.scenario}:{self.conn}:{self.direction}"


@cache
def streams() -> tuple[Stream, ...]:
    doc = json.loads(SESSIONS_FILE.read_text())
    out: list[Stream] = []
    for scenario in doc["scenarios"]:
        grouped: dict[tuple[int, str], list[bytes]] = {}
        for rec in scenario["records"]:
            grouped.setdefault((rec["conn"], rec["dir"]), []).append(bytes.fromhex(rec["hex"]))
        for (conn, direction), chunks in grouped.items():
            out.append(Stream(scenario["name"], direction, conn, tuple(chunks)))
    return tuple(out)


def split_batches(data: bytes) -> Iterator[bytes]:
    """Naive batch splitter, independent of the code under test."""
    pos = 0
    while pos < len(data):
        n = int.from_bytes(data[pos : pos + 2], "little")
        yield data[pos + 2 : pos + 2 + n]
        pos += 2 + n
