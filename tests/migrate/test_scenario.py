"""Issue 30's scenario: a table of version-1 rows migrated online to version 2 by a real
``azt migrate up`` killed twice with SIGKILL, on a stub throttling and failing 10 % of
the requests, while the application writes (see tests/migrate/scenario.py). 5,000 rows by
default; ``AZT_MIGRATE_ROWS=100000`` (or ``scripts/migrate_scenario.py``) runs the full size."""

from __future__ import annotations

import os

from tests.migrate.scenario import run_scenario


def test_online_migration_killed_twice_under_faults() -> None:
    n = int(os.environ.get("AZT_MIGRATE_ROWS", "5000"))
    outcome = run_scenario(n)
    assert outcome.kills == 2
    assert outcome.exit_codes[-1] == 0
    assert outcome.inserted > 0
    assert outcome.updated > 0
    assert outcome.faults > 0
    assert outcome.throttled > 0
