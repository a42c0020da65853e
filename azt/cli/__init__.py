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
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Iterable, Sequence
from types import ModuleType
from typing import TextIO

from azt import __version__
from azt._core.config import LocationMode, RetryPolicy
from azt._core.service_client import TableServiceClient
from azt._core.table_client import TableClient
from azt._edm.entity import TableEntity
from azt._errors import (
    AztError,
    ConnectionStringError,
    ServiceError,
    TransportError,
    ValidationError,
)
from azt.cli._by_query import add_by_query_parsers, run_by_query
from azt.cli._common import (
    ENV_VAR,
    EXIT_BROKEN_PIPE,
    EXIT_INCONSISTENT,
    EXIT_INPUT,
    EXIT_SERVICE,
    EXIT_USAGE,
    CliStreams,
    UsageError,
    entities_text,
    missing_table,
    progress_on,
)
from azt.cli._export import add_export_arguments, export_table
from azt.cli._import import add_import_parser, input_format, run_import
from azt.cli._index import add_index_parser, run_index
from azt.cli._jsonl import dumps_entity, text_value
from azt.cli._migrate import add_migrate_parser, run_migrate

__all__ = [
    "ENV_VAR",
    "EXIT_BROKEN_PIPE",
    "EXIT_INCONSISTENT",
    "EXIT_INPUT",
    "EXIT_SERVICE",
    "EXIT_USAGE",
    "build_parser",
    "main",
]

_TABLE_CELL = 40


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
    p.add_argument("--version", action="version", version=f"azt {__version__}")
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

    e = sub.add_parser(
        "export", help="write a table as typed JSON lines or a Parquet file", parents=[common]
    )
    e.add_argument("table")
    e.add_argument("--filter", default=None, help="export only matching entities")
    e.add_argument("-o", "--output", default=None, help="file to write (default: stdout)")
    add_export_arguments(e)
    _progress_arg(e)

    add_import_parser(sub, common, _progress_arg)
    add_by_query_parsers(sub, common, _progress_arg)
    add_index_parser(sub, common, _progress_arg)
    add_migrate_parser(sub, common, _progress_arg)
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
        default=argparse.SUPPRESS if suppress else None,
        metavar="N",
        help="retries of a throttled or failed request (default 3; 0 disables; import: "
        "attempts per transaction, default 30, as the bulk loader paces itself)",
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
        raise UsageError(
            f"no connection string: pass --connection-string or set {ENV_VAR} "
            "(UseDevelopmentStorage=true for a local emulator)"
        )
    return str(conn)


def _retry(args: argparse.Namespace) -> RetryPolicy:
    retries = 3 if args.retries is None else args.retries
    if retries < 0:
        raise UsageError("--retries must be 0 or more")
    # an explicit --retries caps throttled requests (429) too; by default they get the
    # Cosmos DB SDKs' budget (RetryPolicy.throttled_attempts)
    throttled = {} if args.retries is None else {"throttled_attempts": retries + 1}
    return RetryPolicy(max_attempts=retries + 1, base=1.0, minimum=0.5, maximum=10.0, **throttled)


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
        raise UsageError("--select needs at least one property name")
    # The keys always come along: they identify the rows in every output format.
    return ["PartitionKey", "RowKey", *(n for n in names if n not in ("PartitionKey", "RowKey"))]


async def _entities(
    table: TableClient, flt: str | None, select: Sequence[str] | None, top: int | None
) -> AsyncIterator[TableEntity]:
    """Entities in key order, following continuations, at most ``top`` of them."""
    if top is not None and top < 1:
        raise UsageError("--top must be at least 1")
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
    out.write(f"({entities_text(len(rows))})\n")


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


# ----------------------------------------------------------------------------- files


def _open_error(path: str, option: str, exc: OSError, *, writing: bool) -> UsageError:
    what = "output" if writing else "input"
    if isinstance(exc, FileNotFoundError):
        if writing:
            folder = os.path.dirname(os.path.abspath(path))
            why = f"its folder {folder!r} does not exist"
        else:
            why = "there is no such file"
        return UsageError(f"cannot open {what} file {path!r} ({option}): {why}")
    if isinstance(exc, IsADirectoryError):
        return UsageError(f"{what} file {path!r} ({option}) is a folder: give a file name")
    if isinstance(exc, PermissionError):
        action = "write into its folder" if writing else "read it"
        return UsageError(f"cannot open {what} file {path!r} ({option}): no permission to {action}")
    reason = (exc.strerror or str(exc)).lower()
    return UsageError(f"cannot open {what} file {path!r} ({option}): {reason}")


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
            return missing_table(table)
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
            on = progress_on(args, io_.stderr)
            if args.format == "parquet":
                command = _parquet_cli().export_parquet_command
                status: int = await command(table, args, io_.stdout, io_.stderr, progress=on)
                return status
            return await export_table(table, args, io_.stdout, io_.stderr, progress=on)
        if args.command == "index":
            return await run_index(service, args, io_)
        if args.command == "migrate":
            return await run_migrate(service, args, io_)
        if args.command in ("update", "delete"):
            return await run_by_query(service, args, io_)
        if input_format(args) == "parquet":
            if args.input is None:
                raise UsageError("a Parquet import reads a file: give -i FILE")
            feed = _parquet_cli().ParquetFeed
            source = io_.stdin.buffer
            return await run_import(
                service, args, io_, feed_factory=lambda bar, done: feed(source, bar, done)
            )
        return await run_import(service, args, io_)


def _parquet_cli() -> ModuleType:
    """:mod:`azt.cli._parquet`, imported when a command needs it: pyarrow is an optional
    dependency (the ``[arrow]`` extra) and every other command runs without it."""
    try:
        from azt.cli import _parquet  # optional dependency, not a cycle: see the docstring
    except ImportError as exc:
        raise UsageError(
            f'Parquet needs pyarrow ({exc}): pip install "azt-tables[arrow]"'
        ) from None
    return _parquet


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
    except UsageError as exc:
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
