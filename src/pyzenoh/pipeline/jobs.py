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
same under ``python -m``, the ``pyzenoh`` CLI and ``spark-submit``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
    from pyspark.sql import DataFrame, SparkSession

#: A query whose REQUEST carried no Timeout extension uses the router default (10 s).
DEFAULT_QUERY_TIMEOUT_MS = 10_000
#: Seq buckets of the delivery audit's subscription join (see ``delivery_audit``).
AUDIT_BUCKETS = 256
TABLES = (
    "messages",
    "links",
    "routes",
    "traffic",
    "queries",
    "declarations",
    "delivery",
    "delivery_differences",
)
_STAGES = 9


class _Progress:
    """One line per stage on stderr: ``[pipeline 3/10] queries ... 1.2 s``."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.n = 0
        self.t0 = time.perf_counter()
        self._stage_t = self.t0

    def stage(self, name: str) -> None:
        self.n += 1
        self._stage_t = time.perf_counter()
        if self.enabled:
            print(
                f"[pipeline {self.n}/{_STAGES}] {name} ...", file=sys.stderr, flush=True
            )

    def done(self, detail: str = "") -> None:
        if self.enabled:
            dt = time.perf_counter() - self._stage_t
            extra = f", {detail}" if detail else ""
            print(
                f"[pipeline {self.n}/{_STAGES}]   done in {dt:.1f} s{extra}",
                file=sys.stderr,
                flush=True,
            )


def spark_session(
    master: str | None = None, app_name: str = "pyzenoh-pipeline"
) -> SparkSession:
    """The active SparkSession, or a new one (``master`` only when given: spark-submit's wins)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(app_name).config(
        "spark.sql.session.timeZone", "UTC"
    )
    if master:
        builder = builder.master(master)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session


def _load(spark: SparkSession, recording_dir: str, table: str) -> DataFrame:
    return spark.read.format("pyzenoh").option("table", table).load(recording_dir)


# --- derived tables ------------------------------------------------------------------------


def traffic_table(messages: DataFrame) -> DataFrame:
    """Per minute and key (``link`` null), and per minute, key and face."""
    from pyspark.sql import functions as F

    data = messages.where(
        F.col("key").isNotNull() & F.col("msg_type").isin("push", "request", "response")
    )
    face = F.concat_ws(":", F.col("run").cast("string"), F.col("link").cast("string"))
    rx_push = (F.col("msg_type") == "push") & (F.col("direction") == "rx")
    tx_push = (F.col("msg_type") == "push") & (F.col("direction") == "tx")
    grouped = data.withColumn("minute", F.date_trunc("minute", "timestamp")).withColumn(
        "face", face
    )
    aggs = [
        F.count(F.lit(1)).alias("messages"),
        F.sum(F.when(F.col("msg_type") == "push", 1).otherwise(0)).alias(
            "data_messages"
        ),
        F.sum(F.when(F.col("direction") == "rx", 1).otherwise(0)).alias("rx_messages"),
        F.sum(F.when(F.col("direction") == "tx", 1).otherwise(0)).alias("tx_messages"),
        F.sum(F.coalesce(F.col("payload_size"), F.lit(0)))
        .cast("long")
        .alias("payload_bytes"),
        F.sum(F.when(rx_push, F.col("payload_size")).otherwise(0))
        .cast("long")
        .alias("published_bytes"),
        F.sum("raw_size").cast("long").alias("wire_bytes"),
        F.countDistinct(F.when(rx_push, F.col("face"))).alias("publishers"),
        F.countDistinct(F.when(tx_push, F.col("face"))).alias("subscribers_reached"),
    ]
    per_key = grouped.groupBy("minute", "key").agg(*aggs)
    per_key = per_key.select(
        "minute", "key", F.lit(None).cast("int").alias("run"), F.lit(None).cast("int").alias("link"),
        *[c for c in per_key.columns if c not in ("minute", "key")],
    )  # fmt: skip
    per_link = grouped.groupBy("minute", "key", "run", "link").agg(*aggs)
    return per_key.unionByName(per_link).orderBy(
        "minute", "key", F.col("link").asc_nulls_first()
    )


def queries_table(messages: DataFrame) -> DataFrame:
    """One row per REQUEST received from a face, matched with what the router did with it."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    end_ns = messages.agg(F.max("time_ns").alias("recording_end_ns"))
    q = messages.where(
        (F.col("msg_type") == "request") & (F.col("direction") == "rx")
    ).select(
        F.col("seq").alias("query_seq"),
        "run",
        F.col("link").alias("querier_link"),
        F.col("zid").alias("querier_zid"),
        "request_id",
        "key",
        "parameters",
        F.when(F.coalesce(F.col("parameters"), F.lit("")) == "", F.col("key"))
        .otherwise(F.concat(F.col("key"), F.lit("?"), F.col("parameters")))
        .alias("selector"),
        "target",
        "consolidation",
        "budget",
        "timeout_ms",
        F.col("time_ns").alias("start_ns"),
        F.col("timestamp").alias("start"),
    )
    # A face may reuse a request id: answers belong to the latest query before them.
    w = Window.partitionBy("run", "querier_link", "request_id").orderBy("query_seq")
    q = q.withColumn("next_query_seq", F.lead("query_seq").over(w))

    dest = (
        messages.where(
            (F.col("msg_type") == "request")
            & (F.col("direction") == "tx")
            & (F.col("cause") >= 0)
        )
        .groupBy(F.col("cause").alias("query_seq"))
        .agg(
            F.count(F.lit(1)).alias("destinations"),
            F.array_sort(F.collect_set("link")).alias("destination_links"),
        )
    )
    answers = messages.where(
        (F.col("direction") == "tx")
        & F.col("msg_type").isin("response", "response_final")
    ).select(
        F.col("run").alias("a_run"),
        F.col("link").alias("a_link"),
        F.col("request_id").alias("a_rid"),
        F.col("seq").alias("a_seq"),
        F.col("time_ns").alias("a_ns"),
        F.col("msg_type").alias("a_type"),
        F.col("reply_kind").alias("a_kind"),
        F.col("payload").alias("a_payload"),
    )
    joined = q.join(
        answers,
        (answers.a_run == q.run)
        & (answers.a_link == q.querier_link)
        & (answers.a_rid == q.request_id)
        & (answers.a_seq > q.query_seq)
        & (q.next_query_seq.isNull() | (answers.a_seq < q.next_query_seq)),
        "left",
    )
    is_reply = F.col("a_kind") == "reply"
    is_err = F.col("a_kind") == "err"
    agg = joined.groupBy(*q.columns).agg(
        F.sum(F.when(is_reply, 1).otherwise(0)).alias("replies"),
        F.sum(F.when(is_err, 1).otherwise(0)).alias("errors"),
        F.max(
            F.when(is_err & (F.col("a_payload") == F.lit(b"Timeout")), True).otherwise(
                False
            )
        ).alias("timeout_err"),
        F.min(F.when(F.col("a_type") == "response", F.col("a_ns"))).alias(
            "first_reply_ns"
        ),
        F.min(F.when(F.col("a_type") == "response_final", F.col("a_ns"))).alias(
            "final_ns"
        ),
    )
    deadline_ns = (
        F.col("start_ns")
        + F.coalesce(F.col("timeout_ms"), F.lit(DEFAULT_QUERY_TIMEOUT_MS)) * 1_000_000
    )
    out = agg.join(dest, "query_seq", "left").crossJoin(end_ns)
    late = F.col("final_ns").isNotNull() & (F.col("final_ns") > deadline_ns)
    never = F.col("final_ns").isNull() & (F.col("recording_end_ns") > deadline_ns)
    status = (
        F.when(F.col("timeout_err") | late | never, "timed_out")
        .when(F.col("final_ns").isNotNull(), "completed")
        .otherwise("pending")
    )
    return (
        out.withColumn("destinations", F.coalesce("destinations", F.lit(0)))
        .withColumn(
            "destination_links",
            F.coalesce("destination_links", F.array().cast("array<int>")),
        )
        .withColumn(
            "first_reply_ms", (F.col("first_reply_ns") - F.col("start_ns")) / 1e6
        )
        .withColumn("final_ms", (F.col("final_ns") - F.col("start_ns")) / 1e6)
        .withColumn("status", status)
        .withColumn("timed_out", F.col("status") == "timed_out")
        .drop("next_query_seq", "recording_end_ns", "timeout_err")
        .orderBy("query_seq")
    )


def declarations_table(messages: DataFrame, links: DataFrame) -> DataFrame:
    """One row per declared entity, with how and when it ended; ``denied``: access
    control refused the declaration when it came in (it declared nothing)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    ident = ["run", "link", "direction", "kind", "entity_id"]
    decl = messages.where(
        (F.col("msg_type") == "declare")
        & (F.col("decl_op") == "declare")
        & (F.col("decl_kind") != "final")
    ).select(
        F.col("seq").alias("declare_seq"),
        "run",
        "link",
        "zid",
        "whatami",
        "direction",
        F.col("decl_kind").alias("kind"),
        "entity_id",
        "key",
        "interest_id",
        "queryable_complete",
        F.col("time_ns").alias("declare_ns"),
        F.col("timestamp").alias("declared_at"),
    )
    refused = (
        _denials(links)
        .where(F.col("flow") == "ingress")
        .select(
            F.col("run").alias("dn_run"),
            F.col("link").alias("dn_link"),
            F.col("cause").alias("dn_seq"),
        )
        .distinct()
    )
    decl = (
        decl.join(
            refused,
            (refused.dn_run == decl.run)
            & (refused.dn_link == decl.link)
            & (refused.dn_seq == decl.declare_seq)
            & (decl.direction == "rx"),
            "left",
        )
        .withColumn("denied", F.col("dn_seq").isNotNull())
        .drop("dn_run", "dn_link", "dn_seq")
    )
    decl = decl.withColumn(
        "next_declare_seq",
        F.lead("declare_seq").over(Window.partitionBy(*ident).orderBy("declare_seq")),
    )
    undecl = messages.where(
        (F.col("msg_type") == "declare") & (F.col("decl_op") == "undeclare")
    ).select(
        F.col("run").alias("u_run"),
        F.col("link").alias("u_link"),
        F.col("direction").alias("u_dir"),
        F.col("decl_kind").alias("u_kind"),
        F.col("entity_id").alias("u_eid"),
        F.col("seq").alias("u_seq"),
        F.col("time_ns").alias("u_ns"),
    )
    with_u = decl.join(
        undecl,
        (undecl.u_run == decl.run)
        & (undecl.u_link == decl.link)
        & (undecl.u_dir == decl.direction)
        & (undecl.u_kind == decl.kind)
        & (undecl.u_eid == decl.entity_id)
        & (undecl.u_seq > decl.declare_seq)
        & (decl.next_declare_seq.isNull() | (undecl.u_seq < decl.next_declare_seq)),
        "left",
    )
    first_u = with_u.groupBy(*decl.columns).agg(
        F.min("u_seq").alias("undeclare_seq"), F.min("u_ns").alias("undeclare_ns")
    )
    closes = links.where(F.col("event") == "close").select(
        F.col("run").alias("c_run"),
        F.col("link").alias("c_link"),
        F.col("seq").alias("c_seq"),
        F.col("time_ns").alias("c_ns"),
        F.col("reason").alias("c_reason"),
    )
    with_c = first_u.join(
        closes,
        (closes.c_run == first_u.run)
        & (closes.c_link == first_u.link)
        & (closes.c_seq > first_u.declare_seq),
        "left",
    )
    first_c = with_c.groupBy(*first_u.columns).agg(
        F.min("c_seq").alias("link_closed_seq"), F.min("c_ns").alias("link_closed_ns")
    )
    undeclared_first = F.col("undeclare_seq").isNotNull() & (
        F.col("link_closed_seq").isNull()
        | (F.col("undeclare_seq") < F.col("link_closed_seq"))
    )
    return (
        first_c.withColumn(
            "end_reason",
            F.when(undeclared_first, "undeclared").when(
                F.col("link_closed_seq").isNotNull(), "link_closed"
            ),
        )
        .withColumn(
            "end_seq",
            F.when(undeclared_first, F.col("undeclare_seq")).otherwise(
                F.col("link_closed_seq")
            ),
        )
        .withColumn(
            "end_ns",
            F.when(undeclared_first, F.col("undeclare_ns")).otherwise(
                F.col("link_closed_ns")
            ),
        )
        .withColumn(
            "ended_at", F.timestamp_micros((F.col("end_ns") / 1000).cast("long"))
        )
        .withColumn("lifetime_ms", (F.col("end_ns") - F.col("declare_ns")) / 1e6)
        .drop("next_declare_seq")
        .orderBy("declare_seq")
    )


def _denials(links: DataFrame) -> DataFrame:
    """The links table's access-control denials made while routing a received message."""
    from pyspark.sql import functions as F

    return links.where((F.col("event") == "denied") & (F.col("cause") >= 0))


def _matching_pairs(data_keys: DataFrame, sub_keys: list[str]) -> DataFrame:
    """``(data_key, sub_key)`` for every pair of the two key sets that intersect."""
    import functools

    return data_keys.mapInArrow(
        functools.partial(match_keys_batches, sub_keys=tuple(sub_keys)),
        "data_key STRING, sub_key STRING",
    )


def match_keys_batches(
    batches: Iterator[pa.RecordBatch], sub_keys: tuple[str, ...]
) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: for each data key, the subscription keys it intersects."""
    import pyarrow as pa

    from pyzenoh.keyexpr.relations import intersects

    for batch in batches:
        left: list[str] = []
        right: list[str] = []
        for key in batch.column(0).to_pylist():
            if key is None:
                continue
            for sub in sub_keys:
                try:
                    hit = intersects(key, sub)
                except ValueError:
                    hit = False
                if hit:
                    left.append(key)
                    right.append(sub)
        yield pa.RecordBatch.from_arrays(
            [pa.array(left, pa.string()), pa.array(right, pa.string())],
            names=["data_key", "sub_key"],
        )


def delivery_audit(
    messages: DataFrame,
    routes: DataFrame,
    declarations: DataFrame,
    links: DataFrame | None = None,
) -> DataFrame:
    """The routing audit: per data message, where it went against where it should have.

    ``subscribed``: the faces with an intersecting subscriber, by the replayed
    declarations (those access control refused excluded). With ``links``, access
    control's recorded denials are taken into account: a message denied on the way in
    (``ingress_denied``) should go nowhere, and one denied on the way out to some faces
    should not go to them; ``denied`` lists the faces it was kept from (all of
    ``subscribed`` when denied on the way in). ``expected`` = ``subscribed`` less
    ``denied``.
    """
    from pyspark.sql import functions as F

    data = messages.where(
        (F.col("msg_type") == "push") & (F.col("direction") == "rx")
    ).select(
        "seq",
        "run",
        "time_ns",
        "timestamp",
        F.col("link").alias("source_link"),
        "key",
        "body_type",
    )
    actual = (
        messages.where(
            (F.col("msg_type") == "push")
            & (F.col("direction") == "tx")
            & (F.col("cause") >= 0)
        )
        .groupBy(F.col("cause").alias("seq"))
        .agg(F.array_sort(F.collect_set("link")).alias("sent_to"))
    )
    routed = routes.groupBy(F.col("cause").alias("seq")).agg(
        F.array_sort(
            F.array_distinct(F.flatten(F.collect_list("expected_links")))
        ).alias("route_expected")
    )
    is_sub = (F.col("kind") == "subscriber") & (F.col("direction") == "rx")
    if "denied" in declarations.columns:
        is_sub = is_sub & ~F.coalesce(F.col("denied"), F.lit(False))
    subs = declarations.where(is_sub).select(
        F.col("run").alias("s_run"),
        F.col("link").alias("s_link"),
        F.col("key").alias("s_key"),
        F.col("declare_seq").alias("s_from"),
        F.col("end_seq").alias("s_to"),
    )
    sub_keys = [
        r[0]
        for r in subs.select("s_key")
        .where(F.col("s_key").isNotNull())
        .distinct()
        .collect()
    ]
    pairs = _matching_pairs(data.select("key").distinct(), sub_keys)
    # Subscriptions come and go: joining each data message with every subscription of
    # its key ever made compared billions of pairs (10M-record recording). Cut the seq
    # range into AUDIT_BUCKETS buckets, list each subscription under every bucket its
    # lifetime touches, and join on the bucket too: the same pairs match, far fewer meet.
    span = data.agg(F.min("seq").alias("lo"), F.max("seq").alias("hi")).first()
    lo = int(span["lo"]) if span is not None and span["lo"] is not None else 0
    hi = int(span["hi"]) if span is not None and span["hi"] is not None else 0
    width = (hi - lo) // AUDIT_BUCKETS + 1
    first = F.greatest(F.col("s_from") + 1, F.lit(lo))  # the seqs it covers: first..last
    last = F.least(F.coalesce(F.col("s_to") - 1, F.lit(hi)), F.lit(hi))
    subs_by_bucket = subs.where(first <= last).withColumn(
        "s_bucket",
        F.explode(
            F.sequence(
                F.floor((first - lo) / width).cast("long"),
                F.floor((last - lo) / width).cast("long"),
            )
        ),
    )
    candidates = (
        data.select("seq", "run", "source_link", "key")
        .join(pairs, data.key == pairs.data_key)
        .withColumn("bucket", F.floor((F.col("seq") - lo) / width).cast("long"))
    )
    active = candidates.join(
        subs_by_bucket,
        (subs_by_bucket.s_key == candidates.sub_key)
        & (subs_by_bucket.s_run == candidates.run)
        & (subs_by_bucket.s_bucket == candidates.bucket)
        & (subs_by_bucket.s_link != candidates.source_link)
        & (subs_by_bucket.s_from < candidates.seq)
        & (subs_by_bucket.s_to.isNull() | (subs_by_bucket.s_to > candidates.seq)),
    )
    recomputed = active.groupBy("seq").agg(
        F.array_sort(F.collect_set("s_link")).alias("subscribed")
    )
    empty = F.array().cast("array<int>")
    audit = (
        data.join(actual, "seq", "left")
        .join(routed, "seq", "left")
        .join(recomputed, "seq", "left")
    )
    if links is not None:
        denied = (
            _denials(links)
            .groupBy(F.col("cause").alias("seq"))
            .agg(
                F.collect_set(F.when(F.col("flow") == "ingress", F.col("link"))).alias(
                    "ingress_links"
                ),
                F.collect_set(F.when(F.col("flow") == "egress", F.col("link"))).alias(
                    "egress_denied"
                ),
            )
        )
        audit = audit.join(denied, "seq", "left")
    else:
        audit = audit.withColumn("ingress_links", empty).withColumn(
            "egress_denied", empty
        )
    audit = (
        audit.withColumn("has_route", F.col("route_expected").isNotNull())
        .withColumn("sent_to", F.coalesce("sent_to", empty))
        .withColumn("subscribed", F.coalesce("subscribed", empty))
        .withColumn("route_expected", F.coalesce("route_expected", empty))
        .withColumn(
            "ingress_denied",
            F.coalesce(
                F.array_contains(F.col("ingress_links"), F.col("source_link")),
                F.lit(False),
            ),
        )
        .withColumn(
            "denied",
            F.array_sort(
                F.when(F.col("ingress_denied"), F.col("subscribed")).otherwise(
                    F.coalesce(F.col("egress_denied"), empty)
                )
            ),
        )
        .drop("ingress_links", "egress_denied")
        .withColumn("expected", F.array_except("subscribed", "denied"))
        .withColumn("missing", F.array_except("expected", "sent_to"))
        .withColumn("unexpected", F.array_except("sent_to", "subscribed"))
        .withColumn("denied_but_sent", F.array_intersect("sent_to", "denied"))
        .withColumn(
            "missing_vs_route",
            F.when(
                F.col("has_route"), F.array_except("route_expected", "sent_to")
            ).otherwise(empty),
        )
        .withColumn(
            "unexpected_vs_route",
            F.when(
                F.col("has_route"), F.array_except("sent_to", "route_expected")
            ).otherwise(empty),
        )
        .withColumn(
            "route_vs_declarations",
            F.when(
                F.col("has_route"),
                F.array_union(
                    F.array_except("route_expected", "expected"),
                    F.array_except("expected", "route_expected"),
                ),
            ).otherwise(empty),
        )
    )
    ok = (
        (F.size("missing") == 0)
        & (F.size("unexpected") == 0)
        & (F.size("denied_but_sent") == 0)
        & (F.size("missing_vs_route") == 0)
        & (F.size("unexpected_vs_route") == 0)
        & (F.size("route_vs_declarations") == 0)
    )
    # Each output file in seq order, not one global order: a total sort of every data
    # message cost about a quarter of the audit (1M-message recording).
    return audit.withColumn("ok", ok).sortWithinPartitions("seq")


def delivery_differences(audit: DataFrame) -> DataFrame:
    """One row per difference the audit found (read it from the saved audit: building it
    from the audit's plan would compute the audit again)."""
    from pyspark.sql import functions as F

    diff_cols = [
        (
            "missing",
            "declarations",
            "subscribed face did not receive it, and access control did not deny it",
        ),
        (
            "unexpected",
            "declarations",
            "sent to a face without an intersecting subscriber",
        ),
        (
            "denied_but_sent",
            "access control",
            "sent to a face although access control denied it to that face",
        ),
        (
            "missing_vs_route",
            "route",
            "router's route listed the face but nothing was sent",
        ),
        (
            "unexpected_vs_route",
            "route",
            "sent to a face the router's route did not list",
        ),
        (
            "route_vs_declarations",
            "route",
            "router's route disagrees with the replayed declarations less access control's denials",
        ),
    ]
    parts = [
        audit.select(
            "seq",
            "run",
            "time_ns",
            "timestamp",
            "source_link",
            "key",
            F.explode(col).alias("face"),
            F.lit(col).alias("kind"),
            F.lit(basis).alias("basis"),
            F.lit(text).alias("explanation"),
        )
        for col, basis, text in diff_cols
    ]
    diffs = parts[0]
    for p in parts[1:]:
        diffs = diffs.unionByName(p)
    return diffs.orderBy("seq", "kind", "face")


# --- the job ------------------------------------------------------------------------------


def run_pipeline(
    recording_dir: str | os.PathLike[str],
    output_dir: str | os.PathLike[str],
    master: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Decode a recording, write the Parquet tables and ``report.html``; return a summary."""
    from pyspark.sql import functions as F

    from pyzenoh.errors import UsageError
    from pyzenoh.pipeline.export import export_table
    from pyzenoh.pipeline.report import write_report
    from pyzenoh.pipeline.source import register
    from pyzenoh.recording.reader import list_segments

    rec_dir = str(Path(recording_dir).resolve())
    out_dir = Path(output_dir).resolve()
    if not list_segments(rec_dir):
        raise UsageError(f"{rec_dir} holds no recording segments (seg-*.mcap)")
    out_dir.mkdir(parents=True, exist_ok=True)
    prog = _Progress(progress)

    prog.stage("starting Spark")
    spark = spark_session(master)
    register(spark)
    prog.done(f"master {spark.sparkContext.master}")

    counts: dict[str, int] = {}

    def save(name: str, df: DataFrame) -> DataFrame:
        path = str(out_dir / name)
        df.write.mode("overwrite").parquet(path)
        back = spark.read.parquet(path)
        counts[name] = back.count()
        return back

    def export(table: str) -> DataFrame:
        """A recording table written by the Spark tasks with pyarrow (see .export)."""
        counts[table] = export_table(spark, rec_dir, out_dir / table, table)
        return spark.read.parquet(str(out_dir / table))

    prog.stage("decoding messages")
    messages = export("messages")
    prog.done(f"{counts['messages']} rows")

    prog.stage("links and routes")
    links = save("links", _load(spark, rec_dir, "links").where(~F.col("carried")))
    routes = export("routes")
    prog.done(f"{counts['links']} link events, {counts['routes']} routes")

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

    prog.stage("report")
    report_path = write_report(spark, out_dir, verdict, counts)
    prog.done(str(report_path))

    prog.stage("summary")
    invalid = messages.where(F.col("msg_type") == "invalid").count()
    result: dict[str, Any] = {
        "recording_dir": rec_dir,
        "output_dir": str(out_dir),
        "master": spark.sparkContext.master,
        "tables": {
            name: {"path": str(out_dir / name), "rows": counts.get(name, 0)}
            for name in TABLES
        },
        "invalid_messages": invalid,
        "audit": verdict,
        "report": str(report_path),
        "seconds": round(time.perf_counter() - prog.t0, 3),
    }
    prog.done(f"{result['seconds']} s in all")
    return result


def audit_verdict(audit: DataFrame) -> dict[str, Any]:
    from pyspark.sql import functions as F

    row = audit.agg(
        F.count(F.lit(1)).alias("audited"),
        F.sum(F.when(~F.col("ok"), 1).otherwise(0)).alias("with_differences"),
        F.sum(F.size("missing") + F.size("missing_vs_route")).alias("missing"),
        F.sum(
            F.size("unexpected")
            + F.size("unexpected_vs_route")
            + F.size("denied_but_sent")
        ).alias("unexpected"),
        F.sum(F.size("route_vs_declarations")).alias("route_disagreements"),
        F.sum(F.when(F.col("has_route"), 1).otherwise(0)).alias("with_route"),
        F.sum(F.size("denied")).alias("denied_deliveries"),
        F.sum(F.when(F.col("ingress_denied"), 1).otherwise(0)).alias("ingress_denied"),
    ).first()
    assert row is not None
    v: dict[str, Any] = {k: int(row[k] or 0) for k in row.asDict()}
    v["passed"] = v["with_differences"] == 0
    if v["passed"]:
        v["text"] = (
            f"PASS: all {v['audited']} data messages went exactly where subscribers were"
        )
        if v["denied_deliveries"] or v["ingress_denied"]:
            d, i = v["denied_deliveries"], v["ingress_denied"]
            v["text"] += (
                f", less what access control denied ({d} deliveries, {i} of the "
                "messages on the way in)"
            )
    else:
        v["text"] = (
            f"FAIL: {v['with_differences']} of {v['audited']} data messages differ "
            f"({v['missing']} missing, {v['unexpected']} unexpected deliveries, "
            f"{v['route_disagreements']} route/declaration disagreements)"
        )
    return v
