"""Run issue 30's migration scenario at full size (tests/migrate/scenario.py): a table of
N version-1 rows migrated online by a real ``azt migrate up`` killed twice with SIGKILL, on
a stub throttling and failing 10 % of the requests, while the application writes; then
every check of the test. Prints what it measured.

Usage::

    PYTHONPATH=. .venv/bin/python scripts/migrate_scenario.py [N]     # default 100000
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.migrate.scenario import run_scenario


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    logging.disable(logging.WARNING)  # the retries' warnings: thousands of lines
    outcome = run_scenario(n)
    print(f"rows of version 1: {outcome.rows:,}")
    print(f"kills: {outcome.kills} (exit codes {outcome.exit_codes})")
    print(f"seconds from the first start to the end: {outcome.seconds:,.1f}")
    print(
        f"application: {outcome.inserted:,} rows inserted, {outcome.updated:,} updated, "
        f"{outcome.app_conflicts:,} read again after a 412"
    )
    print(f"stub: {outcome.faults:,} faults injected, {outcome.throttled:,} requests throttled")
    print(
        "checks: every row in the new shape, none lost or duplicated, every application "
        "write present, indexes consistent, nothing left to migrate: passed"
    )


if __name__ == "__main__":
    main()
