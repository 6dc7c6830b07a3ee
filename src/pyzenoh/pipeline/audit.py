"""The delivery audit: for every PUSH received, the faces that should have got it (by
the router's routes and, independently, by replaying the declarations, less the faces
access control denied it to) against the faces it was sent to; every difference, and the
verdict the report and the demo print.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyzenoh.pipeline.tables import policy_stops

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
    from pyspark.sql import DataFrame

#: Seq buckets of the delivery audit's subscription join (see ``delivery_audit``).
AUDIT_BUCKETS = 256


def matching_pairs(data_keys: DataFrame, sub_keys: list[str]) -> DataFrame:
    """``(data_key, sub_key)`` for every pair of the two key sets that intersect."""
    import functools

    return data_keys.mapInArrow(
        functools.partial(match_keys_batches, sub_keys=tuple(sub_keys)),
        "data_key STRING, sub_key STRING",
    )


def match_keys_batches(batches: Iterator[pa.RecordBatch], sub_keys: tuple[str, ...]) -> Iterator[pa.RecordBatch]:
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


def join_active(
    data: DataFrame,
    pos: str,
    subs: DataFrame,
    s_from: str,
    s_to: str,
    on: Any,
    buckets: int = AUDIT_BUCKETS,
) -> DataFrame:
    """``data`` joined with the ``subs`` active at each row's ``pos``: ``s_from < pos``
    and (``s_to`` null or ``pos < s_to``), and ``on``.

    Subscriptions come and go: joining each data row with every subscription of its key
    ever made compared billions of pairs (10M-record recording). The span of ``pos`` is
    cut into ``buckets`` buckets, each subscription listed under every bucket its lifetime
    touches, and the join is on the bucket too: the same pairs match, far fewer meet.
    """
    from pyspark.sql import functions as F

    span = data.agg(F.min(pos).alias("lo"), F.max(pos).alias("hi")).first()
    lo = int(span["lo"]) if span is not None and span["lo"] is not None else 0
    hi = int(span["hi"]) if span is not None and span["hi"] is not None else 0
    width = (hi - lo) // buckets + 1
    first = F.greatest(F.col(s_from) + 1, F.lit(lo))  # the positions it covers: first..last
    last = F.least(F.coalesce(F.col(s_to) - 1, F.lit(hi)), F.lit(hi))
    subs_by_bucket = subs.where(first <= last).withColumn(
        "_s_bucket",
        F.explode(F.sequence(F.floor((first - lo) / width).cast("long"), F.floor((last - lo) / width).cast("long"))),
    )
    located = data.withColumn("_d_bucket", F.floor((F.col(pos) - lo) / width).cast("long"))
    live = (F.col(s_from) < F.col(pos)) & (F.col(s_to).isNull() | (F.col(s_to) > F.col(pos)))
    joined = located.join(subs_by_bucket, on & (F.col("_s_bucket") == F.col("_d_bucket")) & live)
    return joined.drop("_s_bucket", "_d_bucket")


def delivery_audit(
    messages: DataFrame,
    routes: DataFrame,
    declarations: DataFrame,
    links: DataFrame | None = None,
) -> DataFrame:
    """The routing audit: per data message, where it went against where it should have.

    ``subscribed``: the faces with an intersecting subscriber, by the replayed
    declarations (those access control refused excluded). With ``links``, the policies'
    recorded stops (access control's denials, interceptors' drops: a policy's decision,
    not a routing failure) are taken into account: a message denied on the way in
    (``ingress_denied``) should go nowhere, and one denied on the way out to some faces
    should not go to them; ``denied`` lists the faces it was kept from (all of
    ``subscribed`` when denied on the way in). ``expected`` = ``subscribed`` less
    ``denied``.
    """
    from pyspark.sql import functions as F

    data = messages.where((F.col("msg_type") == "push") & (F.col("direction") == "rx")).select(
        "seq",
        "run",
        "time_ns",
        "timestamp",
        F.col("link").alias("source_link"),
        "key",
        "body_type",
    )
    actual = (
        messages.where((F.col("msg_type") == "push") & (F.col("direction") == "tx") & (F.col("cause") >= 0))
        .groupBy(F.col("cause").alias("seq"))
        .agg(F.array_sort(F.collect_set("link")).alias("sent_to"))
    )
    routed = routes.groupBy(F.col("cause").alias("seq")).agg(
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("expected_links")))).alias("route_expected")
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
    sub_keys = [r[0] for r in subs.select("s_key").where(F.col("s_key").isNotNull()).distinct().collect()]
    pairs = matching_pairs(data.select("key").distinct(), sub_keys)
    candidates = data.select("seq", "run", "source_link", "key").join(pairs, data.key == pairs.data_key)
    on = (
        (F.col("s_key") == F.col("sub_key"))
        & (F.col("s_run") == F.col("run"))
        & (F.col("s_link") != F.col("source_link"))
    )
    active = join_active(candidates, "seq", subs, "s_from", "s_to", on)
    recomputed = active.groupBy("seq").agg(F.array_sort(F.collect_set("s_link")).alias("subscribed"))
    empty = F.array().cast("array<int>")
    audit = data.join(actual, "seq", "left").join(routed, "seq", "left").join(recomputed, "seq", "left")
    if links is not None:
        denied = (
            policy_stops(links)
            .groupBy(F.col("cause").alias("seq"))
            .agg(
                F.collect_set(F.when(F.col("flow") == "ingress", F.col("link"))).alias("ingress_links"),
                F.collect_set(F.when(F.col("flow") == "egress", F.col("link"))).alias("egress_denied"),
            )
        )
        audit = audit.join(denied, "seq", "left")
    else:
        audit = audit.withColumn("ingress_links", empty).withColumn("egress_denied", empty)
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
            F.when(F.col("has_route"), F.array_except("route_expected", "sent_to")).otherwise(empty),
        )
        .withColumn(
            "unexpected_vs_route",
            F.when(F.col("has_route"), F.array_except("sent_to", "route_expected")).otherwise(empty),
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


def audit_verdict(audit: DataFrame) -> dict[str, Any]:
    from pyspark.sql import functions as F

    row = audit.agg(
        F.count(F.lit(1)).alias("audited"),
        F.sum(F.when(~F.col("ok"), 1).otherwise(0)).alias("with_differences"),
        F.sum(F.size("missing") + F.size("missing_vs_route")).alias("missing"),
        F.sum(F.size("unexpected") + F.size("unexpected_vs_route") + F.size("denied_but_sent")).alias("unexpected"),
        F.sum(F.size("route_vs_declarations")).alias("route_disagreements"),
        F.sum(F.when(F.col("has_route"), 1).otherwise(0)).alias("with_route"),
        F.sum(F.size("denied")).alias("denied_deliveries"),
        F.sum(F.when(F.col("ingress_denied"), 1).otherwise(0)).alias("ingress_denied"),
    ).first()
    assert row is not None
    v: dict[str, Any] = {k: int(row[k] or 0) for k in row.asDict()}
    v["passed"] = v["with_differences"] == 0
    if v["passed"]:
        v["text"] = f"PASS: all {v['audited']} data messages went exactly where subscribers were"
        if v["denied_deliveries"] or v["ingress_denied"]:
            d, i = v["denied_deliveries"], v["ingress_denied"]
            v["text"] += (
                f", less what access control denied or interceptors dropped ({d} deliveries,"
                f" {i} of the messages on the way in)"
            )
    else:
        v["text"] = (
            f"FAIL: {v['with_differences']} of {v['audited']} data messages differ "
            f"({v['missing']} missing, {v['unexpected']} unexpected deliveries, "
            f"{v['route_disagreements']} route/declaration disagreements)"
        )
    return v
