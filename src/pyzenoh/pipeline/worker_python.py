"""The interpreter that runs Spark's Python workers when Spark is pip's pyspark, locally.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` and py4j's zip first on every Python
worker's ``PYTHONPATH``. With pip's pyspark those zips are copies of the installed
packages, but zipimport caches no bytecode, so each worker compiles pyspark from source:
1.6 s of CPU per worker instead of 0.45 s (measured 2026-11-29 on the 2-core CI
machine). The Python data source's planner and streaming source start a fresh worker
for each call and give it 10 s, hard-coded in ``PythonWorkerFactory``, to connect
back; beside other CPU-heavy work the compile alone took longer, and queries failed
with "Python worker failed to connect back".

So, only where the zips are copies of what this interpreter imports anyway (pyspark
installed by pip, ``SPARK_HOME`` its package directory) and only for a local master
(an executor on another machine has no such interpreter), workers run through a
small ``sh`` wrapper that drops those two zips from ``PYTHONPATH`` and ``exec``s this
interpreter. Anything else on the path, and every other Spark, is left as it is."""

from __future__ import annotations

import atexit
import importlib.util
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

#: What the wrapper file is called inside its temporary directory.
WRAPPER_NAME = "python"


def spark_zips() -> list[str] | None:
    """The zips Spark will put on workers' ``PYTHONPATH`` when they copy packages this
    interpreter has installed; None when they may not (another Spark, no pyspark)."""
    try:
        import pyspark
        from pyspark.find_spark_home import _find_spark_home
    except ImportError:
        return None
    if importlib.util.find_spec("py4j") is None:
        return None  # the installed copy the py4j zip would shadow
    home = Path(os.environ.get("SPARK_HOME") or _find_spark_home()).resolve()
    if home != Path(pyspark.__file__).resolve().parent:
        return None  # a Spark distribution of its own: its zip is what its workers import
    lib = home / "python" / "lib"
    zips = [lib / "pyspark.zip", *sorted(lib.glob("py4j-*-src.zip"))]
    if not all(z.is_file() for z in zips):
        return None
    return [str(z) for z in zips]


def wrapper_text(python: str, zips: list[str]) -> str:
    """The shell script: ``PYTHONPATH`` without ``zips``, then ``python`` with the
    worker's arguments (Spark runs ``<exec> -m <module>``)."""
    cases = "|".join(shlex.quote(z) for z in zips)
    return (
        "#!/bin/sh\n"
        "# pyzenoh: Spark's Python workers import the installed (compiled) pyspark, not\n"
        "# Spark's zip copy of it, which every worker would compile again.\n"
        'kept=""\n'
        "IFS=:\n"
        "for p in $PYTHONPATH; do\n"
        f'  case "$p" in {cases}) ;; *) kept="${{kept:+$kept:}}$p" ;; esac\n'
        "done\n"
        "unset IFS\n"
        'PYTHONPATH="$kept"\n'
        "export PYTHONPATH\n"
        f'exec {shlex.quote(python)} "$@"\n'
    )


def worker_python(master: str | None) -> str:
    """The value for ``PYSPARK_PYTHON`` on a new local session: a wrapper (written once
    per process, removed at exit) where it helps, else this interpreter."""
    if os.name != "posix" or not (master or "local").startswith("local") or shutil.which("sh") is None:
        return sys.executable
    zips = spark_zips()
    if zips is None:
        return sys.executable
    global _written
    if _written is None:
        folder = tempfile.mkdtemp(prefix="pyzenoh-spark-python-")
        atexit.register(shutil.rmtree, folder, True)
        path = Path(folder) / WRAPPER_NAME
        path.write_text(wrapper_text(sys.executable, zips))
        path.chmod(0o755)
        _written = str(path)
    return _written


_written: str | None = None
