"""``pyzenoh demo``: the main job on embedded defaults, showing the whole system.

1. Starts ``pyzenoh router`` in a child process on 127.0.0.1, with a BIND 10 msgq daemon
   bridged into it and traffic recording on; when ``trustme`` is installed (the test
   extra) it is secured too: usrpwd on every link, a ``tls/`` endpoint requiring client
   certificates (mTLS) and an access control rule.
2. Drives it: a pyzenoh subscriber and a real eclipse-zenoh publisher (when installed),
   a queryable and a get, liveliness tokens, a msgq client talking to Zenoh, and (secured)
   a refused password, an mTLS client and a put the access control drops.
   A second, edge router (recording too) connects to it, with a subscriber of its own:
   the two make a mesh.
3. Stops the routers (SIGTERM) and runs the Spark pipeline (embedded ``local[*]``) over
   both recordings: each router's tables and audit, and the mesh's (every sample followed
   across the two routers), plus ``report.html``.

``--serve`` instead keeps the router running on the given endpoint until Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyzenoh.localnet import free_port, wait_listening

WAIT_S = 10.0
#: The demo's usrpwd user, and the common name of its mTLS client certificate.
DEMO_USER, DEMO_PASSWORD, SENSOR_CN = "demo", "demo-password", "sensor-1"


@dataclass(frozen=True)
class Security:
    """The demo router's security: config sections for the router and its clients."""

    tls_endpoint: str
    router: dict[str, Any]
    client_tls: dict[str, Any]  # transport/link/tls of the mTLS client

    @staticmethod
    def make(directory: Path, tls_port: int) -> Security | None:
        """Certificates (a throwaway CA), a user dictionary and the config; None without
        ``trustme``."""
        try:
            import trustme
        except ImportError:
            return None
        ca = trustme.CA(organization_name="pyzenoh demo CA")
        files = {
            name: str(directory / f"{name}.pem") for name in ("ca", "router", "router-key", "sensor", "sensor-key")
        }
        ca.cert_pem.write_to_path(files["ca"])
        for stem, leaf in (
            ("router", ca.issue_cert("localhost", "127.0.0.1", common_name="router")),
            ("sensor", ca.issue_cert("sensor-1.demo", common_name=SENSOR_CN)),
        ):
            Path(files[stem]).write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
            leaf.private_key_pem.write_to_path(files[f"{stem}-key"])
        users = directory / "users.txt"
        users.write_text(f"{DEMO_USER}:{DEMO_PASSWORD}\n")
        router = {
            "transport": {
                "link": {
                    "tls": {
                        "root_ca_certificate": files["ca"],
                        "enable_mtls": True,
                        "listen_certificate": files["router"],
                        "listen_private_key": files["router-key"],
                    }
                },
                "auth": {"usrpwd": {"dictionary_file": str(users)}},
            },
            "access_control": {
                "enabled": True,
                "default_permission": "allow",
                "rules": [
                    {
                        "id": "sensors-keep-out-of-secrets",
                        "permission": "deny",
                        "flows": ["ingress"],
                        "messages": ["put", "delete"],
                        "key_exprs": ["demo/secret/**"],
                    }
                ],
                "subjects": [{"id": "sensors", "cert_common_names": [SENSOR_CN]}],
                "policies": [{"rules": ["sensors-keep-out-of-secrets"], "subjects": ["sensors"]}],
            },
        }
        client_tls = {
            "root_ca_certificate": files["ca"],
            "enable_mtls": True,
            "connect_certificate": files["sensor"],
            "connect_private_key": files["sensor-key"],
        }
        return Security(f"tls/localhost:{tls_port}", router, client_tls)

    @staticmethod
    def credentials(password: str = DEMO_PASSWORD) -> dict[str, Any]:
        return {"auth": {"usrpwd": {"user": DEMO_USER, "password": password}}}


def _say(text: str) -> None:
    print(f"[demo] {text}", flush=True)


def _drive(endpoint: str, msgq_socket: str, security: Security | None, rest_port: int, edge: str) -> None:
    """Exercise pub/sub (also across the mesh to the ``edge`` router), queries,
    liveliness, the REST plugin and storage, and the msgq bridge through the router."""
    import pyzenoh.session as pz
    from pyzenoh.msgq import Session as MsgqSession
    from pyzenoh.msgq import decode

    conf: dict[str, Any] = {"mode": "client", "connect": {"endpoints": [endpoint]}}
    if security is not None:
        conf["transport"] = Security.credentials()
    edge_conf: dict[str, Any] = {"mode": "client", "connect": {"endpoints": [edge]}}
    if security is not None:
        edge_conf["transport"] = Security.credentials()
    with pz.open(conf) as sub_s, pz.open(conf) as pub_s, pz.open(edge_conf) as edge_s:
        samples: queue.Queue[Any] = queue.Queue()
        sub_s.declare_subscriber("demo/**", samples.put)
        edge_samples: queue.Queue[Any] = queue.Queue()
        edge_s.declare_subscriber("demo/temperature/**", edge_samples.put)
        probe = pub_s.declare_publisher("demo/temperature/probe")
        deadline = time.monotonic() + WAIT_S  # until both subscribers are known here
        while not probe.matching_status.matching and time.monotonic() < deadline:
            time.sleep(0.05)
        probe.undeclare()
        time.sleep(0.3)
        for i in range(20):
            pub_s.put(f"demo/temperature/room{i % 3}", f"{20 + i * 0.5:.1f}", encoding="text/plain")
        pub_s.delete("demo/temperature/room0")
        got = [samples.get(timeout=WAIT_S) for _ in range(21)]
        _say(f"pyzenoh subscriber received {len(got)} samples (last: {got[-1].kind} {got[-1].key_expr})")
        on_edge = [edge_samples.get(timeout=WAIT_S) for _ in range(21)]
        _say(f"... and {len(on_edge)} reached the subscriber on the edge router, across the mesh")
        _drive_rest(rest_port)
        s = samples.get(timeout=WAIT_S)  # the REST PUT, as any Zenoh subscriber sees it
        _say(f"REST PUT -> pyzenoh subscriber: {s.key_expr} = {s.payload.to_string()!r}")

        try:
            import zenoh
        except ImportError:  # eclipse-zenoh is a test extra: without it, pyzenoh only
            zenoh_present = False
        else:
            zenoh_present = True
        if zenoh_present:
            zconf = zenoh.Config()
            zconf.insert_json5("mode", '"client"')
            zconf.insert_json5("connect/endpoints", f'["{endpoint}"]')
            zconf.insert_json5("scouting/multicast/enabled", "false")
            if security is not None:
                zconf.insert_json5("transport/auth/usrpwd", json.dumps(Security.credentials()["auth"]["usrpwd"]))
            with zenoh.open(zconf) as zs:
                zs.put("demo/from-eclipse-zenoh", "hello from the Rust core")
                s = samples.get(timeout=WAIT_S)
                _say(
                    f"real eclipse-zenoh client -> pyzenoh router -> pyzenoh: {s.key_expr} = {s.payload.to_string()!r}"
                )
                zs.declare_queryable("demo/answer", lambda q: q.reply("demo/answer", "42"))
                time.sleep(0.3)
                replies = [r.ok.payload.to_string() for r in pub_s.get("demo/answer", timeout=5) if r.ok]
                _say(f"pyzenoh get answered by an eclipse-zenoh queryable: {replies}")
        pub_s.declare_queryable("demo/status", lambda q: q.reply("demo/status", "all good"))
        time.sleep(0.3)
        replies = [r.ok.payload.to_string() for r in sub_s.get("demo/status", timeout=5) if r.ok]
        _say(f"pyzenoh get -> pyzenoh queryable: {replies}")

        token = pub_s.liveliness().declare_token("demo/alive/publisher")
        time.sleep(0.3)
        alive = [str(r.ok.key_expr) for r in sub_s.liveliness().get("demo/alive/**", timeout=5) if r.ok]
        _say(f"liveliness tokens alive: {alive}")
        token.undeclare()

        bridged: queue.Queue[Any] = queue.Queue()
        sub_s.declare_subscriber("@msgq/**", bridged.put)
        time.sleep(0.3)
        with MsgqSession(msgq_socket) as cc:
            cc.group_sendmsg({"command": ["shutdown"], "from": "bind10-style"}, "Boss")
            s = bridged.get(timeout=WAIT_S)
            _say(f"msgq client -> Zenoh subscriber on {s.key_expr}: {decode(s.payload.to_bytes())!r}")
            cc.group_subscribe("Demo")
            cc.ping()
            pub_s.put("@msgq/Demo/%2A", b"plain zenoh bytes")
            msg, env = cc.group_recvmsg(nonblock=False, timeout=WAIT_S)
            group = env.get("group", "?") if env else "?"
            _say(f"Zenoh put -> msgq client (group {group!r}): {msg!r}")

        if security is not None:
            _drive_secured(conf, security, samples)


def _drive_rest(port: int) -> None:
    """The REST plugin (zenohd's --rest-http-port) and the memory storage on
    demo/temperature/**: what the storage keeps of the puts above (room0 was deleted), then
    a PUT over HTTP that a get through REST finds."""
    import urllib.request

    base = f"http://127.0.0.1:{port}"

    def rest(method: str, path: str, body: bytes | None = None) -> Any:
        req = urllib.request.Request(base + path, data=body, method=method, headers={"Content-Type": "text/plain"})
        with urllib.request.urlopen(req, timeout=WAIT_S) as resp:
            data = resp.read()
            return json.loads(data) if data else None

    deadline = time.monotonic() + WAIT_S
    stored: list[Any] = []
    while time.monotonic() < deadline:  # the storage takes the puts as they arrive
        stored = rest("GET", "/demo/temperature/**")
        if len(stored) == 2:
            break
        time.sleep(0.1)
    _say(f"REST GET /demo/temperature/** from the memory storage: {sorted((r['key'], r['value']) for r in stored)}")
    rest("PUT", "/demo/temperature/outside", b"12.5")
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and not rest("GET", "/demo/temperature/outside"):
        time.sleep(0.1)
    _say(f"REST PUT then GET /demo/temperature/outside: {rest('GET', '/demo/temperature/outside')}")


def _drive_secured(conf: dict[str, Any], security: Security, samples: queue.Queue[Any]) -> None:
    """A refused password; an mTLS client whose put to demo/secret/** the ACL drops."""
    import pyzenoh.session as pz

    try:
        pz.open({**conf, "transport": Security.credentials("wrong")}).close()
        _say("a wrong password was accepted (unexpected)")
    except (ConnectionError, OSError) as exc:
        _say(f"usrpwd: a wrong password is refused before any data: {exc}")
    sensor_conf = {
        "mode": "client",
        "connect": {"endpoints": [security.tls_endpoint]},
        "transport": {**Security.credentials(), "link": {"tls": security.client_tls}},
    }
    with pz.open(sensor_conf) as sensor:
        # Denied data is dropped silently (the recording says so: the audit expects it).
        sensor.put("demo/secret/door-code", "1234")
        sensor.put("demo/temperature/roof", "18.5")
        s = samples.get(timeout=WAIT_S)
        _say(
            f"mTLS client (certificate CN {SENSOR_CN!r}) over {security.tls_endpoint}: subscriber got "
            f"{s.key_expr} = {s.payload.to_string()!r}, not its put to demo/secret/door-code"
        )
        for reply in sensor.get("@/*/router/access_control", timeout=5):
            if reply.ok:
                _say(
                    f"admin space {reply.ok.key_expr}: denials by rule "
                    f"{json.loads(reply.ok.payload.to_bytes()).get('denied')}"
                )


def _demo(args: argparse.Namespace) -> int:
    out = Path(args.output).resolve()
    out.mkdir(parents=True, exist_ok=True)
    for old in ("recording", "recording-edge", "tables"):  # a demo records afresh
        shutil.rmtree(out / old, ignore_errors=True)
    recording = out / "recording"
    edge_recording = out / "recording-edge"
    tables = out / "tables"
    port, tls_port, rest_port, edge_port = free_port(), free_port(), free_port(), free_port()
    endpoint = f"tcp/127.0.0.1:{port}"
    edge = f"tcp/127.0.0.1:{edge_port}"
    with tempfile.TemporaryDirectory(prefix="pzdemo") as tmp:
        msgq_socket = str(Path(tmp) / "msgq.sock")
        security = Security.make(Path(tmp), tls_port)
        config = Path(tmp) / "router.json5"
        listen = [endpoint] if security is None else [endpoint, security.tls_endpoint]
        config.write_text(json.dumps({"listen": {"endpoints": listen}, **(security.router if security else {})}))
        cmd = [
            sys.executable,
            "-m",
            "pyzenoh",
            "--log-level",
            "warning",
            "router",
            "-c",
            str(config),
            "--msgq",
            msgq_socket,
            "--record",
            str(recording),
            "--rest-http-port",
            f"127.0.0.1:{rest_port}",
            "--cfg",
            'plugins/storage_manager/storages/demo:{key_expr:"demo/temperature/**",volume:"memory"}',
        ]
        _say(f"starting: {' '.join(cmd[1:])}")
        router = subprocess.Popen(cmd, env=os.environ.copy())
        try:
            wait_listening(port, router)
            if security is None:
                _say("(trustme is not installed: the router runs without TLS, usrpwd and access control)")
            else:
                wait_listening(tls_port, router)
                _say(
                    f"secured: usrpwd on every link, {security.tls_endpoint} requires a client certificate "
                    "of the demo CA, access control keeps sensors out of demo/secret/**"
                )
            _say(
                f"router listening on {', '.join(listen)}, REST on 127.0.0.1:{rest_port} with a memory storage on "
                f"demo/temperature/**, msgq on {msgq_socket}, recording to {recording}"
            )
            wait_listening(rest_port, router)
            edge_config = Path(tmp) / "edge.json5"
            # secured: the edge logs in to the router, and asks its own clients the same
            auth: dict[str, Any] = {}
            if security is not None:
                usrpwd = dict(Security.credentials()["auth"]["usrpwd"])
                usrpwd["dictionary_file"] = security.router["transport"]["auth"]["usrpwd"]["dictionary_file"]
                auth = {"transport": {"auth": {"usrpwd": usrpwd}}}
            edge_config.write_text(
                json.dumps({"listen": {"endpoints": [edge]}, "connect": {"endpoints": [endpoint]}, **auth})
            )
            edge_cmd = [sys.executable, "-m", "pyzenoh", "--log-level", "warning", "router", "-c", str(edge_config)]
            edge_router = subprocess.Popen([*edge_cmd, "--record", str(edge_recording)], env=os.environ.copy())
            try:
                wait_listening(edge_port, edge_router)
                _say(f"edge router on {edge}, connected to {endpoint}, recording to {edge_recording}")
                _drive(endpoint, msgq_socket, security, rest_port, edge)
            finally:
                edge_router.send_signal(signal.SIGTERM)
                _say(f"edge router stopped (exit {edge_router.wait(timeout=20)})")
        finally:
            router.send_signal(signal.SIGTERM)
            code = router.wait(timeout=20)
            _say(f"router stopped (exit {code})")
    if args.no_pipeline:
        return 0
    from pyzenoh.pipeline.jobs import run_pipeline

    _say("running the Spark pipeline over both recordings (local[*]): each router's tables, then the mesh's")
    summary = run_pipeline([recording, edge_recording], tables, master=args.master, progress=True)
    _say(f"tables and report in {tables}: {summary}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    import asyncio

    from pyzenoh.router.cli import run_router
    from pyzenoh.router.config import RouterConfig

    asyncio.run(run_router(RouterConfig(listen=(args.serve,))))
    return 0


def register_cli(subparsers: Any) -> None:
    p = subparsers.add_parser("demo", help="run the router with a demo path through the whole system")
    p.add_argument("--output", default="out/demo", help="where the recording, tables and report go")
    p.add_argument("--master", default=None, help="Spark master (default local[*])")
    p.add_argument("--no-pipeline", action="store_true", help="skip the Spark pipeline")
    p.add_argument("--serve", metavar="ENDPOINT", help="just run the router on ENDPOINT until Ctrl-C")
    p.set_defaults(handler=lambda a: _serve(a) if a.serve else _demo(a))
