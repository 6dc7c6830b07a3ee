"""The asyncio API says what the blocking one says: every method the two share takes the
same parameters (names, kinds, defaults), and every blocking method the asyncio API does
not have is listed here with the reason. Adding a method to one side and not the other
fails this test until the other side or the list follows."""

from __future__ import annotations

import inspect

import pytest

from pyzenoh.session import aio
from pyzenoh.session.api import entities, publisher, querier, session

#: (asyncio class, blocking class)
PAIRS = [
    (aio.AsyncSession, session.Session),
    (aio.AsyncPublisher, publisher.Publisher),
    (aio.AsyncQuerier, querier.Querier),
    (aio.AsyncSubscriber, entities.Subscriber),
    (aio.AsyncQueryable, entities.Queryable),
    (aio.AsyncMatchingListener, entities.MatchingListener),
    (aio.AsyncLivelinessToken, entities.LivelinessToken),
    (aio.AsyncLiveliness, session.Liveliness),
]

#: Blocking methods the asyncio API leaves out, and why.
MISSING: dict[str, str] = {}
#: Methods both have whose parameters differ, and why.
DIFFERENT: dict[str, str] = {
    # an asyncio caller bounds a wait with asyncio.timeout / wait_for
    "Subscriber.recv": "no timeout parameter: asyncio.timeout bounds it",
    "Queryable.recv": "no timeout parameter: asyncio.timeout bounds it",
    "MatchingListener.recv": "no timeout parameter: asyncio.timeout bounds it",
}


def public(cls: type) -> dict[str, object]:
    out = {}
    for name in dir(cls):
        if name.startswith("_") and name not in (
            "__enter__",
            "__exit__",
            "__aenter__",
            "__aexit__",
            "__iter__",
            "__aiter__",
        ):
            continue
        out[name] = inspect.getattr_static(cls, name)
    return out


def params(fn: object) -> list[tuple[str, object, object]]:
    target = fn.fget if isinstance(fn, property) else getattr(fn, "__func__", fn)  # type: ignore[attr-defined]
    if not callable(target):
        return []
    return [(p.name, p.kind, p.default) for p in inspect.signature(target).parameters.values()]


#: Protocol methods that differ by nature: the blocking API's context managers and
#: iterators have asyncio counterparts.
COUNTERPARTS = {"__enter__": "__aenter__", "__exit__": "__aexit__", "__iter__": "__aiter__"}


@pytest.mark.parametrize(("async_cls", "sync_cls"), PAIRS, ids=lambda c: c.__name__)
def test_the_asyncio_api_mirrors_the_blocking_one(async_cls: type, sync_cls: type) -> None:
    a, s = public(async_cls), public(sync_cls)
    missing = sorted(
        f"{sync_cls.__name__}.{name}"
        for name in s
        if COUNTERPARTS.get(name, name) not in a and f"{sync_cls.__name__}.{name}" not in MISSING
    )
    extra = sorted(f"{async_cls.__name__}.{n}" for n in a if n not in s and n not in COUNTERPARTS.values())
    differ = sorted(
        f"{sync_cls.__name__}.{name}"
        for name in a
        if name in s and params(a[name]) != params(s[name]) and f"{sync_cls.__name__}.{name}" not in DIFFERENT
    )
    assert (missing, extra, differ) == ([], [], []), (
        f"blocking methods with no asyncio counterpart: {missing}; asyncio methods the blocking API lacks: "
        f"{extra}; same methods, other parameters: {differ} (make them agree, or list them with the reason)"
    )
