"""The traffic pipeline: recording directory -> Parquet tables + ``report.html``.

Tables written under OUTPUT_DIR (one Parquet directory each):

``messages``      one row per recorded network message (see :mod:`.rows`), written by the
                  Spark tasks with pyarrow (see :mod:`.export`)
``links``         link open/close events (restated ones dropped), and the messages
                  access control denied (``event = "denied"``: ``cause`` is the rx
                  record being routed, ``link`` the face whose flow was denied)
``routes``        the router's own routing decisions (``Recorder.route``), written like
                  ``messages``
``traffic``       per minute and key expression, and per minute/key/link: message counts,
                  bytes, publishers, subscribers reached
``queries``       one row per query received from a face: querier, selector, target,
                  destinations, replies, errors, latencies, outcome
``declarations``  one row per declared entity: kind, key, face, declare/undeclare times,
                  lifetime (liveliness tokens included); ``denied`` marks a declaration
                  access control refused on the way in (no entity came of it)
``delivery``      for every PUSH received: the faces that should have got it (by the
                  router's routes and, independently, by replaying the declarations,
                  less the faces access control denied it to) vs the faces it was sent to
``delivery_differences``  every single difference found by that audit, one per row

Faces are identified by ``(run, link)``: link ids restart with each recorder run. Order
"at that moment" is decided by ``seq``, the recorder's single counter, not by clocks.
The job only uses importable functions (no lambdas from ``__main__``), so it runs the
same under ``python -m``, the ``pyzenoh`` CLI and ``spark-submit``. The derived tables
are built in :mod:`.tables`, the delivery audit in :mod:`.audit`; here: the session and
the job that runs them all.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyzenoh.pipeline.audit import (
    AUDIT_BUCKETS,
    audit_verdict,
    delivery_audit,
    delivery_differences,
    match_keys_batches,
)
from pyzenoh.pipeline.mesh import DEFAULT_SETTLE_MS
from pyzenoh.pipeline.tables import (
    DEFAULT_QUERY_TIMEOUT_MS,
    declarations_table,
    queries_table,
    traffic_table,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "AUDIT_BUCKETS",
    "DEFAULT_QUERY_TIMEOUT_MS",
    "TABLES",
    "audit_verdict",
    "declarations_table",
    "delivery_audit",
    "delivery_differences",
    "match_keys_batches",
    "queries_table",
    "run_pipeline",
    "spark_session",
    "traffic_table",
]

TABLES = (
    "messages",
    "links",
    "routes",
    "samples",
    "traffic",
    "queries",
    "declarations",
    "delivery",
    "delivery_differences",
)
#: Stages of one recording's tables (decoding .. delivery audit).
_ROUTER_STAGES = 6


class _Progress:
    """One line per stage on stderr: ``[pipeline 3/10] queries ... 1.2 s``."""

    def __init__(self, enabled: bool, stages: int) -> None:
        self.enabled = enabled
        self.stages = stages
        self.n = 0
        self.t0 = time.perf_counter()
        self._stage_t = self.t0

    def stage(self, name: str) -> None:
        self.n += 1
        self._stage_t = time.perf_counter()
        if self.enabled:
            print(f"[pipeline {self.n}/{self.stages}] {name} ...", file=sys.stderr, flush=True)

    def done(self, detail: str = "") -> None:
        if self.enabled:
            dt = time.perf_counter() - self._stage_t
            extra = f", {detail}" if detail else ""
            print(
                f"[pipeline {self.n}/{self.stages}]   done in {dt:.1f} s{extra}",
                file=sys.stderr,
                flush=True,
            )


def spark_session(master: str | None = None, app_name: str = "pyzenoh-pipeline") -> SparkSession:
    """The active SparkSession, or a new one (``master`` only when given: spark-submit's wins)."""
    from pyspark.sql import SparkSession

    from pyzenoh.pipeline.worker_python import worker_python

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # its master is not ours to know
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable if under_submit else worker_python(master))
    builder = SparkSession.builder.appName(app_name).config("spark.sql.session.timeZone", "UTC")
    if master:
        builder = builder.master(master)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session


def _load(spark: SparkSession, recording_dir: str, table: str) -> DataFrame:
    return spark.read.format("pyzenoh").option("table", table).load(recording_dir)


# --- the job ------------------------------------------------------------------------------


def save_table(spark: SparkSession, out_dir: Path, name: str, df: DataFrame, counts: dict[str, int]) -> DataFrame:
    """Write ``df`` as the Parquet table ``out_dir/name``, count it into ``counts``, and
    return it read back (what comes next reads the table, not the plan again)."""
    path = str(out_dir / name)
    df.write.mode("overwrite").parquet(path)
    counts[name] = written_rows(out_dir / name)
    return spark.read.parquet(path)


def written_rows(table_dir: Path) -> int:
    """The rows of a Parquet table just written, from its files' footers: what a Spark
    count would say, without a job (a job costs 0.2 s even on a tiny table, and a mesh run
    writes some twenty tables). The output directory is local (``run_pipeline`` makes it)."""
    import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

    return sum(pq.read_metadata(part).num_rows for part in sorted(table_dir.glob("part-*.parquet")))


def recording_label(rec_dir: str) -> tuple[str, list[str]]:
    """A recording's name in the mesh tables, and every zid its router had in it: the
    zid its segments carry (the last one, when restarts gave it several), else (older
    recordings) the directory's name."""
    from pyzenoh.recording.reader import list_segments, scan_segment

    zids: list[str] = []
    for _number, path in list_segments(rec_dir):
        zid = scan_segment(path).zid
        if zid and zid not in zids:
            zids.append(zid)
    return (zids[-1] if zids else Path(rec_dir).name), zids


def _router_tables(
    spark: SparkSession, rec_dir: str, out_dir: Path, prog: _Progress, counts: dict[str, int]
) -> dict[str, Any]:
    """One recording's tables under ``out_dir`` and its router's delivery audit."""
    from pyspark.sql import functions as F

    from pyzenoh.pipeline.export import export_table

    out_dir.mkdir(parents=True, exist_ok=True)

    def save(name: str, df: DataFrame) -> DataFrame:
        return save_table(spark, out_dir, name, df, counts)

    def export(table: str) -> DataFrame:
        """A recording table written by the Spark tasks with pyarrow (see .export)."""
        counts[table] = export_table(spark, rec_dir, out_dir / table, table)
        return spark.read.parquet(str(out_dir / table))

    prog.stage("decoding messages")
    messages = export("messages")
    prog.done(f"{counts['messages']} rows")

    prog.stage("links, routes and samples")
    links = save("links", _load(spark, rec_dir, "links").where(~F.col("carried")))
    routes = export("routes")
    export("samples")
    prog.done(f"{counts['links']} link events, {counts['routes']} routes, {counts['samples']} samples")

    steps: list[tuple[str, Callable[[], DataFrame]]] = [
        ("traffic", lambda: traffic_table(messages)),
        ("queries", lambda: queries_table(messages)),
        ("declarations", lambda: declarations_table(messages, links)),
    ]
    for name, build in steps:
        prog.stage(name)
        save(name, build())
        prog.done(f"{counts[name]} rows")
    declarations = spark.read.parquet(str(out_dir / "declarations"))

    prog.stage("delivery audit")
    audit = save("delivery", delivery_audit(messages, routes, declarations, links))
    save("delivery_differences", delivery_differences(audit))
    verdict = audit_verdict(audit)
    prog.done(verdict["text"])
    invalid = messages.where(F.col("msg_type") == "invalid").count()
    return {"verdict": verdict, "invalid": invalid}


def run_pipeline(
    recording_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    output_dir: str | os.PathLike[str],
    master: str | None = None,
    progress: bool = True,
    settle_ms: int = DEFAULT_SETTLE_MS,
    report: bool = True,
) -> dict[str, Any]:
    """Decode recordings, write the Parquet tables and ``report.html`` (``report``: also
    write the reports); return a summary.

    One recording: its tables in ``output_dir``. Several (routers of one mesh): each
    router's tables in ``output_dir/routers/<zid>``, and the mesh tables (``samples`` of
    every router, ``hops``, ``mesh_delivery``, ``mesh_links``) with the mesh report in
    ``output_dir`` (``settle_ms``: see :mod:`.mesh`).
    """
    from pyzenoh.errors import UsageError
    from pyzenoh.pipeline.report import write_report
    from pyzenoh.pipeline.source import register
    from pyzenoh.recording.reader import list_segments

    given = [recording_dir] if isinstance(recording_dir, str | os.PathLike) else list(recording_dir)
    rec_dirs = [str(Path(d).resolve()) for d in given]
    if not rec_dirs:
        raise UsageError("no recording given")
    for rec_dir in rec_dirs:
        if not list_segments(rec_dir):
            raise UsageError(f"{rec_dir} holds no recording segments (seg-*.mcap)")
    out_dir = Path(output_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    mesh = len(rec_dirs) > 1
    prog = _Progress(progress, 2 + _ROUTER_STAGES * len(rec_dirs) + (3 if mesh else 1))

    prog.stage("starting Spark")
    spark = spark_session(master)
    register(spark)
    prog.done(f"master {spark.sparkContext.master}")

    counts: dict[str, int] = {}
    if not mesh:
        found = _router_tables(spark, rec_dirs[0], out_dir, prog, counts)
        verdict = found["verdict"]
        prog.stage("report")
        name = recording_label(rec_dirs[0])[0]
        report_path = write_report(spark, out_dir, verdict, counts, router=name) if report else None
        prog.done(str(report_path))
        result: dict[str, Any] = {
            "recording_dir": rec_dirs[0],
            "output_dir": str(out_dir),
            "master": spark.sparkContext.master,
            "tables": {name: {"path": str(out_dir / name), "rows": counts.get(name, 0)} for name in TABLES},
            "invalid_messages": found["invalid"],
            "audit": verdict,
            "report": str(report_path) if report_path is not None else None,
        }
    else:
        from pyzenoh.pipeline.mesh_job import run_mesh

        result = run_mesh(spark, rec_dirs, out_dir, prog, settle_ms, _router_tables, report)
    prog.stage("summary")
    result["seconds"] = round(time.perf_counter() - prog.t0, 3)
    prog.done(f"{result['seconds']} s in all")
    return result
