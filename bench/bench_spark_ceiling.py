"""What Spark itself costs to take the ``messages`` table from a Python source to Parquet.

A stand-in data source hands Spark the very batches the ``pyzenoh`` source produces (decoded
once, then yielded again and again, so decoding costs nothing) for N rows, into the no-op
sink and into Parquet, on the given master. This is the ceiling for the real source on the
same machine: the JVM's Arrow intake and the Parquet writer for the table's 51 columns.
The same with only the first K columns shows how the cost grows with the table's width.

    python bench/bench_spark_ceiling.py [--rows 1000000] [--master 'local[2]'] [--columns 51,22,12]
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

MAX_ROWS = 20_000_000
PARTITIONS = 8


def _ceiling_source(recording: str, rows: int, width: int) -> type:
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from pyzenoh.pipeline import rows as R

    ddl = ", ".join(R.MESSAGES_DDL.split(", ")[:width])

    class CeilingReader(DataSourceReader):
        def partitions(self) -> list[InputPartition]:
            return [InputPartition(i) for i in range(PARTITIONS)]

        def read(self, partition: InputPartition) -> Any:
            import pyarrow as pa

            from pyzenoh.pipeline.source import catalog_for, plan_slices, read_slice
            from pyzenoh.recording import format as fmt

            cat = catalog_for(recording)
            segments = cat.refresh()
            first = segments[0]
            (part,) = plan_slices(cat, [first], fmt.CH_NET, (first.number, 0), (first.number, 8192))
            batch = next(iter(read_slice(part, R.arrow_schema(R.MESSAGES_DDL))))
            schema = R.arrow_schema(ddl)
            batch = pa.RecordBatch.from_arrays(batch.columns[:width], schema=schema)
            for _ in range(max(1, rows // PARTITIONS // batch.num_rows)):
                yield batch

    class CeilingSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return f"ceiling{width}"

        def schema(self) -> str:
            return ddl

        def reader(self, schema: Any) -> DataSourceReader:
            return CeilingReader()

    return CeilingSource


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--columns", default="51,22,12", help="table widths to try")
    args = parser.parse_args()
    rows_wanted = max(100_000, min(args.rows, MAX_ROWS))
    from pyzenoh.pipeline.worker_python import worker_python

    os.environ.setdefault("PYSPARK_PYTHON", worker_python(args.master))
    from pyspark.sql import SparkSession

    from pyzenoh.pipeline.synth import generate

    print(f"python {platform.python_version()}  nproc {os.cpu_count()}  master {args.master}")
    spark = (
        SparkSession.builder.master(args.master)
        .appName("bench-spark-ceiling")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory(prefix="bench-ceiling-") as d:
        rec = Path(d) / "recording"
        generate(rec, 20_000)
        spark.range(10).count()
        for width in (int(w) for w in args.columns.split(",")):
            source = _ceiling_source(str(rec), rows_wanted, max(1, min(width, 51)))
            spark.dataSource.register(source)
            name = source.name()
            rows = spark.read.format(name).load().count()
            for sink in (
                "noop",
                "noop",
                "parquet",
                "parquet",
            ):  # first of each: warm-up
                t0 = time.perf_counter()
                writer = spark.read.format(name).load().write.mode("overwrite")
                if sink == "noop":
                    writer.format("noop").save()
                else:
                    writer.parquet(str(Path(d) / "out.parquet"))
                dt = time.perf_counter() - t0
                print(f"{width:3} columns -> {sink:8}: {rows / dt:>10,.0f} rows/s ({rows:,} rows, {dt:.2f} s)")
    spark.stop()


if __name__ == "__main__":
    main()
