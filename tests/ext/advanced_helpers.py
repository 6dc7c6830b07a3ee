"""Helpers of the advanced publisher / subscriber interop tests."""

from __future__ import annotations

from typing import Any

import zenoh

import pyzenoh

WAIT = 5.0


def drain_replies(replies: Any) -> list[Any]:
    """The ok replies of a pyzenoh get, once it has ended (its timeout bounds the wait)."""
    return [r for r in replies if r.ok is not None]


def tokens(zs: zenoh.Session, key_expr: str) -> list[str]:
    return sorted(str(r.ok.key_expr) for r in zs.liveliness().get(key_expr) if r.ok is not None)


def texts(samples: list[Any]) -> list[str]:
    return [s.payload.to_string() for s in samples]


def sns(samples: list[Any]) -> list[int | None]:
    return [None if s.source_info is None else s.source_info.source_sn for s in samples]


def reachable(session: Any, selector: str) -> bool:
    """Whether a get on ``selector`` (an @adv key) gets a reply."""
    if isinstance(session, pyzenoh.Session):
        replies = session.get(selector, accept_replies=pyzenoh.ReplyKeyExpr.ANY, timeout=1.0)
    else:
        replies = session.get(selector, accept_replies=zenoh.ReplyKeyExpr.ANY, timeout=1.0)
    return any(r.ok is not None for r in replies)
