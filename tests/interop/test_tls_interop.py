"""TLS and mTLS between pyzenoh and real eclipse-zenoh 1.10.2 (clients and routers).

* real zenoh clients over TLS/mTLS to ``pyzenoh router`` (pub/sub, get), and every
  refused case (no client certificate, a certificate of another CA, a wrong server name,
  plaintext on the TLS port, TLS on the TCP port) with the router serving afterwards;
* pyzenoh client sessions over TLS/mTLS to a real zenoh router;
* router links over TLS both ways between pyzenoh and real routers.

Everything is on 127.0.0.1; the certificates name localhost and 127.0.0.1. Waits are
bounded waits for data, never timing assertions.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import zenoh

import pyzenoh.session as pz
from pyzenoh.localnet import free_port
from tests.fixtures.procs import Proc, opened, pyzenoh_router_process, start_router
from tests.security.certs import KeyPair, Pki

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

WAIT = 15.0  # bound for anything that should happen soon
#: A client's open_timeout where the connection is expected to fail (ms).
FAIL_OPEN_TIMEOUT_MS = 1500


@dataclass
class Certs:
    pki: Pki
    server: KeyPair  # localhost, 127.0.0.1
    elsewhere: KeyPair  # other.example only
    alice: KeyPair
    rogue: KeyPair  # CN alice, signed by an unrelated CA


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    pki = Pki(tmp_path_factory.mktemp("tls-pki"))
    return Certs(
        pki,
        pki.server(),
        pki.server("other.example", common_name="other"),
        pki.client("alice"),
        pki.unrelated().client("alice"),
    )


# --- processes -------------------------------------------------------------------------------


@dataclass
class PyRouter:
    proc: subprocess.Popen[bytes]
    log: Path
    ports: dict[str, int]

    def endpoint(self, name: str) -> str:
        return f"{'tcp' if name == 'tcp' else 'tls'}/127.0.0.1:{self.ports[name]}"


@contextlib.contextmanager
def tls_pyzenoh_router(
    tmp: Path, listen: dict[str, str], tls: dict[str, Any], connect: list[str] | None = None
) -> Iterator[PyRouter]:
    """``pyzenoh router`` with the listen endpoints ``{name: "tls/127.0.0.1:{port}#..."}``."""
    ports = {name: free_port() for name in listen}
    config = {
        "mode": "router",
        "listen": {"endpoints": [ep.format(port=ports[n]) for n, ep in listen.items()]},
        "connect": {"endpoints": connect or []},
        "scouting": {"multicast": {"enabled": False}},
        "transport": {"link": {"tls": tls}},
    }
    name = f"pz-router-{ports[next(iter(ports))]}"
    with pyzenoh_router_process(config, tmp / f"{name}.json5", ports.values()) as (proc, log):
        yield PyRouter(proc, log, ports)


@contextlib.contextmanager
def zenoh_router(listen: list[str], tls: dict[str, Any], connect: list[str] | None = None) -> Iterator[Proc]:
    extra: dict[str, Any] = {"listen/endpoints": listen, "transport/link/tls": tls}
    if connect:
        extra["connect/endpoints"] = connect
    proc = start_router(extra=extra)
    try:
        yield proc
    finally:
        proc.stop()


def zopen(endpoint: str, tls: dict[str, Any] | None = None, open_timeout_ms: int | None = None) -> zenoh.Session:
    c = zenoh.Config()
    c.insert_json5("mode", '"client"')
    c.insert_json5("connect/endpoints", json.dumps([endpoint]))
    c.insert_json5("scouting/multicast/enabled", "false")
    if tls:
        c.insert_json5("transport/link/tls", json.dumps(tls))
    if open_timeout_ms:
        c.insert_json5("transport/unicast/open_timeout", str(open_timeout_ms))
    return zenoh.open(c)


def crosses(put: Callable[[bytes], None], declare: Callable[[Callable[[Any], None]], Any], key: str) -> bytes:
    """Put until the subscriber declared by ``declare(callback)`` gets one sample (bounded):
    declarations have no acknowledgement, so the first puts may go before the route."""
    got: queue.Queue[bytes] = queue.Queue()
    sub = declare(lambda sample: got.put(bytes(sample.payload.to_bytes())))
    deadline = time.monotonic() + WAIT
    try:
        while time.monotonic() < deadline:
            put(f"{key}:{time.monotonic_ns()}".encode())
            with contextlib.suppress(queue.Empty):
                return got.get(timeout=0.2)
        raise AssertionError(f"nothing crossed on {key} within {WAIT} s")
    finally:
        sub.undeclare()


def zenoh_crosses(pub: Any, sub: Any, key: str) -> bytes:
    return crosses(lambda data: pub.put(key, data), lambda cb: sub.declare_subscriber(key, cb), key)


# --- real zenoh clients -> pyzenoh router ---------------------------------------------------


@pytest.fixture(scope="module")
def pz_router(certs: Certs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PyRouter]:
    listen = {
        "tls": "tls/127.0.0.1:{port}",
        "mtls": "tls/127.0.0.1:{port}#enable_mtls=true",  # mTLS set by the endpoint
        "tcp": "tcp/127.0.0.1:{port}",
        "elsewhere": f"tls/127.0.0.1:{{port}}#listen_certificate_file={certs.elsewhere.cert};"
        f"listen_private_key_file={certs.elsewhere.key}",
    }
    tls = {**certs.pki.listen_config(certs.server), "root_ca_certificate": str(certs.pki.ca_cert)}
    with tls_pyzenoh_router(tmp_path_factory.mktemp("pz-router"), listen, tls) as router:
        yield router
        assert router.proc.poll() is None, router.log.read_text()


def test_zenoh_clients_over_tls_pubsub_and_get(pz_router: PyRouter, certs: Certs) -> None:
    a = zopen(pz_router.endpoint("tls"), certs.pki.connect_config())
    b = zopen(pz_router.endpoint("tls"), certs.pki.connect_config())
    with opened(a, b):
        assert zenoh_crosses(b, a, "tls/pubsub").startswith(b"tls/pubsub:")
        queryable = a.declare_queryable("tls/q", lambda q: q.reply("tls/q", b"answer"))
        deadline = time.monotonic() + WAIT
        replies: list[bytes] = []
        while not replies and time.monotonic() < deadline:
            replies = [r.ok.payload.to_bytes() for r in b.get("tls/q", timeout=2.0) if r.ok is not None]
        assert replies == [b"answer"]
        queryable.undeclare()
        # the router announces its TLS locators as such (admin space, as in HELLO/link state)
        info = [json.loads(r.ok.payload.to_bytes()) for r in b.get("@/*/router", timeout=5.0) if r.ok is not None]
        assert len(info) == 1 and pz_router.endpoint("tls") in info[0]["locators"], info
        assert pz_router.endpoint("tcp") in info[0]["locators"]


def test_zenoh_clients_over_mtls(pz_router: PyRouter, certs: Certs) -> None:
    a = zopen(pz_router.endpoint("mtls"), certs.pki.connect_config(certs.alice))
    b = zopen(pz_router.endpoint("tls"), certs.pki.connect_config())
    with opened(a, b):
        zenoh_crosses(b, a, "mtls/one")  # TLS -> mTLS
        zenoh_crosses(a, b, "mtls/two")  # mTLS -> TLS


def router_serves(router: PyRouter, certs: Certs) -> None:
    """A good mTLS client and a good TLS client still exchange data through ``router``."""
    a = zopen(router.endpoint("mtls"), certs.pki.connect_config(certs.alice))
    b = zopen(router.endpoint("tls"), certs.pki.connect_config())
    with opened(a, b):
        zenoh_crosses(b, a, "still/serving")


def _refusals(c: Certs) -> dict[str, tuple[str, dict[str, Any] | None, str | None]]:
    """case -> (listener[:protocol spoken to it], client tls settings, what the router logs
    (None: no TLS failure to log))."""
    ca = c.pki.connect_config()
    return {
        "mtls-without-client-cert": ("mtls", ca, "PEER_DID_NOT_RETURN_A_CERTIFICATE"),
        # zenohd's clients present their certificate only with enable_mtls
        "mtls-cert-without-enable-mtls": (
            "mtls",
            {**c.pki.connect_config(c.alice), "enable_mtls": False},
            "PEER_DID_NOT_RETURN_A_CERTIFICATE",
        ),
        "mtls-cert-of-another-ca": (
            "mtls",
            {
                **ca,
                "enable_mtls": True,
                "connect_certificate": str(c.rogue.cert),
                "connect_private_key": str(c.rogue.key),
            },
            "CERTIFICATE_VERIFY_FAILED",
        ),
        # the client refuses the server's certificate and tells so
        "server-cert-for-another-name": ("elsewhere", ca, "SSLV3_ALERT_BAD_CERTIFICATE"),
        "server-cert-of-unknown-ca": ("tls", None, "TLSV1_ALERT_UNKNOWN_CA"),
        "plaintext-on-tls-port": ("tls:tcp", None, "WRONG_VERSION_NUMBER"),
        "tls-on-tcp-port": ("tcp:tls", ca, None),
    }


REFUSALS = [
    "mtls-without-client-cert",
    "mtls-cert-without-enable-mtls",
    "mtls-cert-of-another-ca",
    "server-cert-for-another-name",
    "server-cert-of-unknown-ca",
    "plaintext-on-tls-port",
    "tls-on-tcp-port",
]


@pytest.mark.parametrize("case", REFUSALS)
def test_refused_and_the_router_still_serves(case: str, pz_router: PyRouter, certs: Certs) -> None:
    listener, settings, logged = _refusals(certs)[case]
    name, _, proto = listener.partition(":")
    endpoint = pz_router.endpoint(name)
    if proto:  # the other protocol on that port
        endpoint = f"{proto}/{endpoint.split('/', 1)[1]}"
    log_before = pz_router.log.read_text()
    with pytest.raises(zenoh.ZError):
        s = zopen(endpoint, settings, open_timeout_ms=FAIL_OPEN_TIMEOUT_MS)
        s.close()
    if logged is not None:  # the router logs each failed handshake once, with the client's address
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            new = pz_router.log.read_text()[len(log_before) :]
            if "TLS handshake with 127.0.0.1:" in new:
                break
            time.sleep(0.05)
        lines = [ln for ln in new.splitlines() if "TLS handshake with 127.0.0.1:" in ln]
        # a real 1.10.2 client without a certificate makes four handshakes against mTLS
        # (measured 3 in 3 runs; the wait above used to end before the other three were
        # logged, and CI run 34 saw them all)
        addresses = [ln.split("TLS handshake with ", 1)[1].split(" ", 1)[0] for ln in lines]
        assert len(addresses) == len(set(addresses)), new
        assert any(logged in ln for ln in lines), new
    router_serves(pz_router, certs)
    assert pz_router.proc.poll() is None


def test_verify_name_off_accepts_a_certificate_for_another_name(pz_router: PyRouter, certs: Certs) -> None:
    s = zopen(pz_router.endpoint("elsewhere"), certs.pki.connect_config(verify_name=False))
    t = zopen(pz_router.endpoint("tls"), certs.pki.connect_config())
    with opened(s, t):
        zenoh_crosses(t, s, "noname/x")


# --- pyzenoh clients -> real zenoh router ---------------------------------------------------


@pytest.fixture(scope="module")
def zrouter(certs: Certs) -> Iterator[dict[str, str]]:
    ports = {"tcp": free_port(), "tls": free_port(), "mtls": free_port()}
    endpoints = {
        "tcp": f"tcp/127.0.0.1:{ports['tcp']}",
        "tls": f"tls/127.0.0.1:{ports['tls']}",
        "mtls": f"tls/127.0.0.1:{ports['mtls']}",
    }
    tls = {**certs.pki.listen_config(certs.server), "root_ca_certificate": str(certs.pki.ca_cert)}
    listen = [endpoints["tcp"], endpoints["tls"], endpoints["mtls"] + "#enable_mtls=true"]
    with zenoh_router(listen, tls):
        yield endpoints


def pyzenoh_tls_config(endpoint: str, tls: dict[str, Any]) -> dict[str, Any]:
    return {"mode": "client", "connect": {"endpoints": [endpoint]}, "transport": {"link": {"tls": tls}}}


@pytest.mark.parametrize("listener", ["tls", "mtls"])
def test_pyzenoh_client_to_zenoh_router(listener: str, zrouter: dict[str, str], certs: Certs) -> None:
    settings = certs.pki.connect_config(certs.alice if listener == "mtls" else None)
    ps = pz.open(pyzenoh_tls_config(zrouter[listener], settings))
    zs = zopen(zrouter["tcp"])
    with opened(ps, zs):
        key = f"pz/{listener}"
        crosses(lambda data: zs.put(key, data), lambda cb: ps.declare_subscriber(key, cb), key)
        crosses(lambda data: ps.put(key, data), lambda cb: zs.declare_subscriber(key, cb), key)


def test_pyzenoh_client_refused_by_zenoh_router(zrouter: dict[str, str], certs: Certs) -> None:
    with pytest.raises(ConnectionError):  # no client certificate on the mTLS listener
        pz.open(pyzenoh_tls_config(zrouter["mtls"], certs.pki.connect_config())).close()
    with pytest.raises(ConnectionError, match="CERTIFICATE_VERIFY_FAILED"):  # the CA is not trusted
        pz.open(pyzenoh_tls_config(zrouter["tls"], certs.pki.unrelated().connect_config())).close()


# --- routers over TLS ------------------------------------------------------------------------


def test_pyzenoh_router_connects_to_zenoh_router_over_mtls(
    zrouter: dict[str, str], certs: Certs, tmp_path: Path
) -> None:
    # the mTLS listener: the pyzenoh router presents alice's certificate
    with tls_pyzenoh_router(
        tmp_path, {"tcp": "tcp/127.0.0.1:{port}"}, certs.pki.connect_config(certs.alice), connect=[zrouter["mtls"]]
    ) as router:
        near = zopen(router.endpoint("tcp"))
        far = zopen(zrouter["tcp"])
        with opened(near, far):
            zenoh_crosses(far, near, "r2r/in")
            zenoh_crosses(near, far, "r2r/out")
        assert "TLS handshake" not in router.log.read_text()


def test_zenoh_router_connects_to_pyzenoh_router_over_tls(pz_router: PyRouter, certs: Certs) -> None:
    port = free_port()
    with zenoh_router([f"tcp/127.0.0.1:{port}"], certs.pki.connect_config(), connect=[pz_router.endpoint("tls")]):
        near = zopen(pz_router.endpoint("tcp"))
        far = zopen(f"tcp/127.0.0.1:{port}")
        with opened(near, far):
            zenoh_crosses(far, near, "z2p/in")
            zenoh_crosses(near, far, "z2p/out")
