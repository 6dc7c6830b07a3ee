"""The pipeline job for the recordings of several routers of one mesh: each router's own
tables under ``routers/<name>``, then the mesh tables (:mod:`.mesh`) and the mesh report.

One router's bad or truncated segments never stop the others' analysis: its readers skip
what they cannot parse (as for one recording), and a recording whose tables cannot be
built at all is reported as failed and left out of the mesh tables.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyzenoh.errors import UsageError
from pyzenoh.pipeline.mesh import (
    collect_topology,
    hops_table,
    mesh_delivery,
    mesh_links_table,
    mesh_verdict,
    router_links,
    unfollowable_ids,
    with_link_times,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

#: The mesh tables written in the output directory (each router's are under routers/).
MESH_TABLES = ("samples", "hops", "mesh_delivery", "mesh_links")


def run_mesh(
    spark: SparkSession,
    rec_dirs: Sequence[str],
    out_dir: Path,
    prog: Any,
    settle_ms: int,
    router_tables: Callable[[SparkSession, str, Path, Any, dict[str, int]], dict[str, Any]],
    report: bool = True,
) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from pyzenoh.pipeline.jobs import recording_label, save_table
    from pyzenoh.pipeline.mesh_report import write_mesh_report
    from pyzenoh.pipeline.report import write_report

    labels: dict[str, str] = {}  # rec_dir -> name
    zids: dict[str, str] = {}  # zid -> name
    for rec_dir in rec_dirs:
        name, seen = recording_label(rec_dir)
        if name in labels.values():
            raise UsageError(f"{rec_dir}: a second recording of router {name}")
        labels[rec_dir] = name
        for zid in seen:
            zids[zid] = name

    routers: dict[str, dict[str, Any]] = {}
    failed: dict[str, str] = {}
    for rec_dir, name in labels.items():
        own: dict[str, int] = {}
        try:
            found = router_tables(spark, rec_dir, out_dir / "routers" / name, prog, own)
        except Exception as exc:  # noqa: BLE001 - one router's failure is reported, the others go on
            log.warning("recording %s: %s", rec_dir, exc)
            failed[name] = f"{type(exc).__name__}: {exc}"
            continue
        routers[name] = {"recording_dir": rec_dir, "counts": own, **found}
        if report:
            write_report(spark, out_dir / "routers" / name, found["verdict"], own, router=name)
    if not routers:
        raise UsageError(f"no recording could be analysed: {failed}")

    def table(name: str, router: str) -> DataFrame:
        return spark.read.parquet(str(out_dir / "routers" / router / name))

    def union(frames: list[DataFrame]) -> DataFrame:
        out = frames[0]
        for df in frames[1:]:
            out = out.unionByName(df)
        return out

    counts: dict[str, int] = {}

    def save(name: str, df: DataFrame) -> DataFrame:
        return save_table(spark, out_dir, name, df, counts)

    prog.stage("hops across the mesh")
    names = list(routers)
    save("samples", union([table("samples", r).withColumn("router", F.lit(r)) for r in names]))
    hops = save(
        "hops",
        with_link_times(
            union([hops_table(r, table("messages", r), table("links", r), table("routes", r)) for r in names]),
            zids,
        ),
    )
    links_df = union([router_links(r, table("links", r), zids) for r in names])
    prog.done(f"{counts['samples']} samples, {counts['hops']} hops")

    prog.stage("mesh delivery audit")
    topology = collect_topology(links_df, names)
    declarations = union([table("declarations", r).withColumn("router", F.lit(r)) for r in names])
    # counted once here, left out of the audit there
    unfollowable = unfollowable_ids(hops, topology).cache()
    delivery = save("mesh_delivery", mesh_delivery(hops, declarations, topology, unfollowable, settle_ms))
    save("mesh_links", mesh_links_table(hops, delivery, links_df))
    verdict = mesh_verdict(delivery)
    verdict["samples_not_followed"] = unfollowable.count()
    unfollowable.unpersist()
    if verdict["samples_not_followed"]:
        verdict["text"] += (
            f"; {verdict['samples_not_followed']} samples without a timestamp went on to other routers "
            "and could not be followed (routers stamp PUTs only)"
        )
    prog.done(verdict["text"])

    prog.stage("mesh report")
    report_path = write_mesh_report(spark, out_dir, verdict, routers, failed, counts) if report else None
    prog.done(str(report_path))
    return {
        "recording_dirs": list(rec_dirs),
        "output_dir": str(out_dir),
        "master": spark.sparkContext.master,
        "routers": {
            name: {
                "recording_dir": r["recording_dir"],
                "tables": str(out_dir / "routers" / name),
                "rows": r["counts"],
                "invalid_messages": r["invalid"],
                "audit": r["verdict"],
            }
            for name, r in routers.items()
        },
        "failed_recordings": failed,
        "tables": {name: {"path": str(out_dir / name), "rows": counts.get(name, 0)} for name in MESH_TABLES},
        "mesh_audit": verdict,
        "report": str(report_path) if report_path is not None else None,
    }
