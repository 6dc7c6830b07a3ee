"""Fixtures shared by the interop test modules."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.interop.zenoh_procs import Proc, zenoh_session
from tests.interop.zenoh_procs import router as zenoh_router


@pytest.fixture(scope="package")
def router() -> Iterator[Proc]:
    """One real eclipse-zenoh 1.10.2 router for the modules that only open sessions on it
    and declare under their own prefixes (none stops or reconfigures it)."""
    with zenoh_router() as proc:
        yield proc


@pytest.fixture(scope="package")
def zs(router: Proc) -> Iterator[Any]:
    """An eclipse-zenoh client session of :func:`router`."""
    with zenoh_session(router.endpoint) as session:
        yield session
