"""The mesh audit on real traffic: three recording ``pyzenoh router`` processes in a line
(A - B - C, B to C through a TCP proxy the test cuts), a real eclipse-zenoh 1.10.2
publisher on A and two subscribers on C, one of them stalled while a burst passes (its
samples are Drop: router C drops what its full queue cannot take). The pipeline, given
the three recordings, must agree with what each subscriber actually received, and name
where every missing sample stopped."""

from __future__ import annotations

import json
import select
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zenoh

from pyzenoh.pipeline.jobs import recording_label, run_pipeline
from tests.fixtures.pyzenoh_router import run_router, zenoh_config
from tests.pipeline.browser import drawn_charts, find_browser, rendered_dom
from tests.routing.test_wire_differential import RecordingProxy
from tests.waits import WAIT, expect, routed, until

CLEAN = 20
BURST = 800
PAYLOAD = b"x" * 30_000  # 24 MB in all: more than the stalled client's socket buffers
#: Puts between two waits for the fast subscriber. The publisher's session queues two
#: batches of data and drops (Drop) what finds them full for 1 ms: paced, nothing drops
#: before router C, where the stalled subscriber's queue fills.
PACE = 2
#: Router C's lease, past the longest stall (the stalled subscriber's STALL_MAX_S): a
#: client that reads nothing for a lease gives the router up, closes and reconnects (seen
#: in CI under load, a burst taking over 10 s: the recording then said "sent" for what
#: the closed session never read). Reproduced with a lease of 2 s.
STALL_LEASE = "transport/link/tx/lease:120000"
#: End markers sent at most while waiting for the resumed subscriber (one per 50 ms).
MAX_MARKERS = 400


class Stalled:
    """:mod:`tests.pipeline.stalled_subscriber` on ``endpoint``: a subscriber in a process
    of its own (stalling a callback in this process would stall this process's other
    sessions too: they share one runtime)."""

    def __init__(self, endpoint: str, key: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.pipeline.stalled_subscriber", endpoint, key],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.zid: str = json.loads(self.proc.stdout.readline())["zid"]

    def command(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def seen(self, timeout: float) -> bool:
        """Whether it printed the ``seen`` line of an ``await`` within ``timeout`` s."""
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return False
        return "seen" in json.loads(self.proc.stdout.readline())

    def finish(self) -> list[str]:
        """Resume, end, and every key it received."""
        assert self.proc.stdout is not None
        self.command("quit")
        keys: list[str] = json.loads(self.proc.stdout.readline())["keys"]
        self.proc.wait(WAIT)
        return keys

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Got:
    """A subscriber callback keeping the keys it got."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, sample: Any) -> None:
        with self.lock:
            self.keys.append(str(sample.key_expr))

    def count(self, prefix: str) -> int:
        with self.lock:
            return sum(k.startswith(prefix) for k in self.keys)


def _record_mesh(tmp: Path) -> dict[str, Any]:
    recs = {name: tmp / f"rec-{name}" for name in "abc"}
    fast = Got()
    zids: dict[str, str] = {}
    slow_keys: list[str] = []
    with (
        run_router(tmp, "--record", str(recs["a"])) as ra,
        run_router(tmp, "--record", str(recs["b"]), "-e", ra.endpoint) as rb,
    ):
        proxy = RecordingProxy(rb.port)
        state = {"cut": False}

        def cut() -> None:
            proxy.close()
            state["cut"] = True

        try:
            with (
                run_router(
                    tmp, "--record", str(recs["c"]), "-e", f"tcp/127.0.0.1:{proxy.port}", "--cfg", STALL_LEASE
                ) as rc,
                zenoh.open(zenoh_config(ra.endpoint)) as pub_s,
                zenoh.open(zenoh_config(rc.endpoint)) as fast_s,
            ):
                slow = Stalled(rc.endpoint, "mesh/**")
                try:
                    zids = {"fast": str(fast_s.info.zid()), "slow": slow.zid}
                    sub = fast_s.declare_subscriber("mesh/**", fast)
                    fast_s.declare_queryable("svc/**", lambda q: q.reply(str(q.key_expr), b"answer"))
                    slow_keys = _traffic(pub_s, fast, slow, cut)
                    sub.undeclare()
                finally:
                    slow.stop()
        finally:
            if not state["cut"]:
                proxy.close()
    return {"recs": recs, "fast": fast.keys, "slow": slow_keys, "zids": zids}


def _traffic(pub_s: Any, fast: Got, slow: Stalled, cut: Callable[[], None]) -> list[str]:
    """The phases; the keys the slow subscriber received."""
    routed(pub_s, "mesh/probe")
    # 0. a query across the mesh (a queryable of the fast subscriber's session, on C), and
    # a liveliness token on A
    token = pub_s.liveliness().declare_token("alive/pub")
    routed(pub_s, "svc/one", query=True)
    replies = [r.ok.payload.to_bytes() for r in pub_s.get("svc/one?x=1", timeout=WAIT) if r.ok]
    assert replies == [b"answer"]
    token.undeclare()
    # 1. clean: both get everything (the slow one's count is checked at the end)
    for i in range(CLEAN):
        pub_s.put(f"mesh/clean/{i}", b"%d" % i)
    expect(lambda: fast.count("mesh/clean/") == CLEAN, "the clean samples")
    # 2. a burst while the slow subscriber does not read
    slow.command("stall")
    for i in range(BURST):
        pub_s.put(f"mesh/burst/{i}", PAYLOAD)
        if i % PACE == PACE - 1:
            n = i + 1
            until(lambda n=n: fast.count("mesh/burst/") >= n)  # type: ignore[misc]
    # resumed, it has read everything router C kept for it once it gets a marker sent after
    slow.command("go")
    slow.command("await mesh/end/")
    for k in range(MAX_MARKERS):
        pub_s.put(f"mesh/end/{k}", b"end")
        if slow.seen(0.05):
            break
    else:
        raise AssertionError("the slow subscriber never caught up")
    # 3. the link B - C cut: C's subscribers are out of reach
    cut()
    pub = pub_s.declare_publisher("mesh/cut/probe")
    expect(lambda: not pub.matching_status.matching, "A forgetting C's subscribers")
    pub.undeclare()
    for i in range(5):
        pub_s.put(f"mesh/cut/{i}", b"%d" % i)
    # router A has handled the puts (and stamped them) once it answers a get sent after
    # them on the same lane: only then may the subscribers on C go
    for _ in pub_s.get("mesh/cut/flush", timeout=WAIT):
        pass
    return slow.finish()


@pytest.mark.spark
@pytest.mark.interop
def test_mesh_audit_agrees_with_the_subscribers_and_names_where_samples_stopped(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    got = _record_mesh(tmp_path)
    recs = got["recs"]
    names = {n: recording_label(str(recs[n]))[0] for n in "abc"}
    out = tmp_path / "out"
    result = run_pipeline([str(recs[n]) for n in "abc"], out, progress=False, settle_ms=0)
    assert set(result["routers"]) == set(names.values()) and not result["failed_recordings"]

    a, c = names["a"], names["c"]
    samples = spark.read.parquet(str(out / "samples")).where(F.col("key").startswith("mesh/"))
    markers = sum(k.startswith("mesh/end/") for k in got["fast"])
    published = CLEAN + BURST + markers + 5
    assert samples.count() == published  # once each, though recorded on up to three routers
    assert samples.where(F.col("router") != a).count() == 0

    hops = spark.read.parquet(str(out / "hops")).where(F.col("key").startswith("mesh/clean/"))
    per_sample = {
        r["key"]: r
        for r in hops.groupBy("key")
        .agg(F.sort_array(F.collect_list("router")).alias("routers"), F.min("dwell_ns").alias("dwell"))
        .collect()
    }
    assert len(per_sample) == CLEAN
    assert all(r["routers"] == sorted(names.values()) and r["dwell"] >= 0 for r in per_sample.values())

    delivery = spark.read.parquet(str(out / "mesh_delivery")).where(F.col("key").startswith("mesh/"))
    for who in ("fast", "slow"):
        rows = delivery.where(F.col("sub_zid") == got["zids"][who])
        reached = {r["key"] for r in rows.where("reached").collect()}
        received = {k for k in got[who] if not k.startswith("mesh/cut/")}
        assert reached == received, who  # the audit says exactly what the subscriber saw
        assert {r["sub_router"] for r in rows.collect()} == {c}

    lost = delivery.where(~F.col("reached"))
    # the stalled subscriber's losses (the burst, maybe the first end markers): router C's queue
    stalled_losses = lost.where(~F.col("key").startswith("mesh/cut/")).collect()
    assert any(r["key"].startswith("mesh/burst/") for r in stalled_losses), "no queue filled"
    assert {(r["sub_zid"], r["stopped_at"], r["reason"]) for r in stalled_losses} == {
        (got["zids"]["slow"], c, "queue_full")
    }
    assert all(r["stopped_link"] == f"{c}#{r['sub_link']}" for r in stalled_losses)
    cut_losses = lost.where(F.col("key").startswith("mesh/cut/")).collect()
    assert len(cut_losses) == 10  # 5 samples, 2 subscribers
    assert {(r["stopped_at"], r["reason"]) for r in cut_losses} == {(a, "link_down")}
    assert delivery.where(F.col("key").startswith("mesh/clean/") & ~F.col("reached")).count() == 0

    verdict = result["mesh_audit"]
    assert not verdict["passed"] and verdict["lost"] == len(stalled_losses) + len(cut_losses)
    _router_a_tables(spark, out / "routers" / a, result["routers"][a])
    links = {r["name"]: r for r in spark.read.parquet(str(out / "mesh_links")).collect()}
    assert links[f"{names['b']}->{c}"]["samples_sent"] >= CLEAN and links[f"{names['b']}->{c}"]["close_ns"] is not None
    report = (out / "report.html").read_text()
    assert "Mesh delivery audit" in report and "queue_full" in report and "link_down" in report
    assert (out / "routers" / a / "report.html").exists()
    browser = find_browser()
    if browser is not None:  # drawn in a real browser where one is installed
        assert drawn_charts(rendered_dom(browser, out / "report.html", tmp_path / "profile")) >= 3


def _router_a_tables(spark: Any, tables: Path, summary: dict[str, Any]) -> None:
    """Router A's own tables from real traffic: its audit, the query, the token."""
    assert summary["invalid_messages"] == 0
    audit = summary["audit"]
    assert audit["audited"] >= CLEAN + BURST and audit["with_route"] == 0  # A never dropped a send
    # Its own audit replays its declarations only: C's subscribers, gone with the cut link
    # (the routers' link state says so, no undeclaration does), still count there.
    diffs = spark.read.parquet(str(tables / "delivery_differences")).collect()
    assert {(d["kind"], d["key"].split("/")[1]) for d in diffs} == {("missing", "cut")}
    queries = spark.read.parquet(str(tables / "queries")).where("key = 'svc/one'").collect()
    assert [(q["selector"], q["destinations"], q["replies"], q["errors"], q["status"]) for q in queries] == [
        ("svc/one?x=1", 1, 1, 0, "completed")
    ]
    decl = spark.read.parquet(str(tables / "declarations")).where(
        "direction = 'rx' AND whatami = 'client' AND kind != 'keyexpr' AND NOT startswith(key, '@/')"
    )
    assert {(r["kind"], r["key"], r["end_reason"]) for r in decl.collect()} == {("token", "alive/pub", "undeclared")}


@pytest.mark.spark
def test_synthetic_mesh_audit_finds_exactly_the_injected_faults_though_a_router_was_killed(
    spark: Any, tmp_path: Path
) -> None:
    """Generated recordings of two routers with a full queue dropping deliveries, an
    interceptor dropping others and the link between them cut for a while; router 0 was killed -9 while closing its last
    segment (its chunks whole, its summary torn) and a file of junk named like a segment
    lies in router 1's directory. Every injected fault is found, with its reason, and
    nothing else: without them the mesh passes."""
    from pyspark.sql import functions as F

    from pyzenoh.pipeline.mesh import mesh_verdict
    from pyzenoh.pipeline.synth_mesh import generate_mesh, mesh_zid
    from pyzenoh.recording.reader import list_segments, scan_segment

    dirs = [tmp_path / f"r{i}" for i in range(2)]
    made = generate_mesh(dirs, 4_000, drop_every=200, intercept_every=150, cut=(0.5, 0.6), max_segment_bytes=20_000)
    assert made["dropped"] > 0 and made["intercepted"] > 0 and made["during_cut"] > 0
    last = list_segments(dirs[0])[-1][1]
    with open(last, "r+b") as f:
        f.truncate(scan_segment(last).data_end + 17)
    assert not scan_segment(last).closed
    (dirs[1] / "seg-999999.mcap").write_bytes(b"\x89MCAP0\r\n" + bytes(range(256)) * 40)

    result = run_pipeline([str(d) for d in dirs], tmp_path / "out", progress=False, report=False)
    assert set(result["routers"]) == {str(mesh_zid(i)) for i in range(2)} and not result["failed_recordings"]
    assert result["tables"]["samples"]["rows"] == made["samples"]
    verdict = result["mesh_audit"]
    assert not verdict["passed"]
    assert verdict["lost_by_reason"].get("queue_full") == made["dropped"]  # each drop: one delivery
    assert verdict["lost_by_reason"].get("interceptor") == made["intercepted"]
    assert verdict["lost_by_reason"].get("link_down", 0) > 0
    assert set(verdict["lost_by_reason"]) == {"queue_full", "interceptor", "link_down"}, verdict
    assert verdict["deliveries_expected"] == verdict["reached"] + verdict["lost"] > made["samples"]
    # each router's own audit counts the interceptor's drops as its policy's, not as missing
    audits = [r["audit"] for r in result["routers"].values()]
    assert sum(a["denied_deliveries"] for a in audits) == made["intercepted"]
    assert sum(a["missing"] for a in audits) == 2 * made["dropped"]  # missing, and missing against the route
    delivery = spark.read.parquet(str(tmp_path / "out" / "mesh_delivery"))
    cut = delivery.where(F.col("reason") == "link_down").collect()
    # only samples that had to cross the cut link, between the two routers
    far = str(mesh_zid(1))
    assert all((r["entry_router"] == far) != (r["sub_router"] == far) for r in cut)
    # the same mesh without the injected faults' deliveries passes
    faults = ("queue_full", "interceptor", "link_down")
    clean = mesh_verdict(delivery.where(F.col("reason").isNull() | ~F.col("reason").isin(*faults)))
    assert clean["passed"] and clean["text"].startswith("PASS"), clean
