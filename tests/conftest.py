"""Suite-wide test configuration.

Hypothesis runs more examples under ``CI=true`` (see ``tests/hyp.py``); every test that
needs a heavy profile asks for it explicitly.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

#: The suite's one fixtures plugin: routers, sessions and waits (see tests/fixtures).
pytest_plugins = ["tests.fixtures.plugin"]

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

settings.register_profile(
    "ci",
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=False,
)
settings.register_profile(
    "dev",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("ci" if IN_CI else "dev")
