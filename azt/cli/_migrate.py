"""``azt migrate status|plan|up|verify --migrations MODULE``: run the migrations
(``azt.migrate.Migration``) a Python module or package defines, in name order, online.

* ``status``: each migration's state (pending, running: started and not finished, applied);
* ``plan``: the migrations ``up`` would run and their steps; with ``--rows``, also a dry
  run over the tables (what each would change, the first rows shown);
* ``up``: apply the pending ones (a running one resumes from its checkpoint); ``--dry-run``
  is ``plan --rows``;
* ``verify``: scan each table for rows not yet migrated; exit 4 when there are some.

The module's migrations are its ``migrations`` list if it has one, else every
``Migration`` defined at its top level (and, for a package, in its modules).

Example::

    >>> from azt.cli import build_parser
    >>> args = build_parser().parse_args(["migrate", "up", "--migrations", "app.migrations"])
    >>> args.migrate_command, args.migrations
    ('up', 'app.migrations')
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from collections.abc import Callable
from types import ModuleType
from typing import Any

from azt._core.service_client import TableServiceClient
from azt._errors import ValidationError
from azt._orm.migration_runner import (
    MigrationProgress,
    MigrationReport,
    migration_status,
    ordered,
    run_migrations,
    verify_migrations,
)
from azt._orm.migrations import Migration
from azt.cli._common import (
    EXIT_INCONSISTENT,
    EXIT_SERVICE,
    CliStreams,
    UsageError,
    entities_text,
    progress_on,
)
from azt.cli._progress import Progress

__all__ = ["add_migrate_parser", "load_migrations", "run_migrate"]


def add_migrate_parser(
    sub: Any,
    common: argparse.ArgumentParser,
    progress_arg: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add the ``migrate`` command (``status``, ``plan``, ``up``, ``verify``).

    Example::

        >>> from azt.cli import build_parser
        >>> build_parser().parse_args(["migrate", "verify", "--migrations", "m"]).migrations
        'm'
    """
    mg = sub.add_parser("migrate", help="run schema migrations (azt.migrate)", parents=[common])
    msub = mg.add_subparsers(dest="migrate_command", metavar="ACTION", required=True)
    helps = {
        "status": "each migration's state: pending, running or applied",
        "plan": "the migrations up would run, and their steps (--rows: a dry run)",
        "up": "apply the pending migrations, online; resumes an interrupted one",
        "verify": "report the rows not yet migrated (exit 4 when there are some)",
    }
    for name, text in helps.items():
        p = msub.add_parser(name, help=text, parents=[common])
        p.add_argument(
            "--migrations",
            required=True,
            metavar="MODULE",
            help="the Python module or package defining the migrations (e.g. myapp.migrations)",
        )
        if name in ("plan", "up"):
            flag = "--rows" if name == "plan" else "--dry-run"
            p.add_argument(
                flag,
                action="store_true",
                dest="dry_run",
                help="read the tables and report what would change; write nothing",
            )
        if name == "up":
            p.add_argument(
                "--concurrency",
                type=int,
                default=16,
                metavar="N",
                help="transactions in flight (default 16)",
            )
            progress_arg(p)


def load_migrations(spec: str) -> list[Migration]:
    """The migrations module or package ``spec`` defines, in run order.

    Example::

        >>> load_migrations("azt.entity")
        Traceback (most recent call last):
        ...
        azt.cli._common.UsageError: --migrations 'azt.entity' defines no migrations
    """
    try:
        module = importlib.import_module(spec)
    except ImportError as exc:
        raise UsageError(f"--migrations {spec!r}: cannot import it: {exc}") from exc
    found = _from_module(module)
    if hasattr(module, "__path__") and not hasattr(module, "migrations"):
        for info in sorted(pkgutil.iter_modules(module.__path__), key=lambda i: i.name):
            sub = importlib.import_module(f"{spec}.{info.name}")
            found.extend(m for m in _from_module(sub) if m not in found)
    if not found:
        raise UsageError(f"--migrations {spec!r} defines no migrations")
    try:
        return ordered(found)
    except ValidationError as exc:
        raise UsageError(f"--migrations {spec!r}: {exc}") from exc


def _from_module(module: ModuleType) -> list[Migration]:
    listed = getattr(module, "migrations", None)
    if isinstance(listed, list | tuple):
        bad = [m for m in listed if not isinstance(m, Migration)]
        if bad:
            raise UsageError(f"{module.__name__}.migrations holds {bad[0]!r}, not a Migration")
        return list(listed)
    return [v for v in vars(module).values() if isinstance(v, Migration)]


async def run_migrate(
    service: TableServiceClient, args: argparse.Namespace, io_: CliStreams
) -> int:
    """Run ``azt migrate ACTION`` as ``args`` say; the exit status.

    Example::

        status = await run_migrate(service, build_parser().parse_args(
            ["migrate", "up", "--migrations", "myapp.migrations"]), io_)
    """
    migrations = load_migrations(args.migrations)
    out = io_.stdout
    action = args.migrate_command
    if action == "status":
        for s in await migration_status(service, migrations):
            rows = f"  {entities_text(s.rows)}" if s.state != "pending" else ""
            print(f"{s.name}  {s.table}  {s.state}{rows}", file=out)
        return 0
    if action == "verify":
        status = 0
        for r in await verify_migrations(service, migrations):
            print(
                f"{r.name}: {r.pending} of {entities_text(r.scanned)} in {r.table} not migrated",
                file=out,
            )
            for sample in r.samples:
                print(f"  {sample}", file=out)
            if r.pending:
                status = EXIT_INCONSISTENT
        return status
    pending = [s for s in await migration_status(service, migrations) if s.state != "applied"]
    names = {s.name for s in pending}
    todo = [m for m in migrations if m.name in names]
    if action == "plan" or args.dry_run:
        if not todo:
            print("nothing to do: every migration is applied", file=out)
        for m in todo:
            state = next(s.state for s in pending if s.name == m.name)
            print(f"{m.name} on {m.table} ({state}):", file=out)
            for step in m.steps:
                print(f"  - {step.describe}", file=out)
        if not args.dry_run:
            return 0
        reports = await run_migrations(service, todo, dry_run=True)
        for r in reports:
            print(
                f"{r.name}: would change {r.pending} of {entities_text(r.scanned)} in {r.table}",
                file=out,
            )
            for sample in r.samples:
                print(f"  {sample}", file=out)
        return 0
    return await _up(service, todo, args, io_)


async def _up(
    service: TableServiceClient, todo: list[Migration], args: argparse.Namespace, io_: CliStreams
) -> int:
    out = io_.stdout
    if not todo:
        print("nothing to do: every migration is applied", file=out)
        return 0
    if args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    on = progress_on(args, io_.stderr)
    bars: dict[str, Progress] = {}
    seen: dict[str, int] = {}

    def progress(p: MigrationProgress) -> None:
        bar = bars.get(p.name)
        if bar is None:
            bar = bars[p.name] = Progress(f"migrate {p.name}", stream=io_.stderr, enabled=on)
        bar.detail = f"{p.written:,} rewritten  {p.conflicts:,} re-read"
        bar.advance(entities=p.scanned - seen.get(p.name, 0))
        seen[p.name] = p.scanned
        if p.done:
            bar.close()

    reports = await run_migrations(service, todo, concurrency=args.concurrency, progress=progress)
    status = 0
    for r in reports:
        print(_summary(r), file=out)
        for e in r.errors:
            print(f"azt migrate: {r.name}: {e}", file=io_.stderr)
        if not r.ok:
            status = EXIT_SERVICE
    left = [m.name for m in todo[len(reports) :]]
    if left:
        print(f"not run (an earlier migration failed): {', '.join(left)}", file=out)
    return status


def _summary(r: MigrationReport) -> str:
    if r.skipped:
        return f"{r.name}: already applied"
    failed = f"; {r.failed} failed" if r.failed else ""
    return (
        f"{r.name}: rewrote {r.written} of {entities_text(r.scanned)} in {r.table} "
        f"({r.conflicts} read again after a concurrent write){failed}"
    )
