"""``azt import``: typed JSON lines into a table, on the bulk loader (:mod:`azt.bulk`).

Partitions go in parallel as entity group transactions, with ``--concurrency auto`` (the
default: the number in flight adapts to the service's throttling) or a fixed
``--concurrency N``, paced by ``--partition-rate`` and ``--account-rate``. A line the
service refuses is reported with its line number and the service's error while the rest
is written (exit 1); a lost answer is resolved by reading the entities back; a bad line
(not JSON, not UTF-8, not a valid entity) stops the import there: nothing from it on is
sent, everything before it is finished (exit 3, ``line N: ...``). With ``--checkpoint
FILE`` the lines the service acknowledged are kept, so that ``--resume`` skips them after
an interruption.

Example::

    azt import movies --create -i movies.jsonl --checkpoint movies.ckpt
    azt import movies -i movies.jsonl --checkpoint movies.ckpt --resume   # after a crash
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import stat
from array import array
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from azt._core.bulk.checkpoint import DonePositions, FileCheckpoint
from azt._core.bulk.loader import load
from azt._core.bulk.outcomes import (
    BulkFailure,
    BulkOptions,
    BulkProgress,
    BulkResult,
    WriteKind,
)
from azt._core.results import WriteResult
from azt._core.service_client import TableServiceClient
from azt._edm.entity import TableEntity
from azt._errors import ValidationError
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

__all__ = ["add_import_parser", "input_format", "run_import"]

#: At most this many failed lines are named one by one (the summary counts the rest).
_SHOWN = 20


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
    i = sub.add_parser(
        "import", help="read typed JSON lines or a Parquet file into a table", parents=[common]
    )
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
        "--format",
        choices=("jsonl", "parquet"),
        default=None,
        help="the input's format: typed JSON lines, or a Parquet file (needs pyarrow: "
        'pip install "azt-tables[arrow]"); default: by the suffix of -i (.parquet), else jsonl',
    )
    i.add_argument(
        "--concurrency",
        type=_concurrency,
        default=None,
        metavar="N|auto",
        help="transactions in flight at once: auto (default) adapts the number to the "
        "service's throttling (up to 128); N keeps it at N (1: one after another)",
    )
    i.add_argument(
        "--checkpoint",
        default=None,
        metavar="FILE",
        help="keep the lines the service acknowledged in FILE, so that an "
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
        help="at most N entities per second to one partition (default 2000, Azure's target)",
    )
    i.add_argument(
        "--account-rate",
        type=_rate,
        default=None,
        metavar="N",
        help="at most N entities per second in all (default 20000, Azure's target)",
    )
    progress_arg(i)


#: the suffixes of a Parquet ``-i`` file (``--format`` not given)
PARQUET_SUFFIXES = (".parquet", ".parq", ".pq")


def input_format(args: argparse.Namespace) -> str:
    """``jsonl`` or ``parquet``: ``--format``, else by the suffix of ``-i``.

    Example::

        >>> input_format(argparse.Namespace(format=None, input="movies.parquet"))
        'parquet'
    """
    if args.format is not None:
        return str(args.format)
    path = args.input
    return "parquet" if path is not None and path.lower().endswith(PARQUET_SUFFIXES) else "jsonl"


FeedFactory = Callable[["Progress", DonePositions], "_Feed"]


async def run_import(
    service: TableServiceClient,
    args: argparse.Namespace,
    io_: CliStreams,
    *,
    feed_factory: FeedFactory | None = None,
) -> int:
    """Run ``azt import`` as ``args`` say; the exit status (0, 1 when the service refused
    lines, 3 when a bad line stopped the import).

    Example::

        status = await run_import(service, build_parser().parse_args(["import", "t"]), io_)
    """
    if args.resume and not args.checkpoint:
        raise UsageError("--resume needs --checkpoint FILE (the checkpoint to continue)")
    checkpoint = None
    done = DonePositions()  # the lines an earlier run wrote (--resume): done as they are read
    if args.checkpoint is not None:
        checkpoint = FileCheckpoint(args.checkpoint)
        state = await asyncio.to_thread(checkpoint.load)
        exists = state is not None
        if exists and not args.resume:
            raise UsageError(
                f"checkpoint {args.checkpoint!r} exists: pass --resume to continue that "
                "import, or delete the file to start over"
            )
        if args.resume and not exists:
            raise UsageError(f"--resume: there is no checkpoint {args.checkpoint!r}")
        if args.resume:
            # Not a checkpoint: the loader reports it, as it reads the same state.
            with contextlib.suppress(ValidationError):
                done = DonePositions.from_state(state)
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
        # an explicit --retries caps the attempts per transaction (throttling included)
        **({} if args.retries is None else {"max_attempts": args.retries + 1}),
    )
    feed = _Feed(io_.stdin, bar, done) if feed_factory is None else feed_factory(bar, done)

    # The bar counts what the service answered, not what was read: the loader reads ahead
    # of its writes (a window of operations), so the input read says 100% while the last
    # transactions are still in flight. Its entities are the rows written (acknowledged);
    # its percentage the input bytes of the lines answered (written, or refused by the
    # service), of blank lines, and of lines an earlier run wrote (--resume).
    def on_result(index: int, outcome: WriteResult | BulkFailure) -> None:
        if isinstance(outcome, WriteResult):
            bar.advance(entities=1, nbytes=feed.sizes[index])
        elif not feed.refused(index, outcome):
            bar.advance(nbytes=feed.sizes[index])

    def progress(p: BulkProgress) -> None:
        bar.bulk(rate=p.rate, concurrency=p.concurrency, throttled=p.throttled)

    try:
        result = await load(
            table,
            feed.entities(),
            kind=_KINDS[args.mode],
            options=options,
            checkpoint=checkpoint,
            progress=progress,
            on_result=on_result,
        )
    finally:
        bar.close()
    failures = [f for f in result.failures if f is not feed.bad_failure]
    for message in _failure_messages(args.table, failures, feed.lines, feed.unit):
        io_.stderr.write(f"azt import: {message}\n")
    if feed.bad is not None:
        io_.stderr.write(f"azt import: {feed.bad}\n")
    io_.stderr.write(_summary(args.table, result, failures, feed) + "\n")
    if feed.bad is not None:
        io_.stderr.write(_fix_hint(feed, result, failures, resumable=checkpoint is not None))
        return EXIT_INPUT
    if failures:
        if checkpoint is not None:
            io_.stderr.write("run again with --resume to retry only the failed lines\n")
        return EXIT_SERVICE
    if checkpoint is not None:
        await asyncio.to_thread(os.unlink, args.checkpoint)  # done: the next starts afresh
    return 0


_KINDS: dict[str, WriteKind] = {
    "replace": "upsert-replace",
    "merge": "upsert-merge",
    "insert": "insert",
}


class _Feed:
    """The input lines as entities for the loader, stopping at the first bad line: a line
    that is not UTF-8 or JSON of typed values (found here) or not an entity the service
    would accept (found by the loader as it encodes the entity, once, and reported
    through :meth:`refused` before the next line is read)."""

    #: what the messages call one input item
    unit = "line"

    def __init__(self, stream: TextIO, bar: Progress, done: DonePositions) -> None:
        self.stream = stream
        self.bar = bar
        self.done = done
        #: the input line of each entity, by its position (an array: 8 bytes an entity)
        self.lines = array("L")
        #: the size in bytes of each entity's line, by its position (the bar counts it
        #: once the service has answered for the entity)
        self.sizes = array("L")
        #: the bad line that stopped the import, and its line number
        self.bad: InputError | None = None
        self.bad_line = 0
        #: the loader's failure for a bad entity (not a service failure)
        self.bad_failure: BulkFailure | None = None

    def entities(self) -> Iterator[TableEntity]:
        for line_no, nbytes, line in _input_lines(self.stream):
            if isinstance(line, str) and not line.strip():
                self.bar.nbytes += nbytes  # nothing to write: done once read
                continue
            try:
                if isinstance(line, InputError):
                    raise line
                entity = loads_entity(line, line_no)
            except InputError as exc:
                self.bad, self.bad_line = exc, line_no
                return
            if len(self.lines) in self.done:  # written by an earlier run: skipped
                self.bar.nbytes += nbytes
            self.lines.append(line_no)
            self.sizes.append(nbytes)
            yield entity
            if self.bad is not None:  # the loader refused it: read no further
                return

    def refused(self, index: int, failure: BulkFailure) -> bool:
        """Note a failure; true when it is a bad line (the entity just read, refused
        before sending), false for a line the service refused."""
        if (
            self.bad is None
            and failure.status is None
            and isinstance(failure.error, ValidationError)
            and index == len(self.lines) - 1
        ):
            self.bad_line = self.lines[index]
            self.bad = InputError(f"{self.unit} {self.bad_line}: {failure.error}")
            self.bad_failure = failure
            self.lines.pop()
            self.sizes.pop()
            return True
        return False


def _failure_messages(
    name: str, failures: list[BulkFailure], lines: array[int], unit: str = "line"
) -> list[str]:
    """One message per failed line (the first few), a missing table once."""
    out: list[str] = []
    for failure in failures:
        if failure.code == "TableNotFound":
            text = missing_table(name, failure.status, failure.code)
            if text not in out:
                out.append(text)
            continue
        if len(out) == _SHOWN:
            break
        what = f"{failure.status} {failure.code}: " if failure.status else ""
        first = (failure.message.splitlines() or [""])[0]
        out.append(f"{unit} {lines[failure.index]}: {what}{first}")
    shown = sum(1 for m in out if m.startswith(unit + " "))
    named = [f for f in failures if f.code != "TableNotFound"]
    if len(named) > shown:
        out.append(f"... and {len(named) - shown} more failed {unit}s")
    return out


def _spans(indexes: list[int], lines: array[int], unit: str = "line") -> str:
    """The input lines at ``indexes`` (sorted), consecutive ones as ranges."""
    parts: list[str] = []
    start = prev = -2
    for index in [*indexes, -2]:
        if index == prev + 1:
            prev = index
            continue
        if start >= 0:
            first, last = lines[start], lines[prev]
            parts.append(f"{unit} {first}" if first == last else f"{unit}s {first}-{last}")
        start = prev = index
    return ", ".join(parts)


def _summary(name: str, result: BulkResult, failures: list[BulkFailure], feed: _Feed) -> str:
    """The closing line: what was imported, and what was not; then how it went (lost
    answers resolved, throttled requests)."""
    stats = []
    if result.resolved:
        stats.append(f"{entities_text(result.resolved)} found already applied by reading back")
    if result.throttled:
        stats.append(f"{result.throttled} requests throttled")
    after = f" ({'; '.join(stats)})" if stats else ""
    before = f" ({result.skipped} already written before)" if result.skipped else ""
    written = entities_text(result.written)
    unit = feed.unit
    failed = _spans(sorted(f.index for f in failures), feed.lines, unit)
    if feed.bad is None:
        if not failures:
            empty = "" if result.read or stats else " (the input has no entities)"
            return f"imported {written} into {name}{before}{empty}{after}"
        if not result.written and not result.skipped:
            return f"imported nothing: no {unit} was written"
        lost = f"{len(failures)} failed (not written: {failed})"
        return f"imported {written} into {name}{before}; {lost}{after}"
    n = feed.bad_line
    if not result.written and not result.skipped and not failures:
        return f"imported nothing: no {unit} was written"
    but = f" but {failed}" if failures else ""
    what = f"every {unit} before {unit} {n}{but}; nothing from {unit} {n} on was written"
    head = f"imported {written}" if result.written else "imported nothing"
    if result.skipped:
        what = f"{result.skipped} already written before; {what}"
    return f"{head} ({what}){after}"


def _fix_hint(
    feed: _Feed, result: BulkResult, failures: list[BulkFailure], *, resumable: bool
) -> str:
    n, unit = feed.bad_line, feed.unit
    if resumable:
        return f"fix {unit} {n}, then import again with --resume\n"
    if not result.written and not result.skipped and not failures:
        return f"fix {unit} {n}, then import again\n"
    also = f" (and the failed {unit}s above)" if failures else ""
    return f"fix {unit} {n}, then import again from {unit} {n} on{also}\n"


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
