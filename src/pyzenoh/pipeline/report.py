"""``report.html``: the pipeline's tables summarised, with matplotlib plots inlined as PNG.

Everything plotted is aggregated by Spark first; only small results reach the driver.
"""

from __future__ import annotations

import base64
import html
import io
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from pyspark.sql import SparkSession

#: Number of time buckets the rate plots aim for.
PLOT_BUCKETS = 300
TOP_KEYS = 15
LATENCY_SAMPLE = 50_000
DIFFERENCES_SHOWN = 50


def _figure() -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(9, 3.6), dpi=100, layout="constrained")


def _png(fig: Figure) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _img(b64: str, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{b64}">'


def _bucket_ns(span_ns: int) -> int:
    second = 1_000_000_000
    raw = max(1, span_ns // PLOT_BUCKETS)
    for step in (
        second // 100,
        second // 10,
        second,
        10 * second,
        60 * second,
        600 * second,
        3600 * second,
    ):
        if raw <= step:
            return step
    return 86_400 * second


def _time_axis(ax: Any) -> None:
    import matplotlib.dates as mdates

    locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call,unused-ignore]
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call,unused-ignore]


def _dt(ns: int) -> datetime:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC)


def message_rate_plot(spark: SparkSession, out_dir: Path) -> str | None:
    from pyspark.sql import functions as F

    messages = spark.read.parquet(str(out_dir / "messages"))
    bounds = messages.agg(F.min("time_ns"), F.max("time_ns")).first()
    if bounds is None or bounds[0] is None:
        return None
    lo, hi = int(bounds[0]), int(bounds[1])
    step = _bucket_ns(hi - lo)
    rows = (
        messages.groupBy(F.floor((F.col("time_ns") - lo) / step).alias("b"), "direction").count().orderBy("b").collect()
    )
    fig = _figure()
    ax = fig.add_subplot()
    for direction in ("rx", "tx"):
        pts = [(r["b"], r["count"]) for r in rows if r["direction"] == direction]
        if pts:
            times = [_dt(lo + b * step) for b, _ in pts]
            label = "rx (received)" if direction == "rx" else "tx (sent)"
            ax.plot(times, [c * 1e9 / step for _, c in pts], label=label)  # type: ignore[arg-type]
    ax.set_ylabel("messages / s")
    ax.set_title(f"Message rate ({step / 1e9:g} s buckets)")
    ax.legend()
    _time_axis(ax)
    return _png(fig)


def top_keys_plot(spark: SparkSession, out_dir: Path) -> tuple[str | None, list[tuple[str, int, int]]]:
    from pyspark.sql import functions as F

    traffic = spark.read.parquet(str(out_dir / "traffic"))
    top = (
        traffic.where(F.col("link").isNull())
        .groupBy("key")
        .agg(F.sum("messages").alias("messages"), F.sum("payload_bytes").alias("bytes"))
        .orderBy(F.desc("messages"), "key")
        .limit(TOP_KEYS)
        .collect()
    )
    if not top:
        return None, []
    fig = _figure()
    ax = fig.add_subplot()
    names = [r["key"] for r in reversed(top)]
    ax.barh(names, [r["messages"] for r in reversed(top)])
    ax.set_xlabel("messages (received + sent)")
    ax.set_title(f"Top {len(top)} key expressions")
    return _png(fig), [(r["key"], int(r["messages"]), int(r["bytes"] or 0)) for r in top]


def latency_plot(spark: SparkSession, out_dir: Path) -> tuple[str | None, dict[str, Any]]:
    from pyspark.sql import functions as F

    queries = spark.read.parquet(str(out_dir / "queries"))
    stats = queries.groupBy("status").count().collect()
    by_status = {r["status"]: int(r["count"]) for r in stats}
    sample = queries.select("first_reply_ms", "final_ms").limit(LATENCY_SAMPLE).collect()
    first = [r[0] for r in sample if r[0] is not None]
    final = [r[1] for r in sample if r[1] is not None]
    if not first and not final:
        return None, by_status
    fig = _figure()
    ax = fig.add_subplot()
    if first:
        ax.hist(first, bins=40, alpha=0.6, label="first reply")
    if final:
        ax.hist(final, bins=40, alpha=0.6, label="RESPONSE_FINAL")
    ax.set_xlabel("ms after the query arrived")
    ax.set_ylabel("queries")
    ax.set_title("Query latency")
    ax.legend()
    percentiles = queries.agg(
        F.percentile_approx("first_reply_ms", [0.5, 0.99]).alias("first"),
        F.percentile_approx("final_ms", [0.5, 0.99]).alias("final"),
    ).first()
    info: dict[str, Any] = dict(by_status)
    if percentiles is not None:
        info["first_reply_p50_p99_ms"] = percentiles["first"]
        info["final_p50_p99_ms"] = percentiles["final"]
    return _png(fig), info


def declarations_plot(spark: SparkSession, out_dir: Path) -> str | None:
    from pyspark.sql import functions as F

    decl = spark.read.parquet(str(out_dir / "declarations")).where(
        (F.col("kind") != "keyexpr") & (F.col("direction") == "rx") & ~F.col("denied")
    )
    bounds = decl.agg(
        F.min("declare_ns"),
        F.max(F.greatest("declare_ns", F.coalesce("end_ns", "declare_ns"))),
    ).first()
    if bounds is None or bounds[0] is None:
        return None
    lo, hi = int(bounds[0]), int(bounds[1])
    step = _bucket_ns(hi - lo)
    starts = decl.select(
        "kind",
        F.floor((F.col("declare_ns") - lo) / step).alias("b"),
        F.lit(1).alias("d"),
    )
    ends = decl.where(F.col("end_ns").isNotNull()).select(
        "kind", F.floor((F.col("end_ns") - lo) / step).alias("b"), F.lit(-1).alias("d")
    )
    rows = starts.unionByName(ends).groupBy("kind", "b").agg(F.sum("d").alias("d")).orderBy("b").collect()
    fig = _figure()
    ax = fig.add_subplot()
    for kind in sorted({r["kind"] for r in rows}):
        level = 0
        xs, ys = [], []
        for r in rows:
            if r["kind"] == kind:
                level += int(r["d"])
                xs.append(_dt(lo + int(r["b"]) * step))
                ys.append(level)
        ax.step(xs, ys, where="post", label=kind)  # type: ignore[arg-type]
    ax.set_ylabel("active entities")
    ax.set_title("Entities declared by faces, over time")
    ax.legend()
    _time_axis(ax)
    return _png(fig)


def _table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_CSS = """
body { font-family: sans-serif; margin: 2em; max-width: 1000px; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: left; font-size: 90%; }
.pass { color: #176117; } .fail { color: #a01010; }
img { max-width: 100%; }
"""


def write_report(spark: SparkSession, out_dir: Path, verdict: dict[str, Any], counts: dict[str, int]) -> Path:
    """Build ``out_dir/report.html`` from the Parquet tables already written there."""
    from pyspark.sql import functions as F

    parts: list[str] = ["<h1>pyzenoh traffic report</h1>"]
    css = "pass" if verdict.get("passed") else "fail"
    parts.append(f'<h2>Routing audit</h2><p class="{css}"><b>{html.escape(str(verdict.get("text", "")))}</b></p>')
    parts.append(
        _table(
            ["measure", "value"],
            [[k, v] for k, v in verdict.items() if k not in ("text",)],
        )
    )
    diffs = (
        spark.read.parquet(str(out_dir / "delivery_differences"))
        .orderBy("seq", "kind", "face")
        .limit(DIFFERENCES_SHOWN)
        .collect()
    )
    if diffs:
        parts.append(f"<h3>Differences (first {len(diffs)}; all in delivery_differences)</h3>")
        parts.append(
            _table(
                ["seq", "time", "key", "from face", "face", "kind", "explanation"],
                [
                    [
                        d["seq"],
                        d["timestamp"],
                        d["key"],
                        d["source_link"],
                        d["face"],
                        d["kind"],
                        d["explanation"],
                    ]
                    for d in diffs
                ],
            )
        )
    links_table = spark.read.parquet(str(out_dir / "links"))
    denials = (
        links_table.where(F.col("event") == "denied")
        .groupBy("flow", "message", "reason")
        .count()
        .orderBy(F.desc("count"), "reason")
        .limit(DIFFERENCES_SHOWN)
        .collect()
    )
    if denials:
        parts.append("<h3>Access control denials (by reason; each one in links)</h3>")
        parts.append(
            _table(
                ["flow", "message", "reason", "denials"],
                [[d["flow"], d["message"], d["reason"], d["count"]] for d in denials],
            )
        )
    parts.append("<h2>Tables</h2>")
    parts.append(_table(["table", "rows"], [[k, v] for k, v in counts.items()]))
    messages = spark.read.parquet(str(out_dir / "messages"))
    kinds = messages.groupBy("msg_type", "direction").count().orderBy("msg_type", "direction").collect()
    parts.append("<h3>Messages by type</h3>")
    parts.append(_table(["type", "direction", "messages"], [[r[0], r[1], r[2]] for r in kinds]))

    parts.append("<h2>Message rate</h2>")
    rate = message_rate_plot(spark, out_dir)
    parts.append(_img(rate, "message rate") if rate else "<p>No messages.</p>")

    parts.append("<h2>Top keys</h2>")
    top_png, top = top_keys_plot(spark, out_dir)
    if top_png:
        parts.append(_img(top_png, "top keys"))
        parts.append(_table(["key", "messages", "payload bytes"], [list(t) for t in top]))
    else:
        parts.append("<p>No keyed traffic.</p>")

    parts.append("<h2>Queries</h2>")
    lat_png, lat = latency_plot(spark, out_dir)
    if lat:
        parts.append(_table(["measure", "value"], [[k, v] for k, v in lat.items()]))
    parts.append(_img(lat_png, "query latency") if lat_png else "<p>No answered queries.</p>")

    parts.append("<h2>Declarations</h2>")
    decl_png = declarations_plot(spark, out_dir)
    parts.append(_img(decl_png, "declarations over time") if decl_png else "<p>No declarations.</p>")
    links = (
        links_table.where(F.col("event") != "denied")
        .orderBy("seq")
        .select("timestamp", "event", "run", "link", "zid", "whatami", "remote", "reason")
        .limit(200)
        .collect()
    )
    if links:
        parts.append("<h3>Links</h3>")
        parts.append(
            _table(
                ["time", "event", "run", "link", "zid", "whatami", "remote", "reason"],
                [list(r) for r in links],
            )
        )
    tokens = (
        spark.read.parquet(str(out_dir / "declarations"))
        .where((F.col("kind") == "token") & (F.col("direction") == "rx") & ~F.col("denied"))
        .orderBy("declare_seq")
        .select("key", "link", "declared_at", "ended_at", "end_reason", "lifetime_ms")
        .limit(100)
        .collect()
    )
    if tokens:
        parts.append("<h3>Liveliness tokens (first 100)</h3>")
        parts.append(
            _table(
                ["key", "face", "declared", "ended", "how", "lifetime ms"],
                [list(r) for r in tokens],
            )
        )

    doc = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>pyzenoh traffic report</title><style>{_CSS}</style></head><body>" + "\n".join(parts) + "</body></html>"
    )
    path = out_dir / "report.html"
    path.write_text(doc, encoding="utf-8")
    return path
