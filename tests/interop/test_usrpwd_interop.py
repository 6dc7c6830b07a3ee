"""usrpwd authentication against real eclipse-zenoh 1.10.2 on 127.0.0.1: real clients to
``pyzenoh router``, pyzenoh clients to a real router, and router-to-router both ways.
Waits are bounded queue waits, never timing assertions.
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pyzenoh.localnet import free_port
from tests.fixtures.procs import Proc, opened, pyzenoh_router_process, start_router

zenoh = pytest.importorskip("zenoh")
import pyzenoh.session as pz

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

WAIT = 15.0
KEY = "transport/auth/usrpwd"
USERS = "alice:pw-alice\n\n  bob : p:w:bob  \nrouter-z:pw-z\nrouter-p:pw-p\n"
SECRETS = ("pw-alice", "p:w:bob", "pw-z", "pw-p", "bad-secret")


@dataclass
class PyRouter:
    proc: subprocess.Popen[bytes]
    endpoint: str
    zid: str
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace")


@contextlib.contextmanager
def usrpwd_pyzenoh_router(
    tmp: Path, name: str, auth: dict[str, Any], connect: tuple[str, ...] = ()
) -> Iterator[PyRouter]:
    port = free_port()
    zid = f"{port:x}{name.encode().hex()}"[:32]
    config = {
        "id": zid,
        "listen": {"endpoints": [f"tcp/127.0.0.1:{port}"]},
        "connect": {"endpoints": list(connect)},
        "scouting": {"multicast": {"enabled": False}},
        "transport": {"auth": {"usrpwd": auth}},
    }
    with pyzenoh_router_process(config, tmp / f"{name}.json5", [port]) as (proc, log):
        yield PyRouter(proc, f"tcp/127.0.0.1:{port}", zid, log)


@contextlib.contextmanager
def usrpwd_zenohd(extra: dict[str, Any]) -> Iterator[Proc]:
    proc = start_router(extra=extra)
    try:
        yield proc
    finally:
        proc.stop()


def zconf(endpoint: str, user: str | None = None, password: str | None = None) -> Any:
    c = zenoh.Config()
    c.insert_json5("mode", '"client"')
    c.insert_json5("connect/endpoints", json.dumps([endpoint]))
    c.insert_json5("scouting/multicast/enabled", "false")
    if user is not None:
        c.insert_json5(f"{KEY}/user", json.dumps(user))
    if password is not None:
        c.insert_json5(f"{KEY}/password", json.dumps(password))
    return c


def pconf(endpoint: str, user: str | None = None, password: str | None = None) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "mode": "client",
        "connect": {"endpoints": [endpoint]},
        "scouting": {"multicast": {"enabled": False}},
    }
    if user is not None:
        cfg["transport"] = {"auth": {"usrpwd": {"user": user, "password": password}}}
    return cfg


@pytest.fixture(scope="module")
def dictionary(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("usrpwd") / "users.txt"
    path.write_text(USERS)
    return str(path)


def put_until_received(put: Callable[[], None], got: queue.Queue[bytes]) -> bytes:
    """Declarations have no acknowledgement: publish until the subscriber sees one."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        put()
        with contextlib.suppress(queue.Empty):
            return got.get(timeout=0.2)
    raise AssertionError("nothing received")


def test_real_clients_to_pyzenoh_router(tmp_path: Path, dictionary: str) -> None:
    with usrpwd_pyzenoh_router(tmp_path, "p", {"dictionary_file": dictionary}) as r:
        alice = zenoh.open(zconf(r.endpoint, "alice", "pw-alice"))
        bob = zenoh.open(zconf(r.endpoint, "bob", "p:w:bob"))  # trimmed; colons in the password
        with opened(alice, bob):
            got: queue.Queue[bytes] = queue.Queue()
            sub = alice.declare_subscriber("auth/demo/**", lambda s: got.put(s.payload.to_bytes()))
            qbl = alice.declare_queryable("auth/demo/q", lambda q: q.reply("auth/demo/q", "answer"))
            assert put_until_received(lambda: bob.put("auth/demo/x", "hello"), got) == b"hello"
            replies = [rep.ok.payload.to_bytes() for rep in bob.get("auth/demo/q", timeout=WAIT) if rep.ok]
            assert replies == [b"answer"]
            # wrong password, unknown user, no credentials: the session does not open
            for user, password in (("alice", "bad-secret"), ("mallory", "pw-alice"), (None, None)):
                with pytest.raises(zenoh.ZError):
                    zenoh.open(zconf(r.endpoint, user, password))
            # pyzenoh clients: the right credential works, a wrong one fails with a clear error
            ps = pz.open(pconf(r.endpoint, "alice", "pw-alice"))
            with opened(ps):
                assert put_until_received(lambda: ps.put("auth/demo/y", "from-pyzenoh"), got) == b"from-pyzenoh"
            with pytest.raises(ConnectionError, match="refused user 'bob'"):
                pz.open(pconf(r.endpoint, "bob", "bad-secret"))
            # the router still serves the authenticated sessions
            while not got.empty():
                got.get_nowait()
            assert put_until_received(lambda: bob.put("auth/demo/z", "still"), got) == b"still"
            # the refusals are counted in the admin space metrics
            metrics = [
                rep.ok.payload.to_bytes().decode()
                for rep in bob.get(f"@/{r.zid}/router/metrics?compression=false", timeout=WAIT)
                if rep.ok
            ]
            counts = re.findall(r"^pyzenoh_router_auth_failed\S* (\d+)", metrics[0], re.MULTILINE)
            assert counts and int(counts[0]) == 4
            sub.undeclare()
            qbl.undeclare()
    text = r.text()
    refused = re.findall(r"usrpwd: refused tcp/127\.0\.0\.1:\d+: .*", text)
    assert len(refused) == 4, text
    assert any("wrong password for user 'alice'" in line for line in refused)
    assert any("unknown user 'mallory'" in line for line in refused)
    assert any("no usrpwd credentials offered" in line for line in refused)
    assert "usrpwd user 'alice'" in text  # the face log names the authenticated user
    assert not any(secret in text for secret in SECRETS)


def test_pyzenoh_client_to_real_router(dictionary: str) -> None:
    with usrpwd_zenohd({f"{KEY}/dictionary_file": dictionary}) as router:
        zs = zenoh.open(zconf(router.endpoint, "alice", "pw-alice"))
        ps = pz.open(pconf(router.endpoint, "bob", "p:w:bob"))
        with opened(zs, ps):
            got: queue.Queue[bytes] = queue.Queue()
            zs.declare_subscriber("auth/real/**", lambda s: got.put(s.payload.to_bytes()))
            assert put_until_received(lambda: ps.put("auth/real/x", "hi"), got) == b"hi"
            with pytest.raises(ConnectionError, match="refused user 'bob'"):
                pz.open(pconf(router.endpoint, "bob", "bad-secret"))
            with pytest.raises(ConnectionError, match="require usrpwd"):
                pz.open(pconf(router.endpoint))
    # a client with credentials refuses a router that does not check them, as 1.10.2 does
    with usrpwd_zenohd({}) as plain:
        with pytest.raises(ConnectionError, match="does not check usrpwd"):
            pz.open(pconf(plain.endpoint, "alice", "pw-alice"))
        with pytest.raises(zenoh.ZError):
            zenoh.open(zconf(plain.endpoint, "alice", "pw-alice"))


@pytest.mark.parametrize("direction", ["pyzenoh-connects", "real-connects"])
def test_router_to_router_authenticates(tmp_path: Path, dictionary: str, direction: str) -> None:
    """Each router presents its own user/password when it connects, and checks its
    dictionary for every session it accepts, routers included."""
    real_auth = {f"{KEY}/dictionary_file": dictionary, f"{KEY}/user": "router-z", f"{KEY}/password": "pw-z"}
    py_auth = {"dictionary_file": dictionary, "user": "router-p", "password": "pw-p"}
    if direction == "pyzenoh-connects":
        with usrpwd_zenohd(real_auth) as z, usrpwd_pyzenoh_router(tmp_path, "p", py_auth, (z.endpoint,)) as p:
            _check_routed(z.endpoint, p.endpoint)
    else:
        with usrpwd_pyzenoh_router(tmp_path, "p", py_auth) as p:
            with usrpwd_zenohd({**real_auth, "connect/endpoints": [p.endpoint]}) as z:
                _check_routed(z.endpoint, p.endpoint)
            assert "usrpwd user 'router-z'" in p.text()


def _check_routed(real_endpoint: str, py_endpoint: str) -> None:
    zs = zenoh.open(zconf(real_endpoint, "alice", "pw-alice"))
    ps = pz.open(pconf(py_endpoint, "bob", "p:w:bob"))
    with opened(zs, ps):
        got: queue.Queue[bytes] = queue.Queue()
        zs.declare_subscriber("auth/r2r/**", lambda s: got.put(s.payload.to_bytes()))
        assert put_until_received(lambda: ps.put("auth/r2r/x", "across"), got) == b"across"


def test_router_to_router_wrong_password_is_refused(tmp_path: Path, dictionary: str) -> None:
    """A pyzenoh router with a wrong password gets no session with the real router, and
    logs the refusal (without the password) each time it tries."""
    with usrpwd_zenohd({f"{KEY}/dictionary_file": dictionary}) as z:
        auth = {"user": "router-p", "password": "bad-secret"}
        with usrpwd_pyzenoh_router(tmp_path, "p", auth, (z.endpoint,)) as p:
            deadline = time.monotonic() + WAIT
            while "usrpwd: refused by" not in p.text() and time.monotonic() < deadline:
                time.sleep(0.1)
            text = p.text()
    assert "usrpwd: refused by tcp/127.0.0.1:" in text and "refused user 'router-p'" in text
    assert "bad-secret" not in text
    assert "face 2:" not in text  # no session with the real router (face 1 is the admin space)


def test_pyzenoh_router_refuses_to_start_on_a_bad_dictionary(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.json5"
    cfg.write_text(
        json.dumps(
            {
                "listen": {"endpoints": [f"tcp/127.0.0.1:{free_port()}"]},
                "transport": {"auth": {"usrpwd": {"dictionary_file": str(tmp_path / "nope")}}},
            }
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "pyzenoh", "router", "-c", str(cfg)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert f"{KEY}/dictionary_file" in done.stderr + done.stdout
