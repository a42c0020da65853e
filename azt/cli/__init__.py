"""The ``azt`` command line: list tables, query, export and import, against any endpoint.

The account comes from ``--connection-string`` or the ``AZT_CONNECTION_STRING``
environment variable (``UseDevelopmentStorage=true`` means a local emulator on
``127.0.0.1:10002``, such as ``azt-stub``)::

    azt tables list
    azt tables create movies
    azt query movies --filter "PartitionKey eq 'Action' and Rating ge 4.5" \\
        --select Rating,ReleaseYear --top 10 --format table
    azt export movies > movies.jsonl          # progress on stderr
    azt import movies --create < movies.jsonl

Export and import use typed JSON lines (see :mod:`azt.cli._jsonl`): every value keeps its
EDM type through a round trip. Import groups consecutive entities of a partition into
entity group transactions of up to 100 operations and 4 MiB (cut on each entity's exact
encoded size).

``--server-timeout SECONDS`` asks the service to give up on each request after that long;
``--location-mode secondary`` sends the reads of ``tables list``, ``query`` and ``export``
to the read-only replica of a geo-redundant account (writes always go to the primary).

Exit status: ``0`` success; ``1`` the service refused or could not be reached; ``2`` bad
usage (arguments, connection string, filter); ``3`` bad input data (import); ``130``
interrupted; ``141`` the reader of the output went away (``azt export t | head``).

Example::

    >>> main(["--version"])  # doctest: +SKIP
    azt 0.1.0
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import io
import os
import stat
import sys
import tempfile
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from typing import TextIO

from azt._core.batch import (
    BatchOperation,
    Prepared,
    TableBatch,
    add_prepared,
    has_room,
    prepare_operation,
)
from azt._core.config import LocationMode, RetryPolicy
from azt._core.results import UpdateMode
from azt._core.retry import may_have_been_applied
from azt._core.service_client import TableServiceClient
from azt._core.table_client import TableClient
from azt._edm.entity import TableEntity
from azt._errors import (
    AmbiguousOutcomeError,
    AztError,
    ConnectionStringError,
    ServiceError,
    TransactionError,
    TransportError,
    ValidationError,
)
from azt.cli._export import add_export_arguments, export_table
from azt.cli._jsonl import InputError, dumps_entity, loads_entity, text_value
from azt.cli._progress import Progress

__all__ = [
    "ENV_VAR",
    "EXIT_BROKEN_PIPE",
    "EXIT_INPUT",
    "EXIT_SERVICE",
    "EXIT_USAGE",
    "build_parser",
    "main",
]

#: Environment variable holding the default connection string.
ENV_VAR = "AZT_CONNECTION_STRING"
#: Exit status when the service refused the request or could not be reached.
EXIT_SERVICE = 1
#: Exit status for bad usage: arguments, connection string, filter.
EXIT_USAGE = 2
#: Exit status for bad input data (``azt import``).
EXIT_INPUT = 3

#: Exit status when the reader of stdout went away (128 + SIGPIPE, as shells report it).
EXIT_BROKEN_PIPE = 141

_TABLE_CELL = 40


class _UsageError(Exception):
    """Bad usage detected after parsing (exit status 2)."""


class CliStreams:
    """Where the command reads and writes (real stdio by default; tests pass buffers).

    Example::

        >>> import io
        >>> streams = CliStreams(stdin=io.StringIO("x"), stdout=io.StringIO())
        >>> streams.stdin.read()
        'x'
    """

    def __init__(
        self,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.stdin = stdin if stdin is not None else sys.stdin
        self.stdout = stdout if stdout is not None else sys.stdout
        self.stderr = stderr if stderr is not None else sys.stderr


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("azt")
    except Exception:  # not installed (running from a checkout)
        return "0+unknown"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``azt``.

    Example::

        >>> build_parser().parse_args(["query", "movies", "--top", "5"]).top
        5
    """
    top_common = _common_options(suppress=False)
    common = _common_options(suppress=True)

    p = argparse.ArgumentParser(
        prog="azt",
        description="Azure Table storage from the command line (azt).",
        parents=[top_common],
        epilog="exit status: 0 ok, 1 service error or unreachable, 2 usage, 3 bad input data",
    )
    p.add_argument("--version", action="version", version=f"azt {_version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    tables = sub.add_parser("tables", help="list or create tables", parents=[common])
    tsub = tables.add_subparsers(dest="tables_command", metavar="ACTION", required=True)
    tl = tsub.add_parser("list", help="list the account's tables", parents=[common])
    tl.add_argument("--prefix", default=None, help="only names starting with this")
    tc = tsub.add_parser("create", help="create a table", parents=[common])
    tc.add_argument("table")
    tc.add_argument("--if-not-exists", action="store_true", help="succeed if it exists")

    q = sub.add_parser("query", help="query entities with an OData filter", parents=[common])
    q.add_argument("table")
    q.add_argument("--filter", default=None, help="OData $filter, e.g. \"PartitionKey eq 'a'\"")
    q.add_argument("--select", default=None, help="comma-separated property names")
    q.add_argument("--top", type=int, default=None, metavar="N", help="at most N entities")
    q.add_argument(
        "--format",
        choices=("table", "jsonl", "csv"),
        default="table",
        help="output: an aligned table (default), typed JSON lines, or CSV",
    )

    e = sub.add_parser("export", help="write a table as typed JSON lines", parents=[common])
    e.add_argument("table")
    e.add_argument("--filter", default=None, help="export only matching entities")
    e.add_argument("-o", "--output", default=None, help="file to write (default: stdout)")
    add_export_arguments(e)
    _progress_arg(e)

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
        type=int,
        default=4,
        metavar="N",
        help="transactions in flight at once (default 4; 1 sends them one after another)",
    )
    _progress_arg(i)
    return p


def _common_options(*, suppress: bool) -> argparse.ArgumentParser:
    """The options every command takes. Sub-commands repeat them with suppressed defaults so
    that ``azt --connection-string X query t`` and ``azt query t --connection-string X``
    both work (a sub-parser's default would otherwise overwrite the value given before)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--connection-string",
        metavar="CONN",
        default=argparse.SUPPRESS if suppress else None,
        help=f"the account to use (default: ${ENV_VAR}; UseDevelopmentStorage=true for a "
        "local emulator)",
    )
    common.add_argument(
        "--server-timeout",
        type=int,
        default=argparse.SUPPRESS if suppress else None,
        metavar="SECONDS",
        help="ask the service to give up on each request after SECONDS (it allows at most "
        "30; the request is then answered 500 OperationTimedOut and retried)",
    )
    common.add_argument(
        "--location-mode",
        choices=[m.value.replace("_", "-") for m in LocationMode],
        default=argparse.SUPPRESS if suppress else "primary",
        help="where reads go on a geo-redundant (RA-GRS) account: primary (default), "
        "secondary (the read-only replica, possibly behind), or primary-then-secondary "
        "(the replica when the primary keeps failing); writes always go to the primary",
    )
    common.add_argument(
        "--retries",
        type=int,
        default=argparse.SUPPRESS if suppress else 3,
        metavar="N",
        help="retries of a throttled or failed request (default 3; 0 disables)",
    )
    return common


def _progress_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="progress bar on stderr: auto (when stderr is a terminal), always or never",
    )


def _connection_string(args: argparse.Namespace) -> str:
    conn = args.connection_string or os.environ.get(ENV_VAR)
    if not conn:
        raise _UsageError(
            f"no connection string: pass --connection-string or set {ENV_VAR} "
            "(UseDevelopmentStorage=true for a local emulator)"
        )
    return str(conn)


def _retry(args: argparse.Namespace) -> RetryPolicy:
    if args.retries < 0:
        raise _UsageError("--retries must be 0 or more")
    return RetryPolicy(max_attempts=args.retries + 1, base=1.0, minimum=0.5, maximum=10.0)


def _progress_on(args: argparse.Namespace, stream: TextIO) -> bool:
    if args.progress == "always":
        return True
    if args.progress == "never":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


# ----------------------------------------------------------------------------- commands


async def _tables_list(
    service: TableServiceClient, args: argparse.Namespace, io_: CliStreams
) -> int:
    if args.prefix:
        from azt._orm.expr import prefix_upper_bound

        high = prefix_upper_bound(args.prefix)
        params = {"low": args.prefix}
        flt = "TableName ge @low"
        if high is not None:
            params["high"] = high
            flt += " and TableName lt @high"
        pager = service.query_tables(flt, parameters=params)
    else:
        pager = service.list_tables()
    async for name in pager:
        io_.stdout.write(name + "\n")
    return 0


async def _tables_create(
    service: TableServiceClient, args: argparse.Namespace, io_: CliStreams
) -> int:
    if args.if_not_exists:
        await service.create_table_if_not_exists(args.table)
    else:
        await service.create_table(args.table)
    io_.stderr.write(f"table {args.table} is ready\n")
    return 0


def _select(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise _UsageError("--select needs at least one property name")
    # The keys always come along: they identify the rows in every output format.
    return ["PartitionKey", "RowKey", *(n for n in names if n not in ("PartitionKey", "RowKey"))]


async def _entities(
    table: TableClient, flt: str | None, select: Sequence[str] | None, top: int | None
) -> AsyncIterator[TableEntity]:
    """Entities in key order, following continuations, at most ``top`` of them."""
    if top is not None and top < 1:
        raise _UsageError("--top must be at least 1")
    per_page = min(top, 1000) if top is not None else None
    seen = 0
    pager = table.query_entities(flt, select=select, results_per_page=per_page)
    entities = aiter(pager)
    try:
        async for entity in entities:
            yield entity
            seen += 1
            if top is not None and seen >= top:
                return
    finally:  # stop the pager's generator now, not when it is garbage collected
        aclose = getattr(entities, "aclose", None)
        if aclose is not None:
            await aclose()


def _columns(rows: Iterable[TableEntity], select: Sequence[str] | None) -> list[str]:
    cols = ["PartitionKey", "RowKey"]
    if select is not None:
        return [*cols, *(n for n in select if n not in cols)]
    cols.append("Timestamp")
    seen = set(cols)
    for row in rows:
        for name in row:
            if name not in seen:
                seen.add(name)
                cols.append(name)
    return cols


def _cell(entity: TableEntity, name: str) -> str:
    if name == "Timestamp":
        ts = entity.metadata.timestamp
        return ts.to_wire() if ts is not None else ""
    return text_value(entity.get(name))


def _render_table(rows: list[TableEntity], cols: list[str], out: TextIO) -> None:
    cells = [[_cell(r, c) for c in cols] for r in rows]
    for line in cells:
        for k, text in enumerate(line):
            text = text.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
            if len(text) > _TABLE_CELL:
                text = text[: _TABLE_CELL - 1] + "…"
            line[k] = text
    widths = [max([len(c), *(len(line[k]) for line in cells)]) for k, c in enumerate(cols)]
    out.write("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip() + "\n")
    out.write("  ".join("-" * w for w in widths) + "\n")
    for line in cells:
        out.write("  ".join(t.ljust(w) for t, w in zip(line, widths, strict=True)).rstrip() + "\n")
    out.write(f"({_entities_text(len(rows))})\n")


async def _query(service: TableServiceClient, args: argparse.Namespace, io_: CliStreams) -> int:
    table = service.get_table_client(args.table)
    select = _select(args.select)
    rows = _entities(table, args.filter, select, args.top)
    out = io_.stdout
    if args.format == "jsonl":
        async for entity in rows:
            out.write(dumps_entity(entity) + "\n")
    elif args.format == "csv":
        writer = csv.writer(out, lineterminator="\n")
        if select is not None:  # the columns are known: stream
            cols = _columns((), select)
            writer.writerow(cols)
            async for entity in rows:
                writer.writerow([_cell(entity, c) for c in cols])
        else:  # the columns are the union of every row's properties: read them all first
            buffered = [e async for e in rows]
            cols = _columns(buffered, select)
            writer.writerow(cols)
            for entity in buffered:
                writer.writerow([_cell(entity, c) for c in cols])
    else:
        buffered = [e async for e in rows]
        _render_table(buffered, _columns(buffered, select), out)
    return 0


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
                missing = _missing_table(self.table.table_name, exc)
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
            return f"imported {_entities_text(self.written)} ({self.unwritten(unsent_from)})"
        maybe = ", ".join(_span(first, last) for first, last, _ in sorted(self.ambiguous))
        if self.written:
            head = f"imported {_entities_text(self.written)}; {self.maybe_written} more"
        else:
            head = f"imported nothing for certain; {_entities_text(self.maybe_written)}"
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


async def _import(service: TableServiceClient, args: argparse.Namespace, io_: CliStreams) -> int:
    if args.concurrency < 1:
        raise _UsageError("--concurrency must be at least 1")
    source = io_.stdin
    if args.create:
        table = await service.create_table_if_not_exists(args.table)
    else:
        table = service.get_table_client(args.table)
    bar = Progress(
        f"import {args.table}",
        stream=io_.stderr,
        enabled=_progress_on(args, io_.stderr),
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
        io_.stderr.write(f"imported {_entities_text(importer.written)} into {args.table}{empty}\n")
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


def _entities_text(n: int) -> str:
    return f"{n} entity" if n == 1 else f"{n} entities"


def _missing_table(name: str, exc: ServiceError | None = None) -> str:
    code = f" ({exc.status} {exc.code})" if exc is not None else ""
    return f"table {name!r} does not exist{code}: pass --create to create it"


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


# ----------------------------------------------------------------------------- files


def _open_error(path: str, option: str, exc: OSError, *, writing: bool) -> _UsageError:
    what = "output" if writing else "input"
    if isinstance(exc, FileNotFoundError):
        if writing:
            folder = os.path.dirname(os.path.abspath(path))
            why = f"its folder {folder!r} does not exist"
        else:
            why = "there is no such file"
        return _UsageError(f"cannot open {what} file {path!r} ({option}): {why}")
    if isinstance(exc, IsADirectoryError):
        return _UsageError(f"{what} file {path!r} ({option}) is a folder: give a file name")
    if isinstance(exc, PermissionError):
        action = "write into its folder" if writing else "read it"
        return _UsageError(
            f"cannot open {what} file {path!r} ({option}): no permission to {action}"
        )
    reason = (exc.strerror or str(exc)).lower()
    return _UsageError(f"cannot open {what} file {path!r} ({option}): {reason}")


def _open_input(path: str) -> TextIO:
    """The ``-i`` file; a file that cannot be read is bad usage, named with what to do."""
    if os.path.isdir(path):
        raise _open_error(path, "-i", IsADirectoryError(), writing=False)
    try:
        return open(path, encoding="utf-8")
    except OSError as exc:
        raise _open_error(path, "-i", exc, writing=False) from None


class _OutputFile:
    """The ``-o`` file, written to a temporary file beside it and put in place only when the
    command succeeds: a failed export leaves an existing file as it was."""

    def __init__(self, path: str) -> None:
        self.path = path
        if os.path.isdir(path):
            raise _open_error(path, "-o", IsADirectoryError(), writing=True)
        folder = os.path.dirname(os.path.abspath(path))
        try:
            fd, self._temp = tempfile.mkstemp(
                prefix=f".{os.path.basename(path)}.", suffix=".part", dir=folder
            )
        except OSError as exc:
            raise _open_error(path, "-o", exc, writing=True) from None
        self.stream: TextIO = open(fd, "w", encoding="utf-8", newline="\n")  # noqa: SIM115
        self._done = False

    def commit(self) -> None:
        """Close the file and put it in place (same folder: an atomic rename)."""
        self.stream.close()
        os.replace(self._temp, self.path)
        self._done = True

    def discard(self) -> None:
        """Close and remove the temporary file, unless :meth:`commit` put it in place."""
        if self._done:
            return
        self._done = True
        self.stream.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._temp)


def _service_hint(exc: ServiceError, args: argparse.Namespace) -> str | None:
    """What to do about a refusal, when the command line can say."""
    table = getattr(args, "table", None)
    if exc.code == "TableNotFound" and table:
        if args.command == "import":
            return _missing_table(table)
        return f"table {table!r} does not exist: `azt tables list` shows the account's tables"
    if exc.code == "TableAlreadyExists":
        return "pass --if-not-exists to accept a table that already exists"
    if exc.status in (401, 403):
        return "check the account key or SAS token in the connection string"
    if exc.status == 400 and args.command in ("query", "export"):
        return "check --filter and --select (for example --filter \"PartitionKey eq 'a'\")"
    return None


# ----------------------------------------------------------------------------- entry point


async def _run(args: argparse.Namespace, io_: CliStreams) -> int:
    conn = _connection_string(args)
    retry = _retry(args)
    location = LocationMode(args.location_mode.replace("-", "_"))
    async with TableServiceClient.from_connection_string(
        conn, retry=retry, server_timeout=args.server_timeout, location_mode=location
    ) as service:
        if args.command == "tables":
            if args.tables_command == "list":
                return await _tables_list(service, args, io_)
            return await _tables_create(service, args, io_)
        if args.command == "query":
            return await _query(service, args, io_)
        if args.command == "export":
            table = service.get_table_client(args.table)
            on = _progress_on(args, io_.stderr)
            return await export_table(table, args, io_.stdout, io_.stderr, progress=on)
        return await _import(service, args, io_)


def main(
    argv: Sequence[str] | None = None,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run ``azt`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit status.

    Example::

        status = main(["tables", "list", "--connection-string", "UseDevelopmentStorage=true"])
    """
    io_ = CliStreams(stdin, stdout, stderr)
    parser = build_parser()
    try:  # argparse prints usage errors, --help and --version: to the streams given
        with contextlib.redirect_stdout(io_.stdout), contextlib.redirect_stderr(io_.stderr):
            args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error (already printed)
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    output: _OutputFile | None = None
    opened: list[TextIO] = []
    status = EXIT_SERVICE
    try:
        if getattr(args, "input", None) is not None:
            io_.stdin = _open_input(args.input)
            opened.append(io_.stdin)
        if getattr(args, "output", None) is not None and not getattr(args, "resume", None):
            output = _OutputFile(args.output)  # a resumable export appends to its own
            io_.stdout = output.stream
        status = asyncio.run(_run(args, io_))
        if output is not None:
            output.commit()
        return status
    except _UsageError as exc:
        io_.stderr.write(f"azt: {exc}\n")
        return EXIT_USAGE
    except ConnectionStringError as exc:
        io_.stderr.write(f"azt: bad connection string: {exc}\n")
        return EXIT_USAGE
    except ServiceError as exc:
        code = f" {exc.code}" if exc.code else ""
        first = (exc.message or "").split("\n", 1)[0].strip()
        rid = f" (request id {exc.request_id})" if exc.request_id else ""
        io_.stderr.write(
            f"azt: the service refused the request: {exc.status}{code}: {first}{rid}\n"
        )
        hint = _service_hint(exc, args)
        if hint:
            io_.stderr.write(f"azt: {hint}\n")
        # A 400 to a read is its --filter or --select: bad usage, as documented.
        reads = exc.status == 400 and args.command in ("query", "export")
        return EXIT_USAGE if reads else EXIT_SERVICE
    except TransportError as exc:
        io_.stderr.write(
            f"azt: cannot reach the service: {exc}\n"
            "azt: check the endpoint in the connection string and that the service is running\n"
        )
        return EXIT_SERVICE
    except ValidationError as exc:
        io_.stderr.write(f"azt: {exc}\n")
        return EXIT_USAGE
    except AztError as exc:
        io_.stderr.write(f"azt: {exc}\n")
        return EXIT_SERVICE
    except BrokenPipeError:
        # The reader went away (``azt export t | head``): stop quietly, like other tools,
        # and keep Python from complaining again when it flushes stdout at exit.
        if io_.stdout is sys.stdout:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        return EXIT_BROKEN_PIPE
    except OSError as exc:  # writing the output failed (disk full...)
        where = f" {exc.filename!r}" if exc.filename else " the output"
        io_.stderr.write(f"azt: cannot write{where}: {exc.strerror or exc}\n")
        return EXIT_SERVICE
    except KeyboardInterrupt:
        io_.stderr.write("azt: interrupted\n")
        return 130
    finally:
        for f in opened:
            f.close()
        if output is not None:
            output.discard()  # after a commit, nothing left to discard
