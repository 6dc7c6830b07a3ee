"""The configurations of advanced publishers and subscribers, as zenoh-python 1.10 names them.

:class:`CacheConfig` (with :class:`RepliesConfig`) and :class:`MissDetectionConfig` for
an AdvancedPublisher; :class:`HistoryConfig` and :class:`RecoveryConfig` for an
AdvancedSubscriber. Periods and ages are seconds (a timedelta too for
``periodic_queries``); invalid values raise :class:`~pyzenoh.errors.ZError`.
"""

from __future__ import annotations

import datetime as _dt

from typing_extensions import override

from pyzenoh.session import CongestionControl, Priority, ZError


def _seconds(value: float | _dt.timedelta | None, name: str) -> float | None:
    """A period or age in seconds (zenoh-python takes numbers, or a timedelta for
    ``RecoveryConfig.periodic_queries``)."""
    if value is None:
        return None
    if isinstance(value, _dt.timedelta):
        secs = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        secs = float(value)
    else:
        raise ZError(f"{name} must be a number of seconds, not {value!r}")
    if secs < 0:
        raise ZError(f"{name} must not be negative")
    return secs


class RepliesConfig:
    """QoS of the replies an :class:`AdvancedPublisher`'s cache sends (default: Block,
    Data, not express)."""

    __slots__ = ("congestion_control", "express", "priority")

    def __init__(
        self,
        *,
        congestion_control: CongestionControl | None = None,
        priority: Priority | None = None,
        express: bool | None = None,
    ) -> None:
        self.congestion_control = congestion_control if congestion_control is not None else CongestionControl.BLOCK
        self.priority = priority if priority is not None else Priority.DATA
        self.express = bool(express)

    @override
    def __repr__(self) -> str:
        return (
            f"RepliesConfig(congestion_control={self.congestion_control}, priority={self.priority}, "
            f"express={self.express})"
        )


class CacheConfig:
    """How many samples an :class:`AdvancedPublisher` keeps (default 1) and the QoS of
    the replies that serve them."""

    __slots__ = ("max_samples", "replies_config")

    def __init__(self, max_samples: int | None = None, *, replies_config: RepliesConfig | None = None) -> None:
        if max_samples is not None and (not isinstance(max_samples, int) or max_samples < 0):
            raise ZError(f"max_samples must be a non-negative integer, not {max_samples!r}")
        self.max_samples = 1 if max_samples is None else max_samples
        self.replies_config = replies_config if replies_config is not None else RepliesConfig()

    @override
    def __repr__(self) -> str:
        return f"CacheConfig(max_samples={self.max_samples}, replies_config={self.replies_config!r})"


class HistoryConfig:
    """What an :class:`AdvancedSubscriber` asks for at declaration: ``max_samples`` per
    source, samples no older than ``max_age`` seconds, and whether publishers that appear
    later are asked too (``detect_late_publishers``)."""

    __slots__ = ("detect_late_publishers", "max_age", "max_samples")

    def __init__(
        self,
        *,
        detect_late_publishers: bool | None = None,
        max_samples: int | None = None,
        max_age: float | None = None,
    ) -> None:
        if max_samples is not None and (not isinstance(max_samples, int) or max_samples < 0):
            raise ZError(f"max_samples must be a non-negative integer, not {max_samples!r}")
        self.detect_late_publishers = bool(detect_late_publishers)
        self.max_samples = max_samples
        self.max_age = _seconds(max_age, "max_age")

    @override
    def __repr__(self) -> str:
        return (
            f"HistoryConfig(detect_late_publishers={self.detect_late_publishers}, "
            f"max_samples={self.max_samples}, max_age={self.max_age})"
        )


class RecoveryConfig:
    """How an :class:`AdvancedSubscriber` recovers missed samples: ``periodic_queries``
    (a period: ask each publisher's cache for newer samples) or ``heartbeat=True``
    (follow the publishers' heartbeats); exactly one of them."""

    __slots__ = ("heartbeat", "periodic_queries")

    def __init__(
        self,
        *,
        periodic_queries: float | _dt.timedelta | None = None,
        heartbeat: bool | None = None,
    ) -> None:
        period = _seconds(periodic_queries, "periodic_queries")
        if (period is None) == (not heartbeat):
            raise ZError("invalid parameters: RecoveryConfig takes periodic_queries or heartbeat=True")
        if period is not None and period <= 0:
            raise ZError("periodic_queries must be positive")
        self.periodic_queries = period
        self.heartbeat = bool(heartbeat)

    @override
    def __repr__(self) -> str:
        return f"RecoveryConfig(periodic_queries={self.periodic_queries}, heartbeat={self.heartbeat})"


class MissDetectionConfig:
    """Sequence numbers on an :class:`AdvancedPublisher`'s samples, with an optional
    heartbeat: every ``heartbeat`` seconds, or every ``sporadic_heartbeat`` seconds when
    something was published since the last one (congestion control Block)."""

    __slots__ = ("period", "sporadic")

    def __init__(self, *, heartbeat: float | None = None, sporadic_heartbeat: float | None = None) -> None:
        hb = _seconds(heartbeat, "heartbeat")
        sporadic = _seconds(sporadic_heartbeat, "sporadic_heartbeat")
        for value, name in ((hb, "heartbeat"), (sporadic, "sporadic_heartbeat")):
            if value is not None and value <= 0:
                raise ZError(f"{name} must be positive")
        # as zenoh-python's builder chain: the sporadic heartbeat is set last and wins
        self.period: float | None = sporadic if sporadic is not None else hb
        self.sporadic = sporadic is not None

    @override
    def __repr__(self) -> str:
        kind = "sporadic_heartbeat" if self.sporadic else "heartbeat"
        return f"MissDetectionConfig({kind}={self.period})"
