"""The router's event loop: uvloop's when installed (unless asyncio is asked for),
asyncio's otherwise, with a warning when uvloop is asked for and missing."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest

from pyzenoh import loop

HAVE_UVLOOP = importlib.util.find_spec("uvloop") is not None


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_default_is_uvloop_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(loop.ENV, raising=False)
    assert loop.run(_loop_module()).startswith("uvloop" if HAVE_UVLOOP else "asyncio")


def test_asyncio_when_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(loop.ENV, "asyncio")
    assert loop.loop_factory() is asyncio.new_event_loop
    assert loop.run(_loop_module()).startswith("asyncio")


def test_uvloop_when_asked_for(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(loop.ENV, "uvloop")
    factory = loop.loop_factory()
    if HAVE_UVLOOP:
        assert factory is not asyncio.new_event_loop
    else:
        assert factory is asyncio.new_event_loop and "not installed" in caplog.text


def test_unknown_choice_warns_and_means_auto(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(loop.ENV, "tokio")
    factory = loop.loop_factory()
    assert "none of" in caplog.text
    assert (factory is not asyncio.new_event_loop) is HAVE_UVLOOP


def test_tls_keeps_auto_on_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    """uvloop's server-side start_tls never finishes a handshake: see loop.py."""
    monkeypatch.delenv(loop.ENV, raising=False)
    assert loop.loop_factory(tls=True) is asyncio.new_event_loop
    monkeypatch.setenv(loop.ENV, "uvloop")
    assert (loop.loop_factory(tls=True) is not asyncio.new_event_loop) is HAVE_UVLOOP
