"""``pyzenoh pipeline RECORDING_DIR OUTPUT_DIR [--master URL]``.

Spark is imported only when the command runs, so ``pyzenoh --help`` stays fast and the
router never needs pyspark.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def _run(args: argparse.Namespace) -> int:
    from pyzenoh.pipeline.jobs import run_pipeline

    if args.generate:
        from pyzenoh.pipeline.synth import generate

        n = generate(args.recording_dir, args.generate)
        print(
            f"wrote a synthetic recording of {n} records to {args.recording_dir}",
            file=sys.stderr,
        )
    result = run_pipeline(args.recording_dir, args.output_dir, master=args.master, progress=not args.quiet)
    print(json.dumps(result, indent=2, default=str))
    return 0


def register_cli(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "pipeline",
        help="analyse a traffic recording with Spark: Parquet tables + report.html",
        description="Decode a pyzenoh recording with Spark and write the messages, traffic, "
        "queries, declarations and delivery-audit tables as Parquet, plus report.html.",
    )
    p.add_argument("recording_dir", metavar="RECORDING_DIR", help="directory of seg-*.mcap files")
    p.add_argument("output_dir", metavar="OUTPUT_DIR", help="where the tables and report go")
    p.add_argument("--master", help="Spark master URL (default: local[*], or spark-submit's)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument(
        "--generate",
        type=int,
        metavar="N",
        help="first write a synthetic recording of about N records into RECORDING_DIR",
    )
    p.set_defaults(handler=_run)


def main(argv: list[str] | None = None) -> int:
    """Entry point for ``python -m pyzenoh.pipeline`` and ``spark-submit .../__main__.py``."""
    parser = argparse.ArgumentParser(prog="pyzenoh-pipeline")
    sub = parser.add_subparsers(dest="command", required=True)
    register_cli(sub)
    args = parser.parse_args(["pipeline", *(sys.argv[1:] if argv is None else argv)])
    return int(args.handler(args))
