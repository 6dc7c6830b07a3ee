"""Recorder hot-path cost and Spark pipeline throughput.

1. ``Recorder.message()`` calls per second (100-byte PUSHes, chunked MCAP on a real file),
   with and without a key filter, and the recording cost of one routed PUSH (rx record +
   route record + 2 tx records) set against what a router spends on the same message at
   the very least (decode the PUSH, encode it twice with pyzenoh's codec).
   With ``--router``, also the real cost inside ``pyzenoh router``: router CPU time per
   routed message with recording off, with the router's recording hooks calling a no-op
   recorder, and with the real recorder (eclipse-zenoh publisher -> router -> subscriber).
2. The Spark side over a generated, router-consistent recording of N records:
   the ``pyzenoh`` source decoding into a no-op sink; recording -> ``messages`` Parquet
   the pipeline's way (Spark tasks writing with pyarrow) and through Spark's DataFrame
   writer; then the whole ``run_pipeline`` (all tables, audit and report). Records are
   everything recorded (messages, routes, link events); rows are ``messages`` rows.

    python bench/bench_pipeline.py [--messages 200000] [--master 'local[*]'] [--router]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: Bounds, whatever the command line asks for.
MAX_MESSAGES = 10_000_000
RECORDER_CALLS = 300_000


def bench_recorder(tmp: Path) -> dict[str, float]:
    from pyzenoh.codec.data import Put
    from pyzenoh.codec.network import (
        Push,
        decode_network_message,
        encode_network_message,
    )
    from pyzenoh.codec.primitives import WireExpr
    from pyzenoh.recording import Recorder

    key = "demo/building/floor3/room12/temp"
    raw = encode_network_message(Push(WireExpr(0, key), Put(bytes(100))))
    out: dict[str, float] = {}
    for name, kf in (("plain", None), ("filtered", "demo/**")):
        d = tmp / f"rec-{name}"
        rec = Recorder(d, key_filter=kf)
        now = 1_000
        t0 = time.perf_counter()
        for _ in range(RECORDER_CALLS):
            now += 1_000
            rec.message(now, 1, "rx", key, raw)
        rec.close()
        dt = time.perf_counter() - t0
        out[f"message_calls_per_s_{name}"] = RECORDER_CALLS / dt
        shutil.rmtree(d)

    # One routed PUSH as the router will record it.
    d = tmp / "rec-routed"
    rec = Recorder(d)
    n = RECORDER_CALLS // 4
    t0 = time.perf_counter()
    now = 1_000
    for _ in range(n):
        now += 1_000
        seq = rec.message(now, 1, "rx", key, raw)
        rec.route(now, seq, key, [2, 3])
        rec.message(now, 2, "tx", key, raw, seq)
        rec.message(now, 3, "tx", key, raw, seq)
    rec.close()
    record_us = (time.perf_counter() - t0) / n * 1e6
    shutil.rmtree(d)
    t0 = time.perf_counter()
    for _ in range(n):
        msg = decode_network_message(raw)
        encode_network_message(msg)
        encode_network_message(msg)
    codec_us = (time.perf_counter() - t0) / n * 1e6
    out["record_routed_push_us"] = record_us
    out["codec_floor_routed_push_us"] = codec_us
    out["recording_share_of_codec_floor"] = record_us / (record_us + codec_us)
    return out


_ROUTER = r"""
import asyncio, sys
from dataclasses import replace
import pyzenoh.recording.recorder as R
from pyzenoh.router.cli import run_router
from pyzenoh.router.config import RouterConfig


class NoopRecorder:
    def __init__(self, *a, **k):
        self.seq = 0
    def link_opened(self, *a): pass
    def link_closed(self, *a): pass
    def route(self, *a): pass
    def tick(self, *a): pass
    def close(self): pass
    def message(self, *a):
        self.seq += 1
        return self.seq
    def messages(self, now_ns, direction, key, sends, cause=-1):
        self.seq += len(sends)
        return self.seq
    def routed(self, now_ns, link_id, key, raw, copies):
        self.seq += 1 + len(copies)
        return self.seq


endpoint, mode, directory = sys.argv[1:4]
cfg = replace(RouterConfig(), listen=(endpoint,))
if mode != "off":
    cfg = replace(cfg, record=replace(cfg.record, dir=directory))
if mode == "noop":
    R.RecorderProcess = NoopRecorder
asyncio.run(run_router(cfg))
"""

_CLIENT = r"""
import json, sys, time, zenoh
role, endpoint, duration = sys.argv[1], sys.argv[2], float(sys.argv[3])
c = zenoh.Config()
c.insert_json5("mode", '"client"')
c.insert_json5("connect/endpoints", json.dumps([endpoint]))
c.insert_json5("scouting/multicast/enabled", "false")
s = zenoh.open(c)
if role == "sub":
    n = [0]
    sub = s.declare_subscriber("bench/**", lambda sample: n.__setitem__(0, n[0] + 1))
    print("ready", flush=True)
    sys.stdin.readline()  # the parent says when the publisher is done
    time.sleep(1.0)
    print(n[0], flush=True)
else:
    pub = s.declare_publisher("bench/x", congestion_control=zenoh.CongestionControl.BLOCK)
    end = time.monotonic() + duration
    k = 0
    while time.monotonic() < end and k < 3_000_000:
        pub.put(bytes(64))
        k += 1
    time.sleep(0.5)
    print(k, flush=True)
s.close()
"""


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(k) for k in kids.split()]


def _children_cpu_seconds(pid: int) -> float:
    """CPU time of ``pid``'s child processes (the recorder process, when recording)."""
    total = 0.0
    for kid in _children(pid):
        try:
            total += _cpu_seconds(kid)
        except OSError:
            pass
    return total


def _wait_gone(pids: list[int], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                break
            state = stat.rsplit(")", 1)[1].split()[0]
            if state in ("Z", "X"):
                break
            time.sleep(0.05)


def bench_router_overhead(tmp: Path, duration: float = 5.0) -> dict[str, float]:
    """Router CPU per routed message: recording off / hooks with a no-op recorder / real.

    The router's recording runs in a recorder process of its own: its CPU per routed
    message (CPU of the router's child processes) is reported too, apart from the
    router's: ``*_recorder_us_per_msg``."""
    import socket
    import subprocess

    def port() -> int:
        with socket.socket() as so:
            so.bind(("127.0.0.1", 0))
            return int(so.getsockname()[1])

    out: dict[str, float] = {}
    for mode in ("off", "noop", "real"):
        ep = f"tcp/127.0.0.1:{port()}"
        rec_dir = tmp / f"router-rec-{mode}"
        env = {**os.environ, "RUST_LOG": "error"}
        router = subprocess.Popen([sys.executable, "-c", _ROUTER, ep, mode, str(rec_dir)], env=env)
        procs = [router]
        try:
            time.sleep(2.0)
            sub = subprocess.Popen(
                [sys.executable, "-c", _CLIENT, "sub", ep, "0"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
            procs.append(sub)
            assert sub.stdout is not None and sub.stdin is not None
            assert sub.stdout.readline().strip() == "ready"
            time.sleep(0.5)
            cpu0 = _cpu_seconds(router.pid)
            kids0 = _children_cpu_seconds(router.pid)
            pub = subprocess.run(
                [sys.executable, "-c", _CLIENT, "pub", ep, str(duration)],
                capture_output=True,
                text=True,
                env=env,
                timeout=duration + 60,
                check=True,
            )
            sub.stdin.write("done\n")
            sub.stdin.flush()
            received = int(sub.stdout.readline())
            cpu = _cpu_seconds(router.pid) - cpu0
            kids = _children_cpu_seconds(router.pid) - kids0
            out[f"{mode}_router_cpu_us_per_msg"] = cpu / max(received, 1) * 1e6
            out[f"{mode}_recorder_us_per_msg"] = kids / max(received, 1) * 1e6
            out[f"{mode}_received"] = received
            out[f"{mode}_sent"] = int(pub.stdout.split()[-1])
        finally:
            recorders = _children(router.pid)
            for p in procs:
                p.kill()
                p.wait(timeout=10)
            _wait_gone(recorders)  # they close their segment once the router is gone
            shutil.rmtree(rec_dir, ignore_errors=True)
    off, noop, real = (out[f"{m}_router_cpu_us_per_msg"] for m in ("off", "noop", "real"))
    # A CPU-bound router's throughput is 1 / CPU per message: these are throughput drops.
    out["hooks_throughput_drop"] = 1 - off / noop
    out["recorder_throughput_drop"] = 1 - noop / real
    out["total_throughput_drop"] = 1 - off / real
    return out


def bench_spark(tmp: Path, messages: int, master: str) -> dict[str, Any]:
    from pyzenoh.pipeline.worker_python import worker_python

    os.environ.setdefault("PYSPARK_PYTHON", worker_python(master))
    from pyspark.sql import SparkSession

    from pyzenoh.pipeline.export import export_table
    from pyzenoh.pipeline.jobs import run_pipeline
    from pyzenoh.pipeline.source import register
    from pyzenoh.pipeline.synth import generate

    rec_dir = tmp / "recording"
    t0 = time.perf_counter()
    records = generate(rec_dir, messages)
    gen_s = time.perf_counter() - t0
    size = sum(f.stat().st_size for f in rec_dir.iterdir())

    spark = (
        SparkSession.builder.master(master)
        .appName("bench-pipeline")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    spark.range(10).count()  # JVM warm-up is not the pipeline's cost

    t0 = time.perf_counter()
    spark.read.format("pyzenoh").load(str(rec_dir)).write.format("noop").mode("overwrite").save()
    cold_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    spark.read.format("pyzenoh").load(str(rec_dir)).write.format("noop").mode("overwrite").save()
    source_s = time.perf_counter() - t0
    rows = spark.read.format("pyzenoh").load(str(rec_dir)).count()
    # Recording -> messages Parquet two ways: the pipeline's (the Spark tasks write with
    # pyarrow, pyzenoh.pipeline.export) and Spark's own DataFrame writer over the source.
    # Each twice: the first run in a JVM also pays worker start and the writer's warm-up.
    export_runs = []
    for _ in range(2):
        t0 = time.perf_counter()
        exported = export_table(spark, rec_dir, tmp / "messages.parquet")
        export_runs.append(time.perf_counter() - t0)
    assert exported == rows, (exported, rows)
    parquet_runs = []
    for _ in range(2):
        t0 = time.perf_counter()
        spark.read.format("pyzenoh").load(str(rec_dir)).write.mode("overwrite").parquet(str(tmp / "messages.parquet"))
        parquet_runs.append(time.perf_counter() - t0)
    export_s = min(export_runs)
    parquet_s = min(parquet_runs)
    shutil.rmtree(tmp / "messages.parquet", ignore_errors=True)

    t0 = time.perf_counter()
    result = run_pipeline(rec_dir, tmp / "out", progress=True)
    pipeline_s = time.perf_counter() - t0
    spark.stop()
    return {
        "records": records,
        "message_rows": rows,
        "recording_mb": round(size / 1e6, 2),
        "generate_s": round(gen_s, 2),
        "source_first_read_s": round(cold_s, 2),
        "source_read_s": round(source_s, 2),
        "source_rows_per_s": rows / source_s,
        "export_first_s": round(export_runs[0], 2),
        "export_s": round(export_s, 2),
        "export_rows_per_s": rows / export_s,
        "export_records_per_s": records / export_s,
        "spark_writer_first_s": round(parquet_runs[0], 2),
        "spark_writer_s": round(parquet_s, 2),
        "spark_writer_rows_per_s": rows / parquet_s,
        "pipeline_s": round(pipeline_s, 2),
        "pipeline_rows_per_s": rows / pipeline_s,
        "audit": result["audit"]["text"],
        "tables": {k: v["rows"] for k, v in result["tables"].items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000, help="records to generate (bounded)")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--skip-spark", action="store_true")
    parser.add_argument("--router", action="store_true", help="also measure inside pyzenoh router")
    parser.add_argument("--router-seconds", type=float, default=5.0)
    args = parser.parse_args()
    messages = max(1_000, min(args.messages, MAX_MESSAGES))
    print(f"python {platform.python_version()}  nproc {os.cpu_count()}  {platform.machine()}")
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as d:
        tmp = Path(d)
        rec = bench_recorder(tmp)
        print(f"Recorder.message(), 100 B PUSH:     {rec['message_calls_per_s_plain']:>12,.0f} calls/s")
        print(f"  with key_filter 'demo/**':        {rec['message_calls_per_s_filtered']:>12,.0f} calls/s")
        print(f"recording one routed PUSH (rx+route+2 tx): {rec['record_routed_push_us']:.2f} us")
        print(f"codec floor for it (decode + 2 encodes):   {rec['codec_floor_routed_push_us']:.2f} us")
        print(f"  recording share of (record + codec floor): {rec['recording_share_of_codec_floor']:.1%}")
        summary: dict[str, Any] = {"recorder": rec}
        if args.router:
            ro = bench_router_overhead(tmp, max(1.0, min(args.router_seconds, 60.0)))
            for mode in ("off", "noop", "real"):
                print(
                    f"router CPU per routed message, recording {mode:4}: "
                    f"{ro[f'{mode}_router_cpu_us_per_msg']:6.2f} us ({ro[f'{mode}_received']:,} messages)"
                )
            for label, name in (
                ("the router's recording hooks (no-op recorder)", "hooks"),
                ("the Recorder, on top of those hooks", "recorder"),
                ("recording in all", "total"),
            ):
                print(f"  throughput lost to {label}: {ro[name + '_throughput_drop']:.1%}")
            summary["router"] = ro
        if not args.skip_spark:
            sp = bench_spark(tmp, messages, args.master)
            print(f"recording: {sp['records']:,} records, {sp['message_rows']:,} message rows, {sp['recording_mb']} MB")
            print(f"source decode -> noop:  {sp['source_rows_per_s']:>10,.0f} rows/s ({sp['source_read_s']} s)")
            print(
                f"recording -> messages Parquet (pipeline, export_table): {sp['export_records_per_s']:>10,.0f} records/s,"
                f" {sp['export_rows_per_s']:,.0f} rows/s ({sp['export_s']} s; first run {sp['export_first_s']} s)"
            )
            print(
                f"recording -> messages Parquet (Spark's DataFrame writer): {sp['spark_writer_rows_per_s']:>10,.0f} rows/s"
                f" ({sp['spark_writer_s']} s; first run {sp['spark_writer_first_s']} s)"
            )
            print(
                f"run_pipeline (all tables + report): {sp['pipeline_rows_per_s']:>10,.0f} rows/s ({sp['pipeline_s']} s)"
            )
            print(f"audit: {sp['audit']}")
            summary["spark"] = sp
        print(json.dumps(summary, default=str))


if __name__ == "__main__":
    main()
