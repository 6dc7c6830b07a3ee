"""The mesh audit at scale, and replay against recorded pace.

1. Three routers' recordings of about N records in all (``pyzenoh.pipeline.synth_mesh``:
   routers in a line, clients publishing on each, a full queue dropping one delivery in
   a thousand, the last link cut for 5% of the time), then the whole ``run_pipeline``
   over the three (each router's tables and audit, then samples, hops, the mesh delivery
   audit and the mesh report): records/s, locally (``local[*]``) and, with ``--cluster``,
   on a standalone Spark master with two workers (one core each) the benchmark starts on
   127.0.0.1 and stops by PID.
2. ``pyzenoh replay`` of a recorded mesh into a fresh ``pyzenoh router`` with a real
   eclipse-zenoh subscriber: the rate reached at recorded pace (``--speed 1``) and as
   fast as it goes (``--speed 0``), against the recorded rate; every sample arriving.

    python bench/bench_mesh_audit.py [--messages 1000000] [--cluster] [--skip-replay]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyzenoh.localnet import free_port, wait_listening

#: Bounds, whatever the command line asks for.
MAX_MESSAGES = 20_000_000
REPLAY_SAMPLES = 20_000
CLUSTER_START_S = 120.0


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@contextmanager
def standalone_cluster(tmp: Path, workers: int = 2) -> Iterator[str]:
    """A standalone master and ``workers`` one-core workers on 127.0.0.1; its URL."""
    cls = str(spark_home() / "bin" / "spark-class")
    port = free_port()
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_WORKER_DIR": str(tmp / "work"),
        "SPARK_LOG_DIR": str(tmp),
    }
    procs: list[subprocess.Popen[bytes]] = []
    logs = []
    try:
        log = (tmp / "master.log").open("wb")
        logs.append(log)
        master = [cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port)]
        procs.append(subprocess.Popen([*master, "--webui-port", str(free_port())], stdout=log, stderr=log, env=env))
        wait_listening(port, procs[0], CLUSTER_START_S)
        url = f"spark://127.0.0.1:{port}"
        for i in range(workers):
            log = (tmp / f"worker-{i}.log").open("wb")
            logs.append(log)
            worker = [cls, "org.apache.spark.deploy.worker.Worker", "--cores", "1", "--memory", "3g"]
            worker += ["--webui-port", str(free_port()), url]
            procs.append(subprocess.Popen(worker, stdout=log, stderr=log, env=env))
        yield url
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for log in logs:
            log.close()


def session(master: str) -> Any:
    from pyspark.sql import SparkSession

    from pyzenoh.pipeline.source import register
    from pyzenoh.pipeline.worker_python import worker_python

    os.environ["PYSPARK_PYTHON"] = worker_python(master)
    spark = (
        SparkSession.builder.master(master)
        .appName("bench-mesh-audit")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.executor.memory", "2g")
        .config("spark.driver.memory", "4g")  # local[*]: the driver is the executor
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    if master.startswith("spark://"):  # both workers registered before the clock starts
        deadline = time.monotonic() + CLUSTER_START_S
        while spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() < 3:  # the driver and 2 workers
            if time.monotonic() > deadline:
                raise RuntimeError("the standalone workers did not register")
            time.sleep(0.2)
    spark.range(10).count()  # JVM and worker warm-up is not the pipeline's cost
    return spark


def bench_audit(rec_dirs: list[Path], out: Path, master: str, records: int) -> dict[str, Any]:
    from pyzenoh.pipeline.jobs import run_pipeline

    spark = session(master)
    try:
        t0 = time.perf_counter()
        result = run_pipeline([str(d) for d in rec_dirs], out, progress=True)
        seconds = time.perf_counter() - t0
    finally:
        spark.stop()
    return {
        "master": master,
        "seconds": round(seconds, 1),
        "records_per_s": round(records / seconds),
        "mesh_audit": result["mesh_audit"],
        "tables": {k: v["rows"] for k, v in result["tables"].items()},
    }


def bench_replay(tmp: Path) -> dict[str, Any]:
    """Replay the first REPLAY_SAMPLES samples of a small recorded mesh into a fresh router."""
    import zenoh

    from pyzenoh.pipeline.synth_mesh import STEP_NS, generate_mesh

    dirs = [tmp / f"replay-{n}" for n in "abc"]
    made = generate_mesh(dirs, REPLAY_SAMPLES * 8, drop_every=0, cut=(2.0, 2.0))
    samples = made["samples"]
    recorded_rate = 1e9 / STEP_NS
    port = free_port()
    router = subprocess.Popen(
        [sys.executable, "-m", "pyzenoh", "router", "-l", f"tcp/127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    out: dict[str, Any] = {"samples": samples, "recorded_samples_per_s": recorded_rate}
    try:
        wait_listening(port, router, 20)
        conf = zenoh.Config()
        conf.insert_json5("mode", '"client"')
        conf.insert_json5("connect/endpoints", f'["tcp/127.0.0.1:{port}"]')
        conf.insert_json5("scouting/multicast/enabled", "false")
        with zenoh.open(conf) as s:
            got = [0]
            lock = threading.Lock()

            def count(_: Any) -> None:
                with lock:
                    got[0] += 1

            sub = s.declare_subscriber("mesh/**", count)
            for speed in ("1", "0"):
                with lock:
                    got[0] = 0
                cmd = [sys.executable, "-m", "pyzenoh", "replay", *map(str, dirs), "-e", f"tcp/127.0.0.1:{port}"]
                t0 = time.perf_counter()
                subprocess.run([*cmd, "--speed", speed, "--quiet"], check=True, timeout=600)
                seconds = time.perf_counter() - t0
                deadline = time.monotonic() + 30
                while got[0] < samples and time.monotonic() < deadline:
                    time.sleep(0.05)
                out[f"speed_{speed}"] = {
                    "seconds": round(seconds, 2),
                    "samples_per_s": round(samples / seconds),
                    "of_recorded_pace": round(samples / seconds / recorded_rate, 3),
                    "received": got[0],
                }
            sub.undeclare()
    finally:
        router.send_signal(signal.SIGTERM)
        try:
            router.wait(timeout=10)
        except subprocess.TimeoutExpired:
            router.kill()
            router.wait()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000, help="records in all, three routers (bounded)")
    parser.add_argument("--cluster", action="store_true", help="also on a standalone master with two workers")
    parser.add_argument("--skip-local", action="store_true")
    parser.add_argument("--skip-replay", action="store_true")
    args = parser.parse_args()
    messages = max(10_000, min(args.messages, MAX_MESSAGES))
    print(f"python {platform.python_version()}  nproc {os.cpu_count()}  {platform.machine()}")
    summary: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-mesh-audit-") as d:
        tmp = Path(d)
        from pyzenoh.pipeline.synth_mesh import generate_mesh

        dirs = [tmp / f"router-{n}" for n in "abc"]
        t0 = time.perf_counter()
        made = generate_mesh(dirs, messages)
        size = sum(f.stat().st_size for d in dirs for f in d.iterdir())
        summary["recording"] = {**made, "mb": round(size / 1e6, 1), "generate_s": round(time.perf_counter() - t0, 1)}
        print(
            f"recordings: {made['records']:,} records ({size / 1e6:.0f} MB), {made['samples']:,} samples, "
            f"{made['dropped']} dropped, {made['during_cut']:,} published during the cut"
        )
        runs = []
        if not args.skip_local:
            runs.append(("local[*]", None))
        if args.cluster:
            runs.append(("standalone", tmp / "cluster"))
        for name, cluster_dir in runs:
            if cluster_dir is None:
                r = bench_audit(dirs, tmp / "out-local", "local[*]", made["records"])
            else:
                cluster_dir.mkdir()
                with standalone_cluster(cluster_dir) as url:
                    r = bench_audit(dirs, tmp / "out-cluster", url, made["records"])
            print(
                f"mesh pipeline, {name}: {r['seconds']} s, {r['records_per_s']:,} records/s; {r['mesh_audit']['text']}"
            )
            summary[name] = r
        if not args.skip_replay:
            rp = bench_replay(tmp)
            for speed in ("1", "0"):
                x = rp[f"speed_{speed}"]
                print(
                    f"replay --speed {speed}: {x['samples_per_s']:,} samples/s ({x['of_recorded_pace']:.2f}x the recorded "
                    f"{rp['recorded_samples_per_s']:,.0f}/s), {x['received']:,} of {rp['samples']:,} received"
                )
            summary["replay"] = rp
    print(json.dumps(summary, default=str))


if __name__ == "__main__":
    main()
