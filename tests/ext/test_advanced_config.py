"""pyzenoh.ext's advanced names and configurations, next to zenoh.ext's (the
configurations' defaults and checks, as zenoh-python 1.10's)."""

from __future__ import annotations

import datetime

import pytest
import zenoh.ext as zx

import pyzenoh
import pyzenoh.ext as px

pytestmark = [pytest.mark.interop, pytest.mark.timeout(60)]


# --- names ------------------------------------------------------------------------------------

NAMES = [
    "AdvancedPublisher",
    "AdvancedSubscriber",
    "CacheConfig",
    "HistoryConfig",
    "Miss",
    "MissDetectionConfig",
    "RecoveryConfig",
    "RepliesConfig",
    "SampleMissListener",
    "declare_advanced_publisher",
    "declare_advanced_subscriber",
]


def test_names_and_configs() -> None:
    for name in NAMES:
        assert hasattr(zx, name), name
        assert name in px.__all__ and hasattr(px, name), name
    assert pyzenoh.ext.CacheConfig is px.CacheConfig
    cc = px.CacheConfig(
        3,
        replies_config=px.RepliesConfig(
            congestion_control=pyzenoh.CongestionControl.DROP, priority=pyzenoh.Priority.DATA_HIGH, express=True
        ),
    )
    assert cc.max_samples == 3 and cc.replies_config.express
    assert px.CacheConfig().max_samples == 1
    h = px.HistoryConfig(detect_late_publishers=True, max_samples=4, max_age=1.5)
    assert (h.detect_late_publishers, h.max_samples, h.max_age) == (True, 4, 1.5)
    assert px.RecoveryConfig(periodic_queries=datetime.timedelta(seconds=2)).periodic_queries == 2.0
    assert px.RecoveryConfig(heartbeat=True).heartbeat
    # as the real ones: RecoveryConfig takes exactly one of its two
    for bad in ({}, {"periodic_queries": datetime.timedelta(seconds=1), "heartbeat": True}):
        with pytest.raises(ValueError):
            zx.RecoveryConfig(**bad)
        with pytest.raises(pyzenoh.ZError):
            px.RecoveryConfig(**bad)
    assert px.MissDetectionConfig(heartbeat=0.5).period == 0.5
    assert px.MissDetectionConfig(sporadic_heartbeat=1).sporadic
    assert px.MissDetectionConfig().period is None
    m = px.Miss(pyzenoh.EntityGlobalId(pyzenoh.ZenohId.from_str("a1"), 3), 2)
    assert (m.nb, m.source.eid) == (2, 3)


def test_zero_max_samples_refused(ps: pyzenoh.Session, key: str) -> None:
    with pytest.raises(pyzenoh.ZError):
        px.declare_advanced_publisher(ps, key, cache=px.CacheConfig(0))
    with pytest.raises(pyzenoh.ZError):
        px.declare_advanced_subscriber(ps, key, history=px.HistoryConfig(max_samples=0))
