"""Suite-wide test configuration.

Hypothesis runs more examples under ``CI=true`` (see ``tests/hyp.py``); every test that
needs a heavy profile asks for it explicitly.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from pyzenoh.localnet import free_port
from pyzenoh.scouting.core import ADDRESS_ENV

#: The suite's one fixtures plugin: routers, sessions and waits (see tests/fixtures).
pytest_plugins = ["tests.fixtures.plugin"]

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

# pyzenoh peers answer SCOUTs and autoconnect to what they find, as zenoh's: each test
# process (an xdist worker, and what it starts) scouts on a multicast port of its own, so
# parallel tests never meet. Tests of scouting itself name their ports.
os.environ[ADDRESS_ENV] = f"224.0.0.224:{free_port()}"

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
