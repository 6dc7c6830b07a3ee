"""Real traffic: eclipse-zenoh 1.10.2 clients through ``pyzenoh router --record``, then
the pipeline over what the router recorded. The audit must find nothing wrong."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pyzenoh.localnet import free_port
from tests.pipeline.zenoh_helpers import Collector, client
from tests.waits import expect, routed, until, value_of

pytest.importorskip("zenoh")
pytestmark = [pytest.mark.spark, pytest.mark.interop]


def _record_real_traffic(rec_dir: Path) -> int:
    endpoint = f"tcp/127.0.0.1:{free_port()}"
    router = subprocess.Popen(
        [sys.executable, "-m", "pyzenoh", "--log-level", "warning", "router", "-l", endpoint, "--record", str(rec_dir)],
    )
    sessions: list[Any] = []
    svc: Any = None

    def connected() -> Any:
        try:
            return client(endpoint)
        except Exception:  # noqa: BLE001 - zenoh raises its own error type (not listening yet)
            return None

    try:
        sessions.append(value_of(connected, "pyzenoh router listening"))
        sessions += [client(endpoint), client(endpoint), client(endpoint)]
        pub, subscriber, server, watch = sessions
        got = Collector()
        sub = subscriber.declare_subscriber("demo/**", got)
        server.declare_queryable("svc/**", lambda q: q.reply(str(q.key_expr), b"answer"))
        token = subscriber.liveliness().declare_token("alive/sub")
        routed(pub, "demo/probe")  # the subscription is known to the router
        pub.put("demo/probe", b"p")
        for i in range(30):
            pub.put(f"demo/{i % 3}", f"v{i}".encode())
            pub.put("other/x", b"nobody listens")
        routed(pub, "svc/one", query=True)
        replies = [r.ok.payload.to_bytes() for r in pub.get("svc/one?x=1", timeout=5) if r.ok]
        assert replies == [b"answer"]
        got.wait_for("demo/", 30 + len(got.matching("demo/probe")))
        # The queryable's end, seen by a querier of another session: the router has
        # handled its link's close before it stops (its record says "link_closed").
        svc = watch.declare_querier("svc/one")
        expect(lambda: svc.matching_status.matching, "the queryable known to the watcher")
        token.undeclare()
        sub.undeclare()
        # A liveliness get on the same link is answered once the router has handled both.
        list(subscriber.liveliness().get("nothing/here", timeout=20))
    finally:
        for s in sessions[:3]:
            s.close()
        if svc is not None:
            until(lambda: not svc.matching_status.matching)
        for s in sessions[3:]:
            s.close()
        router.send_signal(signal.SIGTERM)  # closes the recording cleanly
        try:
            router.wait(timeout=20)
        except subprocess.TimeoutExpired:
            router.kill()
            router.wait(timeout=10)
    return len(got.matching("demo/probe"))


@pytest.mark.slow
def test_real_router_recording_through_the_pipeline(spark: Any, tmp_path: Path) -> None:
    from pyzenoh.pipeline.jobs import run_pipeline

    probes = _record_real_traffic(tmp_path / "rec")
    result = run_pipeline(tmp_path / "rec", tmp_path / "out", progress=False)
    audit = result["audit"]
    assert audit["passed"], audit
    # The router records its route only when a send was dropped; nothing was here.
    assert audit["audited"] >= 60 and audit["with_route"] == 0
    assert result["invalid_messages"] == 0
    queries = spark.read.parquet(result["tables"]["queries"]["path"]).collect()
    assert len(queries) == 1
    q = queries[0]
    assert (
        q["selector"],
        q["destinations"],
        q["replies"],
        q["errors"],
        q["status"],
    ) == (
        "svc/one?x=1",
        1,
        1,
        0,
        "completed",
    )
    # (The router's own admin-space queryable, declared by its local face, is left out.)
    decl = spark.read.parquet(result["tables"]["declarations"]["path"]).where(
        "direction = 'rx' AND NOT startswith(key, '@/')"
    )
    kinds = {(r["kind"], r["key"], r["end_reason"]) for r in decl.collect() if r["kind"] != "keyexpr"}
    assert kinds == {
        ("subscriber", "demo/**", "undeclared"),
        ("queryable", "svc/**", "link_closed"),
        ("token", "alive/sub", "undeclared"),
    }
    delivered = spark.read.parquet(result["tables"]["delivery"]["path"]).where("key LIKE 'demo/%'")
    assert delivered.where("size(sent_to) = 1").count() >= 30
    assert probes >= 1
