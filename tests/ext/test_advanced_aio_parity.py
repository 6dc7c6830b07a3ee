"""The asyncio advanced publisher and subscriber say what the blocking ones say: every
public method the two share takes the same parameters (names, kinds, defaults), as do the
declaration functions; every difference is listed here with the reason (the rule of
tests/session/test_aio_parity.py)."""

from __future__ import annotations

import pytest

import pyzenoh.ext as px
import pyzenoh.ext.aio as pxa
from tests.session.test_aio_parity import COUNTERPARTS, params, public

#: (asyncio class, blocking class)
PAIRS = [
    (pxa.AsyncAdvancedSubscriber, px.AdvancedSubscriber),
    (pxa.AsyncAdvancedPublisher, px.AdvancedPublisher),
    (pxa.AsyncSampleMissListener, px.SampleMissListener),
]

#: Methods both have whose parameters differ, and why.
DIFFERENT: dict[str, str] = {
    "AdvancedSubscriber.recv": "no timeout parameter: asyncio.timeout bounds it",
    "SampleMissListener.recv": "no timeout parameter: asyncio.timeout bounds it",
}


@pytest.mark.parametrize(("async_cls", "sync_cls"), PAIRS, ids=lambda c: c.__name__)
def test_the_asyncio_advanced_classes_mirror_the_blocking_ones(async_cls: type, sync_cls: type) -> None:
    a, s = public(async_cls), public(sync_cls)
    missing = sorted(f"{sync_cls.__name__}.{n}" for n in s if COUNTERPARTS.get(n, n) not in a)
    extra = sorted(f"{async_cls.__name__}.{n}" for n in a if n not in s and n not in COUNTERPARTS.values())
    differ = sorted(
        f"{sync_cls.__name__}.{n}"
        for n in a
        if n in s and params(a[n]) != params(s[n]) and f"{sync_cls.__name__}.{n}" not in DIFFERENT
    )
    assert (missing, extra, differ) == ([], [], []), (
        f"blocking methods with no asyncio counterpart: {missing}; asyncio methods the blocking ones lack: "
        f"{extra}; same methods, other parameters: {differ}"
    )


@pytest.mark.parametrize("name", ["declare_advanced_publisher", "declare_advanced_subscriber"])
def test_the_declarations_take_the_same_parameters(name: str) -> None:
    assert params(getattr(pxa, name)) == params(getattr(px, name))


def test_the_asyncio_module_has_the_configs_and_miss() -> None:
    for name in ("CacheConfig", "HistoryConfig", "Miss", "MissDetectionConfig", "RecoveryConfig", "RepliesConfig"):
        assert getattr(pxa, name) is getattr(px, name)
