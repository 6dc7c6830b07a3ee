"""``pyzenoh router``'s plugins under load: the REST plugin and the storage manager.

Each part starts a fresh ``pyzenoh router`` on 127.0.0.1 (a process of its own) and drives
it from this process; every loop is bounded in count and in time.

1. REST requests/s: --connections aiohttp connections each doing PUT then GET on keys of
   their own (``bench/rest/<c>/<i>``, a memory storage on ``bench/**``) for --seconds
   (at most --max-requests); requests/s for PUT and GET, and their median latency.
2. SSE samples/s: one ``text/event-stream`` client on ``bench/sse/**`` and an
   eclipse-zenoh client publishing --sse-samples 64-byte PUTs (congestion control Block);
   samples/s = events read / (last event - first put).
3. Storage: for each volume (memory, fs, rocksdb) and each size in --sizes, an
   eclipse-zenoh client puts that many distinct keys (100-byte values, Block) into a
   storage on ``bench/store/**``; puts/s = keys / (time until a get of the last key
   answers - first put); then --gets gets of random single keys (median and p99 latency,
   through the router); the router's RSS at the end (VmRSS).

4. With --direct (instead of 3): the same puts and gets on the storage alone (StorageState and its volume
   in this process, no router, no wire).

Usage: python bench/bench_plugins.py [--seconds 5] [--connections 8] [--sizes 10000,100000]
       [--volumes memory,fs,rocksdb] [--direct] [--skip-rest] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
import zenoh
from common import START_S, cpu_model, rss_mb, stop  # type: ignore[import-not-found]

from pyzenoh.localnet import free_port, wait_listening

PUT_TIMEOUT_S = 600.0


def start_router(tmp: Path, cfg: str, env: dict[str, str], rest: bool) -> tuple[subprocess.Popen[bytes], int, int]:
    port, http = free_port(), free_port()
    cmd = [
        sys.executable,
        "-m",
        "pyzenoh",
        "--log-level",
        "warning",
        "router",
        "-l",
        f"tcp/127.0.0.1:{port}",
        "--no-multicast-scouting",
        "--cfg",
        cfg,
    ]
    if rest:
        cmd += ["--rest-http-port", f"127.0.0.1:{http}"]
    log = (tmp / f"router-{port}.log").open("wb")
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **env}
    )
    wait_listening(port, proc, START_S)
    if rest:
        wait_listening(http, proc, START_S)
    return proc, port, http


def client(port: int) -> Any:
    c = zenoh.Config()
    c.insert_json5("mode", '"client"')
    c.insert_json5("connect/endpoints", json.dumps([f"tcp/127.0.0.1:{port}"]))
    c.insert_json5("scouting/multicast/enabled", "false")
    return zenoh.open(c)


# --- 1. REST requests/s ------------------------------------------------------------------


async def rest_load(http: int, connections: int, seconds: float, max_requests: int) -> dict[str, float]:
    lat: dict[str, list[float]] = {"PUT": [], "GET": []}
    deadline = time.monotonic() + seconds
    budget = [max_requests]

    async def worker(c: int, session: aiohttp.ClientSession) -> None:
        i = 0
        while time.monotonic() < deadline and budget[0] > 0:
            budget[0] -= 2
            url = f"http://127.0.0.1:{http}/bench/rest/{c}/{i % 1000}"
            t0 = time.perf_counter()
            async with session.put(url, data=b"x" * 64) as r:
                assert r.status == 200
                await r.read()
            t1 = time.perf_counter()
            async with session.get(url) as r:
                assert r.status == 200
                await r.read()
            t2 = time.perf_counter()
            lat["PUT"].append(t1 - t0)
            lat["GET"].append(t2 - t1)
            i += 1

    start = time.monotonic()
    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(worker(c, session) for c in range(connections)))
    elapsed = time.monotonic() - start
    return {
        "put_per_s": len(lat["PUT"]) / elapsed,
        "get_per_s": len(lat["GET"]) / elapsed,
        "put_median_us": statistics.median(lat["PUT"]) * 1e6,
        "get_median_us": statistics.median(lat["GET"]) * 1e6,
    }


# --- 2. SSE samples/s --------------------------------------------------------------------


async def sse_load(http: int, port: int, samples: int) -> dict[str, float]:
    z = client(port)
    got = 0
    first_put = [0.0]
    last = 0.0
    url = f"http://127.0.0.1:{http}/bench/sse/**"
    timeout = aiohttp.ClientTimeout(total=120)
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, headers={"Accept": "text/event-stream"}, timeout=timeout) as resp,
    ):
        publisher = z.declare_publisher("bench/sse/x", congestion_control=zenoh.CongestionControl.BLOCK)
        deadline = time.monotonic() + 30
        while not publisher.matching_status.matching:
            assert time.monotonic() < deadline, "the SSE subscriber never appeared"
            await asyncio.sleep(0.01)

        def publish() -> None:
            first_put[0] = time.monotonic()
            for _ in range(samples):
                publisher.put(b"s" * 64)

        thread = threading.Thread(target=publish)
        thread.start()
        async for line in resp.content:
            if line.startswith(b"event:"):
                got += 1
                last = time.monotonic()
                if got == samples:
                    break
        thread.join()
    z.close()
    return {"samples": got, "samples_per_s": got / (last - first_put[0])}


# --- 3. storage -----------------------------------------------------------------------------


def storage_run(tmp: Path, volume: str, size: int, gets: int) -> dict[str, float]:
    root = tmp / f"{volume}-{size}"
    env = {"ZENOH_BACKEND_FS_ROOT": str(root), "ZENOH_BACKEND_ROCKSDB_ROOT": str(root)}
    vol = {"memory": '"memory"', "fs": '{id:"fs",dir:"d"}', "rocksdb": '{id:"rocksdb",dir:"d",create_db:true}'}[volume]
    cfg = (
        f"plugins/storage_manager:{{volumes:{{fs:{{}},rocksdb:{{}}}},"
        f'storages:{{s:{{key_expr:"bench/store/**",strip_prefix:"bench/store",volume:{vol}}}}}}}'
    )
    proc, port, _ = start_router(tmp, cfg, env, rest=False)
    try:
        z = client(port)
        publisher = z.declare_publisher("bench/store/**", congestion_control=zenoh.CongestionControl.BLOCK)
        del publisher  # (declared only to get the route warm)
        payload = b"v" * 100
        start = time.monotonic()
        for i in range(size):
            z.put(f"bench/store/k/{i}", payload, congestion_control=zenoh.CongestionControl.BLOCK)
        last = f"bench/store/k/{size - 1}"
        deadline = start + PUT_TIMEOUT_S
        while not [r for r in z.get(last) if r.ok is not None]:
            assert time.monotonic() < deadline, f"{volume}: {size} keys not stored within {PUT_TIMEOUT_S} s"
            time.sleep(0.01)
        put_s = time.monotonic() - start
        lat = []
        for _ in range(gets):
            key = f"bench/store/k/{random.randrange(size)}"
            t0 = time.perf_counter()
            replies = [r for r in z.get(key) if r.ok is not None]
            lat.append(time.perf_counter() - t0)
            assert len(replies) == 1, key
        lat.sort()
        rss = rss_mb(proc.pid)
        z.close()
        return {
            "puts_per_s": size / put_s,
            "get_median_us": statistics.median(lat) * 1e6,
            "get_p99_us": lat[int(len(lat) * 0.99) - 1] * 1e6,
            "rss_mib": rss,
        }
    finally:
        stop(proc)


def direct_run(tmp: Path, volume: str, size: int, gets: int) -> dict[str, float]:
    """The storage alone (StorageState on the volume, no router, no wire): what a sample
    costs the storage itself."""
    from pyzenoh.codec import Encoding, ZenohId
    from pyzenoh.plugins.storage.config import StorageConfig, VolumeConfig
    from pyzenoh.plugins.storage.plugin import make_volume
    from pyzenoh.plugins.storage.semantics import PUT, StorageState
    from pyzenoh.routing.hlc import Hlc

    root = tmp / f"direct-{volume}-{size}"
    os.environ["ZENOH_BACKEND_FS_ROOT"] = os.environ["ZENOH_BACKEND_ROCKSDB_ROOT"] = str(root)
    cfg = None if volume == "memory" else {"dir": "d", **({"create_db": True} if volume == "rocksdb" else {})}
    storage = StorageConfig("s", "bench/**", volume, cfg, "bench")
    state = StorageState("bench/**", make_volume(storage, VolumeConfig(volume, volume)), "bench")
    hlc = Hlc(ZenohId(1))
    enc = Encoding.DEFAULT
    payload = b"v" * 100
    start = time.perf_counter()
    for i in range(size):
        state.on_sample(PUT, f"bench/k/{i}", payload, enc, hlc.new_timestamp(time.time()))
    put_s = time.perf_counter() - start
    lat = []
    for _ in range(gets):
        t0 = time.perf_counter()
        assert len(state.query(f"bench/k/{random.randrange(size)}")) == 1
        lat.append(time.perf_counter() - t0)
    state.close()
    return {"puts_per_s": size / put_s, "get_median_us": statistics.median(lat) * 1e6}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--max-requests", type=int, default=200_000)
    ap.add_argument("--sse-samples", type=int, default=20_000)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--volumes", default="memory,fs,rocksdb")
    ap.add_argument("--gets", type=int, default=500)
    ap.add_argument("--skip-rest", action="store_true")
    ap.add_argument("--direct", action="store_true", help="measure the storage alone (no router) instead of through it")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if not args.skip_rest:
            cfg = 'plugins/storage_manager/storages/b:{key_expr:"bench/**",volume:"memory"}'
            proc, port, http = start_router(tmp, cfg, {}, rest=True)
            try:
                results["rest"] = asyncio.run(rest_load(http, args.connections, args.seconds, args.max_requests))
                print(
                    f"REST ({args.connections} connections): {results['rest']['put_per_s']:.0f} PUT/s "
                    f"(median {results['rest']['put_median_us']:.0f} us), {results['rest']['get_per_s']:.0f} GET/s "
                    f"(median {results['rest']['get_median_us']:.0f} us)",
                    flush=True,
                )
                results["sse"] = asyncio.run(sse_load(http, port, args.sse_samples))
                print(
                    f"SSE: {results['sse']['samples_per_s']:.0f} samples/s ({results['sse']['samples']} samples)",
                    flush=True,
                )
            finally:
                stop(proc)
        for volume in args.volumes.split(",") if not args.direct else ():
            for size in (int(s) for s in args.sizes.split(",")):
                r = storage_run(tmp, volume, size, args.gets)
                results[f"storage/{volume}/{size}"] = r
                print(
                    f"storage {volume:8s} {size:>8d} keys: {r['puts_per_s']:.0f} puts/s, get median "
                    f"{r['get_median_us']:.0f} us, p99 {r['get_p99_us']:.0f} us, router RSS {r['rss_mib']:.0f} MiB",
                    flush=True,
                )
        if args.direct:
            for volume in args.volumes.split(","):
                for size in (int(s) for s in args.sizes.split(",")):
                    d = direct_run(tmp, volume, size, args.gets)
                    results[f"direct/{volume}/{size}"] = d
                    print(
                        f"storage alone {volume:8s} {size:>8d} keys: {d['puts_per_s']:.0f} puts/s, "
                        f"get median {d['get_median_us']:.0f} us",
                        flush=True,
                    )
    print(
        f"machine: {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
        f"load {os.getloadavg()[0]:.2f} at the end"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
