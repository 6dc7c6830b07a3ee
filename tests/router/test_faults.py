"""Faults around ``pyzenoh router`` with real eclipse-zenoh 1.10.2 clients.

The router is restarted under its clients, stopped with SIGTERM under load (also with a
subscriber that never reads), and loses clients that freeze (SIGSTOP: only their lease
tells) or die (SIGKILL: the connection drops), with queries in flight to them. Every wait
is a bounded poll; the only time bounds asserted are the generous ones that define the
behaviour (a lease expiry, a prompt cleanup, an exit). Complements test_interop_zenoh.py
(SIGTERM without load, a killed client with a 1 s lease) and tests/interop (pyzenoh
sessions against a real router; routers restarted inside a mesh).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pyzenoh.codec import (
    Declare,
    DeclareSubscriber,
    Push,
    Put,
    WhatAmI,
    WireExpr,
    ZenohId,
)
from pyzenoh.errors import CloseReason
from pyzenoh.localnet import free_port, wait_listening
from pyzenoh.transport.link import Link, LinkClosed, LinkConfig, Received, Role
from tests.fixtures.procs import Proc, _start
from tests.fixtures.pyzenoh_router import STARTUP_TIMEOUT, RouterProc, run_router, zenoh
from tests.waits import until

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

WAIT = 15.0  # generous bound for anything that should happen "soon"
RECOVER_S = 20.0  # clients back on a restarted router
EXIT_S = 10.0  # the router exits after SIGTERM
FLOOD_S = 1.5  # how long the flood runs before SIGTERM
FROZEN_LEASE_MS = 2000
FROZEN_MARGIN_S = 8.0  # a frozen client is expired within its lease plus this
KILLED_LEASE_MS = 10_000
KILLED_BOUND_S = 3.0  # a killed client is cleaned up well before its lease
GET_TIMEOUT_S = 30.0  # gets that must end long before their own timeout ...
PROMPT_S = 5.0  # ... within this
_ids = itertools.count()


# --- helpers ------------------------------------------------------------------------------


@pytest.fixture
def prefix() -> str:
    return f"flt{next(_ids)}x{time.monotonic_ns() % 100000}"


def client_conf(endpoint: str, lease_ms: int | None = None) -> dict[str, Any]:
    """A zenoh client that retries its router quickly once the link is lost."""
    conf: dict[str, Any] = {
        "mode": "client",
        "connect/endpoints": [endpoint],
        "connect/retry": {"period_init_ms": 100, "period_max_ms": 500, "period_increase_factor": 1.5},
        "scouting/multicast/enabled": False,
    }
    if lease_ms is not None:
        conf["transport/link/tx/lease"] = lease_ms
    return conf


def zopen(endpoint: str, lease_ms: int | None = None) -> Any:
    c = zenoh.Config()
    for key, value in client_conf(endpoint, lease_ms).items():
        c.insert_json5(key, json.dumps(value))
    return zenoh.open(c)


def no_traceback(log: Path) -> None:
    text = log.read_text(errors="replace")
    assert "Traceback" not in text, text[-6000:]


def replies(session: Any, selector: str, timeout: float) -> list[tuple[str, bytes]]:
    out = []
    for r in session.get(selector, timeout=timeout):
        if r.ok is not None:
            out.append(("ok", r.ok.payload.to_bytes()))
        else:
            out.append(("err", r.err.payload.to_bytes()))
    return out


@contextmanager
def router_on(tmp: Path, port: int, tag: str) -> Iterator[RouterProc]:
    """``pyzenoh router`` on a fixed port (so it can be restarted where its clients look)."""
    log = tmp / f"router-{port}-{tag}.log"
    cmd = [sys.executable, "-m", "pyzenoh", "--log-level", "info", "router", "-l", f"tcp/127.0.0.1:{port}"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=os.environ.copy())
    router = RouterProc(proc, f"tcp/127.0.0.1:{port}", port, log)
    try:
        wait_listening(port, proc, STARTUP_TIMEOUT)
        yield router
    finally:
        router.stop()


class WireClient:
    """A scripted client on the sans-IO link; a thread reads (and decodes) everything the
    router sends until the link closes, so a CLOSE can be seen on the wire."""

    def __init__(self, port: int, zid: int, lease_ms: int = 60_000) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.link = Link(LinkConfig(ZenohId(zid), WhatAmI.CLIENT, lease_ms=lease_ms), Role.OPENER, time.monotonic())
        self.sock.sendall(self.link.data_to_send())
        while not self.link.is_established:
            data = self.sock.recv(65536)
            assert data, "the router closed during the handshake"
            for ev in self.link.receive_data(data, time.monotonic()):
                assert not isinstance(ev, LinkClosed), ev
            self.sock.sendall(self.link.data_to_send())  # OpenSyn after InitAck
        self.lock = threading.Lock()
        self.pushes = 0
        self.closed: LinkClosed | None = None  # decoded from what the router sent
        self.eof = False
        self.reader: threading.Thread | None = None

    def send(self, *messages: Any) -> None:
        with self.lock:
            for m in messages:
                self.link.send(m)
            data = self.link.data_to_send()
        self.sock.sendall(data)

    def subscribe(self, key: str, sid: int = 1) -> None:
        self.send(Declare(DeclareSubscriber(sid, WireExpr(0, key, True))))

    def put(self, key: str, payload: bytes) -> None:
        self.send(Push(WireExpr(0, key, True), Put(payload)))

    def start_reading(self, timeout: float = 60.0) -> None:
        self.reader = threading.Thread(target=self._read, args=(timeout,), daemon=True)
        self.reader.start()

    def _read(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        self.sock.settimeout(0.5)
        while self.closed is None and time.monotonic() < deadline:
            try:
                data = self.sock.recv(1 << 20)
            except TimeoutError:
                continue
            except OSError:
                break
            if not data:
                self.eof = True
                break
            with self.lock:
                events = self.link.receive_data(data, time.monotonic())
            for ev in events:
                if isinstance(ev, Received) and isinstance(ev.message, Push):
                    self.pushes += 1
                elif isinstance(ev, LinkClosed):
                    self.closed = ev

    def join(self, timeout: float) -> bool:
        assert self.reader is not None
        self.reader.join(timeout)
        return not self.reader.is_alive()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


_HOLDER = r"""
import json, sys, zenoh
config = zenoh.Config()
for key, value in json.loads(sys.argv[1]).items():
    config.insert_json5(key, json.dumps(value))
prefix, parts = sys.argv[2], sys.argv[3].split(",")
session = zenoh.open(config)
keep = []
if "token" in parts:
    keep.append(session.liveliness().declare_token(prefix + "/token"))
if "sub" in parts:
    keep.append(session.declare_subscriber(
        prefix + "/data/**", lambda s: print("sample", s.payload.to_string(), flush=True)))
held = []  # queries asked with ?hold stay unanswered (in flight) while we live
def on_query(q):
    if "hold" in str(q.selector.parameters):
        held.append(q)
        print("held", flush=True)
    else:
        q.reply(prefix + "/q", b"from-holder")
if "queryable" in parts:
    keep.append(session.declare_queryable(prefix + "/q", on_query))
print("ready", session.zid(), flush=True)
sys.stdin.read()  # until the parent closes our stdin (or dies)
session.close()
"""


def start_holder(endpoint: str, prefix: str, parts: str, lease_ms: int) -> Proc:
    """A real zenoh client process declaring ``parts`` (token, sub, queryable) under
    ``prefix``; its subscriber prints each sample on stdout."""
    return _start(_HOLDER, [json.dumps(client_conf(endpoint, lease_ms)), prefix, parts], endpoint)


def freeze(proc: Proc) -> None:
    """SIGSTOP, then wait until every thread is stopped: the signal is asynchronous, and a
    thread running on another CPU may still answer a query just after ``kill`` returns."""
    proc.suspend()

    def stopped() -> bool:
        try:
            states = []
            for task in os.listdir(f"/proc/{proc.pid}/task"):
                with open(f"/proc/{proc.pid}/task/{task}/stat") as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
        except FileNotFoundError:  # a thread ended while we looked
            return False
        return bool(states) and all(st in "tT" for st in states)

    assert until(stopped, WAIT, step=0.005), "the process did not stop"


def read_lines(proc: Proc, until_line: str | None, timeout: float) -> list[str]:
    """The holder's stdout lines until ``until_line`` shows up (or, without one, until
    ``timeout``); bounded either way."""
    out = proc.popen.stdout
    assert out is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([out], [], [], 0.1)
        if not ready:
            continue
        line = out.readline()
        if not line:
            break
        lines.append(line.strip())
        if until_line is not None and line.strip() == until_line:
            break
    return lines


def drain_queue(q: queue.Queue[Any]) -> list[Any]:
    out = []
    while True:
        try:
            out.append(q.get_nowait())
        except queue.Empty:
            return out


def take_one(q: queue.Queue[Any], timeout: float) -> Any:
    try:
        return q.get(timeout=timeout)
    except queue.Empty:
        return None


class Flood:
    """A zenoh publisher putting 16 KiB payloads as fast as it can, in a thread."""

    def __init__(self, session: Any, key: str) -> None:
        self.pub = session.declare_publisher(key)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        payload = b"L" * (16 * 1024)
        while not self.done.is_set():
            with contextlib.suppress(Exception):
                self.pub.put(payload)

    def stop(self) -> None:
        self.done.set()
        self.thread.join(WAIT)


def session_opens(port: int, zid: int) -> bool:
    """Whether a new client session gets established with the router on ``port``."""
    try:
        w = WireClient(port, zid)
    except (OSError, AssertionError):
        return False
    w.close()
    return True


def socket_ends(sock: socket.socket, timeout: float) -> bool:
    """Read (and discard) until the connection ends; False if it is still open at ``timeout``."""
    deadline = time.monotonic() + timeout
    sock.settimeout(0.5)
    while time.monotonic() < deadline:
        try:
            if not sock.recv(1 << 20):
                return True
        except TimeoutError:
            continue
        except OSError:
            return True
    return False


class GetInFlight:
    """A get running in a thread (its replies once it ends)."""

    def __init__(self, session: Any, selector: str, timeout: float) -> None:
        self.replies: list[tuple[str, bytes]] | None = None
        self.thread = threading.Thread(target=self._run, args=(session, selector, timeout), daemon=True)
        self.thread.start()

    def _run(self, session: Any, selector: str, timeout: float) -> None:
        self.replies = replies(session, selector, timeout)

    def ended_within(self, timeout: float) -> bool:
        self.thread.join(timeout)
        return not self.thread.is_alive()


# --- 1. the router restarts under its clients ---------------------------------------------


def test_clients_resume_after_router_restart(tmp_path: Path, prefix: str) -> None:
    port = free_port()
    logs: list[Path] = []
    sessions: list[Any] = []
    try:
        with router_on(tmp_path, port, "first") as first:
            logs.append(first.log)
            ep = first.endpoint
            sub_s, qbl_s, tok_s, pub_s = (zopen(ep) for _ in range(4))
            sessions += [sub_s, qbl_s, tok_s, pub_s]
            got: queue.Queue[bytes] = queue.Queue()
            lv: queue.Queue[Any] = queue.Queue()
            entities = [  # kept: a dropped token is undeclared
                sub_s.declare_subscriber(f"{prefix}/data/**", lambda s: got.put(s.payload.to_bytes())),
                qbl_s.declare_queryable(f"{prefix}/q", lambda q: q.reply(f"{prefix}/q", b"answer")),
                tok_s.liveliness().declare_token(f"{prefix}/token"),
                pub_s.liveliness().declare_subscriber(f"{prefix}/**", lv.put, history=True),
            ]
            pub = pub_s.declare_publisher(f"{prefix}/data/x")

            assert until(lambda: (pub.put(b"before"), not got.empty())[1]), first.log.read_text()
            assert until(lambda: replies(pub_s, f"{prefix}/q", 2.0) == [("ok", b"answer")])
            first_lv = take_one(lv, WAIT)
            assert first_lv is not None and first_lv.kind == zenoh.SampleKind.PUT

            assert first.stop() == 0
        # The router is gone: the observer loses the token with it.
        gone = take_one(lv, WAIT)
        assert gone is not None and (str(gone.key_expr), gone.kind) == (f"{prefix}/token", zenoh.SampleKind.DELETE)
        while not got.empty():
            got.get_nowait()

        with router_on(tmp_path, port, "second") as second:
            logs.append(second.log)
            started = time.monotonic()

            def left() -> float:
                return max(0.1, RECOVER_S - (time.monotonic() - started))

            # The clients reconnect by themselves and re-declare everything.
            n = itertools.count()
            assert until(lambda: (pub.put(f"after-{next(n)}".encode()), not got.empty())[1], left()), (
                second.log.read_text()
            )
            assert got.get_nowait().startswith(b"after-")
            # One put is one sample (no second route left over from the first router).
            pub.put(b"once")
            after: list[bytes] = []
            assert until(lambda: (after.extend(drain_queue(got)), b"once" in after)[1]), after
            time.sleep(0.5)  # an absence: no second copy comes late
            after.extend(drain_queue(got))
            assert after.count(b"once") == 1, after
            assert until(lambda: replies(pub_s, f"{prefix}/q", 2.0) == [("ok", b"answer")], left())
            back = take_one(lv, left())
            assert back is not None and (str(back.key_expr), back.kind) == (f"{prefix}/token", zenoh.SampleKind.PUT)
            assert until(
                lambda: (
                    [str(r.ok.key_expr) for r in pub_s.liveliness().get(f"{prefix}/**", timeout=2.0) if r.ok]
                    == [f"{prefix}/token"]
                ),
                left(),
            )
            assert second.proc.poll() is None
            for e in entities:
                e.undeclare()
    finally:
        for s in sessions:
            with contextlib.suppress(Exception):
                s.close()
    for log in logs:
        no_traceback(log)


# --- 2. SIGTERM under load ----------------------------------------------------------------


def test_sigterm_under_load_closes_every_session_and_exits_zero(tmp_path: Path, prefix: str) -> None:
    wire: list[WireClient] = []
    sessions: list[Any] = []
    flood: Flood | None = None
    with run_router(tmp_path) as r:
        try:
            sub_s, pub_s = zopen(r.endpoint), zopen(r.endpoint)
            sessions += [sub_s, pub_s]
            count = itertools.count()
            received = [0]
            sub_s.declare_subscriber(f"{prefix}/**", lambda s: received.__setitem__(0, next(count) + 1))
            for i in range(3):
                w = WireClient(r.port, 0xF0 + i)
                wire.append(w)
                if i < 2:  # two subscribe to the flood, one only listens
                    w.subscribe(f"{prefix}/**")
                w.start_reading()
            flood = Flood(pub_s, f"{prefix}/flood")
            flood_since = time.monotonic()
            # Under load: data has been flowing to every subscriber for a while.
            assert until(
                lambda: (
                    received[0] >= 50
                    and all(w.pushes >= 50 for w in wire[:2])
                    and time.monotonic() - flood_since >= FLOOD_S
                )
            ), (received[0], [w.pushes for w in wire], r.log.read_text()[-3000:])

            r.proc.send_signal(signal.SIGTERM)
            try:
                code = r.proc.wait(timeout=EXIT_S)
            except subprocess.TimeoutExpired:
                code = None
            assert code == 0, r.log.read_text()[-3000:]
            for w in wire:
                assert w.join(WAIT), "the reader did not finish"
                # A CLOSE message on the wire (not just the connection dropping).
                assert w.closed is not None, (w.pushes, w.eof, r.log.read_text()[-3000:])
                assert w.closed.by_peer and w.closed.reason == CloseReason.GENERIC, w.closed
                assert w.closed.detail.startswith("peer sent CLOSE"), w.closed
        finally:
            if flood is not None:
                flood.stop()
            for w in wire:
                w.close()
            for s in sessions:
                with contextlib.suppress(Exception):
                    s.close()
    no_traceback(r.log)


@contextmanager
def stalled_shutdown(tmp: Path, prefix: str) -> Iterator[tuple[RouterProc, WireClient, WireClient]]:
    """A flooded router with a subscriber that never reads (its flush holds the shutdown
    open for the router's bounded wait) and one that reads everything."""
    with run_router(tmp) as r:
        stalled = WireClient(r.port, 0xE0)
        reader = WireClient(r.port, 0xE1)
        pub_s = zopen(r.endpoint)
        flood: Flood | None = None
        try:
            for w in (stalled, reader):
                w.subscribe(f"{prefix}/**")
            reader.start_reading()
            flood = Flood(pub_s, f"{prefix}/flood")
            # Megabytes behind: the stalled subscriber's socket buffers are full.
            assert until(lambda: reader.pushes >= 500), (reader.pushes, r.log.read_text()[-3000:])
            yield r, stalled, reader
        finally:
            if flood is not None:
                flood.stop()
            stalled.close()
            reader.close()
            with contextlib.suppress(Exception):
                pub_s.close()
    no_traceback(r.log)


@pytest.mark.slow
def test_sigterm_with_a_stalled_subscriber_exits_within_bound(tmp_path: Path, prefix: str) -> None:
    """SIGTERM: the router exits 0 within the bound although a subscriber does not read,
    the reading one gets its CLOSE, the stalled one's connection is dropped; and while it
    shuts down, no new session gets established (one shutdown, both checked)."""
    with stalled_shutdown(tmp_path, prefix) as (r, stalled, reader):
        r.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + EXIT_S
        time.sleep(0.3)  # the signal is handled
        opened: list[bool] = []
        while r.proc.poll() is None and time.monotonic() < deadline:
            opened.append(session_opens(r.port, 0xE2 + len(opened)))
            time.sleep(0.2)
        try:
            code = r.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            code = None
        assert code == 0, r.log.read_text()[-3000:]
        assert opened and not any(opened), opened
        assert reader.join(WAIT)
        assert reader.closed is not None and reader.closed.by_peer, (reader.closed, reader.eof)
        assert reader.closed.detail.startswith("peer sent CLOSE"), reader.closed
        # The stalled one could not take its CLOSE: its connection was dropped, not left open.
        assert socket_ends(stalled.sock, WAIT)


# --- 3. a frozen client expires by its own lease ------------------------------------------


def test_frozen_client_expires_by_its_lease(pyzenoh_router: RouterProc, prefix: str) -> None:
    observer = zopen(pyzenoh_router.endpoint)
    raw = WireClient(pyzenoh_router.port, 0xF5)  # publishes straight to the router (no write filter)
    holder: Proc | None = None
    try:
        lv: queue.Queue[Any] = queue.Queue()
        lv_sub = observer.liveliness().declare_subscriber(f"{prefix}/**", lv.put)
        pub = observer.declare_publisher(f"{prefix}/data/x")
        holder = h = start_holder(pyzenoh_router.endpoint, prefix, "token,sub,queryable", FROZEN_LEASE_MS)

        alive = take_one(lv, WAIT)
        assert alive is not None and (str(alive.key_expr), alive.kind) == (f"{prefix}/token", zenoh.SampleKind.PUT)
        assert until(lambda: pub.matching_status.matching)
        raw.put(f"{prefix}/data/x", b"before")
        assert read_lines(h, "sample before", WAIT)[-1:] == ["sample before"]
        assert until(lambda: replies(observer, f"{prefix}/q", 2.0) == [("ok", b"from-holder")])

        freeze(h)
        # A query routed to the frozen queryable is left hanging until the expiry.
        in_flight = GetInFlight(observer, f"{prefix}/q", GET_TIMEOUT_S)
        gone = take_one(lv, FROZEN_LEASE_MS / 1000 + FROZEN_MARGIN_S)
        assert gone is not None, pyzenoh_router.log.read_text()[-3000:]
        assert (str(gone.key_expr), gone.kind) == (f"{prefix}/token", zenoh.SampleKind.DELETE)
        # The expiry ends it (a final, no reply), long before its own timeout.
        assert in_flight.ended_within(PROMPT_S), "the query routed to the expired client still hangs"
        assert in_flight.replies == []
        # Its lease, not something else, ended it.
        zid = h.ready_line.split()[1]
        assert until(
            lambda: any(zid in line and "EXPIRED" in line for line in pyzenoh_router.log.read_text().splitlines())
        ), pyzenoh_router.log.read_text()[-3000:]
        # Its subscriber went with it: no more routes to it.
        assert until(lambda: not pub.matching_status.matching)
        for i in range(5):
            raw.put(f"{prefix}/data/x", f"frozen-{i}".encode())
        assert pyzenoh_router.proc.poll() is None

        holder.resume()
        # It comes back on its own (a new session): the token and the routes return,
        # but nothing published while it was expired ever reaches it.
        back = take_one(lv, RECOVER_S)
        assert back is not None and (str(back.key_expr), back.kind) == (f"{prefix}/token", zenoh.SampleKind.PUT)
        n = itertools.count()
        seen: list[str] = []

        def after_reaches() -> bool:
            raw.put(f"{prefix}/data/x", f"after-{next(n)}".encode())
            seen.extend(read_lines(h, None, 0.2))
            return any(line.startswith("sample after-") for line in seen)

        assert until(after_reaches, RECOVER_S, step=0.0), seen
        assert not [line for line in seen if "frozen" in line], seen
        lv_sub.undeclare()
    finally:
        if holder is not None:
            holder.stop()  # SIGCONT first, then by PID
        raw.close()
        observer.close()
    assert pyzenoh_router.proc.poll() is None
    no_traceback(pyzenoh_router.log)


# --- 4. a killed client's entities vanish at once -----------------------------------------


def test_killed_client_entities_vanish_without_lease_wait(pyzenoh_router: RouterProc, prefix: str) -> None:
    observer = zopen(pyzenoh_router.endpoint)
    holder: Proc | None = None
    try:
        lv: queue.Queue[Any] = queue.Queue()
        lv_sub = observer.liveliness().declare_subscriber(f"{prefix}/**", lv.put)
        holder = start_holder(pyzenoh_router.endpoint, prefix, "token,queryable", KILLED_LEASE_MS)
        alive = take_one(lv, WAIT)
        assert alive is not None and alive.kind == zenoh.SampleKind.PUT
        assert until(lambda: replies(observer, f"{prefix}/q", 2.0) == [("ok", b"from-holder")])
        # A query the holder keeps unanswered is in flight when it dies.
        in_flight = GetInFlight(observer, f"{prefix}/q?hold", GET_TIMEOUT_S)
        assert "held" in read_lines(holder, "held", WAIT)

        holder.kill()  # no CLOSE; the kernel drops the connection
        killed_at = time.monotonic()
        gone = take_one(lv, KILLED_BOUND_S)
        assert gone is not None, (time.monotonic() - killed_at, pyzenoh_router.log.read_text()[-3000:])
        assert (str(gone.key_expr), gone.kind) == (f"{prefix}/token", zenoh.SampleKind.DELETE)
        assert in_flight.ended_within(PROMPT_S), "the query in flight to the killed client still hangs"
        assert in_flight.replies == []
        # The queryable is gone too: a new get ends at once, with no reply (no timeout).
        t0 = time.monotonic()
        assert replies(observer, f"{prefix}/q", GET_TIMEOUT_S) == []
        assert time.monotonic() - t0 < PROMPT_S
        lv_sub.undeclare()
    finally:
        if holder is not None:
            holder.stop()
        observer.close()
    assert pyzenoh_router.proc.poll() is None
    no_traceback(pyzenoh_router.log)
