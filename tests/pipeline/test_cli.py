"""The command line: ``pyzenoh pipeline`` registration, and a real ``spark-submit`` run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pipeline import scenario

ROOT = Path(__file__).resolve().parents[2]


def test_cli_registers_pipeline_without_importing_spark() -> None:
    code = (
        "import sys, pyzenoh.cli as c; p = c.build_parser();"
        "a = p.parse_args(['pipeline', 'r', 'o', '--master', 'local[1]']);"
        "print(a.recording_dir, a.output_dir, a.master, a.handler.__module__, 'pyspark' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.split() == ["r", "o", "local[1]", "pyzenoh.pipeline.cli", "False"]


@pytest.mark.spark
def test_spark_submit_from_another_directory(tmp_path: Path) -> None:
    spark_submit = Path(sys.executable).with_name("spark-submit")
    if not spark_submit.exists():
        pytest.skip("spark-submit is not installed next to this Python")
    scenario.build(tmp_path / "rec")
    main = ROOT / "src" / "pyzenoh" / "pipeline" / "__main__.py"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    proc = subprocess.run(
        [
            str(spark_submit),
            "--master",
            "local[1]",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
            str(main),
            "rec",  # relative paths, resolved against the submit directory
            "out",
        ],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # spark-submit merges the driver's stderr (our progress lines) into stdout.
    out = proc.stdout + proc.stderr
    assert "[pipeline 9/9] summary" in out
    result = json.loads(proc.stdout[proc.stdout.index("\n{\n") :])
    assert result["master"] == "local[1]"
    assert result["audit"]["with_differences"] == 3
    assert (tmp_path / "out" / "report.html").is_file()
    assert (tmp_path / "out" / "delivery" / "_SUCCESS").is_file()
