"""Fixtures of the tests/ext interop tests: one real router for the package, a real and a
pyzenoh session on it, fresh keys, and a second router that can be linked later."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator

import pytest
import zenoh

import pyzenoh
from tests.interop.zenoh_procs import (
    Proc,
    pyzenoh_config,
    start_router,
    zenoh_config,
    zenoh_session,
)
from tests.interop.zenoh_procs import router as zenoh_router

_ids = itertools.count()


@pytest.fixture(scope="package")
def router() -> Iterator[Proc]:
    with zenoh_router() as proc:
        yield proc


@pytest.fixture(scope="package")
def zs(router: Proc) -> Iterator[zenoh.Session]:
    with zenoh_session(router.endpoint) as s:
        yield s


@pytest.fixture(scope="package")
def zs_ts(router: Proc) -> Iterator[zenoh.Session]:
    """A real session that timestamps (a real cache without miss detection needs it)."""
    c = zenoh_config(router.endpoint)
    c.insert_json5("timestamping/enabled", json.dumps(True))
    s = zenoh.open(c)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="package")
def ps(router: Proc) -> Iterator[pyzenoh.Session]:
    s = pyzenoh.open(pyzenoh_config(router.endpoint))
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def key() -> str:
    return f"adv/{next(_ids)}/k"


# --- late joiners: a publisher that was out of reach when the subscriber asked --------------------
#
# The publisher sits behind another router, linked to the subscriber's router only after it
# published. Its token is declared by hand once its cache is reachable: a token crossing a
# new router link can arrive before the routes to the queryable behind it (real publishers
# and subscribers race the same way), and the test is about what the token triggers.


@pytest.fixture
def island(router: Proc) -> Iterator[tuple[Proc, Callable[[], None]]]:
    """A router not linked to ``router`` yet, and a function that links the two (through
    a third router connecting to both)."""
    other = start_router()
    bridges: list[Proc] = []

    def link() -> None:
        bridges.append(start_router(extra={"connect/endpoints": [router.endpoint, other.endpoint]}))

    try:
        yield other, link
    finally:
        for p in (*bridges, other):
            p.stop()
