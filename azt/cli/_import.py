"""``azt import``: typed JSON lines into a table.

Two engines. With a fixed ``--concurrency N`` (default 4) and no checkpoint, the ordered
importer: consecutive lines of one partition become transactions, up to N in flight, and
the first failure stops the import with a line-by-line account of what was written. With
``--concurrency auto`` or ``--checkpoint FILE``, the bulk loader (:mod:`azt.bulk`):
partitions in parallel under adaptive concurrency and pacing (``--partition-rate``,
``--account-rate``), failures reported by line while the rest goes on, lost answers
resolved by reading back, and the lines the service acknowledged kept in the checkpoint
so that ``--resume`` skips them after an interruption.

Example::

    azt import movies --create -i movies.jsonl --concurrency auto --checkpoint movies.ckpt
    azt import movies -i movies.jsonl --checkpoint movies.ckpt --resume   # after a crash
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import stat
from array import array
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from azt._core.batch import (
    BatchOperation,
    Prepared,
    TableBatch,
    add_prepared,
    has_room,
    prepare_operation,
)
from azt._core.bulk.checkpoint import FileCheckpoint
from azt._core.bulk.loader import load
from azt._core.bulk.outcomes import BulkFailure, BulkOptions, BulkProgress, WriteKind
from azt._core.results import UpdateMode, WriteResult
from azt._core.retry import may_have_been_applied
from azt._core.service_client import TableServiceClient
from azt._core.table_client import TableClient
from azt._edm.entity import TableEntity
from azt._errors import (
    AmbiguousOutcomeError,
    AztError,
    ServiceError,
    TransactionError,
    ValidationError,
)
from azt.cli._common import (
    EXIT_INPUT,
    EXIT_SERVICE,
    CliStreams,
    UsageError,
    entities_text,
    missing_table,
    progress_on,
)
from azt.cli._jsonl import InputError, loads_entity
from azt.cli._progress import Progress

__all__ = ["add_import_parser", "run_import"]


def _concurrency(text: str) -> int | None:
    if text == "auto":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'auto', got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("--concurrency must be at least 1 (or auto)")
    return value


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected entities per second, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("a rate must be more than 0 entities per second")
    return value


def add_import_parser(
    sub: Any,
    common: argparse.ArgumentParser,
    progress_arg: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add the ``import`` command to the sub-parsers ``sub``.

    Example::

        >>> from azt.cli import build_parser
        >>> args = build_parser().parse_args(["import", "t", "--concurrency", "auto"])
        >>> args.concurrency is None
        True
    """
    i = sub.add_parser("import", help="read typed JSON lines into a table", parents=[common])
    i.add_argument("table")
    i.add_argument("-i", "--input", default=None, help="file to read (default: stdin)")
    i.add_argument(
        "--mode",
        choices=("replace", "merge", "insert"),
        default="replace",
        help="replace (default: upsert, the line is the whole entity), merge (upsert, keep "
        "other stored properties) or insert (fail on existing keys)",
    )
    i.add_argument("--create", action="store_true", help="create the table if it is missing")
    i.add_argument(
        "--concurrency",
        type=_concurrency,
        default=4,
        metavar="N|auto",
        help="transactions in flight at once (default 4; 1 sends them one after another, "
        "stopping at the first failure); auto: the bulk loader, which adapts the number to "
        "the service's throttling and goes on past failures",
    )
    i.add_argument(
        "--checkpoint",
        default=None,
        metavar="FILE",
        help="keep the lines the service acknowledged in FILE (bulk loader), so that an "
        "interrupted import can be resumed with --resume",
    )
    i.add_argument(
        "--resume",
        action="store_true",
        help="continue the import recorded in --checkpoint FILE: the same input is read "
        "again and the lines already written are skipped",
    )
    i.add_argument(
        "--partition-rate",
        type=_rate,
        default=None,
        metavar="N",
        help="at most N entities per second to one partition (bulk loader; default 2000, "
        "Azure's target)",
    )
    i.add_argument(
        "--account-rate",
        type=_rate,
        default=None,
        metavar="N",
        help="at most N entities per second in all (bulk loader; default 20000, Azure's target)",
    )
    progress_arg(i)


async def run_import(service: TableServiceClient, args: argparse.Namespace, io_: CliStreams) -> int:
    """Run ``azt import`` as ``args`` say; the exit status.

    Example::

        status = await run_import(service, build_parser().parse_args(["import", "t"]), io_)
    """
    if args.resume and not args.checkpoint:
        raise UsageError("--resume needs --checkpoint FILE (the checkpoint to continue)")
    bulk = args.concurrency is None or args.checkpoint is not None
    if not bulk and (args.partition_rate is not None or args.account_rate is not None):
        raise UsageError("--partition-rate and --account-rate need --concurrency auto")
    if bulk:
        return await _bulk_import(service, args, io_)
    return await _ordered_import(service, args, io_)


# --------------------------------------------------------------------------- bulk loader

_KINDS: dict[str, WriteKind] = {
    "replace": "upsert-replace",
    "merge": "upsert-merge",
    "insert": "insert",
}


async def _bulk_import(
    service: TableServiceClient, args: argparse.Namespace, io_: CliStreams
) -> int:
    checkpoint = None
    if args.checkpoint is not None:
        checkpoint = FileCheckpoint(args.checkpoint)
        exists = await asyncio.to_thread(checkpoint.load) is not None
        if exists and not args.resume:
            raise UsageError(
                f"checkpoint {args.checkpoint!r} exists: pass --resume to continue that "
                "import, or delete the file to start over"
            )
        if args.resume and not exists:
            raise UsageError(f"--resume: there is no checkpoint {args.checkpoint!r}")
    if args.create:
        table = await service.create_table_if_not_exists(args.table)
    else:
        table = service.get_table_client(args.table)
    bar = Progress(
        f"import {args.table}",
        stream=io_.stderr,
        enabled=progress_on(args, io_.stderr),
        total_bytes=_input_size(io_.stdin),
    )
    options = BulkOptions(
        concurrency=args.concurrency,
        partition_rate=args.partition_rate or 2000.0,
        account_rate=args.account_rate or 20000.0,
    )
    #: the input line of each entity, by its position (4 bytes an entity)
    lines = array("L")
    bad: list[InputError] = []

    def entities() -> Iterator[TableEntity]:
        for line_no, nbytes, line in _input_lines(io_.stdin):
            bar.nbytes += nbytes
            if isinstance(line, str) and not line.strip():
                continue
            try:
                if isinstance(line, InputError):
                    raise line
                entity = loads_entity(line, line_no)
            except InputError as exc:
                bad.append(exc)
                return
            lines.append(line_no)
            yield entity

    def on_result(_: int, outcome: WriteResult | BulkFailure) -> None:
        if isinstance(outcome, WriteResult):
            bar.advance(entities=1)

    def progress(p: BulkProgress) -> None:
        bar.bulk(rate=p.rate, concurrency=p.concurrency, throttled=p.throttled)

    try:
        result = await load(
            table,
            entities(),
            kind=_KINDS[args.mode],
            options=options,
            checkpoint=checkpoint,
            progress=progress,
            on_result=on_result,
        )
    finally:
        bar.close()
    skipped = f" ({result.skipped} already written before)" if result.skipped else ""
    for failure in result.failures[:20]:
        where = f"line {lines[failure.index]}" if failure.index < len(lines) else "input"
        what = f"{failure.status} {failure.code}: " if failure.status else ""
        if failure.code == "TableNotFound":
            io_.stderr.write(f"azt import: {missing_table(args.table)}\n")
            break
        io_.stderr.write(f"azt import: {where}: {what}{failure.message.splitlines()[0]}\n")
    if len(result.failures) > 20:
        io_.stderr.write(f"azt import: ... and {len(result.failures) - 20} more failed lines\n")
    io_.stderr.write(
        f"imported {entities_text(result.written)} into {args.table}{skipped}"
        + (f"; {len(result.failures)} failed" if result.failures else "")
        + (f" ({result.throttled} requests throttled)" if result.throttled else "")
        + "\n"
    )
    if bad:
        again = " with --resume" if checkpoint is not None else ""
        io_.stderr.write(f"azt import: {bad[0]}\nfix it, then import again{again}\n")
        return EXIT_INPUT
    if result.failures:
        if checkpoint is not None:
            io_.stderr.write("run again with --resume to retry only the failed lines\n")
        return EXIT_SERVICE
    if checkpoint is not None:
        await asyncio.to_thread(os.unlink, args.checkpoint)  # done: the next starts afresh
    return 0


# --------------------------------------------------------------------------- ordered importer


def _input_lines(stream: TextIO) -> Iterator[tuple[int, int, str | InputError]]:
    """``(line number, size in bytes, text)`` of each input line; the text is an
    :class:`InputError` for a line that is not UTF-8. A byte order mark before the first
    line (as some Windows editors write) is dropped."""
    raw = getattr(stream, "buffer", None)  # real files and stdin: decode line by line
    if raw is None:
        for line_no, text in enumerate(stream, start=1):
            if line_no == 1:
                text = text.removeprefix("\ufeff")
            yield line_no, len(text.encode("utf-8", "surrogatepass")), text
        return
    for line_no, data in enumerate(raw, start=1):
        try:
            text = data.decode("utf-8-sig" if line_no == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            yield (
                line_no,
                len(data),
                InputError(
                    f"line {line_no}: not UTF-8 text (byte {exc.start + 1} of the line is "
                    f"{data[exc.start]:#04x}): save the file as UTF-8"
                ),
            )
            continue
        yield line_no, len(data), text


def _input_size(stream: TextIO) -> int | None:
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


class _Importer:
    """Groups consecutive entities of one partition into transactions and sends them, up to
    ``concurrency`` transactions at a time. Each entity is encoded once, as it is added; a
    transaction is cut when the next entity would take it past 100 operations or a 4 MiB
    body (exact encoded sizes), or changes partition, or repeats a RowKey. After a failure
    it sends nothing more; what was written and what was not is known line by line
    (transactions are atomic)."""

    def __init__(self, table: TableClient, mode: str, bar: Progress, concurrency: int) -> None:
        self.table = table
        self.mode = mode
        self.bar = bar
        self.batch = table.batch()
        #: the input line of each operation of ``batch``
        self.lines: list[int] = []
        self.size = 0  # input bytes of the lines in ``batch`` (for the progress bar)
        self.written = 0
        self.slots = asyncio.Semaphore(concurrency)
        self.tasks: set[asyncio.Task[None]] = set()
        #: (first line, last line, message) of each transaction that failed
        self.failures: list[tuple[int, int, str]] = []
        #: (first line, last line, message) of each transaction whose outcome is unknown:
        #: its answer was lost, so the service may have applied it (all of it: atomic)
        self.ambiguous: list[tuple[int, int, str]] = []
        #: entities in the ambiguous transactions
        self.maybe_written = 0

    @property
    def failed(self) -> bool:
        """Whether a transaction failed or ended unknown (then nothing more is sent)."""
        return self._stopped()

    def _stopped(self) -> bool:
        return bool(self.failures or self.ambiguous)

    def prepare(self, line_no: int, entity: TableEntity) -> Prepared:
        """The entity's operation, checked and encoded (once); :class:`InputError` naming
        the line when it cannot be sent."""
        if self.mode == "insert":
            op = BatchOperation("create", entity)
        else:
            mode = UpdateMode.REPLACE if self.mode == "replace" else UpdateMode.MERGE
            op = BatchOperation("upsert", entity, mode=mode)
        try:
            return prepare_operation(self.batch, op)
        except ValidationError as exc:
            raise InputError(f"line {line_no}: {exc}") from None

    async def add(self, line_no: int, prepared: Prepared, nbytes: int) -> None:
        if self.lines and not has_room(self.batch, prepared):
            await self.flush(line_no - 1)
            if self.lines:  # not flushed: a transaction failed, nothing more is sent
                return
        add_prepared(self.batch, prepared)
        self.lines.append(line_no)
        self.size += nbytes

    @property
    def first_unsent(self) -> int | None:
        """The first line of the batch being built (not sent yet), if any."""
        return self.lines[0] if self.lines else None

    async def flush(self, last_line: int) -> None:
        """Send the pending entities (lines up to ``last_line``) as one transaction."""
        if not self.lines or self.failed:
            return
        batch, lines, size = self.batch, self.lines, self.size
        self.batch, self.lines, self.size = self.table.batch(), [], 0
        await self.slots.acquire()
        if self._stopped():  # a transaction failed while we waited: send nothing more
            self.slots.release()
            self.batch, self.lines, self.size = batch, lines, size
            return
        task = asyncio.create_task(self._send(batch, lines, size, last_line))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _send(self, batch: TableBatch, lines: list[int], size: int, last_line: int) -> None:
        try:
            await self.table.submit_transaction(batch)
        except AztError as exc:
            if _outcome_unknown(exc):
                span = _span(lines[0], last_line)
                self.ambiguous.append(
                    (lines[0], last_line, f"{span}: may have been applied: {exc}")
                )
                self.maybe_written += len(lines)
            elif isinstance(exc, ServiceError) and exc.code == "TableNotFound":
                missing = missing_table(self.table.table_name, exc)
                self.failures.append((lines[0], last_line, missing))
            elif isinstance(exc, TransactionError):
                index = exc.index if exc.index is not None else 0
                line = lines[min(index, len(lines) - 1)]
                self.failures.append((lines[0], last_line, f"line {line}: {exc.error or exc}"))
            else:  # every message names its lines
                span = _span(lines[0], last_line)
                self.failures.append((lines[0], last_line, f"{span}: {exc}"))
            return
        finally:
            self.slots.release()
        self.written += len(lines)
        self.bar.advance(entities=len(lines), nbytes=size)

    async def drain(self) -> None:
        """Wait for every transaction in flight."""
        while self.tasks:
            await asyncio.gather(*list(self.tasks))

    def messages(self) -> list[str]:
        """One message per failed or unknown transaction, in line order (a message that is
        the same for several transactions, such as a missing table, once)."""
        found = [m for _, _, m in sorted(self.failures + self.ambiguous)]
        return list(dict.fromkeys(found))

    def summary(self, unsent_from: int | None) -> str:
        """The closing line: what was imported, what may have been, what was not written."""
        if not self.ambiguous:
            if not self.written:
                return "imported nothing: no line was written"
            return f"imported {entities_text(self.written)} ({self.unwritten(unsent_from)})"
        maybe = ", ".join(_span(first, last) for first, last, _ in sorted(self.ambiguous))
        if self.written:
            head = f"imported {entities_text(self.written)}; {self.maybe_written} more"
        else:
            head = f"imported nothing for certain; {entities_text(self.maybe_written)}"
        text = (
            f"{head} may have been applied ({maybe}: the service's answer was lost, check "
            "them before importing them again)"
        )
        rest = self._unwritten_ranges(unsent_from)
        if rest:
            text += "; not written: " + ", ".join(
                f"every line from {first} on" if last is None else _span(first, last)
                for first, last in rest
            )
        return text

    def _unwritten_ranges(self, unsent_from: int | None) -> list[tuple[int, int | None]]:
        merged: list[tuple[int, int | None]] = sorted((f, last) for f, last, _ in self.failures)
        if unsent_from is not None:
            start = unsent_from
            while merged:
                first, last = merged[-1]
                if last is None or last < start - 1:
                    break
                merged.pop()
                start = min(start, first)
            merged.append((start, None))
        return merged

    def unwritten(self, unsent_from: int | None) -> str:
        """What was not written: failed transactions' lines and the unsent rest."""
        merged = self._unwritten_ranges(unsent_from)
        if len(merged) == 1 and merged[0][1] is None:
            start = merged[0][0]
            return f"every line before line {start}; nothing from line {start} on was written"
        parts = []
        for first, last in merged:
            if last is None:
                parts.append(f"every line from {first} on")
            else:
                parts.append(_span(first, last))
        return "all other lines; not written: " + ", ".join(parts)


async def _ordered_import(
    service: TableServiceClient, args: argparse.Namespace, io_: CliStreams
) -> int:
    source = io_.stdin
    if args.create:
        table = await service.create_table_if_not_exists(args.table)
    else:
        table = service.get_table_client(args.table)
    bar = Progress(
        f"import {args.table}",
        stream=io_.stderr,
        enabled=progress_on(args, io_.stderr),
        total_bytes=_input_size(source),
    )
    importer = _Importer(table, args.mode, bar, args.concurrency)
    bad_input: InputError | None = None
    unsent_from: int | None = None
    line_no = 0
    try:
        for line_no, nbytes, line in _input_lines(source):
            if isinstance(line, str) and not line.strip():
                bar.advance(nbytes=nbytes)
                continue
            try:
                if isinstance(line, InputError):
                    raise line
                prepared = importer.prepare(line_no, loads_entity(line, line_no))
            except InputError as exc:
                bad_input = exc
                await importer.flush(line_no - 1)
                unsent_from = importer.first_unsent or line_no
                break
            await importer.add(line_no, prepared, nbytes)
            if importer.failed:
                unsent_from = importer.first_unsent or line_no + 1
                break
        else:
            await importer.flush(line_no)
            if importer.failed and importer.first_unsent is not None:
                unsent_from = importer.first_unsent
        await importer.drain()
    finally:
        bar.close()
    if importer.failed and unsent_from is None and importer.first_unsent is not None:
        unsent_from = importer.first_unsent
    if bad_input is None and not importer.failed:
        empty = "" if importer.written else " (the input has no entities)"
        io_.stderr.write(f"imported {entities_text(importer.written)} into {args.table}{empty}\n")
        return 0
    for message in importer.messages():
        io_.stderr.write(f"azt import: {message}\n")
    if bad_input is not None:
        io_.stderr.write(f"azt import: {bad_input}\n")
    io_.stderr.write(importer.summary(unsent_from) + "\n")
    if importer.failed:
        return EXIT_SERVICE
    assert unsent_from is not None  # a bad line stops the import before it is sent
    again = "" if not importer.written else f" from line {unsent_from} on"
    io_.stderr.write(f"fix line {line_no}, then import again{again}\n")
    return EXIT_INPUT


def _span(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


def _outcome_unknown(exc: AztError) -> bool:
    """Whether a failed transaction may nevertheless have been applied: its answer was lost
    (on the last attempt, or on an earlier one whose retry then met the consequences)."""
    if isinstance(exc, AmbiguousOutcomeError):
        return True
    if getattr(exc, "earlier_attempt_may_have_applied", False):
        return True
    return may_have_been_applied(exc)
