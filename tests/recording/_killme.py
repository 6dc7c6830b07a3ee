"""Child process for the kill -9 test: records forever until killed.

argv: directory. Prints ``ready <seq>`` once three segments are closed; every record's
raw bytes are a function of its seq so the parent can check what it reads back.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pyzenoh.recording import Recorder
from pyzenoh.recording.reader import list_segments


def start_child(module: str, rec_dir: Path) -> subprocess.Popen[str]:
    """Run ``python -m module rec_dir`` from the repository root, stdout piped."""
    root = Path(__file__).parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *sys.path]))
    return subprocess.Popen(
        [sys.executable, "-m", module, str(rec_dir)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=root,
    )


def raw_for(seq: int) -> bytes:
    return b"\x7d" + seq.to_bytes(8, "little") * 4


def main() -> None:
    rec = Recorder(sys.argv[1], max_segment_bytes=64 << 10)
    rec.link_opened(0, 1, "aa01", "client", "tcp/127.0.0.1:1")
    now = 0
    ready = False
    for _ in range(50_000_000):  # bounded; the parent kills us long before
        now += 1000
        seq = rec.next_seq
        rec.message(now, 1, "rx", f"demo/k{seq % 7}", raw_for(seq))
        if not ready and seq % 256 == 0 and len(list_segments(sys.argv[1])) >= 4:
            print(f"ready {seq}", flush=True)
            ready = True


if __name__ == "__main__":
    main()
