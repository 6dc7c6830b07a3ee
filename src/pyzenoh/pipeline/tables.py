"""The tables derived from the decoded ``messages`` and ``links``: traffic per minute and
key, one row per query, one row per declared entity (see :mod:`.jobs` for each table's
columns). Spark DataFrame code only: every function here runs on the driver and builds a
plan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: A query whose REQUEST carried no Timeout extension uses the router default (10 s).
DEFAULT_QUERY_TIMEOUT_MS = 10_000


def traffic_table(messages: DataFrame) -> DataFrame:
    """Per minute and key (``link`` null), and per minute, key and face."""
    from pyspark.sql import functions as F

    data = messages.where(F.col("key").isNotNull() & F.col("msg_type").isin("push", "request", "response"))
    face = F.concat_ws(":", F.col("run").cast("string"), F.col("link").cast("string"))
    rx_push = (F.col("msg_type") == "push") & (F.col("direction") == "rx")
    tx_push = (F.col("msg_type") == "push") & (F.col("direction") == "tx")
    grouped = data.withColumn("minute", F.date_trunc("minute", "timestamp")).withColumn("face", face)
    aggs = [
        F.count(F.lit(1)).alias("messages"),
        F.sum(F.when(F.col("msg_type") == "push", 1).otherwise(0)).alias("data_messages"),
        F.sum(F.when(F.col("direction") == "rx", 1).otherwise(0)).alias("rx_messages"),
        F.sum(F.when(F.col("direction") == "tx", 1).otherwise(0)).alias("tx_messages"),
        F.sum(F.coalesce(F.col("payload_size"), F.lit(0))).cast("long").alias("payload_bytes"),
        F.sum(F.when(rx_push, F.col("payload_size")).otherwise(0)).cast("long").alias("published_bytes"),
        F.sum("raw_size").cast("long").alias("wire_bytes"),
        F.countDistinct(F.when(rx_push, F.col("face"))).alias("publishers"),
        F.countDistinct(F.when(tx_push, F.col("face"))).alias("subscribers_reached"),
    ]
    per_key = grouped.groupBy("minute", "key").agg(*aggs)
    per_key = per_key.select(
        "minute",
        "key",
        F.lit(None).cast("int").alias("run"),
        F.lit(None).cast("int").alias("link"),
        *[c for c in per_key.columns if c not in ("minute", "key")],
    )
    per_link = grouped.groupBy("minute", "key", "run", "link").agg(*aggs)
    return per_key.unionByName(per_link).orderBy("minute", "key", F.col("link").asc_nulls_first())


def queries_table(messages: DataFrame) -> DataFrame:
    """One row per REQUEST received from a face, matched with what the router did with it."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    end_ns = messages.agg(F.max("time_ns").alias("recording_end_ns"))
    q = messages.where((F.col("msg_type") == "request") & (F.col("direction") == "rx")).select(
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
        messages.where((F.col("msg_type") == "request") & (F.col("direction") == "tx") & (F.col("cause") >= 0))
        .groupBy(F.col("cause").alias("query_seq"))
        .agg(
            F.count(F.lit(1)).alias("destinations"),
            F.array_sort(F.collect_set("link")).alias("destination_links"),
        )
    )
    answers = messages.where(
        (F.col("direction") == "tx") & F.col("msg_type").isin("response", "response_final")
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
        F.max(F.when(is_err & (F.col("a_payload") == F.lit(b"Timeout")), True).otherwise(False)).alias("timeout_err"),
        F.min(F.when(F.col("a_type") == "response", F.col("a_ns"))).alias("first_reply_ns"),
        F.min(F.when(F.col("a_type") == "response_final", F.col("a_ns"))).alias("final_ns"),
    )
    deadline_ns = F.col("start_ns") + F.coalesce(F.col("timeout_ms"), F.lit(DEFAULT_QUERY_TIMEOUT_MS)) * 1_000_000
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
        .withColumn("first_reply_ms", (F.col("first_reply_ns") - F.col("start_ns")) / 1e6)
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
        (F.col("msg_type") == "declare") & (F.col("decl_op") == "declare") & (F.col("decl_kind") != "final")
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
        policy_stops(links)
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
    undecl = messages.where((F.col("msg_type") == "declare") & (F.col("decl_op") == "undeclare")).select(
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
        (closes.c_run == first_u.run) & (closes.c_link == first_u.link) & (closes.c_seq > first_u.declare_seq),
        "left",
    )
    first_c = with_c.groupBy(*first_u.columns).agg(
        F.min("c_seq").alias("link_closed_seq"), F.min("c_ns").alias("link_closed_ns")
    )
    undeclared_first = F.col("undeclare_seq").isNotNull() & (
        F.col("link_closed_seq").isNull() | (F.col("undeclare_seq") < F.col("link_closed_seq"))
    )
    return (
        first_c.withColumn(
            "end_reason",
            F.when(undeclared_first, "undeclared").when(F.col("link_closed_seq").isNotNull(), "link_closed"),
        )
        .withColumn(
            "end_seq",
            F.when(undeclared_first, F.col("undeclare_seq")).otherwise(F.col("link_closed_seq")),
        )
        .withColumn(
            "end_ns",
            F.when(undeclared_first, F.col("undeclare_ns")).otherwise(F.col("link_closed_ns")),
        )
        .withColumn("ended_at", F.timestamp_micros((F.col("end_ns") / 1000).cast("long")))
        .withColumn("lifetime_ms", (F.col("end_ns") - F.col("declare_ns")) / 1e6)
        .drop("next_declare_seq")
        .orderBy("declare_seq")
    )


def policy_stops(links: DataFrame) -> DataFrame:
    """The links table's stops made while routing a received message: access control's
    denials and interceptors' drops (a policy's decision, not a routing failure)."""
    from pyspark.sql import functions as F

    from pyzenoh.recording.format import STOP_EVENTS

    return links.where(F.col("event").isin(*STOP_EVENTS) & (F.col("cause") >= 0))
