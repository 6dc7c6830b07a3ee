"""Child process for the kill -9 test of RecorderProcess: a stand-in router that records
through a recorder process until killed.

argv: directory. Prints ``ready <recorder pid>`` once three segments are closed; every
record's raw bytes are a function of its position so the parent can check them.
"""

from __future__ import annotations

import sys

from pyzenoh.recording.process import RecorderProcess
from pyzenoh.recording.reader import list_segments
from tests.recording._killme import raw_for


def main() -> None:
    rec = RecorderProcess(sys.argv[1], max_segment_bytes=64 << 10)
    rec.link_opened(0, 1, "aa01", "client", "tcp/127.0.0.1:1")
    now = 0
    ready = False
    for i in range(50_000_000):  # bounded; the parent kills us long before
        now += 1000
        rec.routed(now, 1, f"demo/k{i % 7}", raw_for(i), [(2, raw_for(i) + b"tx")])
        if not ready and i % 256 == 0 and len(list_segments(sys.argv[1])) >= 4:
            print(f"ready {rec.pid}", flush=True)
            ready = True


if __name__ == "__main__":
    main()
