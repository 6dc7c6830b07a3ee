"""The command line: ``pyzenoh pipeline`` registration. (The real ``spark-submit`` run is
``test_jobs.test_spark_submit_from_another_directory``: its tables are the ones checked
there.)"""

from __future__ import annotations

import subprocess
import sys


def test_cli_registers_pipeline_without_importing_spark() -> None:
    code = (
        "import sys, pyzenoh.cli as c; p = c.build_parser();"
        "a = p.parse_args(['pipeline', 'r', 'o', '--master', 'local[1]']);"
        "print(*a.recordings, a.master, a.handler.__module__, 'pyspark' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.split() == ["r", "o", "local[1]", "pyzenoh.pipeline.cli", "False"]
