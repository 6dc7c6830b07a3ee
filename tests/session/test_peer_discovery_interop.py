"""Peers opened with zenoh's default configuration find each other by multicast scouting
(zenoh-python's docs example ``quickstart_sub.py``): a pyzenoh peer answers SCOUTs with
its listeners' locators and dials what it scouts. Two pyzenoh peers, and a pyzenoh peer
with a real 1.10.2 one, on this test process's own group (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import queue
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import pyzenoh
from pyzenoh.scouting.core import ADDRESS_ENV
from tests.waits import WAIT, until

zenoh = pytest.importorskip("zenoh")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(60)]


def _real_default_peer() -> Any:
    """A real peer with zenoh's defaults, on the suite's group."""
    c = zenoh.Config()
    c.insert_json5("scouting/multicast/address", json.dumps(os.environ[ADDRESS_ENV]))
    return zenoh.open(c)


@contextmanager
def _opened(*makers: Any) -> Iterator[list[Any]]:
    sessions = [make() for make in makers]
    try:
        yield sessions
    finally:
        for s in sessions:
            s.close()


def _meet(a: Any, b: Any, key: str) -> None:
    """``a``'s puts reach ``b``'s subscriber and back, within the wait bound."""
    for src, dst in ((a, b), (b, a)):
        got: queue.Queue[Any] = queue.Queue()
        sub = dst.declare_subscriber(f"{key}/**", got.put)
        assert until(lambda src=src, got=got: src.put(f"{key}/x", "hi") or not got.empty(), WAIT), "no route"
        assert got.get(timeout=WAIT).payload.to_string() == "hi"
        sub.undeclare()


def test_two_default_peers_find_each_other() -> None:
    with _opened(lambda: pyzenoh.open(pyzenoh.Config()), lambda: pyzenoh.open(pyzenoh.Config())) as (a, b):
        _meet(a, b, "disc/pp")
        assert until(lambda: len(list(a.info.peers_zid())) == 1 and len(list(b.info.peers_zid())) == 1)


def test_a_default_pyzenoh_peer_and_a_real_one_find_each_other() -> None:
    with _opened(lambda: pyzenoh.open(pyzenoh.Config()), _real_default_peer) as (a, b):
        _meet(a, b, "disc/pr")
        assert until(lambda: [str(z) for z in a.info.peers_zid()] == [str(b.zid())])


def test_no_scouting_when_disabled() -> None:
    off = {"scouting": {"multicast": {"enabled": False}}}
    with _opened(lambda: pyzenoh.open(off), lambda: pyzenoh.open(pyzenoh.Config())) as (_, b):
        # b scouts and a does not answer: the absence over a few SCOUT rounds (1 s, 2 s)
        assert not until(lambda: list(b.info.peers_zid()), 2.5)
