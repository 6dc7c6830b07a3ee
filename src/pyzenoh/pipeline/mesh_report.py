"""The mesh's ``report.html``: what was recorded, the mesh audit's verdict, traffic per
router, per router link and per key over time, each router's dwell times, and where lost
samples stopped, sample by sample (each router's own report is under
``routers/<name>/report.html``). Interactive and self-contained (:mod:`.charts`);
everything shown is aggregated by Spark first.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyzenoh.pipeline.charts import bucket_ns, count_chart, html_table, page, rate_chart, when_text
from pyzenoh.pipeline.report import TOP_SERIES, rates, recorded_header, span_ns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

LOSSES_SHOWN = 100


def _ms(ns: float | None) -> str:
    return "" if ns is None else f"{ns / 1e6:.3f}"


def _hop_text(hop: Any) -> str:
    link = hop["link_ns"]
    return f"{hop['router'][:8]} ({'entry' if link is None else '+' + _ms(link)})"


def _routers_section(
    spark: SparkSession, out_dir: Path, routers: dict[str, dict[str, Any]], hops: DataFrame, delivery: DataFrame
) -> list[str]:
    from pyspark.sql import functions as F

    lost_at = {
        r["stopped_at"]: int(r["n"])
        for r in delivery.where(~F.col("reached")).groupBy("stopped_at").agg(F.count(F.lit(1)).alias("n")).collect()
    }
    per_router = {
        r["router"]: r
        for r in hops.groupBy("router")
        .agg(
            F.sum(F.col("entry").cast("int")).alias("entered"),
            F.count(F.lit(1)).alias("hops"),
            F.sum("copies").alias("copies"),
            F.percentile_approx("dwell_ns", [0.5, 0.99]).alias("dwell"),
            F.max("dwell_ns").alias("max"),
            F.percentile_approx("link_ns", [0.5, 0.99]).alias("link"),
        )
        .collect()
    }
    rows = []
    for name, info in routers.items():
        r = per_router.get(name)
        p50, p99 = (r["dwell"] or [None, None]) if r else (None, None)
        l50, l99 = (r["link"] or [None, None]) if r else (None, None)
        rows.append(
            [
                name,
                r["entered"] if r else 0,
                r["hops"] if r else 0,
                r["copies"] if r else 0,
                _ms(p50),
                _ms(p99),
                _ms(r["max"]) if r else "",
                _ms(l50),
                _ms(l99),
                lost_at.get(name, 0),
                "pass" if info["verdict"].get("passed") else "FAIL",
            ]
        )
    header = ["router", "samples entered", "samples received", "copies sent", "dwell p50 ms", "dwell p99 ms"]
    header += ["dwell max ms", "link in p50 ms", "link in p99 ms", "losses stopped here", "own audit"]
    parts = ["<h2>Routers</h2>", html_table(header, rows)]
    parts.append(
        "<p>Dwell: from the router's rx record of a sample to its first tx record (pyzenoh stamps a "
        "routed message and its copies with one clock read: not zero only when a send waited). Link "
        "in: from the previous router's send to this router's receipt (host clocks).</p>"
    )
    parts.append(
        "<p>Each router's own tables and report: "
        + ", ".join(f'<a href="routers/{html.escape(n)}/report.html">{html.escape(n)}</a>' for n in routers)
        + "</p>"
    )
    messages = None
    for name in routers:
        df = spark.read.parquet(str(out_dir / "routers" / name / "messages")).select(
            "time_ns", "raw_size", F.lit(name).alias("router")
        )
        messages = df if messages is None else messages.unionByName(df)
    span = span_ns(messages) if messages is not None else None
    if messages is not None and span is not None:
        step = bucket_ns(span[1] - span[0])
        parts.append(
            rate_chart(
                "Messages each router recorded (received + sent)", rates(messages, F.col("router"), span[0], step), step
            )
        )
    return parts


def _links_section(spark: SparkSession, out_dir: Path, hops: DataFrame) -> list[str]:
    from pyspark.sql import functions as F

    links_df = spark.read.parquet(str(out_dir / "mesh_links"))
    links = links_df.orderBy("router", "run", "link").collect()
    parts = ["<h2>Router links</h2>"]
    parts.append(
        html_table(
            ["link", "face", "opened", "closed", "samples sent", "losses named here", "reasons"],
            [
                [
                    r["name"],
                    f"{r['run']}:{r['link']}",
                    when_text(r["open_ns"]),
                    when_text(r["close_ns"]),
                    r["samples_sent"],
                    r["losses"],
                    ", ".join(r["loss_reasons"]),
                ]
                for r in links
            ],
        )
    )
    sent = hops.select(
        "router",
        "run",
        F.explode("sent_links").alias("link"),
        F.col("first_tx_ns").alias("time_ns"),
        F.lit(0).alias("raw_size"),
    ).join(links_df.select("router", "run", "link", "name"), ["router", "run", "link"])
    span = span_ns(sent)
    if span is not None:
        step = bucket_ns(span[1] - span[0])
        parts.append(
            rate_chart("Samples sent on each router link", rates(sent, F.col("name"), span[0], step, TOP_SERIES), step)
        )
    return parts


def _losses_section(delivery: DataFrame, hops: DataFrame, verdict: dict[str, Any]) -> list[str]:
    from pyspark.sql import functions as F

    parts = ["<h2>Where samples were lost</h2>"]
    lost = delivery.where(~F.col("reached"))
    if not verdict["lost_by_reason"]:
        return [*parts, "<p>None.</p>"]
    parts.append(html_table(["reason", "deliveries lost"], list(verdict["lost_by_reason"].items())))
    span = span_ns(lost, "t_ns")
    if span is not None:
        step = bucket_ns(span[1] - span[0])
        rows = (
            lost.groupBy(F.floor((F.col("t_ns") - span[0]) / step).alias("b"), "reason").count().orderBy("b").collect()
        )
        series: dict[str, list[tuple[int, float]]] = {}
        for r in rows:
            series.setdefault(r["reason"], []).append((span[0] + int(r["b"]) * step, float(r["count"])))
        parts.append(count_chart("Deliveries lost, by reason", series, step, "deliveries lost"))
    first = lost.orderBy("t_ns", "sample_id", "sub_router", "sub_link").limit(LOSSES_SHOWN)
    paths = {
        r["sample_id"]: r["path"]
        for r in hops.join(first.select(F.col("sample_id").alias("m")).distinct(), F.col("sample_id") == F.col("m"))
        .groupBy("sample_id")
        .agg(F.array_sort(F.collect_list(F.struct("rx_ns", "router", "link_ns"))).alias("path"))
        .collect()
    }
    rows_shown = first.collect()
    parts.append(f"<h3>Sample by sample (first {len(rows_shown)}; all in mesh_delivery)</h3>")
    parts.append(
        html_table(
            ["time", "key", "path (router, +ms on the link in)", "subscriber", "stopped at", "where", "reason"],
            [
                [
                    when_text(r["t_ns"]),
                    r["key"],
                    " -> ".join(_hop_text(h) for h in paths.get(r["sample_id"], [])),
                    f"{r['sub_router']}#{r['sub_link']}",
                    r["stopped_at"],
                    r["stopped_link"],
                    r["reason"],
                ]
                for r in rows_shown
            ],
        )
    )
    return parts


def write_mesh_report(
    spark: SparkSession,
    out_dir: Path,
    verdict: dict[str, Any],
    routers: dict[str, dict[str, Any]],
    failed: dict[str, str],
    counts: dict[str, int],
) -> Path:
    from pyspark.sql import functions as F

    hops = spark.read.parquet(str(out_dir / "hops"))
    delivery = spark.read.parquet(str(out_dir / "mesh_delivery"))
    span = span_ns(hops, "rx_ns")
    what = f"{len(routers)} routers of one mesh: " + ", ".join(routers)
    lo, hi = span if span is not None else (None, None)
    parts = recorded_header("pyzenoh mesh report", what, lo, hi, counts)
    if failed:
        parts.append("<h3>Recordings that could not be analysed</h3>")
        parts.append(html_table(["router", "error"], list(failed.items())))
    css = "pass" if verdict.get("passed") else "fail"
    parts.append(f'<h2>Mesh delivery audit</h2><p class="{css}"><b>{html.escape(str(verdict["text"]))}</b></p>')
    parts += _routers_section(spark, out_dir, routers, hops, delivery)
    parts += _links_section(spark, out_dir, hops)
    samples = spark.read.parquet(str(out_dir / "samples"))
    sspan = span_ns(samples)
    if sspan is not None:
        step = bucket_ns(sspan[1] - sspan[0])
        keyed = rates(samples, F.col("key"), sspan[0], step, TOP_SERIES, size="payload_size")
        parts.append("<h2>Samples published, per key</h2>")
        parts.append(rate_chart("Samples published (payload bytes)", keyed, step))
    parts += _losses_section(delivery, hops, verdict)
    path = out_dir / "report.html"
    path.write_text(page("pyzenoh mesh report", parts), encoding="utf-8")
    return path
