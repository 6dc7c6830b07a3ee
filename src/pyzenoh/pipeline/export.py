"""A recording table straight to Parquet, written by the Spark tasks themselves.

Spark's own writer takes every Arrow batch a Python source yields into JVM rows and then
encodes those rows into Parquet. On two cores that caps the 51-column ``messages`` table
at about 290k rows/s even when decoding costs nothing (``bench/bench_spark_ceiling.py``).
Here Spark still plans and runs the job (one task per slice of the recording, with its
scheduling, retries and any ``--master``), but each task decodes its slice with the very
code the ``pyzenoh`` source uses and writes the Parquet file with pyarrow, so the rows
never enter the JVM. The files read back with ``spark.read.parquet`` as exactly the table
``spark.read.format("pyzenoh")`` gives (tests check).

Commit protocol: tasks write under a staging directory next to the output, each file to
a temporary name and then renamed, so a retried or speculative task replaces its own file
with identical content. After the job the driver checks that every slice reported, swaps
the staging directory in for the output and writes ``_SUCCESS``. Like the recording, the
output directory must be on a filesystem that the driver and every executor share.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyzenoh.errors import UsageError
from pyzenoh.pipeline import rows as R

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
    from pyspark.sql import SparkSession

    from pyzenoh.pipeline.source import SegmentSlice

#: Rows per Parquet row group: large enough for good encoding, small enough that a task
#: holds one group's batches at a time.
ROW_GROUP_ROWS = 131_072
#: Tasks per core when the recording is small enough to need cutting finer than the
#: source's default partitions, and the fewest records worth a task.
TASKS_PER_CORE = 4
MIN_TASK_RECORDS = 20_000
#: What the task reports per slice.
_REPORT_DDL = "slice INT, rows BIGINT, file STRING"
# Dictionary-encode the columns with few distinct values, and keep min/max statistics for
# the columns people filter on: writing statistics for all 51 columns doubled the cost.
_DICTIONARY_COLUMNS = frozenset(
    {
        "zid",
        "whatami",
        "remote",
        "direction",
        "msg_type",
        "body_type",
        "key",
        "encoding",
        "source_zid",
        "target",
        "consolidation",
        "reply_kind",
        "responder_zid",
        "decl_kind",
        "decl_op",
        "interest_mode",
        "event",
        "reason",
    }
)
_STATISTICS_COLUMNS = frozenset(
    {
        "seg",
        "rec",
        "run",
        "seq",
        "time_ns",
        "timestamp",
        "link",
        "msg_type",
        "key",
        "request_id",
        "cause",
        "event",
    }
)


def _writer_options(schema: pa.Schema) -> dict[str, Any]:
    return {
        "compression": "snappy",  # what Spark itself writes by default
        "use_dictionary": [c for c in schema.names if c in _DICTIONARY_COLUMNS],
        "write_statistics": [c for c in schema.names if c in _STATISTICS_COLUMNS],
    }


def write_batches(batches: Iterator[pa.RecordBatch], schema: pa.Schema, path: str) -> int:
    """Write ``batches`` as one Parquet file at ``path`` (atomically: a temporary name,
    then a rename); return the number of rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    rows = 0
    try:
        with pq.ParquetWriter(tmp, schema, **_writer_options(schema)) as writer:
            pending: list[pa.RecordBatch] = []
            held = 0
            for batch in batches:
                pending.append(batch)
                held += batch.num_rows
                if held >= ROW_GROUP_ROWS:
                    writer.write_table(pa.Table.from_batches(pending, schema))
                    rows += held
                    pending, held = [], 0
            if held:
                writer.write_table(pa.Table.from_batches(pending, schema))
                rows += held
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return rows


def part_name(index: int) -> str:
    return f"part-{index:05d}.parquet"


class _SliceWriter:
    """The task body (``mapInArrow``): slice ids in, one report row per written file out.

    A module-level class, so that Spark pickles it by reference whatever script runs the
    job (functions defined in ``__main__`` do not pickle cleanly into the workers)."""

    def __init__(self, slices: Sequence[SegmentSlice], ddl: str, staging: str) -> None:
        self.slices = list(slices)
        self.ddl = ddl
        self.staging = staging

    def __call__(self, ids: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        from pyzenoh.pipeline.source import read_slice

        schema = R.arrow_schema(self.ddl)
        report = R.arrow_schema(_REPORT_DDL)
        for batch in ids:
            for index in batch.column(0).to_pylist():
                name = part_name(index)
                rows = write_batches(
                    read_slice(self.slices[index], schema),
                    schema,
                    os.path.join(self.staging, name),
                )
                yield pa.RecordBatch.from_pylist([{"slice": index, "rows": rows, "file": name}], schema=report)


def _cores(spark: SparkSession) -> int:
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        return 2


def export_table(
    spark: SparkSession,
    recording_dir: str | os.PathLike[str],
    output: str | os.PathLike[str],
    table: str = "messages",
    partition_records: int | None = None,
) -> int:
    """Decode ``table`` of the whole recording into Parquet at ``output`` (replacing what
    is there); return the number of rows written. ``partition_records``: records per
    task (by default cut so that every core gets several tasks)."""
    from pyzenoh.pipeline.source import (
        DEFAULT_PARTITION_RECORDS,
        TABLE_CHANNEL,
        advance,
        catalog_for,
        earliest,
        plan_slices,
    )

    if table not in TABLE_CHANNEL:
        raise UsageError(f"table must be one of {sorted(TABLE_CHANNEL)}, not {table!r}")
    ddl = R.TABLE_DDL[table]
    channel = TABLE_CHANNEL[table]
    catalog = catalog_for(str(Path(recording_dir).resolve()))
    segments = catalog.refresh()
    if partition_records is None:
        # At least TASKS_PER_CORE tasks per core, so that no core idles at the end.
        records = sum(info.count(channel) for info in segments)
        share = -(-records // (TASKS_PER_CORE * _cores(spark)))
        partition_records = min(DEFAULT_PARTITION_RECORDS, max(MIN_TASK_RECORDS, share))
    slices = plan_slices(
        catalog,
        segments,
        channel,
        earliest(segments),
        advance(segments, channel, earliest(segments)),
        partition_records,
    )
    out = Path(output).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f"_{out.name}-staging-{uuid.uuid4().hex}"
    staging.mkdir()
    try:
        if slices:
            reports = (
                spark.range(0, len(slices), 1, len(slices))
                .mapInArrow(_SliceWriter(slices, ddl, str(staging)), _REPORT_DDL)
                .collect()
            )
            done = {int(r["slice"]): int(r["rows"]) for r in reports}
            if sorted(done) != list(range(len(slices))):
                raise RuntimeError(f"export of {table}: {len(slices) - len(done)} slices did not report")
            total = sum(done.values())
        else:  # an empty table is still a readable table
            total = write_batches(iter(()), R.arrow_schema(ddl), str(staging / part_name(0)))
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
        (out / "_SUCCESS").touch()
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return total
