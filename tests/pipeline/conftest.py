"""One local SparkSession for the whole pipeline suite (a JVM start costs ~6 s), and one
real ``spark-submit`` of the pipeline (its own JVM) on the scripted scenario."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from pyzenoh.pipeline.worker_python import worker_python
from tests.pipeline.submit import Submitted, start

# Workers use this venv, through the wrapper that skips Spark's zip copy of pyspark.
os.environ.setdefault("PYSPARK_PYTHON", worker_python("local[2]"))
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


@pytest.fixture(scope="session")
def submitted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Submitted | None]:
    """The pipeline run by spark-submit (see :mod:`tests.pipeline.submit`); None when
    spark-submit is not installed next to this Python."""
    sub = start(tmp_path_factory.mktemp("submit"))
    try:
        yield sub
    finally:
        if sub is not None:
            sub.stop()


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    from pyzenoh.pipeline.source import register

    # When a selected test will want the spark-submit run, it starts now, in the
    # background: it then runs alongside the tests using this session, not after them.
    # (Should it fail to start, the tests asking for it get that error, not this fixture.)
    if any("submitted" in getattr(item, "fixturenames", ()) for item in request.session.items):
        with contextlib.suppress(Exception):
            request.getfixturevalue("submitted")

    session = (
        SparkSession.builder.master("local[2]")
        .appName("pyzenoh-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config(
            "spark.driver.extraJavaOptions",
            # C1 only starts faster; its 48 MB code cache filled up (compiler disabled) once the
            # mesh tests' plans joined the suite: room for them
            "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ReservedCodeCacheSize=192m",
        )
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
        .config("spark.sql.execution.arrow.pyspark.validateSchema.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    try:
        yield session
    finally:
        session.stop()
