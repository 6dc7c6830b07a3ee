"""The public names of ``pyzenoh.ext``'s serializer and its typed wrappers (``Int8`` ...
``Float64``) against ``zenoh.ext``'s: the same names, docstrings and range checks.
"""

from __future__ import annotations

import pytest

import pyzenoh.ext as P
from tests.ext.serialization_helpers import INT_RANGES, WRAPPERS, R


def test_public_names_match_the_serialization_part_of_zenoh_ext() -> None:
    advanced = {
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
    }
    real_names = {n for n in dir(R) if not n.startswith("_")} - advanced
    # the serializer's names, exactly (the advanced ones are tested in test_advanced_interop)
    assert set(P.__all__) - advanced == real_names
    for name in WRAPPERS:
        assert getattr(P, name).__doc__ == getattr(R, name).__doc__, name


@pytest.mark.parametrize("name", [n for n in WRAPPERS if n in INT_RANGES])
def test_int_wrappers_check_their_range_like_zenoh(name: str) -> None:
    lo, hi = INT_RANGES[name]
    mine, theirs = getattr(P, name), getattr(R, name)
    for value in (lo, hi, 0):
        assert mine(value) == theirs(value) == value
        assert type(mine(value)) is mine and isinstance(mine(value), int)
    for value in (lo - 1, hi + 1):
        with pytest.raises(AssertionError) as mine_err:
            mine(value)
        with pytest.raises(AssertionError) as their_err:
            theirs(value)
        assert str(mine_err.value) == str(their_err.value)
    assert type(mine(1) + mine(1)) is int
    assert mine(3.9) == theirs(3.9) == 3


def test_float_wrappers() -> None:
    assert type(P.Float32(1.5)) is P.Float32 and P.Float32(1.5) == 1.5
    assert type(P.Float64("2.5")) is P.Float64 and P.Float64("2.5") == 2.5
