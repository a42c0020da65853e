"""Shared pytest configuration.

Fixtures specific to one area live in that area's ``conftest.py``
(``tests/stub``, ``tests/client``, ``tests/orm``, ``tests/context``).

Hypothesis: property tests must not fail because a loaded 2-core machine ran one example
slowly, so no test has a per-example deadline. Under CI (``CI`` set) the examples are
derived from each test's source instead of a random seed, so a CI run is reproducible;
locally they stay random, to keep exploring.

Event loop: asyncio's own, or uvloop with ``AZT_TEST_LOOP=uvloop`` (``scripts/test.sh``
runs ``tests/stub`` so too: ``azt-stub`` takes uvloop when it is installed, and the
stub's answers must be the same on both loops).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, settings

#: The event loop the tests run on: ``asyncio`` (default) or ``uvloop``.
TEST_LOOP = os.environ.get("AZT_TEST_LOOP", "asyncio")
if TEST_LOOP not in ("asyncio", "uvloop"):
    raise RuntimeError(f"AZT_TEST_LOOP: {TEST_LOOP!r} is neither asyncio nor uvloop")

if TEST_LOOP == "uvloop":  # (pytest-asyncio 1.5's hook; only then: the floor leg has 1.4)
    import uvloop

    def pytest_asyncio_loop_factories(
        config: pytest.Config, item: pytest.Item
    ) -> dict[str, Callable[[], asyncio.AbstractEventLoop]]:
        """Every test's loop from uvloop (``AZT_TEST_LOOP=uvloop``)."""
        return {"uvloop": uvloop.new_event_loop}


settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
