"""Group commit of durable writes, off the event loop (private).

Example::

    committer = WriteCommitter(backend)
    results = await committer.submit(GroupWrite("acct", "t", [WriteOp("insert", "p", "r")]))
    await committer.close()
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from . import errors
from .backend import Backend, GroupWrite, WriteOp, WriteResult
from .errors import StubError

log = logging.getLogger("azt_server_stub")
_T = TypeVar("_T")

#: Most write requests committed together (bounds one transaction's size and latency).
MAX_GROUP = 256


# With a durable location every write waits for an fsync. Were every write committed
# on the event loop, each fsync would stall every other request, and concurrent writes
# would be committed one per fsync. :class:`WriteCommitter` instead queues the write
# requests of concurrent clients and hands everything queued to one writer thread as
# one group (:meth:`~azt_server_stub.backend.Backend.commit_group`: one transaction,
# one fsync); while that group commits, the loop keeps serving reads and queues the
# next group. A write that comes alone (nothing queued, the writer thread idle, no
# other write in this turn of the loop: a client waiting for each answer) is committed
# at once on the loop, fsync included: two thread hand-offs cost it more CPU than
# the fsync stalls the loop (measured: ~150 us of CPU per write saved, ~100 us fsync).
# Without an fsync (durability "process") every write is committed at once on the loop:
# the store appends it to its write-behind log and commits its SQLite transactions in
# groups itself (_writelog), so there is nothing left to group here.
# Each request is answered only after its group is on disk and applied in memory, and
# groups run in arrival order, so a client that waits for its answers sees its writes
# applied in order.
class WriteCommitter:
    """Queues write requests and commits them in groups on one writer thread.

    Example::

        committer = WriteCommitter(Backend(Path("data")))
    """

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        # Without an fsync to wait for (durability "process"), a commit is short: it runs
        # on the event loop, sparing each write two thread hand-offs.
        #: Whether every write is committed at once on the calling thread
        #: (:meth:`commit_inline`).
        self.inline = not backend.fsyncs
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="azt-stub-writer")
        self._offloaded = 0  # jobs handed to the writer thread and not finished yet
        self._pending: list[tuple[GroupWrite, asyncio.Future[list[WriteResult]]]] = []
        self._drainer: asyncio.Task[None] | None = None
        self._turn_busy = False  # a write was committed on the loop in this turn of it
        self._grouping = False  # writes come several a turn: queue them all
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop of the last write

    async def submit(self, item: GroupWrite) -> list[WriteResult]:
        """Commit one write request; its results, or its ``StubError`` raised."""
        if self.inline:
            return self.commit_inline(item)
        # The loop of the last write, while it runs: on Python 3.11, get_running_loop() is
        # a getpid() system call (its check for a fork) on every write.
        loop = self._loop
        if loop is None or not loop.is_running():
            loop = self._loop = asyncio.get_running_loop()
        if not (self._turn_busy or self._grouping or self._pending or self._offloaded):
            return self._commit_now(loop, item)
        future: asyncio.Future[list[WriteResult]] = loop.create_future()
        self._pending.append((item, future))
        self._grouping = True
        if self._drainer is None or self._drainer.done():
            self._drainer = loop.create_task(self._drain())
        return await future

    # Writes that come one at a time (a client waiting for each answer) are committed at
    # once by the handler on the loop (_commit_now: no future, the handler goes on in the
    # same turn of the loop). A second write in the same turn of the loop means several
    # clients write at once: from then on writes are queued and committed in groups on
    # the writer thread, until a group of one. Nothing is committed directly while
    # anything is queued, so writes still commit in arrival order.

    def _commit_now(self, loop: asyncio.AbstractEventLoop, item: GroupWrite) -> list[WriteResult]:
        """Commit one write request now on the loop, as the group of one it is."""
        self._turn_busy = True
        loop.call_soon(self._turn_ended)
        return self.commit_inline(item)

    def commit_inline(self, item: GroupWrite) -> list[WriteResult]:
        """Commit one write request on this thread, now; its results, or its error raised.
        What :meth:`submit` does when :attr:`inline` (a caller may skip the coroutine)."""
        return _now(self._commit_one, item)

    def _commit_one(self, item: GroupWrite) -> list[WriteResult] | StubError:
        return self._backend.commit_group([item])[0]

    def insert_inline(self, account: str, table: str, op: WriteOp) -> WriteResult:
        """:meth:`commit_inline` of one insert, without a group (a lone insert's path:
        :meth:`Backend.insert_alone`); its result, or its error raised.

        Example::

            result = committer.insert_inline("devstoreaccount1", "t", WriteOp("insert", "p", "r"))
        """
        return _now(self._backend.insert_alone, account, table, op)

    def _turn_ended(self) -> None:
        self._turn_busy = False

    def _take_group(self) -> list[tuple[GroupWrite, asyncio.Future[list[WriteResult]]]]:
        group, self._pending = self._pending[:MAX_GROUP], self._pending[MAX_GROUP:]
        return group

    async def _drain(self) -> None:
        while self._pending:
            group = self._take_group()
            if len(group) == 1 and not self._pending:  # one write: the next commit at once
                self._grouping = False
            items = [item for item, _ in group]
            try:
                outcomes = await self._offload(self._backend.commit_group, items)
            except Exception as exc:
                _fail(group, exc)
                continue
            _answer(group, outcomes)

    async def _offload(self, work: Callable[..., _T], *args: Any) -> _T:
        """Run ``work`` on the writer thread (no write commits on the loop meanwhile)."""
        self._offloaded += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, work, *args)
        finally:
            self._offloaded -= 1

    async def call(self, write: Callable[..., _T], *args: Any) -> _T:
        """Run another durable write (table, ACL, service properties) on the writer thread."""
        if self.inline:
            return write(*args)
        return await self._offload(write, *args)

    async def close(self) -> None:
        """Finish every queued write, then stop the writer thread."""
        if self._drainer is not None:
            await asyncio.shield(self._drainer)
        self._executor.shutdown(wait=True)


_Group = list[tuple[GroupWrite, "asyncio.Future[list[WriteResult]]"]]


def _now(write: Callable[..., _T | StubError], *args: Any) -> _T:
    """Run one write request's commit on this thread: its result; its refusal (the
    ``StubError`` it returns) or a disk failure raised; any other exception (a stub bug)
    logged and raised as ``500 InternalError``, so the stub keeps serving."""
    try:
        outcome = write(*args)
    except StubError:  # the disk failed: nothing was applied
        raise
    except Exception:  # a stub bug: answer 500, keep serving
        log.exception("stub bug while committing %d writes", 1)
        raise errors.internal_error() from None
    if isinstance(outcome, StubError):
        raise outcome
    return outcome


def _fail(group: _Group, exc: Exception) -> None:
    """Answer every request of a group whose commit raised ``exc``: nothing was applied."""
    if isinstance(exc, StubError):  # the disk failed
        error = exc
    else:  # a stub bug: answer 500, keep serving
        log.exception("stub bug while committing %d writes", len(group), exc_info=exc)
        error = errors.internal_error()
    for _, future in group:
        if not future.done():
            future.set_exception(error)


def _answer(group: _Group, outcomes: list[list[WriteResult] | StubError]) -> None:
    """Answer each request of a committed group with its outcome."""
    for (_, future), outcome in zip(group, outcomes, strict=True):
        if future.done():  # the client went away; the write stands
            continue
        if isinstance(outcome, StubError):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)
