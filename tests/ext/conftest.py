"""What only the tests/ext interop tests use: a timestamping real session on ``zenohd``,
fresh keys, and a second router that can be linked later (the routers and the other
sessions come from tests/fixtures)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator

import pytest
import zenoh

from tests.fixtures.procs import Proc, zenoh_config

_ids = itertools.count()


@pytest.fixture(scope="package")
def zs_ts(zenohd: Proc) -> Iterator[zenoh.Session]:
    """A real session that timestamps (a real cache without miss detection needs it)."""
    c = zenoh_config(zenohd.endpoint)
    c.insert_json5("timestamping/enabled", json.dumps(True))
    s = zenoh.open(c)
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
def island(zenohd: Proc, zenohd_factory: Callable[..., Proc]) -> tuple[Proc, Callable[[], None]]:
    """A router not linked to ``zenohd`` yet, and a function that links the two (through
    a third router connecting to both)."""
    other = zenohd_factory()

    def link() -> None:
        zenohd_factory(extra={"connect/endpoints": [zenohd.endpoint, other.endpoint]})

    return other, link
