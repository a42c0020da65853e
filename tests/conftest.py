"""Shared pytest configuration.

Fixtures specific to one area live in that area's ``conftest.py``
(``tests/stub``, ``tests/client``, ``tests/orm``, ``tests/context``).

Hypothesis: property tests must not fail because a loaded 2-core machine ran one example
slowly, so no test has a per-example deadline. Under CI (``CI`` set) the examples are
derived from each test's source instead of a random seed, so a CI run is reproducible;
locally they stay random, to keep exploring.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
