"""The router's event loop: asyncio's by default, uvloop only when asked for."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest

from pyzenoh import loop


def test_asyncio_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(loop.ENV, raising=False)
    assert loop.loop_factory() is asyncio.new_event_loop

    async def main() -> str:
        return type(asyncio.get_running_loop()).__module__

    assert loop.run(main()).startswith("asyncio")


def test_uvloop_when_asked_for_and_installed(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(loop.ENV, "uvloop")
    factory = loop.loop_factory()
    if importlib.util.find_spec("uvloop") is None:
        assert factory is asyncio.new_event_loop and "not installed" in caplog.text
    else:
        assert factory is not asyncio.new_event_loop
