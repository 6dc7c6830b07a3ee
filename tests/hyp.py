"""Hypothesis budgets shared by the suite: more examples in CI, fewer locally."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def examples(ci: int, local: int) -> settings:
    """Settings running ``ci`` examples under CI=true and ``local`` otherwise."""
    return settings(
        max_examples=ci if IN_CI else local,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


# Every budget under CI=true is a few times the local one, not 20x: a CI run stays a few
# times a local run. Decoders survive 1,000 arbitrary/mutated inputs each in CI (500
# locally; 2,000 until the suite outgrew its 10-minute budget); bench/fuzz_router.py runs
# long campaigns against a live router.
FUZZ = examples(1_000, 500)
ROUNDTRIP = examples(400, 100)
#: Whole streams through two links and two routing cores per example (the data plane's
#: equivalence harness): each example is a scenario, not a message.
STREAMS = examples(120, 40)
