"""One router's ``report.html``: what was recorded, the routing audit, traffic over time
(messages/s and bytes/s in all, per link and per key), queries and their latency
percentiles, declarations, links and tokens. Interactive and self-contained
(:mod:`.charts`); everything plotted is aggregated by Spark first.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyzenoh.pipeline.charts import (
    Series,
    bar_chart,
    bucket_ns,
    html_table,
    latency_chart,
    level_chart,
    page,
    rate_chart,
    when_text,
)
from pyzenoh.recording.format import DENIED, INTERCEPTED, STOP_EVENTS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

TOP_KEYS = 15
#: Series of a per-link or per-key chart; the rest are summed as "other".
TOP_SERIES = 8
LATENCY_SAMPLE = 50_000
DIFFERENCES_SHOWN = 50
#: What a links table's stop event says stopped the message.
_STOPPED_BY = {DENIED: "access control", INTERCEPTED: "interceptor"}
PERCENTILES = (0.5, 0.9, 0.99)


def span_ns(df: DataFrame, col: str = "time_ns") -> tuple[int, int] | None:
    from pyspark.sql import functions as F

    row = df.agg(F.min(col), F.max(col)).first()
    if row is None or row[0] is None:
        return None
    return int(row[0]), int(row[1])


def rates(df: DataFrame, name: Column, lo: int, step: int, top: int | None = None, size: str = "raw_size") -> Series:
    """Per bucket of ``step`` ns from ``lo`` and per ``name``: (start, messages, bytes);
    with ``top``, names past the busiest ``top`` are summed as ``other``."""
    from pyspark.sql import functions as F

    named = df.withColumn("_name", name.cast("string"))
    if top is not None:
        busiest = [
            r[0]
            for r in named.groupBy("_name").count().orderBy(F.desc("count"), "_name").limit(top).collect()
            if r[0] is not None
        ]
        named = named.withColumn("_name", F.when(F.col("_name").isin(busiest), F.col("_name")).otherwise("other"))
    rows = (
        named.groupBy(F.floor((F.col("time_ns") - lo) / step).alias("b"), "_name")
        .agg(F.count(F.lit(1)).alias("n"), F.sum(F.coalesce(F.col(size), F.lit(0))).alias("bytes"))
        .orderBy("b")
        .collect()
    )
    out: Series = {}
    for r in rows:
        out.setdefault(r["_name"] or "", []).append((lo + int(r["b"]) * step, float(r["n"]), float(r["bytes"] or 0)))
    return dict(sorted(out.items()))


def recorded_header(title: str, what: str, lo: int | None, hi: int | None, counts: dict[str, int]) -> list[str]:
    shown = ", ".join(f"{v} {k}" for k, v in counts.items())
    return [
        f"<header><h1>{html.escape(title)}</h1>",
        f"<p><b>Recorded:</b> {html.escape(what)}</p>",
        f"<p><b>Period:</b> {html.escape(when_text(lo))} to {html.escape(when_text(hi))} (UTC)</p>",
        f"<p><b>Rows:</b> {html.escape(shown)}</p></header>",
    ]


def _audit_section(spark: SparkSession, out_dir: Path, verdict: dict[str, Any]) -> list[str]:
    from pyspark.sql import functions as F

    css = "pass" if verdict.get("passed") else "fail"
    parts = [f'<h2>Routing audit</h2><p class="{css}"><b>{html.escape(str(verdict.get("text", "")))}</b></p>']
    parts.append(html_table(["measure", "value"], [[k, v] for k, v in verdict.items() if k != "text"]))
    diffs = (
        spark.read.parquet(str(out_dir / "delivery_differences"))
        .orderBy("seq", "kind", "face")
        .limit(DIFFERENCES_SHOWN)
        .collect()
    )
    if diffs:
        parts.append(f"<h3>Differences (first {len(diffs)}; all in delivery_differences)</h3>")
        parts.append(
            html_table(
                ["seq", "time", "key", "from face", "face", "kind", "explanation"],
                [
                    [d["seq"], d["timestamp"], d["key"], d["source_link"], d["face"], d["kind"], d["explanation"]]
                    for d in diffs
                ],
            )
        )
    denials = (
        spark.read.parquet(str(out_dir / "links"))
        .where(F.col("event").isin(*STOP_EVENTS))
        .groupBy("event", "flow", "message", "reason")
        .count()
        .orderBy(F.desc("count"), "reason")
        .limit(DIFFERENCES_SHOWN)
        .collect()
    )
    if denials:
        parts.append("<h3>Stopped by access control and interceptors (by reason; each one in links)</h3>")
        parts.append(
            html_table(
                ["by", "flow", "message", "reason", "messages"],
                [[_STOPPED_BY[d["event"]], d["flow"], d["message"], d["reason"], d["count"]] for d in denials],
            )
        )
    return parts


def _traffic_section(spark: SparkSession, out_dir: Path) -> list[str]:
    from pyspark.sql import functions as F

    messages = spark.read.parquet(str(out_dir / "messages"))
    kinds = messages.groupBy("msg_type", "direction").count().orderBy("msg_type", "direction").collect()
    parts = ["<h2>Traffic</h2>"]
    span = span_ns(messages)
    if span is None:
        return [*parts, "<p>No messages.</p>"]
    lo, hi = span
    step = bucket_ns(hi - lo)
    face = F.concat_ws(" ", F.concat_ws(":", "run", "link"), F.col("whatami"), F.substring("zid", 1, 8))
    parts.append(rate_chart("Messages received and sent", rates(messages, F.col("direction"), lo, step), step))
    parts.append(rate_chart("Per link (run:link whatami zid)", rates(messages, face, lo, step, TOP_SERIES), step))
    keyed = messages.where(F.col("key").isNotNull())
    parts.append(rate_chart("Per key expression", rates(keyed, F.col("key"), lo, step, TOP_SERIES), step))
    parts.append("<h3>Messages by type</h3>")
    parts.append(html_table(["type", "direction", "messages"], [[r[0], r[1], r[2]] for r in kinds]))
    top = (
        spark.read.parquet(str(out_dir / "traffic"))
        .where(F.col("link").isNull())
        .groupBy("key")
        .agg(F.sum("messages").alias("messages"), F.sum("payload_bytes").alias("bytes"))
        .orderBy(F.desc("messages"), "key")
        .limit(TOP_KEYS)
        .collect()
    )
    if not top:
        parts.append("<p>No keyed traffic.</p>")
    else:
        parts.append(
            bar_chart(
                f"Top {len(top)} key expressions",
                [r["key"] for r in top],
                [r["messages"] for r in top],
                "messages (received + sent)",
            )
        )
        parts.append(
            html_table(["key", "messages", "payload bytes"], [[r["key"], r["messages"], r["bytes"] or 0] for r in top])
        )
    return parts


def _queries_section(spark: SparkSession, out_dir: Path) -> list[str]:
    from pyspark.sql import functions as F

    queries = spark.read.parquet(str(out_dir / "queries"))
    by_status = {r["status"]: int(r["count"]) for r in queries.groupBy("status").count().collect()}
    parts = ["<h2>Queries</h2>"]
    if not by_status:
        return [*parts, "<p>No queries.</p>"]
    parts.append(html_table(["status", "queries"], sorted(by_status.items())))
    pct = queries.agg(
        F.percentile_approx("first_reply_ms", list(PERCENTILES)).alias("first"),
        F.percentile_approx("final_ms", list(PERCENTILES)).alias("final"),
        F.max("first_reply_ms").alias("first_max"),
        F.max("final_ms").alias("final_max"),
    ).first()
    if pct is not None and (pct["first"] or pct["final"]):
        header = ["latency (ms after the query arrived)", *(f"p{round(p * 100)}" for p in PERCENTILES), "max"]
        rows = [
            ["first reply", *(pct["first"] or [None] * len(PERCENTILES)), pct["first_max"]],
            ["RESPONSE_FINAL", *(pct["final"] or [None] * len(PERCENTILES)), pct["final_max"]],
        ]
        parts.append(html_table(header, [[r[0], *("" if v is None else f"{v:.3f}" for v in r[1:])] for r in rows]))
    sample = queries.select("first_reply_ms", "final_ms").limit(LATENCY_SAMPLE).collect()
    hist = {
        "first reply": [r[0] for r in sample if r[0] is not None],
        "RESPONSE_FINAL": [r[1] for r in sample if r[1] is not None],
    }
    if any(hist.values()):
        parts.append(latency_chart("Query latency", {k: v for k, v in hist.items() if v}))
    return parts


def _declarations_section(spark: SparkSession, out_dir: Path) -> list[str]:
    from pyspark.sql import functions as F

    decl_all = spark.read.parquet(str(out_dir / "declarations"))
    decl = decl_all.where((F.col("kind") != "keyexpr") & (F.col("direction") == "rx") & ~F.col("denied"))
    starts = decl.select("kind", F.col("declare_ns").alias("t"), F.lit(1).alias("d"))
    ends = decl.where(F.col("end_ns").isNotNull()).select("kind", F.col("end_ns").alias("t"), F.lit(-1).alias("d"))
    rows = starts.unionByName(ends).groupBy("kind", "t").agg(F.sum("d").alias("d")).orderBy("t").collect()
    parts = ["<h2>Declarations</h2>"]
    if not rows:
        parts.append("<p>No declarations.</p>")
    else:
        levels: dict[str, list[tuple[int, int]]] = {}
        for r in rows:
            pts = levels.setdefault(r["kind"], [])
            pts.append((int(r["t"]), (pts[-1][1] if pts else 0) + int(r["d"])))
        parts.append(level_chart("Entities declared by faces", dict(sorted(levels.items())), "active entities"))
    links = (
        spark.read.parquet(str(out_dir / "links"))
        .where(~F.col("event").isin(*STOP_EVENTS))
        .orderBy("seq")
        .select("timestamp", "event", "run", "link", "zid", "whatami", "remote", "reason")
        .limit(200)
        .collect()
    )
    if links:
        parts.append("<h3>Links</h3>")
        parts.append(
            html_table(["time", "event", "run", "link", "zid", "whatami", "remote", "reason"], [list(r) for r in links])
        )
    tokens = (
        decl_all.where((F.col("kind") == "token") & (F.col("direction") == "rx") & ~F.col("denied"))
        .orderBy("declare_seq")
        .select("key", "link", "declared_at", "ended_at", "end_reason", "lifetime_ms")
        .limit(100)
        .collect()
    )
    if tokens:
        parts.append("<h3>Liveliness tokens (first 100)</h3>")
        parts.append(html_table(["key", "face", "declared", "ended", "how", "lifetime ms"], [list(r) for r in tokens]))
    return parts


def write_report(
    spark: SparkSession,
    out_dir: Path,
    verdict: dict[str, Any],
    counts: dict[str, int],
    router: str | None = None,
) -> Path:
    """Build ``out_dir/report.html`` from the Parquet tables already written there."""
    messages = spark.read.parquet(str(out_dir / "messages"))
    span = span_ns(messages)
    what = f"router {router}" if router else "one router"
    lo, hi = span if span is not None else (None, None)
    parts = recorded_header("pyzenoh traffic report", what, lo, hi, counts)
    parts += _audit_section(spark, out_dir, verdict)
    parts += _traffic_section(spark, out_dir)
    parts += _queries_section(spark, out_dir)
    parts += _declarations_section(spark, out_dir)
    path = out_dir / "report.html"
    path.write_text(page("pyzenoh traffic report", parts), encoding="utf-8")
    return path
