"""Blocking forms of :mod:`azt.migrate`'s run, verify and status functions, for the
blocking ``azt.sync.TableServiceClient``: the same arguments and the same reports. The
declarations (``Evolution``, ``Migration`` and the steps) are the ones of
:mod:`azt.migrate`: they hold no client.

Example::

    from azt.migrate import Migration, upgrade
    from azt.sync import TableServiceClient
    from azt.sync.migrate import run_migrations, verify_migrations

    with TableServiceClient.from_connection_string(conn_str) as service:
        run_migrations(service, [Migration("0002_v2", "customers", [upgrade(Customer)])])
        assert all(r.pending == 0 for r in verify_migrations(service, migrations))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from azt._orm import migration_runner
from azt._orm.migration_runner import MigrationProgress, MigrationReport, MigrationStatus
from azt._orm.migrations import Migration
from azt.sync._generated import TableServiceClient

__all__ = ["migration_status", "run_migrations", "verify_migrations"]


def run_migrations(
    service: TableServiceClient,
    migrations: Sequence[Migration],
    *,
    dry_run: bool = False,
    concurrency: int = 16,
    scan_concurrency: int | None = None,
    checkpoint_interval: float = 1.0,
    progress: Callable[[MigrationProgress], object] | None = None,
) -> list[MigrationReport]:
    """:func:`azt.migrate.run_migrations` for a blocking service client: apply the pending
    migrations in name order (``dry_run``: report what would change).

    Example::

        reports = run_migrations(service, migrations, progress=print)
        assert all(r.ok for r in reports)
    """
    coro = migration_runner.run_migrations(
        service._inner,
        migrations,
        dry_run=dry_run,
        concurrency=concurrency,
        scan_concurrency=scan_concurrency,
        checkpoint_interval=checkpoint_interval,
        progress=progress,
    )
    return service._rt.run(coro)


def verify_migrations(
    service: TableServiceClient, migrations: Sequence[Migration], *, scan_concurrency: int = 8
) -> list[MigrationReport]:
    """:func:`azt.migrate.verify_migrations` for a blocking service client: the rows not
    yet migrated, per migration.

    Example::

        for r in verify_migrations(service, migrations):
            print(r.name, r.pending, "rows left")
    """
    coro = migration_runner.verify_migrations(
        service._inner, migrations, scan_concurrency=scan_concurrency
    )
    return service._rt.run(coro)


def migration_status(
    service: TableServiceClient, migrations: Sequence[Migration]
) -> list[MigrationStatus]:
    """:func:`azt.migrate.migration_status` for a blocking service client: each
    migration's state (pending, running, applied).

    Example::

        print([s.state for s in migration_status(service, migrations)])
    """
    return service._rt.run(migration_runner.migration_status(service._inner, migrations))
