"""``azt export --format parquet`` and ``azt import`` of a Parquet file: the same type map as
:mod:`azt.frames` (``pip install "azt-tables[arrow]"``), streamed both ways.

An export writes the pages of the parallel scan as row groups (memory holds a row group
and the pages in flight, whatever the table's size) to ``-o FILE`` (a Parquet file is
written whole: no stdout, no ``--resume``; a failed export leaves no file). An import
reads the file a batch at a time into the bulk loader, as a JSON-lines import does;
failures name the row (1-based) instead of the line, and the progress bar's percentage
counts rows.

Example::

    azt export movies --format parquet -o movies.parquet
    azt import copy --create -i movies.parquet
"""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterator
from typing import BinaryIO, TextIO

import pyarrow as pa

from azt._core.bulk.checkpoint import DonePositions
from azt._core.table_client import TableClient
from azt._edm.entity import TableEntity
from azt._errors import ValidationError
from azt._frames.parquet import export_parquet, parquet_entities, parquet_rows
from azt.cli._common import UsageError
from azt.cli._import import _Feed
from azt.cli._jsonl import InputError
from azt.cli._progress import Progress

__all__ = ["ParquetFeed", "export_parquet_command", "is_parquet_path"]

_SUFFIXES = (".parquet", ".parq", ".pq")


def is_parquet_path(path: str | None) -> bool:
    """Whether ``-i PATH`` names a Parquet file by its suffix.

    Example::

        >>> is_parquet_path("movies.parquet"), is_parquet_path("movies.jsonl")
        (True, False)
    """
    return path is not None and path.lower().endswith(_SUFFIXES)


async def export_parquet_command(
    table: TableClient, args: argparse.Namespace, out: TextIO, err: TextIO, *, progress: bool
) -> int:
    """Run ``azt export --format parquet`` into ``out`` (the ``-o`` file, written in
    binary); returns the exit status.

    Example::

        status = await export_parquet_command(table, args, out, sys.stderr, progress=False)
    """
    if args.output is None:
        raise UsageError("--format parquet writes a file: give -o FILE")
    if args.resume:
        raise UsageError("--resume is for JSON lines: a Parquet file is written whole")
    bar = Progress(f"export {args.table}", stream=err, enabled=progress)

    def advance(batch: pa.RecordBatch) -> None:
        bar.advance(entities=batch.num_rows)

    try:
        out.flush()
        await export_parquet(
            table,
            out.buffer,
            filter=args.filter,
            concurrency=args.concurrency,
            ordered=args.ordered,
            on_batch=advance,
        )
    finally:
        bar.close()
    noun = "entity" if bar.entities == 1 else "entities"
    err.write(f"exported {bar.entities} {noun} from {args.table} to {args.output}\n")
    return 0


class ParquetFeed(_Feed):
    """The rows of a Parquet file as entities for the loader (see :class:`_Feed`): item
    ``i`` is row ``i + 1``; a row no EDM type holds stops the import there.

    Example::

        feed = ParquetFeed(open("movies.parquet", "rb"), bar, DonePositions())
    """

    unit = "row"

    def __init__(self, source: BinaryIO, bar: Progress, done: DonePositions) -> None:
        super().__init__(io.StringIO(), bar, done)  # (the text stream is not read)
        self.source = source
        try:
            bar.total_bytes = parquet_rows(source) or None
        except (pa.ArrowException, OSError) as exc:
            raise UsageError(f"-i is not a Parquet file: {exc}") from None
        source.seek(0)

    def entities(self) -> Iterator[TableEntity]:
        rows = parquet_entities(self.source)
        while True:
            row = len(self.lines) + 1
            try:
                entity = next(rows)
            except StopIteration:
                return
            except ValidationError as exc:
                # the batch holding this row has a value no EDM type holds
                self.bad, self.bad_line = InputError(f"row {row} on: {exc}"), row
                return
            if len(self.lines) in self.done:  # written by an earlier run: skipped
                self.bar.nbytes += 1
            self.lines.append(row)
            self.sizes.append(1)
            yield entity
            if self.bad is not None:  # the loader refused it: read no further
                return
