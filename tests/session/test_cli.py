"""The client sub-commands, run as real ``python -m pyzenoh`` processes against a real router."""

from __future__ import annotations

import json
import select
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.fixtures.procs import Proc
from tests.waits import expect, routed

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

#: Every command is bounded by --count/--duration; this is only a safety net.
RUN_TIMEOUT_S = 30.0


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyzenoh", "--log-level", "warning", *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


def spawn(*args: str, declared: Callable[[], object] = lambda: None) -> subprocess.Popen[str]:
    """Start a long-running command, wait (bounded) for its "ready" log line, then for
    ``declared`` (the router has passed what it declares on)."""
    p = subprocess.Popen(
        [sys.executable, "-m", "pyzenoh", "--log-level", "info", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stderr is not None
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        if select.select([p.stderr], [], [], 0.2)[0]:
            line = p.stderr.readline()
            if "ready:" in line:
                declared()
                return p
            if not line:
                break
    p.kill()
    p.wait(5)
    raise AssertionError(f"{args} never became ready")


def first_line(p: subprocess.Popen[str]) -> str:
    """The first line ``p`` prints (bounded wait)."""
    assert p.stdout is not None
    assert select.select([p.stdout], [], [], RUN_TIMEOUT_S)[0], "no line printed"
    return p.stdout.readline().rstrip("\n")


def finish(p: subprocess.Popen[str]) -> str:
    try:
        out, _ = p.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(5)
    assert p.returncode == 0
    return out


def test_put_delete_sub(zenohd: Proc, zs: Any) -> None:
    ep = zenohd.endpoint
    sub = spawn(
        "sub", "cli1/**", "-e", ep, "--count", "2", "--duration", "20", "--json", declared=lambda: routed(zs, "cli1/a")
    )
    assert cli("put", "cli1/a", "hello", "-e", ep, "--encoding", "text/plain").returncode == 0
    assert cli("delete", "cli1/a", "-e", ep, "-m", "peer").returncode == 0
    lines = [json.loads(x) for x in finish(sub).splitlines()]
    assert [(x["key"], x["kind"], x["payload"]) for x in lines] == [
        ("cli1/a", "PUT", "hello"),
        ("cli1/a", "DELETE", ""),
    ]
    assert lines[0]["encoding"] == "text/plain"


def test_queryable_and_get(zenohd: Proc, zs: Any) -> None:
    ep = zenohd.endpoint
    q = spawn(
        "queryable",
        *("cli2/q", "--value", "the-answer", "-e", ep, "--count", "1", "--duration", "20"),
        declared=lambda: routed(zs, "cli2/q", query=True),
    )
    r = cli("get", "cli2/q?x=1", "-e", ep, "--target", "all", "--timeout", "5")
    assert r.returncode == 0 and r.stdout.strip() == "cli2/q: the-answer"
    finish(q)
    empty = cli("get", "cli2/none", "-e", ep, "--timeout", "5")
    assert empty.returncode == 0 and empty.stdout == ""


def test_liveliness_commands(zenohd: Proc, zs: Any) -> None:
    ep = zenohd.endpoint
    # The token lives until the subscriber is ready (a fixed lifetime raced process
    # start-up on a loaded machine), then its process is stopped: the router drops it.
    tok = spawn(
        "liveliness",
        *("token", "cli3/t", "-e", ep, "--duration", "60"),
        declared=lambda: expect(lambda: [str(r.ok.key_expr) for r in zs.liveliness().get("cli3/**")], "the token"),
    )
    try:
        got = cli("liveliness", "get", "cli3/**", "-e", ep, "--timeout", "5")
        assert got.stdout.split() == ["cli3/t"]
        watch = spawn("liveliness", "sub", "cli3/**", "-e", ep, "--history", "--count", "2", "--duration", "20")
        first = first_line(watch)  # the token, as history: the router has the subscriber
    finally:
        tok.terminate()
        tok.wait(RUN_TIMEOUT_S)
    assert [first, *finish(watch).splitlines()] == ["cli3/t alive", "cli3/t dropped"]


def test_connection_failure_exit_code() -> None:
    from tests.fixtures.procs import free_port

    r = cli("put", "k", "v", "-e", f"tcp/127.0.0.1:{free_port()}")
    assert r.returncode == 2 and "could not open" in r.stderr
