"""``pyzenoh pipeline RECORDING_DIR OUTPUT_DIR [--master URL]``.

Spark is imported only when the command runs, so ``pyzenoh --help`` stays fast and the
router never needs pyspark.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pyzenoh.errors import UsageError
from pyzenoh.pipeline.mesh import DEFAULT_SETTLE_MS


def _run(args: argparse.Namespace) -> int:
    from pyzenoh.pipeline.jobs import run_pipeline

    dirs = args.recordings[:-1]
    if not dirs:
        raise UsageError("give RECORDING_DIR... OUTPUT_DIR")
    if args.generate and len(dirs) > 1:
        raise UsageError("--generate writes one recording: give one RECORDING_DIR")
    if args.generate:
        from pyzenoh.pipeline.synth import generate

        n = generate(dirs[0], args.generate)
        print(f"wrote a synthetic recording of {n} records to {dirs[0]}", file=sys.stderr)
    result = run_pipeline(
        dirs if len(dirs) > 1 else dirs[0],
        args.recordings[-1],
        master=args.master,
        progress=not args.quiet,
        settle_ms=args.settle_ms,
        report=not args.no_report,
    )
    print(json.dumps(result, indent=2, default=str))
    return 0


def register_cli(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "pipeline",
        help="analyse traffic recordings (one router's, or a mesh's) with Spark: Parquet tables + report.html",
        description="Decode pyzenoh recordings with Spark and write the messages, traffic, "
        "queries, declarations and delivery-audit tables as Parquet, plus report.html. Given the "
        "recordings of several routers of one mesh, each router's tables go under routers/, and every "
        "sample is followed across them: the samples, hops, mesh_delivery (where each lost sample "
        "stopped) and mesh_links tables.",
    )
    p.add_argument(
        "recordings",
        nargs="+",
        metavar="RECORDING_DIR... OUTPUT_DIR",
        help="the recording directories (seg-*.mcap; several: routers of one mesh, audited together), "
        "then where the tables and report go",
    )
    p.add_argument("--master", help="Spark master URL (default: local[*], or spark-submit's)")
    p.add_argument(
        "--settle-ms",
        type=int,
        default=DEFAULT_SETTLE_MS,
        metavar="MS",
        help="mesh audit: a subscription counts from MS after its declaration until MS before its end "
        f"(declarations crossing the mesh, clock skew; default {DEFAULT_SETTLE_MS})",
    )
    p.add_argument("--no-report", action="store_true", help="tables only, no report.html")
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
