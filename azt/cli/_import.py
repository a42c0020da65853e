"""``azt import``'s machinery: reading the input lines and :class:`_Importer`, which cuts
consecutive entities of a partition into transactions on their exact encoded sizes (100
operations, 4 MiB; 2 MB on Cosmos DB) and sends them, knowing line by line what was
written. The command itself (arguments, files, messages) stays in :mod:`azt.cli`."""

from __future__ import annotations

import asyncio
import io
import os
import stat
from collections.abc import Iterator
from typing import TextIO

from azt._core.batch import (
    BatchOperation,
    Prepared,
    TableBatch,
    add_prepared,
    has_room,
    prepare_operation,
)
from azt._core.results import UpdateMode
from azt._core.retry import may_have_been_applied
from azt._core.table_client import TableClient
from azt._edm.entity import TableEntity
from azt._errors import (
    AmbiguousOutcomeError,
    AztError,
    ServiceError,
    TransactionError,
    ValidationError,
)
from azt.cli._jsonl import InputError
from azt.cli._progress import Progress


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
    body (2 MB on Cosmos DB; exact encoded sizes), or changes partition, or repeats a
    RowKey. After a failure it sends nothing more; what was written and what was not is
    known line by line (transactions are atomic)."""

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
