"""``pyzenoh router -c FILE`` as zenohd starts: real processes, refused configs exit non-zero
naming the key; an accepted one with harmless unimplemented settings warns once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pyzenoh.localnet import free_port
from tests.config.trees import zenoh_default_tree
from tests.fixtures.pyzenoh_router import run_router
from tests.security.certs import Pki

EXIT_TIMEOUT_S = 60.0


def _tls(**keys: Any) -> dict[str, Any]:
    return {"transport": {"link": {"tls": keys}}}


def _refusals(tmp: Path) -> list[tuple[str, str | dict[str, Any], list[str]]]:
    """(name, config, what the output must name) of configs the router must refuse."""
    pki = Pki(tmp / "pki")
    server = pki.server()
    missing = str(tmp / "missing.pem")
    tls_ep = {"listen": {"endpoints": [f"tls/127.0.0.1:{free_port()}"]}}
    return [
        (
            "misspelt top key",
            {"acces_control": {"enabled": True}},
            ["unknown config key 'acces_control' (did you mean 'access_control'?)"],
        ),
        (
            "misspelt deep key",
            _tls(enable_mtsl=True),
            ["unknown config key 'transport/link/tls/enable_mtsl' (did you mean 'enable_mtls'?)"],
        ),
        (
            "bad value",
            {"transport": {"link": {"tx": {"lease": "10s"}}}},
            ['transport/link/tx/lease: expected an unsigned integer, got "10s"'],
        ),
        (
            "out of range",
            {"transport": {"link": {"tx": {"batch_size": 70000}}}},
            ["transport/link/tx/batch_size: expected an integer from 0 to 65535, got 70000"],
        ),
        ("duplicate key", '{ mode: "router", mode: "router" }', ['Duplicate key "mode"']),
        (
            "moved pyzenoh key",
            {"transport": {"link": {"tx": {"queue": {"max_bytes": 1}}}}},
            ["pyzenoh/limits/send_queue_max_bytes"],
        ),
        (
            "pubkey",
            {"transport": {"auth": {"pubkey": {"private_key_file": "k.pem", "public_key_file": "p.pem"}}}},
            ["refusing to start", "transport/auth/pubkey/private_key_file", "transport/auth/pubkey/public_key_file"],
        ),
        ("namespace", {"namespace": "site/a"}, ["refusing to start", "namespace"]),
        (
            "serial endpoint",
            {"listen": {"endpoints": ["serial/ttyUSB0"]}},
            ["refusing to start", "serial/ttyUSB0"],
        ),
        (
            "vsock endpoint",
            {"connect": {"endpoints": {"router": ["vsock/VMADDR_CID_LOCAL:1"]}}},
            ["refusing to start", "vsock/VMADDR_CID_LOCAL:1"],
        ),
        (
            "required plugin",
            {"plugins": {"nosuch": {"__required__": True, "http_port": 8000}}},
            ["refusing to start", "plugins/nosuch"],
        ),
        (
            "missing certificate",
            {**tls_ep, **_tls(listen_certificate=missing, listen_private_key=str(server.key))},
            ["transport/link/tls/listen_certificate", missing],
        ),
        (
            "missing key",
            {**tls_ep, **_tls(listen_certificate=str(server.cert), listen_private_key=missing)},
            ["transport/link/tls/listen_private_key", missing],
        ),
        (
            "missing CA",
            {
                **tls_ep,
                **_tls(
                    listen_certificate=str(server.cert),
                    listen_private_key=str(server.key),
                    enable_mtls=True,
                    root_ca_certificate=missing,
                ),
            },
            ["transport/link/tls/root_ca_certificate", missing],
        ),
        (
            "access control start-up check",
            {
                "access_control": {
                    "enabled": True,
                    "rules": [{"id": "r", "messages": ["put"], "key_exprs": ["a/**"], "permission": "allow"}],
                    "subjects": [{"id": "s"}],
                    "policies": [{"rules": ["x"], "subjects": ["s"]}],
                }
            },
            ["access_control", "Rule 'x' in policy #0 does not exist in rules list"],
        ),
        (
            "missing dictionary",
            {"transport": {"auth": {"usrpwd": {"dictionary_file": missing}}}},
            ["transport/auth/usrpwd/dictionary_file", missing],
        ),
    ]


@pytest.mark.slow
def test_refused_configs_stop_the_router_naming_the_key(tmp_path: Path) -> None:
    cases = _refusals(tmp_path)
    procs = []
    for i, (name, config, _) in enumerate(cases):
        path = tmp_path / f"router-{i}.json5"
        text = (
            config
            if isinstance(config, str)
            else json.dumps({"mode": "router", "scouting": {"multicast": {"enabled": False}}, **config})
        )
        path.write_text(text)
        # no -l: a config refused at start-up must not get to listen anywhere
        cmd = [sys.executable, "-m", "pyzenoh", "router", "-c", str(path)]
        procs.append(
            subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=os.environ.copy(), text=True)
        )
    failures = []
    for (name, _, named), proc in zip(cases, procs, strict=True):
        try:
            output, _ = proc.communicate(timeout=EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
            failures.append(f"{name}: still running (it started): {output[-500:]}")
            continue
        if proc.returncode == 0:
            failures.append(f"{name}: exit status 0")
        missing_words = [word for word in named if word not in output]
        if missing_words:
            failures.append(f"{name}: output does not name {missing_words}: {output[-500:]}")
        if "Traceback" in output:
            failures.append(f"{name}: a traceback instead of a message: {output[-800:]}")
    assert not failures, "\n".join(failures)


def test_harmless_unimplemented_settings_warn_once_and_the_router_serves(tmp_path: Path) -> None:
    config = tmp_path / "router.json5"
    config.write_text("""{
      mode: "router",
      scouting: { multicast: { enabled: false }, gossip: { multihop: true } },
      transport: { unicast: { lowlatency: true }, link: { tcp: { so_sndbuf: 65536 } },
                   shared_memory: { enabled: false } },   // what pyzenoh does anyway: no warning
      plugins: { nosuch: { http_port: 8000 } },
      timestamping: { enabled: { router: true, peer: true } },  // peer: not this node's mode
      pyzenoh: { limits: { send_queue_max_bytes: 1048576 } },
    }""")
    with run_router(tmp_path, "-c", str(config)) as router:
        assert router.proc.poll() is None
    log = router.log.read_text()
    warnings = [line for line in log.splitlines() if "ignores these settings" in line]
    assert len(warnings) == 1, log
    for name in (
        "scouting/gossip/multihop",
        "transport/unicast/lowlatency",
        "transport/link/tcp/so_sndbuf",
        "plugins/nosuch",
    ):
        assert name in warnings[0]
    for quiet in ("shared_memory", "timestamping", "pyzenoh/limits"):
        assert quiet not in warnings[0]


def test_a_peer_mode_config_starts_a_router_naming_the_mode(tmp_path: Path) -> None:
    # zenohd's DEFAULT_CONFIG.json5 says mode: "peer"; pyzenoh router runs it as a router
    tree = {**zenoh_default_tree(), "mode": "peer", "scouting": {"multicast": {"enabled": False}}}
    config = tmp_path / "peer.json5"
    config.write_text(json.dumps(tree))
    with run_router(tmp_path, "-c", str(config)) as router:
        assert router.proc.poll() is None
    log = router.log.read_text()
    assert "mode: 'peer' is ignored: pyzenoh router runs as a router" in log, log


def test_zenohs_default_tree_starts_a_router_without_warnings(tmp_path: Path) -> None:
    tree = {**zenoh_default_tree(), "mode": "router", "scouting": {"multicast": {"enabled": False}}}
    config = tmp_path / "default.json5"
    config.write_text(json.dumps(tree))
    with run_router(tmp_path, "-c", str(config)) as router:
        assert router.proc.poll() is None
    assert "ignores these settings" not in router.log.read_text()
