"""unixsock-stream endpoints and their socket file: parsing, a stale file replaced, a live
one refused, the file removed when the listener closes, a link both ways (pyzenoh only)."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import pytest

from pyzenoh.codec import WhatAmI, ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.transport.dial import connect
from pyzenoh.transport.endpoint import Endpoint
from pyzenoh.transport.link import LinkConfig
from pyzenoh.transport.listener import listen
from pyzenoh.transport.unixsock import replace_stale_socket

pytestmark = pytest.mark.timeout(30)


def short(tmp: Path, name: str) -> str:
    path = str(tmp / name)
    return path if len(path) < 100 else f"/tmp/pz-ut-{os.getpid()}-{name}"


def test_parse_keeps_the_path() -> None:
    ep = Endpoint.parse("unixsock-stream//tmp/a b.sock?x=1#so_sndbuf=1")
    assert (ep.protocol, ep.host, ep.port) == ("unixsock-stream", "/tmp/a b.sock", 0)
    assert str(ep) == "unixsock-stream//tmp/a b.sock"
    with pytest.raises(UsageError, match="no socket path"):
        Endpoint.parse("unixsock-stream/")


def test_a_regular_file_is_never_removed(tmp_path: Path) -> None:
    path = tmp_path / "plain"
    path.write_text("keep")
    with pytest.raises(UsageError, match="not a socket"):
        asyncio.run(replace_stale_socket(str(path)))
    assert path.read_text() == "keep"


def test_link_both_ways_stale_file_replaced_and_removed(tmp_path: Path) -> None:
    path = short(tmp_path, "l.sock")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)
    stale.close()

    async def run() -> None:
        config = LinkConfig(ZenohId.from_str("a1"), WhatAmI.ROUTER, handshake_timeout_s=5.0)
        listener = await listen(f"unixsock-stream/{path}", config)
        assert [str(e) for e in listener.endpoints] == [f"unixsock-stream/{path}"]
        with pytest.raises(UsageError, match="address in use"):
            await listen(f"unixsock-stream/{path}", config)
        client = LinkConfig(ZenohId.from_str("c1"), WhatAmI.CLIENT, handshake_timeout_s=5.0)
        link = await connect(f"unixsock-stream/{path}", client)
        assert link.protocol == "unixsock-stream" and link.remote_address is None
        await link.aclose()
        await listener.close()

    asyncio.run(run())
    assert not os.path.exists(path)
