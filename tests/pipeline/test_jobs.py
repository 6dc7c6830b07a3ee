"""``run_pipeline`` on the scripted scenario: every table checked against known facts.

The scenario's run is the real ``spark-submit`` one (see ``conftest.submitted``): it
checks the command and every table at once, and runs alongside the other Spark tests."""

from __future__ import annotations

import contextlib
import importlib
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline import scenario
from tests.pipeline.browser import drawn_charts, find_browser, rendered_dom
from tests.pipeline.scenario import EXPECTED_DELIVERY, T0
from tests.pipeline.submit import Submitted

pytestmark = pytest.mark.spark
MS = 1_000_000


@pytest.mark.slow
def test_a_recording_without_data_still_reports(spark: Any, tmp_path: Path) -> None:
    from pyzenoh.pipeline.jobs import run_pipeline
    from pyzenoh.recording import Recorder

    with Recorder(tmp_path / "rec") as rec:
        rec.link_opened(T0, 1, "aa", "client", "tcp/x:1")
        rec.message(T0 + MS, 1, "rx", None, b"\x1a\x01")  # a stray RESPONSE_FINAL
        rec.link_closed(T0 + 2 * MS, 1, "bye")
    out = run_pipeline(tmp_path / "rec", tmp_path / "out", progress=False)
    assert out["tables"]["messages"]["rows"] == 1
    assert out["tables"]["delivery"]["rows"] == 0 and out["tables"]["queries"]["rows"] == 0
    assert out["audit"]["passed"] is True
    html = Path(out["report"]).read_text(encoding="utf-8")
    assert "No keyed traffic." in html and "No queries." in html


@pytest.fixture(scope="module")
def generated(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Any, Any, Any, dict[int, list[int]]]]:
    """A generated recording where subscribers come and go: (messages, routes,
    declarations) and, per data message, the faces a plain (bucket-free) join of every
    data message with every subscription of an intersecting key finds."""
    from pyzenoh.keyexpr import intersects
    from pyzenoh.pipeline import jobs
    from pyzenoh.pipeline.export import export_table
    from pyzenoh.pipeline.synth import generate

    base = tmp_path_factory.mktemp("buckets")
    generate(base / "rec", 12_000, seed=3)
    export_table(spark, base / "rec", base / "messages")
    messages = spark.read.parquet(str(base / "messages"))
    links = spark.read.format("pyzenoh").option("table", "links").load(str(base / "rec"))
    routes = spark.read.format("pyzenoh").option("table", "routes").load(str(base / "rec"))
    declarations = jobs.declarations_table(messages, links).cache()

    data = messages.where("msg_type = 'push' AND direction = 'rx'")
    subs = declarations.where("kind = 'subscriber' AND direction = 'rx'").collect()
    expected: dict[int, set[int]] = {}
    for d in data.select("seq", "run", "link", "key").collect():
        expected[d["seq"]] = set()
        for s in subs:
            if (
                s["run"] == d["run"]
                and s["link"] != d["link"]
                and s["declare_seq"] < d["seq"]
                and (s["end_seq"] is None or s["end_seq"] > d["seq"])
                and intersects(d["key"], s["key"])
            ):
                expected[d["seq"]].add(s["link"])
    try:
        yield (
            messages,
            routes,
            declarations,
            {seq: sorted(links) for seq, links in expected.items()},
        )
    finally:
        declarations.unpersist()


@pytest.mark.parametrize("buckets", [3, 256])
def test_audit_buckets_find_the_same_subscribers_as_the_plain_join(
    generated: tuple[Any, Any, Any, dict[int, list[int]]],
    monkeypatch: pytest.MonkeyPatch,
    buckets: int,
) -> None:
    """Subscribers come and go in a generated recording; whatever the bucket width, the
    audit's subscribers are the ones a plain (bucket-free) join of every data message
    with every subscription of an intersecting key finds."""
    from pyzenoh.pipeline import jobs

    messages, routes, declarations, expected = generated
    # (the module that defines delivery_audit reads the constant)
    home = importlib.import_module(jobs.delivery_audit.__module__)
    monkeypatch.setattr(home, "AUDIT_BUCKETS", buckets)
    audit = {
        r["seq"]: sorted(r["subscribed"])
        for r in jobs.delivery_audit(messages, routes, declarations).select("seq", "subscribed").collect()
    }
    assert len(audit) == len(expected) > 1_000
    assert audit == expected
    assert sum(1 for v in audit.values() if v) > 1_000


@pytest.mark.slow
def test_audit_knows_access_control(spark: Any, tmp_path: Path) -> None:
    """The same traffic audits clean when its denials are recorded, and shows false
    differences when they are not (a recorder that does not know access control). The two
    recordings are two runs of one directory, audited at once (faces are (run, link)):
    each run's verdict and differences are its own."""
    from pyspark.sql import functions as F

    from pyzenoh.pipeline import jobs

    rec_dir = tmp_path / "rec"
    with_denials = scenario.build_acl(rec_dir, record_denials=True)
    without_denials = scenario.build_acl(rec_dir, record_denials=False)
    load = spark.read.format("pyzenoh")
    messages = load.load(str(rec_dir)).cache()
    links = load.option("table", "links").load(str(rec_dir)).where(~F.col("carried")).cache()
    routes = load.option("table", "routes").load(str(rec_dir))
    declarations = jobs.declarations_table(messages, links).cache()
    table = jobs.delivery_audit(messages, routes, declarations, links).cache()
    all_rows = {r["seq"]: r for r in table.collect()}
    all_diffs = jobs.delivery_differences(table).collect()

    def audit(
        facts: scenario.Facts,
    ) -> tuple[dict[str, Any], dict[int, Any], list[Any]]:
        run = all_rows[facts.seqs["put_ok"]]["run"]
        verdict = jobs.audit_verdict(table.where(F.col("run") == run))
        rows = {seq: r for seq, r in all_rows.items() if r["run"] == run}
        return verdict, rows, [d for d in all_diffs if d["run"] == run]

    recorded, unrecorded = audit(with_denials), audit(without_denials)
    for df in (messages, links, declarations, table):
        df.unpersist()

    assert len(recorded[1]) == len(unrecorded[1]) == 3  # each run's 3 data messages
    verdict, rows, diffs = recorded
    s = with_denials.seqs
    assert verdict["passed"] and not diffs, (verdict, diffs)
    assert verdict["text"] == (
        "PASS: all 3 data messages went exactly where subscribers were, less what "
        "access control denied or interceptors dropped (3 deliveries, 1 of the messages on the way in)"
    )
    got = {
        name: (list(r["subscribed"]), list(r["denied"]), r["ingress_denied"], list(r["expected"]), list(r["sent_to"]))
        for name, r in ((n, rows[s[n]]) for n in ("put_in", "put_out", "put_ok"))
    }
    assert got == {
        "put_in": ([2, 3], [2, 3], True, [], []),
        "put_out": ([2, 3], [3], False, [2], [2]),
        "put_ok": ([2, 3], [], False, [2, 3], [2, 3]),
    }

    verdict, rows, diffs = unrecorded
    s = without_denials.seqs
    assert not verdict["passed"] and verdict["with_differences"] == 3
    missing = sorted((d["seq"], d["face"]) for d in diffs if d["kind"] == "missing")
    assert missing == sorted(
        [
            (s["put_in"], 2),
            (s["put_in"], 3),
            (s["put_in"], 4),
            (s["put_out"], 3),
            (s["put_out"], 4),
            (s["put_ok"], 4),
        ]
    )
    assert all("access control did not deny it" in d["explanation"] for d in diffs if d["kind"] == "missing")


# --- the scenario, through spark-submit ---------------------------------------------


@pytest.fixture(scope="module")
def result(
    request: pytest.FixtureRequest,
    submitted: Submitted | None,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    """The summary of the pipeline run by the real ``spark-submit`` (see conftest), with
    the scenario's facts and the progress lines; in this process when there is no
    spark-submit."""
    if submitted is not None:
        out = submitted.result()
        out["facts"] = submitted.facts
        out["stderr"] = submitted.wait()[1]
        return out
    from pyzenoh.pipeline.jobs import run_pipeline

    request.getfixturevalue("spark")
    base = tmp_path_factory.mktemp("jobs")
    facts = scenario.build(base / "rec", max_segment_bytes=4_000)  # several segments
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        out = run_pipeline(base / "rec", base / "out", progress=True)
    out["facts"] = facts
    out["stderr"] = err.getvalue()
    return out


def test_spark_submit_from_another_directory(submitted: Submitted | None) -> None:
    if submitted is None:
        pytest.skip("spark-submit is not installed next to this Python")
    code, out = submitted.wait()
    assert code == 0, out[-3000:]
    assert "[pipeline 9/9] summary" in out
    result = submitted.result()
    assert result["master"] == "local[1]"  # spark-submit's master
    # the relative paths given were resolved against the directory it was run from
    assert result["recording_dir"] == str((submitted.cwd / "rec").resolve())
    assert result["output_dir"] == str((submitted.cwd / "out").resolve())
    assert result["audit"]["with_differences"] == 3
    assert (submitted.cwd / "out" / "report.html").is_file()
    assert (submitted.cwd / "out" / "delivery" / "_SUCCESS").is_file()


def _rows(spark: Any, result: dict[str, Any], table: str) -> list[Any]:
    return spark.read.parquet(result["tables"][table]["path"]).collect()


def test_summary_and_progress(result: dict[str, Any]) -> None:
    assert "[pipeline 1/9] starting Spark" in result["stderr"]
    assert "[pipeline 7/9] delivery audit" in result["stderr"]
    assert set(result["tables"]) >= {
        "messages",
        "traffic",
        "queries",
        "declarations",
        "delivery",
    }
    assert result["invalid_messages"] == 1
    assert result["audit"]["passed"] is False
    assert result["audit"]["audited"] == len(EXPECTED_DELIVERY)
    assert result["audit"]["with_differences"] == 3


def test_messages_table(spark: Any, result: dict[str, Any]) -> None:
    rows = _rows(spark, result, "messages")
    facts = result["facts"]
    assert len(rows) == result["tables"]["messages"]["rows"]
    by_seq = {r["seq"]: r for r in rows}
    bad = by_seq[facts.seqs["bad"]]
    assert bad["msg_type"] == "invalid" and bad["error"] and bad["key"] == "demo/bad"
    put = by_seq[facts.seqs["put_bx"]]
    assert (put["msg_type"], put["key"], put["payload"], put["encoding"]) == (
        "push",
        "demo/b/x",
        b"v2-longer",
        "text/plain",
    )
    assert (put["zid"], put["direction"], put["link"]) == ("1001", "rx", 1)


def test_traffic_table(spark: Any, result: dict[str, Any]) -> None:
    rows = _rows(spark, result, "traffic")
    per_key = {r["key"]: r for r in rows if r["link"] is None}
    bx = per_key["demo/b/x"]
    assert (bx["data_messages"], bx["rx_messages"], bx["tx_messages"]) == (2, 1, 1)
    assert (bx["publishers"], bx["subscribers_reached"], bx["published_bytes"]) == (
        1,
        1,
        9,
    )
    a = per_key["demo/a"]
    assert (a["publishers"], a["subscribers_reached"], a["messages"]) == (1, 1, 4)
    assert per_key["other/z"]["subscribers_reached"] == 1  # the injected extra delivery
    per_link = {(r["key"], r["link"]): r for r in rows if r["link"] is not None}
    assert per_link[("demo/a", 2)]["tx_messages"] == 2 and per_link[("demo/a", 1)]["rx_messages"] == 2
    assert all(r["minute"].minute == 0 for r in rows)


def test_queries_table(spark: Any, result: dict[str, Any]) -> None:
    seqs = result["facts"].seqs
    rows = {r["query_seq"]: r for r in _rows(spark, result, "queries")}
    assert set(rows) == {seqs["q1"], seqs["q2"], seqs["q3"]}
    q1, q2, q3 = rows[seqs["q1"]], rows[seqs["q2"]], rows[seqs["q3"]]
    assert (q1["selector"], q1["querier_link"], q1["querier_zid"], q1["target"]) == (
        "demo/q/x?n=1",
        5,
        "1005",
        "best_matching",
    )
    assert (
        q1["destinations"],
        list(q1["destination_links"]),
        q1["replies"],
        q1["errors"],
    ) == (1, [4], 1, 0)
    assert (q1["first_reply_ms"], q1["final_ms"], q1["status"], q1["timed_out"]) == (
        5.0,
        7.0,
        "completed",
        False,
    )
    assert (q2["selector"], q2["timeout_ms"], q2["replies"], q2["errors"]) == (
        "demo/q/y",
        100,
        0,
        2,
    )
    assert (q2["final_ms"], q2["status"], q2["timed_out"]) == (170.0, "timed_out", True)
    assert (q3["destinations"], q3["replies"], q3["final_ms"], q3["status"]) == (
        0,
        0,
        0.0,
        "completed",
    )
    assert q3["first_reply_ms"] is None


def test_declarations_table(spark: Any, result: dict[str, Any]) -> None:
    rows = [r for r in _rows(spark, result, "declarations") if r["direction"] == "rx"]
    by = {(r["kind"], r["link"], r["entity_id"]): r for r in rows}
    assert set(by) == {
        ("subscriber", 2, 1),
        ("subscriber", 3, 1),
        ("subscriber", 5, 1),  # refused by access control: marked
        ("queryable", 4, 1),
        ("token", 2, 7),
    }
    assert [k for k, r in by.items() if r["denied"]] == [("subscriber", 5, 1)]
    sub2, sub3 = by[("subscriber", 2, 1)], by[("subscriber", 3, 1)]
    assert (sub2["key"], sub2["end_reason"], sub2["end_ns"] - T0) == (
        "demo/**",
        "link_closed",
        500 * MS,
    )
    assert (sub3["key"], sub3["end_reason"], sub3["lifetime_ms"]) == (
        "demo/b/*",
        "undeclared",
        298.0,
    )
    tok = by[("token", 2, 7)]
    assert (tok["key"], tok["end_reason"], tok["lifetime_ms"], tok["zid"]) == (
        "alive/2",
        "undeclared",
        396.0,
        "1002",
    )
    qbl = by[("queryable", 4, 1)]
    assert (qbl["end_reason"], qbl["end_ns"], qbl["queryable_complete"]) == (
        None,
        None,
        True,
    )
    tx = [r for r in _rows(spark, result, "declarations") if r["direction"] == "tx"]
    answers = [r for r in tx if r["interest_id"] == 1 and r["kind"] == "subscriber"]
    assert sorted(r["key"] for r in answers) == ["demo/**", "demo/b/*"]
    assert {r["link"] for r in tx if r["kind"] == "token"} == {1, 3, 4, 5}


def test_delivery_audit(spark: Any, result: dict[str, Any]) -> None:
    seqs = result["facts"].seqs
    rows = {r["seq"]: r for r in _rows(spark, result, "delivery")}
    assert set(rows) == {seqs[name] for name in EXPECTED_DELIVERY}
    assert (
        rows[seqs["put_e_denied"]]["ingress_denied"],
        list(rows[seqs["put_e_denied"]]["denied"]),
    ) == (True, [2])
    assert (
        rows[seqs["put_bw_denied3"]]["ingress_denied"],
        list(rows[seqs["put_bw_denied3"]]["denied"]),
    ) == (False, [3])
    assert sum(1 for r in rows.values() if r["denied"]) == 2
    for name, (subscribed, sent, route, ok) in EXPECTED_DELIVERY.items():
        r = rows[seqs[name]]
        assert (
            list(r["subscribed"]),
            list(r["sent_to"]),
            list(r["route_expected"]),
            r["ok"],
        ) == (
            subscribed,
            sent,
            route,
            ok,
        ), name
    diffs = sorted((r["seq"], r["kind"], r["face"]) for r in _rows(spark, result, "delivery_differences"))
    assert diffs == sorted(
        [
            (seqs["put_bx"], "missing", 3),
            (seqs["put_bx"], "missing_vs_route", 3),
            (seqs["put_other"], "unexpected", 2),
            (seqs["put_other"], "unexpected_vs_route", 2),
            (seqs["put_a2"], "missing_vs_route", 3),
            (seqs["put_a2"], "route_vs_declarations", 3),
        ]
    )


def test_report(result: dict[str, Any]) -> None:
    html = Path(result["report"]).read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert "FAIL: 3 of 9 data messages differ" in html
    assert "Stopped by access control and interceptors" in html
    assert "ingress declare_subscriber denied by rule &#x27;no-sub&#x27;" in html
    # interactive charts, plotly.js inlined: nothing to fetch when opened
    assert len(re.findall(r'class="plotly-graph-div"', html)) >= 5
    assert "<script src=" not in html and "<img" not in html
    assert "<b>Recorded:</b>" in html and "<b>Period:</b>" in html
    for heading in ("Routing audit", "Traffic", "Queries", "Declarations"):
        assert f"<h2>{heading}</h2>" in html
    for title in ("Per link", "Per key expression", "Messages received and sent"):
        assert title in html
    assert "alive/2" in html  # the token lifetimes table


def test_report_renders_in_a_headless_browser(result: dict[str, Any], tmp_path: Path) -> None:
    browser = find_browser()
    if browser is None:
        pytest.skip("no Chromium installed (Debian: apt install chromium)")
    dom = rendered_dom(browser, Path(result["report"]), tmp_path / "profile")
    assert drawn_charts(dom) >= 5
