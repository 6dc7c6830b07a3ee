"""The plugin host through ``pyzenoh router``'s command line: a third-party plugin from a
``pyzenoh.plugins`` entry point, required plugins that cannot start, -V and RUST_LOG."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pyzenoh.localnet import free_port
from tests.plugins.conftest import plugin_router, zget

pytestmark = pytest.mark.interop

PLUGIN = '''
class Hello:
    """A plugin no one here wrote into pyzenoh: a queryable answering from the router."""

    def __init__(self, name, config, context):
        self.greeting = config.get("greeting", "hello")
        self.context = context

    async def start(self):
        session = self.context.session()
        session.declare_queryable("hello/**", self.answer)

    def answer(self, query):
        from pyzenoh.codec import Encoding
        self.context.count("answers")
        return [(query.key, self.greeting.encode(), Encoding.from_str("text/plain"), None)]

    async def stop(self):
        pass

    def status(self):
        return {"greeting": self.greeting}
'''


def install_plugin(root: Path) -> None:
    root.mkdir()
    (root / "hello_plugin.py").write_text(textwrap.dedent(PLUGIN))
    info = root / "hello_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hello-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[pyzenoh.plugins]\nhello = hello_plugin:Hello\n")


def test_a_plugin_from_an_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(tmp_path / "site")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")]))
    with plugin_router(
        tmp_path, "-P", "hello", "--cfg", 'plugins/hello/greeting:"bonjour"', rest=False, ready=("hello",)
    ) as r:
        s = r.open()
        try:
            [reply] = zget(s, "hello/world")
            assert reply.payload.to_bytes() == b"bonjour" and str(reply.key_expr) == "hello/world"
            [status] = zget(s, "@/*/router/status/plugins/hello/greeting")
            assert status.payload.to_string() == '"bonjour"'
            [path] = zget(s, "@/*/router/status/plugins/hello/__path__")
            assert path.payload.to_string() == "hello_plugin:Hello"
        finally:
            s.close()


def run_to_exit(*args: str) -> subprocess.CompletedProcess[bytes]:
    cmd = [
        sys.executable,
        "-m",
        "pyzenoh",
        "router",
        "-l",
        f"tcp/127.0.0.1:{free_port()}",
        "--no-multicast-scouting",
        *args,
    ]
    return subprocess.run(cmd, check=False, capture_output=True, timeout=60, env=os.environ.copy())


def test_an_unknown_required_plugin_stops_the_router_naming_it() -> None:
    done = run_to_exit("-P", "nosuch")
    assert done.returncode == 2 and b"plugins/nosuch" in done.stderr


def test_a_rest_port_taken_stops_the_router_naming_the_plugin() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        done = run_to_exit("--rest-http-port", f"127.0.0.1:{busy.getsockname()[1]}")
    assert done.returncode == 2
    assert b"required plugin 'rest' failed to start" in done.stderr and b"plugins/rest/http_port" in done.stderr


def test_a_bad_rest_config_stops_the_router_naming_the_key() -> None:
    done = run_to_exit("--cfg", "plugins/rest:{__required__:true,http_port:8000,typo:1}")
    assert done.returncode == 2 and b"plugins/rest/typo" in done.stderr


def test_version_and_rust_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pyzenoh", "router", "-V"], check=False, capture_output=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith(b"pyzenoh router v1.10.2")
    monkeypatch.setenv("RUST_LOG", "z=warn")
    with plugin_router(tmp_path, rest=False) as r:
        pass
    assert " INFO " not in r.router.log.read_text()  # zenohd's filter: z=warn hides the info lines
    monkeypatch.setenv("RUST_LOG", "z=warn,pyzenoh::router::daemon=info")
    with plugin_router(tmp_path, rest=False) as r:
        pass
    log = r.router.log.read_text()
    assert "INFO pyzenoh.router.daemon" in log and "INFO pyzenoh.router.admin" not in log
