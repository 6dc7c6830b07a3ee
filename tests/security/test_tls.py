"""TLS and mTLS links between pyzenoh parts (in process), and TLS configuration errors.

Real certificates come from ``tests/security/certs.py``. Waits are bounded waits for an
event, never timing assertions. The interop with eclipse-zenoh 1.10.2 is in
``tests/interop/test_tls_interop.py``.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import os
import ssl
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pyzenoh.codec import Push, Put, WhatAmI, WireExpr, ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.localnet import free_port
from pyzenoh.router.config import config_from_dict
from pyzenoh.router.daemon import RouterDaemon
from pyzenoh.security.tls import TlsConfig, tls_config
from pyzenoh.transport.dial import connect
from pyzenoh.transport.endpoint import Endpoint, prepare_tls
from pyzenoh.transport.link import Established, Event, LinkClosed, LinkConfig, Received
from pyzenoh.transport.listener import listen
from pyzenoh.transport.tcp import TcpLink
from tests.security.certs import KeyPair, Pki

pytestmark = pytest.mark.timeout(60)

T = TypeVar("T")
WAIT = 15.0
ZR = ZenohId.from_str("a1a2")
ZC = ZenohId.from_str("c1c2")


def run(coro: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(coro(), 40))  # type: ignore[arg-type]


def router_cfg(handshake_timeout_s: float = 10.0) -> LinkConfig:
    return LinkConfig(ZR, WhatAmI.ROUTER, handshake_timeout_s=handshake_timeout_s)


def client_cfg() -> LinkConfig:
    return LinkConfig(ZC, WhatAmI.CLIENT)


def tls(settings: dict[str, Any]) -> TlsConfig:
    return tls_config({"transport": {"link": {"tls": settings}}})


def push(key: str, payload: bytes = b"x") -> Push:
    return Push(WireExpr(0, key), Put(payload))


class Events:
    """Link events, with a bounded wait for one matching a predicate."""

    def __init__(self) -> None:
        self.items: list[tuple[TcpLink, Event]] = []
        self._changed = asyncio.Event()

    def __call__(self, link: TcpLink, ev: Event) -> None:
        self.items.append((link, ev))
        self._changed.set()

    async def wait_for(self, pred: Callable[[TcpLink, Event], bool]) -> tuple[TcpLink, Event]:
        async def find() -> tuple[TcpLink, Event]:
            while True:
                for item in self.items:
                    if pred(*item):
                        return item
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(find(), WAIT)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def server(pki: Pki) -> KeyPair:
    return pki.server()


@pytest.fixture(scope="module")
def alice(pki: Pki) -> KeyPair:
    return pki.client("alice")


# --- endpoints and configuration -----------------------------------------------------------


def test_tls_endpoints_parse_and_keep_their_protocol() -> None:
    ep = Endpoint.parse("tls/localhost:7447?prio=1#root_ca_certificate_file=/a=b.pem;enable_mtls=true")
    assert (ep.protocol, ep.host, ep.port) == ("tls", "localhost", 7447)
    assert ep.params == (("root_ca_certificate_file", "/a=b.pem"), ("enable_mtls", "true"))
    assert str(ep) == "tls/localhost:7447"  # the locator: no metadata, no configuration
    assert str(Endpoint.parse("tls/[::1]:1")) == "tls/[::1]:1"
    assert Endpoint.parse("tcp/1.2.3.4:5").protocol == "tcp"
    with pytest.raises(UsageError, match="tls/HOST:PORT"):
        Endpoint.parse("serial/1.2.3.4:5")


def test_tls_config_keys_as_zenohd(pki: Pki, server: KeyPair) -> None:
    cfg = tls(
        {
            "root_ca_certificate": str(pki.ca_cert),
            "listen_certificate_base64": server.cert_base64(),
            "enable_mtls": True,
            "verify_name_on_connect": False,
            "so_sndbuf": 65536,
        }
    )
    assert cfg.params["root_ca_certificate_file"] == str(pki.ca_cert)
    assert cfg.pem("listen_certificate") == server.cert.read_bytes()
    assert cfg.flag("enable_mtls") and not cfg.flag("verify_name_on_connect")
    assert not cfg.flag("close_link_on_expiration")  # zenohd's defaults
    assert tls({}).flag("verify_name_on_connect")
    assert cfg.size("so_sndbuf") == 65536 and cfg.size("so_rcvbuf") is None
    # an endpoint's #parameters override the configuration's
    over = cfg.for_endpoint((("enable_mtls", "false"), ("iface", "lo")), "tls/x:1")
    assert not over.flag("enable_mtls") and "iface" not in over.params


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"root_ca_certificate": "/a", "root_ca_certificate_base64": "YQ=="}, "only one of"),
        ({"enable_mtls": "yes"}, "enable_mtls must be true or false"),
        ({"listen_certificate": 3}, "listen_certificate must be a non-empty string"),
        ({"so_rcvbuf": -1}, "so_rcvbuf must be a positive integer"),
    ],
)
def test_bad_tls_config_values_are_usage_errors(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        tls(settings)


def test_tls_material_errors_name_the_key_and_file(pki: Pki, server: KeyPair, tmp_path: Path) -> None:
    bad_pem = tmp_path / "bad.pem"
    bad_pem.write_text("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")
    missing = tmp_path / "missing.pem"
    ep = Endpoint.parse("tls/127.0.0.1:0")
    good = {"listen_certificate": str(server.cert), "listen_private_key": str(server.key)}
    cases: list[tuple[dict[str, Any], bool, str]] = [
        ({}, True, "listen_certificate and transport/link/tls/listen_private_key"),
        ({"listen_certificate": str(server.cert)}, True, "needs transport/link/tls/listen_private_key"),
        ({**good, "listen_certificate": str(missing)}, True, f"listen_certificate.*{missing}"),
        ({**good, "listen_certificate": str(bad_pem)}, True, f"listen_certificate \\(file {bad_pem}\\)"),
        ({**good, "listen_private_key": str(pki.ca_cert)}, True, "listen_private_key"),  # not a key
        ({**good, "enable_mtls": True}, True, "enable_mtls needs transport/link/tls/root_ca_certificate"),
        ({**good, "enable_mtls": True, "root_ca_certificate": str(bad_pem)}, True, f"root_ca_certificate.*{bad_pem}"),
        ({"root_ca_certificate": str(missing)}, False, f"root_ca_certificate.*{missing}"),
        ({"root_ca_certificate_base64": "***"}, False, "root_ca_certificate_base64 is not valid base64"),
        ({"enable_mtls": True}, False, "connect_certificate and connect_private_key"),
    ]
    for settings, server_side, message in cases:
        with pytest.raises(UsageError, match=message):
            prepare_tls(ep, tls(settings), server_side=server_side)
    # a tcp/ endpoint never reads TLS settings
    assert prepare_tls(Endpoint.parse("tcp/127.0.0.1:0"), tls({}), server_side=True) is None


def test_router_refuses_to_start_on_bad_tls_material(pki: Pki, server: KeyPair, tmp_path: Path) -> None:
    port = free_port()
    missing = tmp_path / "nope.key"
    tree = {
        "mode": "router",
        "listen": {"endpoints": [f"tcp/127.0.0.1:{port}", "tls/127.0.0.1:0"]},
        "scouting": {"multicast": {"enabled": False}},
        "transport": {"link": {"tls": {"listen_certificate": str(server.cert), "listen_private_key": str(missing)}}},
    }

    async def main() -> None:
        daemon = RouterDaemon(config_from_dict(tree))
        with pytest.raises(UsageError, match=f"listen_private_key.*{missing}"):
            await daemon.start()
        assert not daemon.listeners  # nothing listens, not even the tcp/ endpoint
        # a tls/ connect endpoint is checked too
        tree2 = {
            **tree,
            "listen": {"endpoints": [f"tcp/127.0.0.1:{port}"]},
            "connect": {"endpoints": ["tls/127.0.0.1:1"]},
            "transport": {"link": {"tls": {"root_ca_certificate": str(missing)}}},
        }
        daemon = RouterDaemon(config_from_dict(tree2))
        with pytest.raises(UsageError, match="root_ca_certificate"):
            await daemon.start()
        assert not daemon.listeners

    run(main)


def test_router_process_exits_naming_the_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "server-cert.pem"
    config = tmp_path / "router.json5"
    port = free_port()
    config.write_text(
        f'{{ mode: "router", listen: {{ endpoints: ["tls/127.0.0.1:{port}"] }},'
        " scouting: { multicast: { enabled: false } },"
        f' transport: {{ link: {{ tls: {{ listen_certificate: "{missing}",'
        f' listen_private_key: "{missing}" }} }} }} }}'
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pyzenoh", "router", "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=30,
        env=os.environ.copy(),
        check=False,
    )
    assert proc.returncode != 0
    assert "transport/link/tls/listen_certificate" in proc.stderr + proc.stdout
    assert str(missing) in proc.stderr + proc.stdout


# --- links ------------------------------------------------------------------------------


def test_tls_link_carries_messages_and_names_the_server(pki: Pki, server: KeyPair) -> None:
    async def main() -> None:
        server_ev = Events()
        lst = await listen("tls/127.0.0.1:0", router_cfg(), server_ev, tls=tls(pki.listen_config(server)))
        ep = lst.endpoints[0]
        assert str(ep).startswith("tls/127.0.0.1:")  # as announced (HELLO, link state)
        client = await connect(ep, client_cfg(), tls=tls(pki.connect_config()))
        assert client.protocol == "tls" and client.cert_common_name == "pyzenoh-test-server"
        link, _ = await server_ev.wait_for(lambda lk, e: isinstance(e, Established))
        assert link.protocol == "tls" and link.cert_common_name is None  # no client cert
        big = push("big", bytes(300_000))  # fragmented, over many TLS records
        client.send(push("a"))
        client.send(big)
        await server_ev.wait_for(lambda lk, e: isinstance(e, Received) and e.message == big)
        await client.aclose()
        await server_ev.wait_for(lambda lk, e: isinstance(e, LinkClosed))
        await lst.close()

    run(main)


def test_mtls_link_knows_the_client_common_name(pki: Pki, server: KeyPair, alice: KeyPair) -> None:
    async def main() -> None:
        server_ev = Events()
        lst = await listen("tls/127.0.0.1:0", router_cfg(), server_ev, tls=tls(pki.listen_config(server, mtls=True)))
        client = await connect(lst.endpoints[0], client_cfg(), tls=tls(pki.connect_config(alice)))
        link, _ = await server_ev.wait_for(lambda lk, e: isinstance(e, Established))
        assert link.cert_common_name == "alice" and link.protocol == "tls"
        ssl_object = link.transport.get_extra_info("ssl_object") if link.transport else None
        assert ssl_object is not None and ssl_object.version() == "TLSv1.3"  # zenohd's mTLS
        client.send(push("k"))
        await server_ev.wait_for(lambda lk, e: isinstance(e, Received))
        await client.aclose()
        await lst.close()

    run(main)


def test_base64_settings_and_endpoint_parameters(pki: Pki, server: KeyPair, alice: KeyPair) -> None:
    async def main() -> None:
        server_ev = Events()
        listen_tls = tls(
            {"listen_certificate_base64": server.cert_base64(), "listen_private_key_base64": server.key_base64()}
        )
        # mTLS switched on by the endpoint, its CA given there as a file
        lst = await listen(
            f"tls/127.0.0.1:0#enable_mtls=true;root_ca_certificate_file={pki.ca_cert}",
            router_cfg(),
            server_ev,
            tls=listen_tls,
        )
        port = lst.endpoints[0].port
        # no client certificate: refused (TLS 1.3: after the client's side of the handshake)
        with pytest.raises(OSError):
            await connect(f"tls/127.0.0.1:{port}", client_cfg(), tls=tls(pki.connect_config()))
        client_ep = (
            f"tls/127.0.0.1:{port}#root_ca_certificate_base64={pki.ca_base64()};"
            f"connect_certificate_base64={alice.cert_base64()};"
            f"connect_private_key_base64={alice.key_base64()};enable_mtls=true"
        )
        client = await connect(client_ep, client_cfg())
        link, _ = await server_ev.wait_for(lambda lk, e: isinstance(e, Established))
        assert link.cert_common_name == "alice"
        await client.aclose()
        await lst.close()

    run(main)


def test_verify_name_on_connect(pki: Pki) -> None:
    elsewhere = pki.server("other.example", common_name="other")

    async def main() -> None:
        lst = await listen("tls/127.0.0.1:0", router_cfg(), tls=tls(pki.listen_config(elsewhere)))
        ep = lst.endpoints[0]
        with pytest.raises(ssl.SSLCertVerificationError, match="IP address mismatch"):
            await connect(ep, client_cfg(), tls=tls(pki.connect_config()))
        client = await connect(ep, client_cfg(), tls=tls(pki.connect_config(verify_name=False)))
        assert client.cert_common_name == "other"
        await client.aclose()
        # without the name check the chain is still verified
        stranger = pki.unrelated()
        with pytest.raises(ssl.SSLCertVerificationError, match="unable to get local issuer"):
            await connect(ep, client_cfg(), tls=tls(stranger.connect_config(verify_name=False)))
        await lst.close()

    run(main)


def test_link_closes_when_the_peer_certificate_expires(pki: Pki, server: KeyPair) -> None:
    # A client certificate valid for a few more seconds; the server closes the link when
    # it expires (close_link_on_expiration). Bounded wait, no timing assertion.
    soon = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=4)
    brief = pki.client("brief", not_after=soon)

    async def main() -> None:
        server_ev = Events()
        settings = {**pki.listen_config(server, mtls=True), "close_link_on_expiration": True}
        lst = await listen("tls/127.0.0.1:0", router_cfg(), server_ev, tls=tls(settings))
        client = await connect(lst.endpoints[0], client_cfg(), tls=tls(pki.connect_config(brief)))
        await server_ev.wait_for(lambda lk, e: isinstance(e, Established))
        await asyncio.wait_for(client.closed, WAIT)
        await lst.close()

    run(main)


# --- the router: failed handshakes are counted, logged once, and hold nothing -------------


def test_router_survives_and_counts_failed_tls_handshakes(
    pki: Pki, server: KeyPair, alice: KeyPair, caplog: pytest.LogCaptureFixture
) -> None:
    tree = {
        "mode": "router",
        "listen": {"endpoints": ["tls/127.0.0.1:0"]},
        "scouting": {"multicast": {"enabled": False}},
        "adminspace": {"enabled": False},
        "transport": {"unicast": {"accept_timeout": 1000}, "link": {"tls": pki.listen_config(server, mtls=True)}},
    }
    rogue = pki.unrelated().client("alice")
    refused = [  # (what the router logs, the client's settings; None: plaintext tcp/)
        ("PEER_DID_NOT_RETURN_A_CERTIFICATE", tls(pki.connect_config())),
        (
            "CERTIFICATE_VERIFY_FAILED",
            tls(
                {
                    **pki.connect_config(),
                    "enable_mtls": True,
                    "connect_certificate": str(rogue.cert),
                    "connect_private_key": str(rogue.key),
                }
            ),
        ),
        ("WRONG_VERSION_NUMBER", None),
    ]

    async def main() -> None:
        daemon = RouterDaemon(config_from_dict(tree))
        await daemon.start()
        ep = daemon.listeners[0].endpoints[0]
        assert daemon.listen_endpoints() == [str(ep)] and str(ep).startswith("tls/127.0.0.1:")
        # a silent connection sits in the TLS handshake...
        silent, silent_writer = await asyncio.open_connection("127.0.0.1", ep.port)
        # ...while good clients still get in
        good = await connect(ep, client_cfg(), tls=tls(pki.connect_config(alice)))
        for _, settings in refused:
            target = ep if settings is not None else Endpoint("127.0.0.1", ep.port)
            with pytest.raises(OSError):  # ConnectionError is one too
                await connect(target, LinkConfig(ZenohId.from_str("c5"), WhatAmI.CLIENT), tls=settings)
        # the silent one is dropped at the handshake timeout (accept_timeout)
        assert await asyncio.wait_for(silent.read(), WAIT) == b""
        silent_writer.close()
        while daemon.stats.handshakes_failed < 4:  # bounded by run()'s timeout
            await asyncio.sleep(0.05)
        assert daemon.stats.handshakes_failed == 4
        again = await connect(
            ep, LinkConfig(ZenohId.from_str("c6"), WhatAmI.CLIENT), tls=tls(pki.connect_config(alice))
        )
        assert not good.is_closed and not again.is_closed
        assert sorted(f.link.cert_common_name for f in daemon.faces.by_id.values() if f.link) == ["alice", "alice"]
        await good.aclose()
        await again.aclose()
        await daemon.stop()

    with caplog.at_level(logging.INFO, logger="pyzenoh.transport.tcp"):
        run(main)
    failures = [r.getMessage() for r in caplog.records if r.getMessage().startswith("TLS handshake with 127.0.0.1:")]
    assert len(failures) == 4, failures  # one line per failed connection, with its address
    for reason, _ in refused:
        assert any(reason in f for f in failures), (reason, failures)
    assert any("no TLS handshake within 1 s" in f for f in failures), failures
