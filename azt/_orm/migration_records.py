"""The table of applied migrations and what runs report: a migration's record
(``AztMigrations``: PartitionKey the migrated table, RowKey the migration's name, its
state, rows and checkpoint), :func:`migration_status`, the run order (:func:`ordered`),
:func:`verify_migrations` (the rows not yet migrated), and the report types
(:class:`MigrationProgress`, :class:`MigrationReport`, :class:`MigrationStatus`). Running
them is :mod:`azt._orm.migration_runner`.

Example::

    for s in await migration_status(service, migrations):
        print(s.name, s.state)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TypeVar

import attrs

from azt._core.retry import is_retryable
from azt._core.service_client import TableServiceClient
from azt._edm.entity import TableEntity
from azt._errors import EntityNotFoundError, ServiceError, TransportError, ValidationError
from azt._orm.indexes import RESERVED, declared_indexes, is_index_row_key
from azt._orm.migrations import Migration
from azt._orm.scan import parallel_scan

__all__ = [
    "MAX_ATTEMPTS",
    "MIGRATIONS_TABLE",
    "STEP_ERRORS",
    "MigrationProgress",
    "MigrationReport",
    "MigrationStatus",
    "main_rows",
    "migration_status",
    "ordered",
    "record_of",
    "retrying",
    "verify_migrations",
]

_T = TypeVar("_T")

#: the table of applied migrations: PartitionKey the migrated table, RowKey the name
MIGRATIONS_TABLE = "AztMigrations"
#: how many rows (keys, errors) a report names at most
SAMPLE = 20
#: what a step (or an entity class's conversion) raises for a row it cannot migrate
STEP_ERRORS = (ValueError, TypeError, KeyError, ValidationError)
#: how often a migration tries a call the client's own retries gave up on
MAX_ATTEMPTS = 30


@attrs.define
class MigrationProgress:
    """Counters of a migration run, passed to ``progress`` about every second and at the end.

    Example::

        >>> MigrationProgress("0002_x").scanned
        0
    """

    name: str
    scanned: int = 0
    changed: int = 0
    written: int = 0
    conflicts: int = 0
    throttled: int = 0
    requests: int = 0
    elapsed: float = 0.0
    done: bool = False

    @property
    def rate(self) -> float:
        """Rows scanned per second.

        Example::

            >>> MigrationProgress("m", scanned=10, elapsed=2.0).rate
            5.0
        """
        return self.scanned / self.elapsed if self.elapsed > 0 else 0.0


@attrs.define
class MigrationReport:
    """What a run (``dry_run``: would) change, or what a verify found not migrated:
    ``pending`` rows of the old shape, ``samples`` the keys (and for a dry run the new
    entity) of the first few.

    Example::

        >>> MigrationReport("m", "things").ok
        True
    """

    name: str
    table: str
    skipped: bool = False  #: already recorded as applied
    dry_run: bool = False
    scanned: int = 0
    pending: int = 0
    written: int = 0
    conflicts: int = 0
    failed: int = 0
    samples: list[str] = attrs.field(factory=list)
    errors: list[str] = attrs.field(factory=list)
    progress: MigrationProgress | None = None

    @property
    def ok(self) -> bool:
        """No failure (a verify: also nothing pending).

        Example::

            >>> MigrationReport("m", "things", failed=1).ok
            False
        """
        return self.failed == 0 and not self.errors


@attrs.frozen
class MigrationStatus:
    """A migration and its record: ``state`` is ``"pending"``, ``"running"`` (started,
    not finished: a run again resumes it) or ``"applied"``.

    Example::

        >>> MigrationStatus("0001_x", "things", "pending").state
        'pending'
    """

    name: str
    table: str
    state: str
    rows: int = 0
    finished: datetime | None = None


async def record_of(service: TableServiceClient, m: Migration) -> TableEntity | None:
    log = service.get_table_client(MIGRATIONS_TABLE)
    try:
        return await log.get_entity(m.table, m.name)
    except EntityNotFoundError:
        return None
    except ServiceError as exc:
        if exc.code == "TableNotFound":
            return None
        raise


async def migration_status(
    service: TableServiceClient, migrations: Sequence[Migration]
) -> list[MigrationStatus]:
    """Each migration's state from the table of applied migrations, in run order.

    Example::

        for s in await migration_status(service, migrations):
            print(s.name, s.state)
    """
    out = []
    for m in ordered(migrations):
        rec = await record_of(service, m)
        if rec is None:
            out.append(MigrationStatus(m.name, m.table, "pending"))
        else:
            state = "applied" if rec.get("State") == "done" else "running"
            out.append(
                MigrationStatus(
                    m.name, m.table, state, int(rec.get("Rows", 0)), rec.get("Finished")
                )
            )
    return out


def ordered(migrations: Sequence[Migration]) -> list[Migration]:
    """The run order: by name; two migrations of one name are refused.

    Example::

        >>> from azt._orm.migrations import drop
        >>> [m.name for m in ordered([Migration("0002", "things", [drop("A")]),
        ...                           Migration("0001", "things", [drop("B")])])]
        ['0001', '0002']
    """
    seen: set[tuple[str, str]] = set()
    for m in migrations:
        if not isinstance(m, Migration):
            raise ValidationError(f"not a Migration: {m!r}")
        if (m.table.lower(), m.name) in seen:
            raise ValidationError(f"two migrations named {m.name!r} on table {m.table!r}")
        seen.add((m.table.lower(), m.name))
    return sorted(migrations, key=lambda m: m.name)


async def verify_migrations(
    service: TableServiceClient, migrations: Sequence[Migration], *, scan_concurrency: int = 8
) -> list[MigrationReport]:
    """For each migration, the rows of its table not yet migrated (``pending``, with the
    first few keys in ``samples``), whatever its record says.

    Example::

        reports = await verify_migrations(service, migrations)
        assert all(r.pending == 0 for r in reports)
    """
    out = []
    for m in ordered(migrations):
        report = MigrationReport(m.name, m.table)
        async for row in parallel_scan(
            service.get_table_client(m.table),
            filter=main_rows(m),
            concurrency=scan_concurrency,
        ):
            if is_index_row_key(row["RowKey"]):
                continue
            report.scanned += 1
            try:
                pending = m.plan_row(row) is not None
            except STEP_ERRORS as exc:
                pending = True
                if len(report.errors) < SAMPLE:
                    report.errors.append(f"{row['PartitionKey']!r}/{row['RowKey']!r}: {exc}")
            if pending:
                report.pending += 1
                if len(report.samples) < SAMPLE:
                    report.samples.append(f"{row['PartitionKey']!r}/{row['RowKey']!r}")
        out.append(report)
    return out


def main_rows(m: Migration) -> str | None:
    if m.entity is not None and declared_indexes(m.entity):
        return f"RowKey lt '{RESERVED}'"
    return None


async def retrying(call: Callable[[], Awaitable[_T]]) -> _T:
    """``call()`` again after a retryable failure the client's own retries gave up on
    (a migration outlasts a busy minute), up to ``MAX_ATTEMPTS`` times.

    Example::

        row = await retrying(lambda: table.get_entity("p", "r"))
    """
    attempts = 0
    while True:
        attempts += 1
        try:
            return await call()
        except (ServiceError, TransportError) as exc:
            if not is_retryable(exc) or attempts >= MAX_ATTEMPTS:
                raise
            await asyncio.sleep(min(0.05 * 2**attempts, 2.0))
