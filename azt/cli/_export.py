"""``azt export``: a table (or the entities matching ``--filter``) as typed JSON lines, read
by a parallel scan (:mod:`azt.scan`).

``--concurrency N|auto`` bounds the requests in flight (default 4); ``--ordered`` (the
default) writes entities in (PartitionKey, RowKey) order, ``--unordered`` as they arrive
(faster: no range waits for the one before it). ``--resume FILE`` keeps the scan's token in
``FILE``: written every second and when the export stops early (interrupted, or the
service failed); run the same command again and it continues where the output ends,
appending to ``-o`` (with stdout, append the output yourself: ``>> out.jsonl``). A
finished export removes ``FILE``.

Example::

    azt export movies -o movies.jsonl --concurrency auto --resume movies.token
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import time
from typing import TextIO

from azt._core.table_client import TableClient
from azt._errors import ValidationError
from azt._orm.scan import MAX_CONCURRENCY, ParallelScan, parallel_scan
from azt.cli._jsonl import dumps_entity
from azt.cli._progress import Progress

__all__ = ["add_export_arguments", "export_table", "parse_concurrency"]

#: seconds between two saves of the resume token
SAVE_EVERY = 1.0


def parse_concurrency(text: str) -> int | str:
    """``--concurrency``: a number of requests in flight, or ``auto``.

    Example::

        >>> parse_concurrency("8"), parse_concurrency("auto")
        (8, 'auto')
    """
    if text == "auto":
        return text
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'auto', got {text!r}") from None
    if not 1 <= n <= MAX_CONCURRENCY:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_CONCURRENCY}, got {n}")
    return n


def add_export_arguments(e: argparse.ArgumentParser) -> None:
    """The options of ``azt export`` besides the table, ``--filter``, ``-o`` and
    ``--progress``.

    Example::

        >>> p = argparse.ArgumentParser(); add_export_arguments(p)
        >>> p.parse_args(["--concurrency", "auto", "--unordered"]).ordered
        False
    """
    e.add_argument(
        "--concurrency",
        type=parse_concurrency,
        default=4,
        metavar="N|auto",
        help="requests in flight at once (default 4; auto grows while it helps); the table's "
        "key space is split into ranges found as the scan goes",
    )
    order = e.add_mutually_exclusive_group()
    order.add_argument(
        "--ordered",
        dest="ordered",
        action="store_true",
        default=True,
        help="write entities in (PartitionKey, RowKey) order (the default)",
    )
    order.add_argument(
        "--unordered",
        dest="ordered",
        action="store_false",
        help="write entities as they arrive (each partition still in order)",
    )
    e.add_argument(
        "--format",
        choices=("jsonl", "parquet"),
        default="jsonl",
        help="typed JSON lines (default), or a Parquet file (-o FILE; needs pyarrow: "
        'pip install "azt-tables[arrow]")',
    )
    e.add_argument(
        "--resume",
        default=None,
        metavar="TOKEN_FILE",
        help="keep the scan's progress in TOKEN_FILE (saved every second and when stopped "
        "early); run again with it to continue, appending to -o; removed when done",
    )


def _read_state(path: str) -> tuple[str, int | None] | None:
    """The token and output size a resume file holds (``None``: no file, start afresh)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read().strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ValidationError(f"cannot read the resume file {path!r}: {exc.strerror}") from None
    if not text:
        return None
    try:
        data = json.loads(text)
        token, size = data["token"], data["output_bytes"]
    except (ValueError, TypeError, KeyError):
        raise ValidationError(f"the resume file {path!r} is not one azt export wrote") from None
    if not isinstance(token, str) or not (size is None or (type(size) is int and size >= 0)):
        raise ValidationError(f"the resume file {path!r} is not one azt export wrote")
    return token, size


def _save_state(path: str, token: str, out: TextIO, *, sized: bool) -> None:
    """Flush the output, then write ``token`` and the output's size to ``path``
    atomically (a reader never sees half of it). The size lets a resumed export cut what
    was written after the token (a partly flushed page) before it appends."""
    out.flush()
    size = os.fstat(out.fileno()).st_size if sized else None
    folder = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=folder)
    try:
        with open(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps({"token": token, "output_bytes": size}) + "\n")
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def _open_output(path: str, size: int | None, *, resuming: bool) -> TextIO:
    """The ``-o`` file of a resumable export: new, or cut to ``size`` (what the resume
    file covers) to be appended to."""
    if resuming and (size is None or not os.path.isfile(path) or os.path.getsize(path) < size):
        raise ValidationError(
            f"the resume file says an export is under way, but its output {path!r} is missing "
            "or shorter than it was: delete the resume file to start again"
        )
    try:
        out = open(path, "a" if resuming else "w", encoding="utf-8", newline="\n")  # noqa: SIM115
    except OSError as exc:
        raise ValidationError(f"cannot open output file {path!r} (-o): {exc.strerror}") from None
    if resuming:
        out.truncate(size)
    return out


def _count(n: int) -> str:
    return f"{n} entity" if n == 1 else f"{n} entities"


async def export_table(
    table: TableClient, args: argparse.Namespace, out: TextIO, err: TextIO, *, progress: bool
) -> int:
    """Run ``azt export`` (``args`` as parsed) writing to ``out`` (the ``-o`` file is opened
    here when ``--resume`` is given, to append to it); returns the exit status.

    Example::

        status = await export_table(table, args, sys.stdout, sys.stderr, progress=False)
    """
    token_file: str | None = args.resume
    state = _read_state(token_file) if token_file else None
    token = state[0] if state else None
    scan = parallel_scan(
        table,
        filter=args.filter,
        concurrency=args.concurrency,
        ordered=args.ordered,
        token=token,
    )
    opened: TextIO | None = None
    if token_file and args.output is not None:
        size = state[1] if state else None
        opened = out = _open_output(args.output, size, resuming=state is not None)
    sized = opened is not None
    bar = Progress(f"export {args.table}", stream=err, enabled=progress)
    start = scan.stats.entities
    finished = False
    last_save = time.monotonic()
    try:
        async for page in scan.by_page():
            out.write("".join(dumps_entity(e) + "\n" for e in page.items))
            bar.detail = f"concurrency {scan.stats.concurrency}"
            bar.advance(entities=len(page.items))
            if token_file and page.token and time.monotonic() - last_save >= SAVE_EVERY:
                _save_state(token_file, page.token, out, sized=sized)
                last_save = time.monotonic()
        out.flush()
        finished = True
    finally:
        bar.close()
        await scan.aclose()
        if token_file:
            _stop(scan, token_file, out, err, finished=finished, sized=sized)
        if opened is not None:
            opened.close()
    again = f" (resumed: {_count(start)} before)" if token is not None else ""
    err.write(f"exported {_count(bar.entities)} from {args.table}{again}\n")
    return 0


def _stop(
    scan: ParallelScan, token_file: str, out: TextIO, err: TextIO, *, finished: bool, sized: bool
) -> None:
    """Save where the export stands (or remove the resume file when it is complete). When
    the output itself cannot be flushed, the last saved state stays (it is consistent)."""
    token = scan.token
    if finished or token is None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(token_file)
        return
    try:
        _save_state(token_file, token, out, sized=sized)
    except (OSError, ValueError):
        err.write(f"azt export: could not save progress; {token_file} keeps the last save\n")
        return
    err.write(
        f"azt export: stopped after {_count(scan.stats.entities)}; run the same command "
        f"again (--resume {token_file}) to continue\n"
    )
