"""transport/multilink.py's Gathering: the links of a new multilink session are held (not
read) until max_links have opened or GATHER_S passed, handed on a reliable one first, with
what each read while held; a held link that closes is forgotten."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from pyzenoh.transport import multilink
from pyzenoh.transport.multilink import Gathered, Gathering
from tests.waits import aexpect


class Held:
    """What the gathering touches of a link: its kind, QoS and reading switch."""

    def __init__(self, protocol: str) -> None:
        self.protocol = protocol
        self.link_qos = None
        self.reading = True

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True


def established(zid: str, key: bytes | None = b"k") -> Any:
    return SimpleNamespace(zid=zid, multilink=key)


def test_links_are_handed_on_together_reliable_first_with_what_they_read() -> None:
    async def run() -> None:
        got: list[Gathered] = []
        early: list[tuple[Any, Any]] = []

        def handed_on(link: Any, event: Any) -> None:
            assert got, "an early event came before its session opened"
            early.append((link, event))

        gathering = Gathering(asyncio.get_running_loop(), 2, got.append, handed_on)
        udp, tcp = Held("udp"), Held("tcp")
        assert gathering.offer(udp, established("a"))  # type: ignore[arg-type]
        assert not udp.reading
        assert gathering.keep(udp, "first frames")  # type: ignore[arg-type]
        assert not gathering.keep(tcp, "x")  # type: ignore[arg-type]  # not held
        assert gathering.offer(tcp, established("a"))  # type: ignore[arg-type]  # max_links: at once
        [links] = got
        assert [link for link, _ in links] == [tcp, udp]  # the reliable one first
        assert early == [(udp, "first frames")]
        assert udp.reading and tcp.reading
        # no MultiLink offered: not held
        assert not gathering.offer(Held("tcp"), established("b", None))  # type: ignore[arg-type]

    asyncio.run(run())


def test_a_lone_link_goes_on_after_the_wait_and_a_closed_one_is_forgotten(monkeypatch: Any) -> None:
    monkeypatch.setattr(multilink, "GATHER_S", 0.01)

    async def run() -> None:
        got: list[Gathered] = []
        gathering = Gathering(asyncio.get_running_loop(), 3, got.append, lambda link, event: None)
        lone, gone = Held("udp"), Held("tcp")
        gathering.offer(lone, established("a"))  # type: ignore[arg-type]
        gathering.offer(gone, established("c"))  # type: ignore[arg-type]
        gathering.closed(gone)  # type: ignore[arg-type]
        await aexpect(lambda: got, "the lone link handed on")
        await asyncio.sleep(0.03)  # an absence: no second hand-on (the closed link's)
        assert [[link for link, _ in links] for links in got] == [[lone]]

    asyncio.run(run())
