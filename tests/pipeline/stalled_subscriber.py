"""A real eclipse-zenoh client subscriber in a process of its own, driven over stdin: it
stalls (its callback blocks, so the session stops reading) and resumes on command.

    python -m tests.pipeline.stalled_subscriber ENDPOINT KEYEXPR

prints ``{"zid": ...}`` once subscribed; then reads lines: ``stall``, ``go``, ``await
PREFIX`` (print ``{"seen": KEY}`` on the next sample whose key starts with PREFIX), and
``quit`` (resume, undeclare, print ``{"keys": [...]}`` of every sample received, exit).
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

#: How long a stalled callback waits at most (the test's own bound is shorter).
STALL_MAX_S = 120.0


def main() -> int:
    import zenoh

    endpoint, key = sys.argv[1], sys.argv[2]
    conf = zenoh.Config()
    conf.insert_json5("mode", '"client"')
    conf.insert_json5("connect/endpoints", json.dumps([endpoint]))
    conf.insert_json5("scouting/multicast/enabled", "false")
    # nor does the router give it up while it stalls (the router's lease is long too)
    conf.insert_json5("transport/link/tx/lease", str(int(STALL_MAX_S * 1000)))
    gate = threading.Event()
    gate.set()
    got: list[str] = []
    lock = threading.Lock()
    awaited: list[str] = []  # the prefix awaited, if any

    def on_sample(sample: Any) -> None:
        gate.wait(STALL_MAX_S)
        key = str(sample.key_expr)
        with lock:
            got.append(key)
            if awaited and key.startswith(awaited[0]):
                awaited.clear()
                print(json.dumps({"seen": key}), flush=True)

    with zenoh.open(conf) as session:
        sub = session.declare_subscriber(key, on_sample)
        print(json.dumps({"zid": str(session.info.zid())}), flush=True)
        for line in sys.stdin:
            command = line.strip()
            if command == "stall":
                gate.clear()
            elif command == "go":
                gate.set()
            elif command.startswith("await "):
                with lock:
                    awaited[:] = [command.removeprefix("await ")]
            elif command == "quit":
                break
        gate.set()
        sub.undeclare()
        with lock:
            print(json.dumps({"keys": got}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
