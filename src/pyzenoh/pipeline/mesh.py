"""The mesh tables: the recordings of several routers of one mesh, joined sample by sample.

The joins of two tables that grow with the traffic are hinted ``merge``: Spark otherwise
broadcast one of them when its estimate was small and its real size was not (10M records:
"not enough memory to build and broadcast the table").

A sample keeps the HLC timestamp the first router gave it (or its publisher did) on every
hop, so its records in each router's recording are joined by ``(key, HLC time, HLC id)``,
never by the hosts' clocks. Tables (see :mod:`.jobs` for where they are written):

``hops``           one row per sample per router it entered: the face it came from, when,
                   the faces the router sent it on, its dwell time inside the router
                   (``dwell_ns``: rx record to first tx record, as the router stamped them)
                   and on the link from the router before (``link_ns``), what access
                   control denied and what a full queue dropped there
``mesh_delivery``  one row per sample and subscriber anywhere in the mesh whose
                   declaration intersected it at that moment: reached or not, and where it
                   stopped when not (:mod:`.mesh_loss`)
``mesh_links``     per router face to another router: samples sent on it, and losses there

"At that moment" across routers compares the sample's HLC time with each router's record
times: a subscription counts from ``settle`` after its declaration until ``settle`` before
its end (the time a declaration takes to cross the mesh, plus the hosts' clock skew).
Spark DataFrame code only: every function here builds a plan on the driver.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyzenoh.pipeline.audit import join_active, matching_pairs
from pyzenoh.pipeline.mesh_loss import Hop, RouterLink, Topology, where_lost
from pyzenoh.pipeline.tables import policy_stops

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
    from pyspark.sql import Column, DataFrame

#: Default of ``--settle-ms``: how long a declaration may take to cross the mesh.
DEFAULT_SETTLE_MS = 1_000

_LOSS_SCHEMA = "sample_id STRING, sub_router STRING, sub_run INT, sub_link INT, stopped_at STRING, stopped_link STRING, reason STRING"


def sample_id_col(router: Any, run: Any, seq: Any, key: Any, hlc_ns: Any, hlc_id: Any) -> Any:
    """A sample's identity across the mesh: its key and HLC timestamp, or (nobody stamped
    it, so it cannot be followed) its record in one router's recording."""
    from pyspark.sql import functions as F

    return F.when(hlc_ns.isNotNull(), F.concat_ws("/", hlc_id, hlc_ns.cast("string"), key)).otherwise(
        F.concat(F.lit("@"), F.concat_ws("/", router, run.cast("string"), seq.cast("string")))
    )


def hops_table(router: str, messages: DataFrame, links: DataFrame, routes: DataFrame) -> DataFrame:
    """One router's hops: per PUT/DELETE PUSH it received, what it did with it."""
    from pyspark.sql import functions as F

    push = F.col("msg_type") == "push"
    rx = messages.where(push & (F.col("direction") == "rx") & F.col("body_type").isin("put", "del")).select(
        "run",
        "seq",
        F.col("time_ns").alias("rx_ns"),
        F.col("link").alias("from_link"),
        F.col("zid").alias("from_zid"),
        F.col("whatami").alias("from_whatami"),
        "key",
        F.col("body_type").alias("kind"),
        "data_ts_ns",
        "data_ts_id",
    )
    stamp = F.struct(F.col("data_ts_ns").alias("ns"), F.col("data_ts_id").alias("id"))
    tx = (
        messages.where(push & (F.col("direction") == "tx") & (F.col("cause") >= 0))
        .groupBy(F.col("cause").alias("t_seq"))
        .agg(
            F.min("time_ns").alias("first_tx_ns"),
            F.array_sort(F.collect_set("link")).alias("sent_links"),
            F.count(F.lit(1)).alias("copies"),
            F.min(F.when(F.col("data_ts_ns").isNotNull(), stamp)).alias("tx_stamp"),
        )
    )
    acl = F.col("event") == "denied"  # else an interceptor's drop
    egress, ingress = F.col("flow") == "egress", F.col("flow") == "ingress"
    denied = (
        policy_stops(links)
        .groupBy(F.col("cause").alias("d_seq"))
        .agg(
            F.array_sort(F.collect_set(F.when(acl & egress, F.col("link")))).alias("denied_links"),
            F.max(acl & ingress).alias("ingress_denied"),
            F.array_sort(F.collect_set(F.when(~acl & egress, F.col("link")))).alias("intercepted_links"),
            F.max(~acl & ingress).alias("ingress_intercepted"),
        )
    )
    routed = routes.groupBy(F.col("cause").alias("r_seq")).agg(
        F.array_distinct(F.flatten(F.collect_list("expected_links"))).alias("route_links")
    )
    empty = F.array().cast("array<int>")
    hops = (
        rx.join(tx.hint("merge"), rx.seq == tx.t_seq, "left")
        .join(denied, rx.seq == denied.d_seq, "left")
        .join(routed, rx.seq == routed.r_seq, "left")
        .withColumn("router", F.lit(router))
        .withColumn("hlc_ns", F.coalesce(F.col("data_ts_ns"), F.col("tx_stamp.ns")))
        .withColumn("hlc_id", F.coalesce(F.col("data_ts_id"), F.col("tx_stamp.id")))
        .withColumn("sent_links", F.coalesce("sent_links", empty))
        .withColumn("copies", F.coalesce("copies", F.lit(0)))
        .withColumn("denied_links", F.coalesce("denied_links", empty))
        .withColumn("dropped_links", F.array_except(F.coalesce("route_links", empty), "sent_links"))
        .withColumn("ingress_denied", F.coalesce("ingress_denied", F.lit(False)))
        .withColumn("intercepted_links", F.coalesce("intercepted_links", empty))
        .withColumn("ingress_intercepted", F.coalesce("ingress_intercepted", F.lit(False)))
        .withColumn("entry", F.coalesce(F.col("from_whatami") != "router", F.lit(True)))
        .withColumn("dwell_ns", F.col("first_tx_ns") - F.col("rx_ns"))
    )
    hops = hops.withColumn(
        "sample_id",
        sample_id_col(F.col("router"), F.col("run"), F.col("seq"), F.col("key"), F.col("hlc_ns"), F.col("hlc_id")),
    )
    return hops.select(
        "sample_id",
        "router",
        "run",
        "seq",
        "key",
        "kind",
        "hlc_ns",
        "hlc_id",
        "entry",
        "from_link",
        "from_zid",
        "from_whatami",
        "rx_ns",
        "first_tx_ns",
        "dwell_ns",
        "sent_links",
        "copies",
        "denied_links",
        "dropped_links",
        "ingress_denied",
        "intercepted_links",
        "ingress_intercepted",
    )


def router_label(zid: Column, labels: dict[str, str]) -> Column:
    """The name of the recorded router with this zid, else the zid itself."""
    from pyspark.sql import functions as F

    label = zid
    for known, name in labels.items():
        label = F.when(zid == known, F.lit(name)).otherwise(label)
    return label


def with_link_times(hops: DataFrame, labels: dict[str, str]) -> DataFrame:
    """``link_ns``: for a hop from another recorded router, from that router's first send
    of the sample to this router's receipt (its queue toward this router, then the link;
    the two hosts' clocks, so only as true as they agree). Null for an entry hop."""
    from pyspark.sql import functions as F

    prev = hops.select(
        F.col("sample_id").alias("p_id"), F.col("router").alias("p_router"), F.col("first_tx_ns").alias("p_tx_ns")
    )
    hops = hops.withColumn("from_router", F.when(~F.col("entry"), router_label(F.col("from_zid"), labels)))
    on = (prev.p_id == hops.sample_id) & (prev.p_router == hops.from_router)
    joined = hops.join(prev.hint("merge"), on, "left")
    joined = joined.withColumn("link_ns", F.col("rx_ns") - F.col("p_tx_ns"))
    return joined.drop("p_id", "p_router", "p_tx_ns").dropDuplicates(["router", "seq"])


def router_links(router: str, links: DataFrame, labels: dict[str, str]) -> DataFrame:
    """A router's faces to other routers: (router, run, link, peer, open_ns, close_ns);
    ``peer`` is the other router's label when it was recorded too, else its zid."""
    from pyspark.sql import functions as F

    opens = (
        links.where((F.col("event") == "open") & (F.col("whatami") == "router"))
        .groupBy("run", "link", "zid")
        .agg(F.min("time_ns").alias("open_ns"))
    )
    closes = (
        links.where(F.col("event") == "close")
        .groupBy(F.col("run").alias("c_run"), F.col("link").alias("c_link"))
        .agg(F.min("time_ns").alias("close_ns"))
    )
    label = router_label(F.col("zid"), labels)
    return opens.join(closes, (opens.run == closes.c_run) & (opens.link == closes.c_link), "left").select(
        F.lit(router).alias("router"), "run", "link", label.alias("peer"), "open_ns", "close_ns"
    )


def mesh_samples(hops: DataFrame) -> DataFrame:
    """One row per sample of the mesh: its entry (router, face), time, and routers reached."""
    from pyspark.sql import functions as F

    return (
        hops.groupBy("sample_id")
        .agg(
            F.first("key").alias("key"),
            F.first("kind").alias("kind"),
            F.first("hlc_ns").alias("hlc_ns"),
            F.first("hlc_id").alias("hlc_id"),
            # The entry hop: a client's or peer's face first, else the earliest record of it.
            F.min(F.struct((~F.col("entry")).alias("hop"), "rx_ns", "router", "run", "from_link", "from_zid")).alias(
                "first"
            ),
            F.min("rx_ns").alias("first_seen_ns"),
            F.array_sort(F.collect_set("router")).alias("routers"),
        )
        .select(
            "sample_id",
            "key",
            "kind",
            "hlc_ns",
            "hlc_id",
            F.col("first.router").alias("entry_router"),
            F.col("first.run").alias("entry_run"),
            F.col("first.from_link").alias("entry_link"),
            F.col("first.from_zid").alias("publisher_zid"),
            F.coalesce(F.col("hlc_ns"), F.col("first_seen_ns")).alias("t_ns"),
            "routers",
        )
    )


def unfollowable_ids(hops: DataFrame, topology: Topology) -> DataFrame:
    """The samples that carry no timestamp and were sent on to another router: past their
    entry router their hops cannot be told from other samples' (routers stamp PUTs only,
    as zenohd does: a DELETE keeps what its publisher gave it)."""
    from pyspark.sql import functions as F

    faces = [(x.router, x.run, x.link) for x in topology.links]
    router_faces = hops.sparkSession.createDataFrame(faces, "f_router STRING, f_run INT, f_link INT")
    sent = hops.where(F.col("hlc_ns").isNull() & F.col("entry")).select(
        "sample_id", "router", "run", F.explode("sent_links").alias("link")
    )
    on = (sent.router == router_faces.f_router) & (sent.run == router_faces.f_run) & (sent.link == router_faces.f_link)
    return sent.join(router_faces, on).select("sample_id").distinct()


def followable(hops: DataFrame, unfollowable: DataFrame) -> DataFrame:
    """The hops the mesh audit can follow: stamped ones, and an unstamped sample's entry
    hop when it went no further than its entry router (``unfollowable``: the
    :func:`unfollowable_ids` of ``hops``)."""
    from pyspark.sql import functions as F

    kept = hops.where(F.col("hlc_ns").isNotNull() | F.col("entry"))
    return kept.join(unfollowable, "sample_id", "left_anti")


def mesh_delivery(
    hops: DataFrame,
    declarations: DataFrame,
    topology: Topology,
    unfollowable: DataFrame,
    settle_ms: int = DEFAULT_SETTLE_MS,
) -> DataFrame:
    """Per sample and subscriber of the mesh whose declaration intersected it: reached or
    where it stopped. ``declarations``: every router's, with a ``router`` column;
    ``unfollowable``: the samples left out (:func:`unfollowable_ids`)."""
    from pyspark.sql import functions as F

    settle_ns = settle_ms * 1_000_000
    hops = followable(hops, unfollowable)
    samples = mesh_samples(hops)
    is_sub = (
        (F.col("kind") == "subscriber")
        & (F.col("direction") == "rx")
        & (F.coalesce(F.col("whatami"), F.lit("")) != "router")
        & ~F.coalesce(F.col("denied"), F.lit(False))
    )
    subs = declarations.where(is_sub).select(
        F.col("router").alias("s_router"),
        F.col("run").alias("s_run"),
        F.col("link").alias("s_link"),
        F.col("zid").alias("s_zid"),
        F.col("key").alias("s_key"),
        (F.col("declare_ns") + settle_ns).alias("s_from"),
        (F.col("end_ns") - settle_ns).alias("s_to"),
    )
    sub_keys = [r[0] for r in subs.select("s_key").where(F.col("s_key").isNotNull()).distinct().collect()]
    pairs = matching_pairs(samples.select("key").distinct(), sub_keys)
    candidates = samples.join(pairs, samples.key == pairs.data_key)
    not_publisher = ~(
        (F.col("s_router") == F.col("entry_router"))
        & (F.col("s_run") == F.col("entry_run"))
        & (F.col("s_link") == F.col("entry_link"))
    )
    expected = join_active(candidates, "t_ns", subs, "s_from", "s_to", F.col("s_key") == F.col("sub_key")).where(
        not_publisher
    )
    reached = hops.select(
        F.col("sample_id").alias("r_id"),
        F.col("router").alias("r_router"),
        F.col("run").alias("r_run"),
        F.explode("sent_links").alias("r_link"),
    )
    rows = (
        expected.join(
            reached.hint("merge"),
            (reached.r_id == expected.sample_id)
            & (reached.r_router == expected.s_router)
            & (reached.r_run == expected.s_run)
            & (reached.r_link == expected.s_link),
            "left",
        )
        .select(
            "sample_id",
            "key",
            "kind",
            "hlc_ns",
            "hlc_id",
            "t_ns",
            "entry_router",
            "publisher_zid",
            F.col("s_router").alias("sub_router"),
            F.col("s_run").alias("sub_run"),
            F.col("s_link").alias("sub_link"),
            F.col("s_zid").alias("sub_zid"),
            F.col("s_key").alias("sub_key"),
            F.col("r_id").isNotNull().alias("reached"),
        )
        .dropDuplicates(["sample_id", "sub_router", "sub_run", "sub_link"])
    )
    missing = rows.where(~F.col("reached")).select("sample_id", "t_ns", "sub_router", "sub_run", "sub_link")
    hop_struct = F.struct(
        "rx_ns",
        "router",
        "run",
        "sent_links",
        "denied_links",
        "dropped_links",
        "ingress_denied",
        "intercepted_links",
        "ingress_intercepted",
    )
    hop_lists = (
        hops.join(
            missing.select(F.col("sample_id").alias("m_id")).distinct().hint("merge"),
            F.col("sample_id") == F.col("m_id"),
        )
        .groupBy("sample_id")
        .agg(F.array_sort(F.collect_list(hop_struct)).alias("hops"))
    )
    losses = missing.join(hop_lists.hint("merge"), "sample_id", "left").mapInArrow(
        functools.partial(classify_batches, topology=topology, settle_ns=settle_ns), _LOSS_SCHEMA
    )
    keys = ["sample_id", "sub_router", "sub_run", "sub_link"]
    return rows.join(losses.hint("merge"), keys, "left").orderBy("t_ns", "sample_id")


def classify_batches(batches: Iterator[pa.RecordBatch], topology: Topology, settle_ns: int) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: :func:`~.mesh_loss.where_lost` for each missing delivery."""
    import pyarrow as pa

    for batch in batches:
        out: dict[str, list[Any]] = {
            name: []
            for name in ("sample_id", "sub_router", "sub_run", "sub_link", "stopped_at", "stopped_link", "reason")
        }
        for row in batch.to_pylist():
            hops = [
                Hop(
                    h["router"],
                    h["run"],
                    frozenset(h["sent_links"] or ()),
                    frozenset(x for x in h["denied_links"] or () if x is not None),
                    frozenset(h["dropped_links"] or ()),
                    bool(h["ingress_denied"]),
                    frozenset(x for x in h["intercepted_links"] or () if x is not None),
                    bool(h["ingress_intercepted"]),
                )
                for h in row["hops"] or ()
            ]
            loss = where_lost(hops, row["sub_router"], row["sub_link"], row["t_ns"], topology, settle_ns)
            for name in ("sample_id", "sub_router", "sub_run", "sub_link"):
                out[name].append(row[name])
            out["stopped_at"].append(loss.router)
            out["stopped_link"].append(loss.link)
            out["reason"].append(loss.reason)
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(out["sample_id"], pa.string()),
                pa.array(out["sub_router"], pa.string()),
                pa.array(out["sub_run"], pa.int32()),
                pa.array(out["sub_link"], pa.int32()),
                pa.array(out["stopped_at"], pa.string()),
                pa.array(out["stopped_link"], pa.string()),
                pa.array(out["reason"], pa.string()),
            ],
            names=list(out),
        )


def collect_topology(router_links_df: DataFrame, recorded: Sequence[str]) -> Topology:
    """The (small) router-link table brought to the driver, for the loss rule."""
    links = [
        RouterLink(r["router"], r["run"], r["link"], r["peer"], r["open_ns"], r["close_ns"])
        for r in router_links_df.collect()
        if r["peer"] is not None and r["open_ns"] is not None
    ]
    return Topology(links, recorded)


def mesh_links_table(hops: DataFrame, delivery: DataFrame, router_links_df: DataFrame) -> DataFrame:
    """Per router face to another router: samples sent on it and losses named there."""
    from pyspark.sql import functions as F

    sent = (
        hops.select("router", "run", F.explode("sent_links").alias("link"))
        .groupBy("router", "run", "link")
        .agg(F.count(F.lit(1)).alias("samples_sent"))
    )
    named = F.concat(F.col("router"), F.lit("->"), F.col("peer"))
    lost = (
        delivery.where(~F.col("reached") & F.col("stopped_link").isNotNull())
        .groupBy(F.col("stopped_link").alias("l_name"))
        .agg(F.count(F.lit(1)).alias("losses"), F.array_sort(F.collect_set("reason")).alias("loss_reasons"))
    )
    return (
        router_links_df.join(sent, ["router", "run", "link"], "left")
        .withColumn("name", named)
        .join(lost, F.col("name") == F.col("l_name"), "left")
        .select(
            "name",
            "router",
            "run",
            "link",
            "peer",
            "open_ns",
            "close_ns",
            F.coalesce("samples_sent", F.lit(0)).alias("samples_sent"),
            F.coalesce("losses", F.lit(0)).alias("losses"),
            F.coalesce("loss_reasons", F.array().cast("array<string>")).alias("loss_reasons"),
        )
        .orderBy("router", "run", "link")
    )


def mesh_verdict(delivery: DataFrame) -> dict[str, Any]:
    """The mesh audit's counts and its one-line verdict."""
    from pyspark.sql import functions as F

    row = delivery.agg(
        F.countDistinct("sample_id").alias("samples"),
        F.count(F.lit(1)).alias("deliveries_expected"),
        F.sum(F.col("reached").cast("int")).alias("reached"),
    ).first()
    assert row is not None
    by_reason = {
        r["reason"]: int(r["n"])
        for r in delivery.where(~F.col("reached")).groupBy("reason").agg(F.count(F.lit(1)).alias("n")).collect()
    }
    v: dict[str, Any] = {
        "samples_with_subscribers": int(row["samples"] or 0),
        "deliveries_expected": int(row["deliveries_expected"] or 0),
        "reached": int(row["reached"] or 0),
        "lost": sum(by_reason.values()),
        "lost_by_reason": dict(sorted(by_reason.items())),
    }
    v["passed"] = v["lost"] == 0
    if v["passed"]:
        v["text"] = (
            f"PASS: all {v['deliveries_expected']} deliveries of {v['samples_with_subscribers']} samples "
            "reached their subscribers across the mesh"
        )
    else:
        reasons = ", ".join(f"{n} {r}" for r, n in v["lost_by_reason"].items())
        v["text"] = f"FAIL: {v['lost']} of {v['deliveries_expected']} deliveries across the mesh were lost ({reasons})"
    return v
