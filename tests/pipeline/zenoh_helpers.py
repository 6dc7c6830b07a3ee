"""Small helpers shared by the tests that talk to real eclipse-zenoh 1.10.2 sessions."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

WAIT_S = 60.0


def client(endpoint: str) -> Any:
    """An eclipse-zenoh client session connected to ``endpoint`` only."""
    import zenoh

    conf = zenoh.Config()
    conf.insert_json5("mode", '"client"')
    conf.insert_json5("connect/endpoints", json.dumps([endpoint]))
    conf.insert_json5("scouting/multicast/enabled", "false")
    return zenoh.open(conf)


class Collector:
    """A subscriber callback that keeps (key, payload, encoding) of every sample."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.samples: list[tuple[str, bytes, str]] = []

    def __call__(self, sample: Any) -> None:
        with self.lock:
            self.samples.append((str(sample.key_expr), sample.payload.to_bytes(), str(sample.encoding)))

    def matching(self, prefix: str) -> list[tuple[str, bytes, str]]:
        with self.lock:
            return [s for s in self.samples if s[0].startswith(prefix)]

    def wait_for(self, prefix: str, n: int) -> list[tuple[str, bytes, str]]:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and len(self.matching(prefix)) < n:
            time.sleep(0.05)
        return self.matching(prefix)
