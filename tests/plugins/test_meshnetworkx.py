"""A third-party package no one here wrote: meshnetworkx 0.1.2 (PyPI) keeps a networkx graph
in a Zenoh storage. Its README example (``mx.Graph()``, which 0.1.2 names ``GraphZ``) runs
on "two devices" (two processes) against ``pyzenoh router`` with a memory storage on
``graph/**``, as its own router config sets up.

The test installs meshnetworkx and networkx into a temporary directory with pip
(``--no-deps``: eclipse-zenoh 1.10.2 is already installed); matplotlib, which meshnetworkx
imports for its ``draw()`` only, is replaced by an empty stub there (the real one is a
170 MB install). meshnetworkx dials ``tcp/localhost:7447``: the test is skipped when that
port is taken."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.plugins.conftest import WAIT, plugin_router

pytestmark = pytest.mark.interop

DEVICE_ONE = """
import meshnetworkx as mx
G = mx.GraphZ()
G.add_node(1, color="red")
G.add_edge(1, 2, color="pink")
G.close()
"""
DEVICE_TWO = """
import meshnetworkx as mx
G = mx.GraphZ()
print(sorted(G.nodes(data=True)))
print(sorted(G.edges(data=True)))
G.close()
"""


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the router binds (TIME_WAIT is fine)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_meshnetworkx_readme_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not _port_free(7447):
        pytest.skip("meshnetworkx dials localhost:7447, which is taken")
    site = tmp_path / "site"
    try:
        pip = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--no-deps",
                "--target",
                str(site),
                "meshnetworkx==0.1.2",
                "networkx>=3.4.1",
            ],
            check=False,
            capture_output=True,
            timeout=180,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("the package registry did not answer within 180 s")
    if pip.returncode != 0:
        pytest.skip(f"cannot install meshnetworkx from the registry: {pip.stderr.decode()[-300:]}")
    (site / "matplotlib").mkdir()
    (site / "matplotlib" / "__init__.py").write_text("")
    (site / "matplotlib" / "pyplot.py").write_text("def show(*a, **k):\n    pass\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    storage = 'plugins/storage_manager/storages/graph:{key_expr:"graph/**",volume:"memory"}'
    with plugin_router(tmp_path, "-l", "tcp/127.0.0.1:7447", "--cfg", storage, rest=False, ready=("storage_manager",)):
        env = {**os.environ, "PYTHONPATH": str(site)}

        def device(code: str) -> str:
            done = subprocess.run(
                [sys.executable, "-c", textwrap.dedent(code)],
                check=False,
                capture_output=True,
                timeout=WAIT * 4,
                env=env,
                cwd=tmp_path,
            )
            assert done.returncode == 0, done.stderr.decode()[-2000:]
            return done.stdout.decode()

        device(DEVICE_ONE)
        out = device(DEVICE_TWO).splitlines()
    # (0.1.2 turns node ids into strings, and lists this undirected edge as ('2', '1'))
    assert out[0] == "[('1', {'color': 'red'}), ('2', {})]"
    assert out[1] in ("[('1', '2', {'color': 'pink'})]", "[('2', '1', {'color': 'pink'})]")
