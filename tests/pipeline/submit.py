"""A real ``spark-submit`` of the pipeline on the scripted scenario, in the background."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.pipeline import scenario

ROOT = Path(__file__).resolve().parents[2]
SUBMIT_TIMEOUT_S = 280.0


@dataclass
class Submitted:
    """``spark-submit src/pyzenoh/pipeline/__main__.py rec out`` run from ``cwd`` (relative
    paths, master ``local[1]``) on the scripted scenario (several segments). It starts in
    the background (see ``conftest.spark``): :meth:`wait` for its outcome."""

    proc: subprocess.Popen[bytes]
    cwd: Path
    facts: scenario.Facts

    def wait(self) -> tuple[int, str]:
        """(exit code, stdout + stderr): spark-submit merges the driver's stderr (the
        progress lines) into stdout, and the JSON summary ends stdout."""
        try:
            code = self.proc.wait(SUBMIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        out = (self.cwd / "stdout.txt").read_text(errors="replace")
        err = (self.cwd / "stderr.txt").read_text(errors="replace")
        return code, out + err

    def result(self) -> dict[str, Any]:
        """The summary ``run_pipeline`` returned, as the CLI printed it."""
        code, _ = self.wait()
        stdout = (self.cwd / "stdout.txt").read_text(errors="replace")
        assert code == 0, stdout[-3000:] + (self.cwd / "stderr.txt").read_text()[-3000:]
        result: dict[str, Any] = json.loads(stdout[stdout.index("\n{\n") :])
        return result

    def stop(self) -> None:
        """By PID: SIGTERM (the JVM's shutdown hooks stop its Python driver), then SIGKILL."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def start(cwd: Path) -> Submitted | None:
    """Write the scenario under ``cwd`` and start spark-submit on it (None when
    spark-submit is not installed next to this Python)."""
    spark_submit = Path(sys.executable).with_name("spark-submit")
    if not spark_submit.exists():
        return None
    facts = scenario.build(cwd / "rec", max_segment_bytes=4_000)  # several segments
    main = ROOT / "src" / "pyzenoh" / "pipeline" / "__main__.py"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    cmd = [
        str(spark_submit),
        "--master",
        "local[1]",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        str(main),
        "rec",
        "out",  # relative paths, resolved against the submit directory
    ]
    with (cwd / "stdout.txt").open("wb") as out, (cwd / "stderr.txt").open("wb") as err:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    return Submitted(proc, cwd, facts)
