"""``azt update`` and ``azt delete``: change or delete every entity an OData ``--filter``
selects, on the bulk engine (:func:`azt.bulk.update_where`, :func:`azt.bulk.delete_where`):
the bulk loader's pace, each write conditional on the ETag just read (an entity changed
meanwhile is read again and changed again when it still matches, else reported), a
progress bar, and ``--checkpoint FILE`` / ``--resume`` to go on after an interruption.

Example::

    azt update movies --filter "Year lt 1950" --set '{"Classic": true}'
    azt delete movies --filter "Rating lt 1.0" --checkpoint del.ckpt
    azt delete movies --filter "Rating lt 1.0" --checkpoint del.ckpt --resume
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from collections.abc import Callable
from typing import Any

from azt._core.bulk.checkpoint import FileCheckpoint
from azt._core.bulk.outcomes import BulkOptions, BulkProgress, BulkResult
from azt._core.service_client import TableServiceClient
from azt._orm.bulk_query import delete_where, update_where
from azt.cli._common import EXIT_SERVICE, CliStreams, UsageError, progress_on
from azt.cli._jsonl import InputError, loads_entity
from azt.cli._progress import Progress

__all__ = ["add_by_query_parsers", "parse_changes", "run_by_query"]

#: At most this many failed entities are named one by one.
_SHOWN = 20


def parse_changes(text: str) -> dict[str, Any]:
    """The ``--set`` JSON object as typed values, in the JSON-lines convention of
    ``azt import`` (``"Name@odata.type": "Edm.Int64"`` beside a value it cannot carry).

    Example::

        >>> parse_changes('{"Classic": true, "Views@odata.type": "Edm.Int64", "Views": "7"}')
        {'Classic': True, 'Views': Typed(value=7, edm_type=<EdmType.INT64: 'Edm.Int64'>)}
    """
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--set: not valid JSON ({exc})") from None
    if not isinstance(obj, dict) or not obj:
        raise UsageError('--set takes a JSON object of properties, e.g. \'{"Status": "done"}\'')
    if "PartitionKey" in obj or "RowKey" in obj:
        raise UsageError("--set cannot change PartitionKey or RowKey")
    try:
        entity = loads_entity(json.dumps({**obj, "PartitionKey": "k", "RowKey": "k"}))
    except InputError as exc:
        raise UsageError(f"--set: {exc}") from None
    return {k: entity[k] for k in entity if k not in ("PartitionKey", "RowKey")}


def add_by_query_parsers(
    sub: Any,
    common: argparse.ArgumentParser,
    progress_arg: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add the ``update`` and ``delete`` commands to the sub-parsers ``sub``.

    Example::

        >>> from azt.cli import build_parser
        >>> args = build_parser().parse_args(["delete", "t", "--filter", "N lt 3"])
        >>> args.command, args.filter
        ('delete', 'N lt 3')
    """
    for name, what in (
        ("update", "set properties on every entity a --filter selects"),
        ("delete", "delete every entity a --filter selects"),
    ):
        p = sub.add_parser(name, help=what, parents=[common])
        p.add_argument("table")
        p.add_argument(
            "--filter",
            required=True,
            help='OData $filter of the entities, e.g. "Year lt 1950" ("" for all of them)',
        )
        if name == "update":
            p.add_argument(
                "--set",
                required=True,
                dest="changes",
                metavar="JSON",
                help='the properties to set, a JSON object: \'{"Status": "done"}\' (types as '
                'in azt import: "N@odata.type": "Edm.Int64" beside a value that needs it)',
            )
            p.add_argument(
                "--mode",
                choices=("merge", "replace"),
                default="merge",
                help="merge (default: the properties are merged into each entity) or replace "
                "(each entity as read, with the properties set, replaces the stored one)",
            )
        p.add_argument(
            "--checkpoint",
            default=None,
            metavar="FILE",
            help="keep the query's progress in FILE, so that an interrupted run can be "
            "resumed with --resume",
        )
        p.add_argument(
            "--resume",
            action="store_true",
            help="continue the run recorded in --checkpoint FILE (the same --filter)",
        )
        progress_arg(p)


async def run_by_query(
    service: TableServiceClient, args: argparse.Namespace, io_: CliStreams
) -> int:
    """Run ``azt update`` or ``azt delete``; the exit status (0; 1 when entities were not
    changed: each is named with the service's error).

    Example::

        status = await run_by_query(service, build_parser().parse_args(["delete", ...]), io_)
    """
    changes = parse_changes(args.changes) if args.command == "update" else {}
    if args.resume and not args.checkpoint:
        raise UsageError("--resume needs --checkpoint FILE (the checkpoint to continue)")
    checkpoint = None
    if args.checkpoint is not None:
        checkpoint = FileCheckpoint(args.checkpoint)
        exists = await asyncio.to_thread(checkpoint.load) is not None
        if exists and not args.resume:
            raise UsageError(
                f"checkpoint {args.checkpoint!r} exists: pass --resume to continue that "
                f"{args.command}, or delete the file to start over"
            )
        if args.resume and not exists:
            raise UsageError(f"--resume: there is no checkpoint {args.checkpoint!r}")
    table = service.get_table_client(args.table)
    bar = Progress(
        f"{args.command} {args.table}", stream=io_.stderr, enabled=progress_on(args, io_.stderr)
    )
    done = [0]

    def progress(p: BulkProgress) -> None:
        bar.advance(entities=p.written - done[0])
        done[0] = p.written
        bar.bulk(rate=p.rate, concurrency=p.concurrency, throttled=p.throttled)

    options = BulkOptions(**({} if args.retries is None else {"max_attempts": args.retries + 1}))
    filter_text = args.filter or None
    try:
        result: BulkResult
        if args.command == "update":
            result = await update_where(
                table,
                changes,
                filter=filter_text,
                mode=args.mode,
                options=options,
                checkpoint=checkpoint,
                progress=progress,
            )
        else:
            result = await delete_where(
                table, filter=filter_text, options=options, checkpoint=checkpoint, progress=progress
            )
    finally:
        bar.close()
    verb = "updated" if args.command == "update" else "deleted"
    for f in result.failures[:_SHOWN]:
        io_.stderr.write(
            f"azt {args.command}: PartitionKey={f.partition_key!r} RowKey={f.row_key!r}: "
            f"{f.status or ''} {f.code or ''}: {f.message}\n"
        )
    if len(result.failures) > _SHOWN:
        io_.stderr.write(f"azt {args.command}: ... and {len(result.failures) - _SHOWN} more\n")
    failed = f"; {len(result.failures)} not {verb}" if result.failures else ""
    io_.stderr.write(f"{verb} {result.written} entities in {args.table}{failed}\n")
    if result.failures:
        if checkpoint is not None:
            io_.stderr.write("run again with --resume to go on\n")
        return EXIT_SERVICE
    if checkpoint is not None:
        await asyncio.to_thread(os.unlink, args.checkpoint)  # done: the next starts afresh
    return 0
