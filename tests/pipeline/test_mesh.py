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
from tests.routing.test_wire_differential import RecordingProxy
from tests.waits import WAIT, expect, routed, until

CLEAN = 20
BURST = 800
PAYLOAD = b"x" * 30_000  # 24 MB in all: more than the stalled client's socket buffers
#: Puts between two waits for the fast subscriber. The publisher's session queues two
#: batches of data and drops (Drop) what finds them full for 1 ms: paced, nothing drops
#: before router C, where the stalled subscriber's queue fills.
PACE = 2
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
                run_router(tmp, "--record", str(recs["c"]), "-e", f"tcp/127.0.0.1:{proxy.port}") as rc,
                zenoh.open(zenoh_config(ra.endpoint)) as pub_s,
                zenoh.open(zenoh_config(rc.endpoint)) as fast_s,
            ):
                slow = Stalled(rc.endpoint, "mesh/**")
                try:
                    zids = {"fast": str(fast_s.info.zid()), "slow": slow.zid}
                    sub = fast_s.declare_subscriber("mesh/**", fast)
                    slow_keys = _traffic(pub_s, fast, slow, cut)
                    sub.undeclare()
                finally:
                    slow.stop()
        finally:
            if not state["cut"]:
                proxy.close()
    return {"recs": recs, "fast": fast.keys, "slow": slow_keys, "zids": zids}


def _traffic(pub_s: Any, fast: Got, slow: Stalled, cut: Callable[[], None]) -> list[str]:
    """The three phases; the keys the slow subscriber received."""
    routed(pub_s, "mesh/probe")
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
    links = {r["name"]: r for r in spark.read.parquet(str(out / "mesh_links")).collect()}
    assert links[f"{names['b']}->{c}"]["samples_sent"] >= CLEAN and links[f"{names['b']}->{c}"]["close_ns"] is not None
    report = (out / "report.html").read_text()
    assert "Mesh delivery audit" in report and "queue_full" in report and "link_down" in report
    assert (out / "routers" / a / "report.html").exists()


@pytest.mark.spark
@pytest.mark.interop
def test_mesh_audit_passes_on_a_clean_run(spark: Any, tmp_path: Path) -> None:
    recs = [tmp_path / "rec-a", tmp_path / "rec-b"]
    got = Got()
    with (
        run_router(tmp_path, "--record", str(recs[0])) as ra,
        run_router(tmp_path, "--record", str(recs[1]), "-e", ra.endpoint) as rb,
        zenoh.open(zenoh_config(ra.endpoint)) as pub_s,
        zenoh.open(zenoh_config(rb.endpoint)) as sub_s,
    ):
        sub = sub_s.declare_subscriber("ok/**", got)
        routed(pub_s, "ok/probe")
        for i in range(50):
            pub_s.put(f"ok/{i}", b"%d" % i)
        expect(lambda: got.count("ok/") == 50, "the samples")
        sub.undeclare()
    result = run_pipeline([str(r) for r in recs], tmp_path / "out", progress=False, settle_ms=0, report=False)
    verdict = result["mesh_audit"]
    assert verdict["passed"], verdict
    assert verdict["reached"] >= 50


@pytest.mark.spark
def test_synthetic_mesh_audit_finds_the_injected_faults(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    from pyzenoh.pipeline.synth_mesh import generate_mesh, mesh_zid

    dirs = [tmp_path / f"r{i}" for i in range(3)]
    made = generate_mesh(dirs, 30_000, drop_every=200, cut=(0.5, 0.6))
    assert made["dropped"] > 0 and made["during_cut"] > 0
    result = run_pipeline([str(d) for d in dirs], tmp_path / "out", progress=False, report=False)
    assert set(result["routers"]) == {str(mesh_zid(i)) for i in range(3)}
    assert result["tables"]["samples"]["rows"] == made["samples"]
    verdict = result["mesh_audit"]
    assert verdict["lost_by_reason"].get("queue_full") == made["dropped"]  # each drop: one delivery
    assert verdict["lost_by_reason"].get("link_down", 0) > 0
    assert set(verdict["lost_by_reason"]) == {"queue_full", "link_down"}, verdict
    delivery = spark.read.parquet(str(tmp_path / "out" / "mesh_delivery"))
    cut = delivery.where(F.col("reason") == "link_down").collect()
    # only samples that had to cross the cut link: between router 2 and the others
    far = str(mesh_zid(2))
    assert all((r["entry_router"] == far) != (r["sub_router"] == far) for r in cut)


@pytest.mark.spark
def test_a_damaged_recording_does_not_stop_the_others(spark: Any, tmp_path: Path) -> None:
    from pyzenoh.pipeline.synth_mesh import generate_mesh

    dirs = [tmp_path / f"r{i}" for i in range(2)]
    generate_mesh(dirs, 10_000, drop_every=0, cut=(2.0, 2.0), max_segment_bytes=100_000)
    segments = sorted(dirs[1].glob("seg-*.mcap"))
    assert len(segments) > 1
    data = segments[0].read_bytes()
    segments[0].write_bytes(data[: len(data) // 2])  # torn mid-chunk
    (dirs[1] / "seg-999999.mcap").write_bytes(b"\x89MCAP0\r\n" + bytes(range(256)) * 40)  # garbage
    result = run_pipeline([str(d) for d in dirs], tmp_path / "out", progress=False, report=False)
    assert len(result["routers"]) == 2 and not result["failed_recordings"]
    verdict = result["mesh_audit"]
    # what router 1 lost from its recording shows as losses there, never as a failed job
    assert verdict["deliveries_expected"] > 0 and verdict["reached"] > 0
