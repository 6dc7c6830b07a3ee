"""``pyzenoh router --workers N``: routers of one mesh behind the same endpoints
(router/workers.py). The worker configs are checked as data; then real eclipse-zenoh
clients of a two-worker router, spread over the workers by the kernel, exchange samples,
queries and liveliness across them, and the supervisor restarts a killed worker and
stops them all by PID."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyzenoh.errors import UsageError
from pyzenoh.localnet import free_port, wait_listening
from pyzenoh.router.workers import MAX_WORKERS, mesh_socket, parse_workers, worker_tree
from tests.fixtures.procs import stop_process, zenoh_config
from tests.waits import WAIT, until

TREE: dict[str, Any] = {
    "id": "aa",
    "listen": {"endpoints": ["tcp/127.0.0.1:7447"]},
    "connect": {"endpoints": ["tcp/10.0.0.1:7447"]},
    "plugins": {"rest": {"http_port": 8000}},
    "pyzenoh": {"record": {"dir": "/rec"}, "msgq": {"enabled": True}},
}


def test_worker_zero_keeps_what_must_happen_once() -> None:
    w0 = worker_tree(TREE, 0, 3, "/m")
    assert w0["listen"]["endpoints"] == ["tcp/127.0.0.1:7447", mesh_socket("/m", 0)]
    assert w0["connect"]["endpoints"] == ["tcp/10.0.0.1:7447"]
    assert w0["id"] == "aa" and "plugins" in w0 and "msgq" in w0["pyzenoh"]
    assert w0["pyzenoh"]["listen"]["reuse_port"] is True
    assert w0["pyzenoh"]["record"]["dir"] == "/rec/worker-0"


def test_other_workers_join_the_mesh_and_run_nothing_twice() -> None:
    w2 = worker_tree(TREE, 2, 3, "/m")
    assert w2["listen"]["endpoints"] == ["tcp/127.0.0.1:7447", mesh_socket("/m", 2)]
    assert w2["connect"]["endpoints"] == [mesh_socket("/m", 0), mesh_socket("/m", 1)]  # dials the ones before
    assert "id" not in w2 and "plugins" not in w2 and "msgq" not in w2["pyzenoh"]
    assert w2["scouting"]["multicast"]["listen"] is False
    assert w2["pyzenoh"]["record"]["dir"] == "/rec/worker-2"
    assert TREE["listen"]["endpoints"] == ["tcp/127.0.0.1:7447"]  # the user's tree is not touched


def test_listeners_only_one_worker_can_serve_stay_on_worker_zero() -> None:
    tree = {
        "listen": {
            "endpoints": [
                "tcp/127.0.0.1:7447",
                "ws/127.0.0.1:8000",
                "udp/127.0.0.1:7447",
                "quic/127.0.0.1:7448",
                "unixsock-stream/r.sock",
                "tls/127.0.0.1:7449",
            ]
        }
    }
    tree["transport"] = {"link": {"tls": {"listen_certificate": "c.pem", "listen_private_key": "k.pem"}}}
    assert worker_tree(tree, 0, 2, "/m")["listen"]["endpoints"][:-1] == tree["listen"]["endpoints"]
    assert worker_tree(tree, 1, 2, "/m")["listen"]["endpoints"] == [
        "tcp/127.0.0.1:7447",
        "ws/127.0.0.1:8000",
        "tls/127.0.0.1:7449",
        mesh_socket("/m", 1),
    ]


def test_the_default_listener_is_kept() -> None:
    assert worker_tree({}, 1, 2, "/m")["listen"]["endpoints"][0] == "tcp/[::]:7447"


def test_parse_workers() -> None:
    assert parse_workers("3") == 3
    assert 1 <= parse_workers("auto") <= MAX_WORKERS
    for bad in ("0", "x", str(MAX_WORKERS + 1)):
        with pytest.raises(UsageError):
            parse_workers(bad)


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], check=False, capture_output=True, text=True)
    return sorted(int(x) for x in out.stdout.split())


@contextlib.contextmanager
def workers(tmp_path: Path, *more_listeners: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``pyzenoh router --workers 2`` on a tcp/ endpoint (and ``more_listeners``), its mesh
    whole; the supervisor and that endpoint."""
    port = free_port()
    endpoint = f"tcp/127.0.0.1:{port}"
    cfg = {"scouting": {"multicast": {"enabled": False}}}
    listen = [a for e in (endpoint, *more_listeners) for a in ("-l", e)]
    argv = [sys.executable, "-m", "pyzenoh", "router", "--workers", "2", *listen, "--cfg", ":" + json.dumps(cfg)]
    with (tmp_path / "workers.log").open("wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        wait_listening(port, proc, WAIT)
        # Every worker listens once the mesh is whole: a worker listens before it dials.
        import zenoh

        with zenoh.open(zenoh_config(endpoint)) as s:
            assert until(lambda: len([r for r in s.get("@/*/router", timeout=2) if r.ok]) == 2), "no mesh"
        yield proc, endpoint
    finally:
        stop_process(proc)


@pytest.fixture
def two_workers(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    with workers(tmp_path) as started:
        yield started


def _router_of(session: Any) -> str:
    return str(next(iter(session.info.routers_zid())))


@pytest.mark.interop
@pytest.mark.timeout(120)
def test_clients_of_different_workers_meet(two_workers: tuple[subprocess.Popen[bytes], str]) -> None:
    import zenoh

    proc, endpoint = two_workers
    assert until(lambda: len(_children(proc.pid)) == 2)
    sessions = [zenoh.open(zenoh_config(endpoint))]
    try:
        # the kernel spreads sessions by a hash: open until one lands on the other worker
        while len({_router_of(s) for s in sessions}) < 2 and len(sessions) < 40:
            sessions.append(zenoh.open(zenoh_config(endpoint)))
        a = sessions[0]
        b = next(s for s in sessions if _router_of(s) != _router_of(a))
        for src, dst in ((a, b), (b, a)):
            got: queue.Queue[Any] = queue.Queue()
            sub = dst.declare_subscriber("workers/**", got.put)
            assert until(lambda src=src, got=got: src.put("workers/x", "hi") or not got.empty()), "no route"
            assert got.get(timeout=WAIT).payload.to_string() == "hi"
            sub.undeclare()
        qbl = a.declare_queryable("workers/q", lambda q: q.reply("workers/q", "answer"))
        assert until(lambda: [r.ok.payload.to_string() for r in b.get("workers/q", timeout=2) if r.ok] == ["answer"])
        qbl.undeclare()
        token = a.liveliness().declare_token("workers/alive")
        assert until(lambda: [str(r.ok.key_expr) for r in b.liveliness().get("workers/**", timeout=2) if r.ok])
        token.undeclare()
        # the admin space names both workers, as routers of one mesh
        routers = {str(r.ok.key_expr) for r in b.get("@/*/router", timeout=5) if r.ok}
        assert len(routers) == 2
    finally:
        for s in sessions:
            s.close()


@pytest.mark.interop
@pytest.mark.timeout(120)
def test_every_link_kind_listens_with_workers_and_none_restarts(tmp_path: Path) -> None:
    """Before, a second worker could not take a udp/, ws/ or unixsock-stream/ listener
    and was restarted forever."""
    import zenoh

    sock = tmp_path / "r.sock"
    ws, udp = f"ws/127.0.0.1:{free_port()}", f"udp/127.0.0.1:{free_port()}"
    with workers(tmp_path, ws, udp, f"unixsock-stream/{sock}") as (proc, endpoint):
        assert until(lambda: len(_children(proc.pid)) == 2)
        pids = _children(proc.pid)
        ends = [endpoint, ws, udp, f"unixsock-stream/{sock}"]
        sessions = [zenoh.open(zenoh_config(e)) for e in ends]
        try:
            got: queue.Queue[Any] = queue.Queue()
            sub = sessions[0].declare_subscriber("workers/kinds/**", lambda s: got.put(str(s.key_expr)))
            for n, s in enumerate(sessions[1:], 1):
                key = f"workers/kinds/{n}"
                assert until(lambda s=s, key=key: s.put(key, "x") or key in list(got.queue)), f"nothing from {ends[n]}"
            sub.undeclare()
        finally:
            for s in sessions:
                s.close()
        assert _children(proc.pid) == pids  # no worker was restarted


@pytest.mark.interop
@pytest.mark.timeout(120)
def test_a_killed_worker_is_restarted_and_all_stop_by_pid(two_workers: tuple[subprocess.Popen[bytes], str]) -> None:
    proc, _ = two_workers
    assert until(lambda: len(_children(proc.pid)) == 2)
    before = _children(proc.pid)
    os.kill(before[1], signal.SIGKILL)
    assert until(lambda: len(_children(proc.pid)) == 2 and _children(proc.pid) != before), "not restarted"
    workers = _children(proc.pid)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(WAIT) == 0
    assert not any(Path(f"/proc/{pid}").exists() and _state(pid) != "Z" for pid in workers)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
