"""Batches a router sends, checked strictly on the raw bytes; zenoh-pico through pyzenoh.

Part 1 (always runs): :class:`~tests.interop.strict_reader.StrictReader`, a scripted
client that negotiates QoS off (or on), subscribes to ``bt/**`` and checks every batch
it is sent, while a real eclipse-zenoh 1.10.2 session publishes a mix of priorities,
reliabilities, express flags, small and 100 KiB (fragmented) payloads, in bursts. The
same checks run against the real 1.10.2 router, which defines what a reader may rely on,
and against ``pyzenoh router``. A scripted fake router first shows that the reader does
reject the batches it should.

Part 2 (needs a zenoh-pico build, else skipped): zenoh-pico (Eclipse's C client, which
reads everything after a FRAME header as that frame and negotiates no QoS) talks through
``pyzenoh router`` to eclipse-zenoh Python sessions. ``ZENOH_PICO_BUILD`` names the
cmake build directory, made for instance by::

    git --git-dir=<zenoh-pico git dir> archive HEAD | tar -x -C /tmp/zenoh-pico-src
    cmake -S /tmp/zenoh-pico-src -B /tmp/zenoh-pico-build -DBUILD_EXAMPLES=ON \\
        -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release
    cmake --build /tmp/zenoh-pico-build -j2

Every wait is bounded; nothing asserts on elapsed time; every process is stopped by PID.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import queue
import re
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pyzenoh.codec import (
    Fragment,
    Frame,
    KeepAlive,
    Push,
    Put,
    WhatAmI,
    WireExpr,
    ZenohId,
    encode_batch,
    encode_network_message,
    frame_batch,
)
from pyzenoh.transport.link import Link, LinkConfig, Role, sn_mask
from tests.fixtures import procs as zenoh_procs
from tests.fixtures.pyzenoh_router import run_router
from tests.interop.strict_reader import Delivered, StrictReader, put_payload

zenoh = pytest.importorskip("zenoh")

pytestmark = pytest.mark.interop

#: Bound on every wait for traffic (generous: two cores shared with other test runs).
WAIT = 60.0
MATCH_WAIT = 20.0
BIG = 100 * 1024  # over the 64 KiB batch: fragmented

# The wire priority (0 is Control, which applications cannot use) -> zenoh.Priority.
PRIORITIES: dict[int, Any] = {
    1: zenoh.Priority.REAL_TIME,
    2: zenoh.Priority.INTERACTIVE_HIGH,
    3: zenoh.Priority.INTERACTIVE_LOW,
    4: zenoh.Priority.DATA_HIGH,
    5: zenoh.Priority.DATA,
    6: zenoh.Priority.DATA_LOW,
    7: zenoh.Priority.BACKGROUND,
}


# --- routers -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Router:
    kind: str  # "zenohd" (eclipse-zenoh 1.10.2) or "pyzenoh"
    port: int
    endpoint: str


@contextlib.contextmanager
def start(kind: str, tmp: Path) -> Iterator[Router]:
    if kind == "zenohd":
        proc = zenoh_procs.start_router()
        try:
            port = int(proc.endpoint.rsplit(":", 1)[1])
            yield Router("zenohd", port, proc.endpoint)
            assert proc.popen.poll() is None, "the real router died"
        finally:
            proc.stop()
    else:
        with run_router(tmp) as r:
            yield Router("pyzenoh", r.port, r.endpoint)
            assert r.proc.poll() is None, r.log.read_text()[-4000:]


@pytest.fixture(scope="module", params=["zenohd", "pyzenoh"])
def any_router(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Router]:
    with start(request.param, tmp_path_factory.mktemp("batches")) as r:
        yield r


def session_config(endpoint: str, qos: bool = True) -> Any:
    conf = zenoh_procs.zenoh_config(endpoint)
    if not qos:
        conf.insert_json5("transport/unicast/qos/enabled", "false")
    return conf


# --- the traffic ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Send:
    index: int
    priority: int
    reliable: bool
    express: bool
    size: int
    pause_after: bool = False  # a short pause ends a burst


def schedule(big: int = BIG, scale: int = 1) -> list[Send]:
    """Three bursts: small mixed puts; small ones with ``big`` ones among them; 2 KiB ones.

    Every priority, reliability in runs, express 1 in 5. ``scale`` divides the counts."""
    out: list[Send] = []

    def add(priority: int, reliable: bool, express: bool, size: int) -> None:
        out.append(Send(len(out), priority, reliable, express, size))

    def pause() -> None:
        out[-1] = dataclasses.replace(out[-1], pause_after=True)

    for i in range(150 // scale):
        add(1 + i % 7, (i // 3) % 2 == 0, i % 5 == 0, 16 + (i * 37) % 300)
    pause()
    for i in range(60 // scale):
        add(1 + (i * 3) % 7, i % 4 != 1, i % 7 == 0, big if i % 10 == 3 else 40 + i)
    pause()
    for i in range(120 // scale):  # several batches full of one priority's FRAME
        add(1 + (i // 10) % 7, i % 11 != 5, False, 2048)
    return out


def payload(tag: bytes, s: Send) -> bytes:
    """``tag`` + 6-digit index + '|' + letters (printable: zenoh-pico's z_sub prints it)."""
    head = tag + b"%06d|" % s.index
    return head + bytes(97 + (s.index + k) % 26 for k in range(s.size - len(head)))


def index_of(tag: bytes, data: bytes) -> int | None:
    if not data.startswith(tag):
        return None
    return int(data[len(tag) : len(tag) + 6])


def publish(endpoint: str, qos: bool, tag: bytes, sends: list[Send], key: str = "bt/data") -> None:
    """Declare one publisher per (priority, reliability, express), wait until each sees a
    subscriber, then put ``sends`` in order (Block congestion control throughout)."""
    session = zenoh.open(session_config(endpoint, qos))
    try:
        pubs: dict[tuple[int, bool, bool], Any] = {}
        for s in sends:
            k = (s.priority, s.reliable, s.express)
            if k not in pubs:
                pubs[k] = session.declare_publisher(
                    key,
                    priority=PRIORITIES[s.priority],
                    congestion_control=zenoh.CongestionControl.BLOCK,
                    express=s.express,
                    reliability=zenoh.Reliability.RELIABLE if s.reliable else zenoh.Reliability.BEST_EFFORT,
                )
        deadline = time.monotonic() + MATCH_WAIT
        while not all(p.matching_status.matching for p in pubs.values()):
            assert time.monotonic() < deadline, "publishers never saw the subscriber"
            time.sleep(0.05)
        for s in sends:
            pubs[(s.priority, s.reliable, s.express)].put(payload(tag, s))
            if s.pause_after:
                time.sleep(0.05)  # the point: a gap in time between two sends
    finally:
        session.close()


def in_thread(fn: Callable[[], None]) -> tuple[threading.Thread, list[Exception]]:
    """Run ``fn`` in a daemon thread (a stuck one fails the test instead of hanging it)."""
    errors: list[Exception] = []

    def run() -> None:
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - re-raised in the test thread
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, errors


def finish(thread: threading.Thread, errors: list[Exception]) -> None:
    thread.join(WAIT)
    assert not thread.is_alive(), "the publisher did not finish"
    if errors:
        raise errors[0]


def check_delivery(sends: list[Send], tag: bytes, got: list[tuple[bytes, int | None]], ordered: bool) -> None:
    """``got``: (payload, priority if known) in arrival order. Every reliable put arrived,
    once, intact; nothing unknown arrived; each priority's PUTs in send order (all PUTs in
    send order when ``ordered``)."""
    indices = [index_of(tag, data) for data, _ in got]
    assert None not in indices, "a PUT this run never sent"
    seen = [i for i in indices if i is not None]
    assert len(set(seen)) == len(seen), "a PUT arrived twice"
    # Every reliable put arrives (Block). A best-effort one may be dropped on the way:
    # zenoh counts every best-effort message as droppable, Block or not (the publisher's
    # own pipeline drops one that waits for a batch longer than wait_before_drop).
    missing = [s for s in sends if s.reliable and s.index not in set(seen)]
    assert not missing, f"{len(missing)} of {sum(s.reliable for s in sends)} reliable puts missing: {missing[:20]}"
    for (data, prio), i in zip(got, seen, strict=True):
        assert data == payload(tag, sends[i]), f"put {i} damaged"
        if prio is not None:
            assert prio == sends[i].priority, f"put {i} arrived at priority {prio}"
    if ordered:
        assert seen == sorted(seen), "send order lost"
    for prio in PRIORITIES:
        lane = [i for i in seen if sends[i].priority == prio]
        assert lane == sorted(lane), f"priority {prio} reordered"


# --- part 1: the strict reader -------------------------------------------------------------

_zids = iter(range(0xB0_0000, 0xB0_FFFF))


def run_strict(router: Router, qos: bool, tag: bytes) -> tuple[StrictReader, list[Send], list[Delivered]]:
    """A strict reader (QoS ``qos``) gets the whole schedule from a publisher with the same
    QoS setting; returns the reader, what was sent and the PUSHes of this run in order."""
    # The real router starts a new FRAME in the same batch when reliability changes, and
    # skips an SN after each fragmented message: the reader accepts that from it only
    # (see strict_reader.StrictReader). pyzenoh must send one FRAME per batch, SNs
    # consecutive.
    real = router.kind == "zenohd"
    reader = StrictReader(
        router.port, next(_zids), qos=qos, allow_reliability_switch=real, allow_sn_gap_after_fragments=real
    )
    sends = schedule()
    try:
        assert reader.qos is qos
        reader.subscribe("bt/**")

        def mine() -> list[Delivered]:
            return [d for d in reader.pushes() if index_of(tag, put_payload(d)) is not None]

        # The publisher runs in a thread while this one reads: with Block, a reader that
        # stopped reading would stall the publisher.
        thread, errors = in_thread(lambda: publish(router.endpoint, qos, tag, sends))
        reliable = sum(s.reliable for s in sends)
        reader.wait_until(lambda: sum(d.reliable for d in mine()) >= reliable and not thread.is_alive(), WAIT)
        finish(thread, errors)
        # a little longer: a late best-effort PUSH (other lanes) or a duplicate shows up now
        reader.wait_until(lambda: False, 0.5)
        return reader, sends, mine()
    finally:
        reader.close()


@pytest.mark.parametrize("qos", [False, True], ids=["no-qos", "qos"])
def test_strict_reader(any_router: Router, qos: bool) -> None:
    """Every batch passes the strict checks; every reliable put arrives, intact, in order
    (send order without QoS end to end, per-priority order with QoS)."""
    tag = f"{any_router.kind[:2]}{int(qos)}".encode()
    reader, sends, got = run_strict(any_router, qos, tag)
    assert reader.closed is None, reader.closed
    assert not reader.violations, "\n".join(reader.violations)
    # With QoS a PUSH travels at its own priority; without, every FRAME is Data (5).
    check_delivery(sends, tag, [(put_payload(d), d.priority if qos else None) for d in got], ordered=not qos)
    sent = [sends[index_of(tag, put_payload(d)) or 0] for d in got]  # mine(): never None
    # each in a FRAME of the publisher's reliability; without QoS, all Data (5)
    assert [d.reliable for d in got] == [s.reliable for s in sent]
    assert qos or {d.priority for d in got} == {5}
    assert not all(s.reliable for s in sent)  # some best-effort ones did arrive
    assert any(d.fragmented for d in got)
    per_batch: dict[int, int] = {}
    for d in got:
        per_batch[d.batch] = per_batch.get(d.batch, 0) + 1
    assert max(per_batch.values()) > 1  # bursts were batched


# --- the reader itself: a scripted router sends it bad batches -----------------------------


def _push(i: int) -> Push:
    return Push(WireExpr(0, "bt/fake", True), Put(b"fake%06d|" % i))


@contextlib.contextmanager
def fake_router(batches: Callable[[int, int], list[bytes]]) -> Iterator[int]:
    """A router on a blocking socket that, once the client declared something, sends
    ``batches(initial_sn, sn_mask)`` (payloads, framed here) and waits for EOF."""
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(10)
    done: list[Exception] = []

    def serve() -> None:
        try:
            conn, _ = srv.accept()
            with conn:
                conn.settimeout(10)
                link = Link(LinkConfig(ZenohId(0xFA4E), WhatAmI.ROUTER, qos=False), Role.ACCEPTOR, time.monotonic())
                while not link.is_established:
                    data = conn.recv(65536)
                    assert data, "the client left during the handshake"
                    link.receive_data(data, time.monotonic())
                    conn.sendall(link.data_to_send())
                assert link.peer is not None
                conn.recv(65536)  # the client's DeclareSubscriber
                out = b"".join(frame_batch(p) for p in batches(link.peer.own_initial_sn, sn_mask(link.peer.resolution)))
                conn.sendall(out)
                with contextlib.suppress(OSError):
                    while conn.recv(65536):
                        pass
        except Exception as exc:  # noqa: BLE001 - reported by the test
            done.append(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield srv.getsockname()[1]
    finally:
        srv.close()
        thread.join(15)
        assert not done, done


def _bad_batches(isn: int, mask: int) -> list[bytes]:
    def sn(k: int) -> int:
        return (isn + k) & mask

    whole = encode_network_message(_push(9))
    return [
        encode_batch([Frame(True, sn(0), (_push(0),))]),  # fine
        encode_batch([Frame(True, sn(1), (_push(1),)), Frame(True, sn(2), (_push(2),))]),  # 2 FRAMEs
        encode_batch([Frame(True, sn(3), (_push(3),)), Frame(False, isn, (_push(4),))]),  # reliability switch
        encode_batch([Frame(True, isn, (_push(5),), priority=2)]),  # priority without QoS
        encode_batch([Frame(True, sn(5), (_push(6),))]),  # SN gap (4 expected)
        encode_batch([KeepAlive(), Frame(True, sn(6), (_push(7),))]),  # KEEPALIVE + FRAME
        encode_batch([Fragment(True, sn(7), whole[:5], more=True, first=True)]),  # fine
        encode_batch([Fragment(True, sn(8), whole[5:])]),  # fine: PUSH 9 reassembled
        encode_batch([Frame(True, sn(9), (_push(10),))]),  # fine
    ]


@pytest.mark.parametrize("lenient", [False, True], ids=["strict", "real-router-latitude"])
def test_strict_reader_rejects_bad_batches(lenient: bool) -> None:
    with fake_router(_bad_batches) as port:
        reader = StrictReader(
            port, 0xB1_0000, qos=False, allow_reliability_switch=lenient, allow_sn_gap_after_fragments=lenient
        )
        try:
            reader.subscribe("bt/**")
            reader.wait_until(lambda: len(reader.batches) >= 2 + 9, 10)  # InitAck, OpenAck, 9
        finally:
            reader.close()
    got = [put_payload(d) for d in reader.pushes()]
    assert got == [b"fake%06d|" % i for i in range(11) if i != 8]
    assert any(d.fragmented for d in reader.pushes())
    expected = [
        "2 transport messages in one batch",  # two FRAMEs of one reliability: never allowed
        "priority extension on a link without QoS",
        "priority 2 on a link without QoS",
        "FRAME SN",  # the gap: not after a fragmented message, so never allowed
        "2 transport messages in one batch",  # KEEPALIVE + FRAME
    ]
    if not lenient:
        expected.insert(1, "2 transport messages in one batch")  # the reliability switch
    assert [v.split("\n")[0][: len(e)] for v, e in zip(reader.violations, expected, strict=False)] == expected
    assert len(reader.violations) == len(expected), reader.violations


# --- part 2: zenoh-pico through pyzenoh router ---------------------------------------------

PICO_EXAMPLES = ("z_sub", "z_pub", "z_get", "z_queryable")
#: zenoh-pico defaults: 2048-byte batches, reassembled messages up to 4096 bytes.
PICO_FRAGMENTED = 3000

MIXED_PUB_C = r"""
/* A zenoh-pico publisher: COUNT puts of mixed priority, express flag and size, in one
   burst, once a subscriber matches. Prints "sent COUNT". */
#include <stdio.h>
#include <stdlib.h>
#include <zenoh-pico.h>

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s ENDPOINT KEY COUNT TAG\n", argv[0]);
        return 2;
    }
    int count = atoi(argv[3]);
    z_owned_config_t config;
    z_config_default(&config);
    zp_config_insert(z_loan_mut(config), Z_CONFIG_CONNECT_KEY, argv[1]);
    z_owned_session_t s;
    if (z_open(&s, z_move(config), NULL) < 0) {
        printf("open failed\n");
        return 1;
    }
    z_view_keyexpr_t ke;
    z_owned_publisher_t probe;
    if (z_view_keyexpr_from_str(&ke, argv[2]) < 0 || z_declare_publisher(z_loan(s), &probe, z_loan(ke), NULL) < 0) {
        printf("bad key\n");
        return 1;
    }
    int matched = 0;
    for (int i = 0; i < 400 && !matched; i++) { /* up to 20 s */
        z_matching_status_t st;
        if (z_publisher_get_matching_status(z_loan(probe), &st) == 0 && st.matching) {
            matched = 1;
        } else {
            z_sleep_ms(50);
        }
    }
    if (!matched) {
        printf("no subscriber\n");
        return 1;
    }
    static char buf[4096];
    for (int i = 0; i < count; i++) {
        int size = (i % 7 == 3) ? PICO_FRAGMENTED : 20 + i;
        int n = snprintf(buf, sizeof buf, "%s%06d|", argv[4], i);
        for (int k = n; k < size; k++) buf[k] = (char)('a' + (i + k - n) % 26);
        z_put_options_t opts;
        z_put_options_default(&opts);
        opts.priority = (z_priority_t)(1 + i % 7);
        opts.is_express = (i % 5 == 0);
        opts.congestion_control = Z_CONGESTION_CONTROL_BLOCK;
        z_owned_bytes_t payload;
        z_bytes_copy_from_buf(&payload, (const uint8_t *)buf, (size_t)size);
        if (z_put(z_loan(s), z_loan(ke), z_move(payload), &opts) < 0) {
            printf("put %d failed\n", i);
            return 1;
        }
    }
    printf("sent %d\n", count);
    fflush(stdout);
    z_drop(z_move(probe));
    z_drop(z_move(s));
    return 0;
}
"""


@dataclass(frozen=True)
class Pico:
    build: Path
    stdbuf: str

    def exe(self, name: str) -> Path:
        return self.build / "examples" / name

    def compile_flags(self) -> list[str]:
        """-D/-I/-std flags the examples were compiled with (from compile_commands.json)."""
        entries = json.loads((self.build / "compile_commands.json").read_text())
        cmd = next(e for e in entries if e["file"].endswith("/z_sub.c"))
        args = cmd["arguments"] if "arguments" in cmd else shlex.split(cmd["command"])
        return [a for a in args if a.startswith(("-D", "-I", "-std="))]


@pytest.fixture(scope="module")
def pico() -> Pico:
    where = os.environ.get("ZENOH_PICO_BUILD")
    if not where:
        pytest.skip("ZENOH_PICO_BUILD is not set (the cmake build dir of zenoh-pico, built with -DBUILD_EXAMPLES=ON)")
    build = Path(where)
    missing = [n for n in PICO_EXAMPLES if not os.access(build / "examples" / n, os.X_OK)]
    if missing:
        pytest.skip(f"zenoh-pico examples {missing} not built under {build}/examples (-DBUILD_EXAMPLES=ON)")
    stdbuf = shutil.which("stdbuf")
    if stdbuf is None:
        pytest.skip("stdbuf (coreutils) is needed to line-buffer the zenoh-pico examples' output")
    return Pico(build, stdbuf)


@pytest.fixture(scope="module")
def pz_router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Router]:
    with start("pyzenoh", tmp_path_factory.mktemp("pico-router")) as r:
        yield r


class PicoProc:
    """A zenoh-pico program with its stdout line-buffered into a file."""

    def __init__(self, pico: Pico, exe: Path, args: list[str], out: Path) -> None:
        self.out = out
        with out.open("wb") as f:
            self.popen = subprocess.Popen(
                [pico.stdbuf, "-oL", str(exe), *args], stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )

    def text(self) -> str:
        return self.out.read_text(errors="replace")

    def wait_for(self, done: Callable[[str], bool], timeout: float = WAIT) -> bool:
        """Poll the output until ``done(output)``, the process exits, or ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if done(self.text()):
                return True
            if self.popen.poll() is not None:
                return done(self.text())
            time.sleep(0.05)
        return done(self.text())

    def wait_exit(self, timeout: float = WAIT) -> int | None:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        """SIGTERM by PID, then SIGKILL, each with a bounded wait."""
        p = self.popen
        if p.poll() is not None:
            return
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


@contextlib.contextmanager
def pico_proc(pico: Pico, exe: Path, args: list[str], out: Path) -> Iterator[PicoProc]:
    proc = PicoProc(pico, exe, args, out)
    try:
        yield proc
    finally:
        proc.stop()


_SUB_LINE = re.compile(r">> \[Subscriber\] Received \('([^']*)': '([^']*)'\)")


def test_pico_sub_gets_mixed_priority_puts(pico: Pico, pz_router: Router, tmp_path: Path) -> None:
    """A Python publisher (QoS on) bursts puts of every priority, both reliabilities,
    express or not, some fragmented at pico's 2048-byte batch; pyzenoh sends them to the
    pico z_sub over one no-QoS lane. Every reliable put arrives, intact, in order per
    priority, and z_sub stays connected."""
    tag = b"pk"
    sends = schedule(big=PICO_FRAGMENTED, scale=3)
    reliable = {s.index for s in sends if s.reliable}

    def received(text: str) -> list[tuple[str, bytes]]:
        return [(m[1], m[2].encode()) for m in _SUB_LINE.finditer(text)]

    def complete(text: str) -> bool:
        return reliable <= {index_of(tag, d) for _, d in received(text)}

    args = ["-e", pz_router.endpoint, "-k", "bt/pico/sub/**"]
    with pico_proc(pico, pico.exe("z_sub"), args, tmp_path / "z_sub.out") as sub:
        thread, errors = in_thread(lambda: publish(pz_router.endpoint, True, tag, sends, key="bt/pico/sub/data"))
        finish(thread, errors)
        sub.wait_for(complete)
        assert sub.popen.poll() is None, f"z_sub exited:\n{sub.text()[-2000:]}"
        text = sub.text()
    got = received(text)
    assert {key for key, _ in got} == {"bt/pico/sub/data"}
    check_delivery(sends, tag, [(d, None) for _, d in got], ordered=False)
    assert any(len(d) == PICO_FRAGMENTED for _, d in got)


def test_pico_pub_reaches_python_subscriber(pico: Pico, pz_router: Router, tmp_path: Path) -> None:
    """The z_pub example (one put a second) reaches an eclipse-zenoh subscriber."""
    session = zenoh.open(session_config(pz_router.endpoint))
    try:
        got: queue.Queue[Any] = queue.Queue()
        session.declare_subscriber("bt/pico/pub/**", got.put)
        args = ["-e", pz_router.endpoint, "-k", "bt/pico/pub/x", "-v", "from pico", "-n", "2"]
        with pico_proc(pico, pico.exe("z_pub"), args, tmp_path / "z_pub.out") as pub:
            samples = [got.get(timeout=WAIT) for _ in range(2)]
            assert pub.wait_exit() == 0, pub.text()
    finally:
        session.close()
    assert [str(s.key_expr) for s in samples] == ["bt/pico/pub/x"] * 2
    assert [s.payload.to_bytes() for s in samples] == [b"[   0] from pico", b"[   1] from pico"]


def test_pico_over_udp_both_ways(pico: Pico, tmp_path: Path) -> None:
    """zenoh-pico clients over a udp/ link (one batch per datagram): z_pub's puts reach an
    eclipse-zenoh subscriber on tcp/, and an eclipse-zenoh publisher's reach z_sub."""
    from pyzenoh.localnet import free_port

    udp = f"udp/127.0.0.1:{free_port()}"
    with run_router(tmp_path, "-l", udp) as router:
        session = zenoh.open(session_config(router.endpoint))
        try:
            got: queue.Queue[Any] = queue.Queue()
            session.declare_subscriber("bt/pico/udp/pub/**", got.put)
            args = ["-e", udp, "-k", "bt/pico/udp/pub/x", "-v", "over udp", "-n", "2"]
            with pico_proc(pico, pico.exe("z_pub"), args, tmp_path / "z_pub.out") as pub:
                samples = [got.get(timeout=WAIT) for _ in range(2)]
                assert pub.wait_exit() == 0, pub.text()
            assert [s.payload.to_bytes() for s in samples] == [b"[   0] over udp", b"[   1] over udp"]
            args = ["-e", udp, "-k", "bt/pico/udp/sub/**"]
            with pico_proc(pico, pico.exe("z_sub"), args, tmp_path / "z_sub.out") as sub:
                pub_s = session.declare_publisher("bt/pico/udp/sub/x")
                line = ">> [Subscriber] Received ('bt/pico/udp/sub/x': 'to pico')"
                # until z_sub's declaration has reached the router: puts before it are not routed
                assert sub.wait_for(lambda text: pub_s.put("to pico") is None and line in text), sub.text()
        finally:
            session.close()


def test_pico_peer_on_a_group_reaches_pyzenoh_peers_and_router(pico: Pico, tmp_path: Path) -> None:
    """A zenoh-pico peer in multicast mode (``-m peer -l udp/<group>``): its puts reach a
    pyzenoh peer on the group and, through a pyzenoh router listening on the group, an
    eclipse-zenoh client on tcp/. (The other way does not work with any 1.10.2 peer:
    measured with zenoh-pico 1.9.0, z_sub reopens its multicast transport on every FRAME
    from a real 1.10.2 peer as from pyzenoh, whose FRAMEs are byte for byte the real ones.)"""
    import json

    import pyzenoh
    from pyzenoh.localnet import free_port

    group = f"udp/224.0.0.{200 + os.getpid() % 40}:{free_port()}#iface=lo"
    config = pyzenoh.Config()
    config.insert_json5("mode", '"peer"')
    config.insert_json5("listen/endpoints", json.dumps([group]))
    config.insert_json5("scouting/multicast/enabled", "false")
    with run_router(tmp_path, "-l", group) as router:
        peer = pyzenoh.open(config)
        client = zenoh.open(session_config(router.endpoint))
        try:
            at_peer: queue.Queue[Any] = queue.Queue()
            at_client: queue.Queue[Any] = queue.Queue()
            peer.declare_subscriber("bt/pico/mc/**", at_peer.put)
            client.declare_subscriber("bt/pico/mc/**", at_client.put)
            args = ["-m", "peer", "-l", group, "-k", "bt/pico/mc/x", "-v", "on the group", "-n", "3"]
            with pico_proc(pico, pico.exe("z_pub"), args, tmp_path / "z_pub.out") as pub:
                for got in (at_peer, at_client):
                    sample = got.get(timeout=WAIT)
                    assert str(sample.key_expr) == "bt/pico/mc/x", pub.text()
                    assert sample.payload.to_bytes().endswith(b"on the group")
        finally:
            client.close()
            peer.close()


def test_pico_mixed_priority_pub_reaches_python_subscriber(pico: Pico, pz_router: Router, tmp_path: Path) -> None:
    """A tiny C program on zenoh-pico bursts puts of every priority (Block, some express,
    some fragmented by pico): all reach an eclipse-zenoh subscriber, intact, at their
    priority, in order per priority."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the zenoh-pico test publisher")
    src = tmp_path / "mixed_pub.c"
    src.write_text(MIXED_PUB_C)
    exe = tmp_path / "mixed_pub"
    lib = pico.build / "lib"
    subprocess.run(
        [
            cc,
            *pico.compile_flags(),
            f"-DPICO_FRAGMENTED={PICO_FRAGMENTED}",
            "-O2",
            "-o",
            str(exe),
            str(src),
            f"-L{lib}",
            "-lzenohpico",
            f"-Wl,-rpath,{lib}",
        ],
        check=True,
        timeout=120,
    )
    count = 70
    tag = b"pc"
    sends = [Send(i, 1 + i % 7, True, i % 5 == 0, PICO_FRAGMENTED if i % 7 == 3 else 20 + i) for i in range(count)]
    session = zenoh.open(session_config(pz_router.endpoint))
    try:
        got: queue.Queue[Any] = queue.Queue()
        session.declare_subscriber("bt/pico/mixed/**", got.put)
        args = [pz_router.endpoint, "bt/pico/mixed/data", str(count), tag.decode()]
        with pico_proc(pico, exe, args, tmp_path / "mixed_pub.out") as pub:
            assert pub.wait_exit() == 0, pub.text()
        samples = []
        deadline = time.monotonic() + WAIT
        while len(samples) < count and time.monotonic() < deadline:
            with contextlib.suppress(queue.Empty):
                samples.append(got.get(timeout=0.2))
    finally:
        session.close()
    arrived = [(s.payload.to_bytes(), _wire_priority(s.priority)) for s in samples]
    check_delivery(sends, tag, arrived, ordered=False)
    assert len(samples) == count


def _wire_priority(p: Any) -> int:
    return next(k for k, v in PRIORITIES.items() if v == p)


def test_pico_queries_both_ways(pico: Pico, pz_router: Router, tmp_path: Path) -> None:
    """An eclipse-zenoh get reaches the pico z_queryable; the pico z_get reaches an
    eclipse-zenoh queryable and gets its reply and the final."""
    session = zenoh.open(session_config(pz_router.endpoint))
    try:
        # Python -> pico queryable: the queryable's declaration is asynchronous, so ask
        # again (bounded) until it answers.
        args = ["-e", pz_router.endpoint, "-k", "bt/pico/q/**", "-v", "pico answer"]
        with pico_proc(pico, pico.exe("z_queryable"), args, tmp_path / "z_queryable.out") as qable:
            replies: list[Any] = []
            deadline = time.monotonic() + WAIT
            while not replies and time.monotonic() < deadline:
                replies = [r for r in session.get("bt/pico/q/one", timeout=2.0) if r.ok is not None]
                if not replies:
                    time.sleep(0.2)
            assert qable.popen.poll() is None, qable.text()
        assert [(str(r.ok.key_expr), r.ok.payload.to_bytes()) for r in replies] == [("bt/pico/q/one", b"pico answer")]

        # pico z_get -> Python queryable
        session.declare_queryable("bt/pico/pyq/**", lambda q: q.reply(q.key_expr, b"python answer"))
        # z_get asks once: first make sure the router routes queries to the queryable
        # (another client's querier matches it only through the router).
        probe = zenoh.open(session_config(pz_router.endpoint))
        try:
            querier = probe.declare_querier("bt/pico/pyq/two")
            deadline = time.monotonic() + MATCH_WAIT
            while not querier.matching_status.matching:
                assert time.monotonic() < deadline, "the router never routed the queryable"
                time.sleep(0.05)
        finally:
            probe.close()
        args = ["-e", pz_router.endpoint, "-k", "bt/pico/pyq/two"]
        with pico_proc(pico, pico.exe("z_get"), args, tmp_path / "z_get.out") as get:
            code = get.wait_exit()
            text = get.text()
        assert code == 0, text
        assert ">> Received PUT ('bt/pico/pyq/two': 'python answer')" in text
        assert ">> Received query final notification" in text
    finally:
        session.close()
