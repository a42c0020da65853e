"""``azt index build|verify|repair TABLE --entity-class MODULE:CLASS``: adopt, check and
repair the secondary indexes an entity class declares (``azt.indexes``) over a table's
existing rows, partition by partition, with a progress bar and a checkpoint file to resume
an interrupted run.

``verify`` changes nothing and exits 4 when the index is not consistent; ``build`` writes
missing index rows and refreshes stale copies; ``repair`` also deletes orphan rows (the
rows of an index the class no longer declares included); ``build`` and ``repair`` settle
the pending intents of indexes across partitions (writes interrupted between their
transaction and the index rows in other partitions).

Example::

    >>> from azt.cli import build_parser
    >>> args = build_parser().parse_args(["index", "verify", "posts", "--entity-class", "m:P"])
    >>> args.index_command, args.entity_class
    ('verify', 'm:P')
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from azt._core.service_client import TableServiceClient
from azt._orm.index_repair import IndexReport, build_index, repair_index, verify_index
from azt.cli._common import EXIT_INCONSISTENT, CliStreams, UsageError, entities_text, progress_on
from azt.cli._progress import Progress

__all__ = ["add_index_parser", "load_entity_class", "run_index"]

_RUNS = {"verify": verify_index, "build": build_index, "repair": repair_index}


def add_index_parser(
    sub: Any,
    common: argparse.ArgumentParser,
    progress_arg: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add the ``index`` command (``build``, ``verify``, ``repair``) to the sub-parsers ``sub``.

    Example::

        >>> from azt.cli import build_parser
        >>> build_parser().parse_args(["index", "build", "t", "--entity-class", "m:C"]).table
        't'
    """
    ix = sub.add_parser("index", help="build, verify or repair secondary indexes", parents=[common])
    isub = ix.add_subparsers(dest="index_command", metavar="ACTION", required=True)
    helps = {
        "build": "write missing index rows (adopt an index over existing data)",
        "verify": "report missing, stale and orphan index rows; change nothing",
        "repair": "build, and delete orphan index rows (a removed index's rows included)",
    }
    for name, text in helps.items():
        p = isub.add_parser(name, help=text, parents=[common])
        p.add_argument("table")
        p.add_argument(
            "--entity-class",
            required=True,
            metavar="MODULE:CLASS",
            help="the entity class declaring the indexes (importable, e.g. myapp.models:Post)",
        )
        p.add_argument(
            "--checkpoint",
            metavar="FILE",
            default=None,
            help="record the last finished partition in FILE (resume with --resume)",
        )
        p.add_argument(
            "--resume", action="store_true", help="continue after the partition in --checkpoint"
        )
        progress_arg(p)


def load_entity_class(spec: str) -> type:
    """The class ``MODULE:CLASS`` names; :class:`UsageError` when it cannot be imported.

    Example::

        >>> load_entity_class("azt.entity:Entity").__name__
        'Entity'
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"--entity-class {spec!r}: give MODULE:CLASS (e.g. myapp.models:Post)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"--entity-class {spec!r}: cannot import {module_name!r}: {exc}") from exc
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise UsageError(f"--entity-class {spec!r}: {module_name!r} has no {attr!r}")
    if not isinstance(obj, type):
        raise UsageError(f"--entity-class {spec!r} is not a class")
    return obj


async def run_index(service: TableServiceClient, args: argparse.Namespace, io_: CliStreams) -> int:
    """Run ``azt index ACTION`` as ``args`` say; the exit status (``verify``: 4 when the
    index is not consistent).

    Example::

        status = await run_index(service, build_parser().parse_args(
            ["index", "verify", "posts", "--entity-class", "myapp.models:Post"]), io_)
    """
    if args.resume and not args.checkpoint:
        raise UsageError("--resume needs --checkpoint FILE (the checkpoint to continue)")
    cls = load_entity_class(args.entity_class)
    checkpoint = Path(args.checkpoint) if args.checkpoint else None
    after: str | None = None
    if args.resume and checkpoint is not None and checkpoint.exists():
        after = checkpoint.read_text(encoding="utf-8").rstrip("\n") or None
    table = service.get_table_client(args.table)
    bar = Progress(
        f"index {args.index_command} {args.table}",
        stream=io_.stderr,
        enabled=progress_on(args, io_.stderr),
    )
    seen = 0

    def done(pk: str, report: IndexReport) -> None:
        nonlocal seen
        bar.advance(entities=report.entities - seen)
        seen = report.entities
        if checkpoint is not None:
            tmp = checkpoint.with_name(checkpoint.name + ".tmp")
            tmp.write_text(pk + "\n", encoding="utf-8")
            tmp.replace(checkpoint)

    try:
        report = await _RUNS[args.index_command](table, cls, after=after, progress=done)
    finally:
        bar.close()
    out = io_.stdout
    for line in report.problems:
        print(line, file=out)
    resumed = f" (resumed after {after!r})" if after is not None else ""
    print(
        f"{args.index_command}: {entities_text(report.entities)} in {report.partitions} "
        f"partitions{resumed}; missing {report.missing}, stale {report.stale}, orphans "
        f"{report.orphans}, pending intents {report.intents}; wrote {report.written}, "
        f"deleted {report.deleted}, skipped {report.skipped} (changed meanwhile)",
        file=out,
    )
    if checkpoint is not None and checkpoint.exists():
        checkpoint.unlink()  # finished: a later --resume starts from the beginning
    if args.index_command == "verify" and not report.consistent:
        return EXIT_INCONSISTENT
    return 0
