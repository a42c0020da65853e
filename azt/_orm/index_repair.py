"""Adopting and repairing secondary indexes over a table's existing rows: verify (report),
build (write the missing index rows and refresh stale copies) and repair (build, and delete
orphan rows, the rows of indexes the class no longer declares included).

The table is read once, partition by partition in key order (main rows sort before the
reserved index range, so each partition's rows arrive together). Writes are conditional, so
a repair running next to live writers never makes an index wrong: each index row written
travels in a transaction with a MERGE of no property on its main row, conditional on the
ETag read (a main row changed since is left to the writer that changed it, which keeps its
own index rows, and counted as ``skipped``); an orphan is deleted conditional on its own
ETag. ``after`` resumes after the last partition a previous run finished (``progress`` is
told each finished partition).

Indexes across partitions are checked in a second pass: the main partitions are read
first (every run reads them all, a resumed run without writing or counting the partitions
it had finished, to know every row the main rows imply), then the index partitions
(PartitionKeys in the reserved range). Pending intent rows (writes whose rows in other
partitions were not all written) are settled where they are found: the rows they list are
written or deleted as the main row now implies, then the intent row is deleted,
conditional on its ETag. Rows of an index across partitions cannot share a transaction
with their main row, so a main row changed during the run may leave a row that the next
run removes; queries check every such row against its main row meanwhile.

Example::

    report = await repair_index(table, Post)
    print(report.missing, report.orphans, report.written, report.deleted)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Final

import attrs

from azt._core.batch import BatchOperation
from azt._core.intents import Intent, apply_intent, intent_of
from azt._core.packing import pack_groups
from azt._core.results import UpdateMode
from azt._core.table_client import TableClient
from azt._edm.entity import TableEntity
from azt._errors import AztError, EntityNotFoundError, PreconditionFailedError, ValidationError
from azt._orm.indexes import (
    RESERVED,
    Holds,
    IndexDef,
    declared_indexes,
    index_name_of,
    index_partition_key,
    index_row,
    index_row_keys,
    intent_main_row_key,
    is_index_row_key,
    is_intent_row_key,
    main_row_key,
)
from azt._orm.planner import ordinal

__all__ = ["IndexReport", "build_index", "repair_index", "verify_index"]

#: callback told each finished partition: (PartitionKey, the report so far)
PartitionDone = Callable[[str, "IndexReport"], None]

_PROBLEMS = 50
#: the first PartitionKey after the reserved range of index partitions
_RESERVED_END: Final = RESERVED[:-1] + chr(ord(RESERVED[-1]) + 1)


@attrs.define
class IndexReport:
    """What a verify, build or repair found and did.

    ``entities``: main rows read; ``partitions``: partitions finished; ``missing``: index
    rows the main rows imply that were absent; ``stale``: copy-holding rows whose copy
    differed from the main row; ``orphans``: index rows no main row implies (rows of an
    index the class does not declare included); ``intents``: pending intent rows (writes
    whose rows in other partitions were not all carried out); ``written``/``deleted``:
    rows this run wrote or removed (intent rows settled included); ``skipped``: rows left
    alone because their main row (or the orphan) changed while the run read it;
    ``problems``: the first few, described; ``last``: the last partition finished (give it
    as ``after`` to resume).

    Example::

        >>> IndexReport().consistent
        True
    """

    entities: int = 0
    partitions: int = 0
    missing: int = 0
    stale: int = 0
    orphans: int = 0
    intents: int = 0
    written: int = 0
    deleted: int = 0
    skipped: int = 0
    problems: list[str] = attrs.field(factory=list)
    last: str | None = None

    @property
    def consistent(self) -> bool:
        """Whether nothing was missing, stale, orphaned or pending (intent rows).

        Example::

            assert (await verify_index(table, Post)).consistent
        """
        return not (self.missing or self.stale or self.orphans or self.intents)

    def _note(self, text: str) -> None:
        if len(self.problems) < _PROBLEMS:
            self.problems.append(text)


async def _partitions(
    table: TableClient,
    low: str | None,
    low_inclusive: bool,
    high: str | None,
    high_inclusive: bool,
) -> AsyncIterator[list[TableEntity]]:
    """The rows of the partitions between ``low`` and ``high`` (``None``: unbounded), one
    partition (a list, in RowKey order) at a time."""
    terms, params = [], {}
    if low is not None:
        terms.append(f"PartitionKey {'ge' if low_inclusive else 'gt'} @low")
        params["low"] = low
    if high is not None:
        terms.append(f"PartitionKey {'le' if high_inclusive else 'lt'} @high")
        params["high"] = high
    rows = (
        table.query_entities(" and ".join(terms), parameters=params)
        if terms
        else table.list_entities()
    )
    current: list[TableEntity] = []
    async for row in rows:
        if current and row["PartitionKey"] != current[0]["PartitionKey"]:
            yield current
            current = []
        current.append(row)
    if current:
        yield current


def _expected(cls: type, mains: list[TableEntity]) -> Iterator[tuple[str, IndexDef, Any, Any]]:
    """(index RowKey, its index, the main object, the main row) for every index row the
    main rows imply (indexes across partitions included)."""
    defs = {d.name: d for d in declared_indexes(cls)}
    for row in mains:
        obj = cls.from_entity(row)  # type: ignore[attr-defined]
        for name, rk in index_row_keys(obj).items():
            if rk is not None:
                yield rk, defs[name], obj, row


def _copy_differs(cls: type, obj: Any, copy: TableEntity) -> bool:
    as_main = TableEntity(copy)
    as_main["RowKey"] = main_row_key(copy["RowKey"])
    mine: dict[str, Any] = dict(obj.to_entity())
    theirs: dict[str, Any] = dict(cls.from_entity(as_main).to_entity())  # type: ignore[attr-defined]
    return mine != theirs


def _held_differ(d: IndexDef, main: TableEntity, row: TableEntity) -> bool:
    """Whether a ``Holds.PROPERTIES`` row's copy differs from its entity's properties."""
    return any((w in main) != (w in row) or (w in main and main[w] != row[w]) for w in d.held_wires)


def _phases(after: str | None) -> tuple[int, str | None]:
    """Where a run resumes: the phase ``after`` lies in (0: main partitions before the
    reserved range, 1: main partitions after it, 2: index partitions across partitions)
    and the last partition finished in that phase."""
    if after is None:
        return 0, None
    if ordinal(after) < RESERVED:
        return 0, after
    if ordinal(after) >= _RESERVED_END:
        return 1, after
    return 2, after


async def _run(
    table: TableClient,
    cls: type,
    *,
    write: bool,
    remove: bool,
    after: str | None,
    progress: PartitionDone | None,
) -> IndexReport:
    defs = declared_indexes(cls)
    if not defs:
        raise ValidationError(f"{cls.__name__} declares no secondary index (Meta.indexes)")
    report = IndexReport(last=after)
    phase, done = _phases(after)
    across = any(d.across for d in defs)
    # every row of an index across partitions that the main rows imply: (PK, RowKey)
    implied: set[tuple[str, str]] = set()
    for p, (low, high) in enumerate(((None, RESERVED), (_RESERVED_END, None))):
        if p < phase or (p == phase and done is not None):
            # partitions the resumed run finished: read for what they imply, nothing else
            through, inclusive = (high, False) if p < phase else (done, True)
            if across:
                async for rows in _partitions(table, low, False, through, inclusive):
                    _collect(cls, rows, implied)
            if p < phase:
                continue
            low = done
        fresh = low is not None and low != done  # a range's own bound: it is included
        async for rows in _partitions(table, low, fresh, high, False):
            await _main_partition(table, cls, rows, report, implied, write=write, remove=remove)
            _finished(report, rows[0]["PartitionKey"], progress)
    start = done if phase == 2 else None
    low, inclusive = (start, False) if start is not None else (RESERVED, True)
    async for rows in _partitions(table, low, inclusive, _RESERVED_END, False):
        orphans = _index_partition(rows, report, implied, remove=remove)
        if orphans:
            await _send(table, orphans, report)
        _finished(report, rows[0]["PartitionKey"], progress)
    missing: dict[str, list[list[BatchOperation]]] = {}
    for ipk, irk in sorted(implied):
        if start is not None and ordinal(ipk) <= ordinal(start):
            continue  # its partition was checked by the run resumed
        report.missing += 1
        report._note(f"missing {index_name_of(irk)} row ({ipk!r}, {irk!r})")
        row = TableEntity(PartitionKey=ipk, RowKey=irk)
        missing.setdefault(ipk, []).append([BatchOperation("upsert", row, mode=UpdateMode.REPLACE)])
    if write:
        for groups in missing.values():
            await _send(table, groups, report)
    return report


def _finished(report: IndexReport, pk: str, progress: PartitionDone | None) -> None:
    report.partitions += 1
    report.last = pk
    if progress is not None:
        progress(pk, report)


def _collect(cls: type, rows: list[TableEntity], implied: set[tuple[str, str]]) -> None:
    """Add the rows of indexes across partitions that a partition's main rows imply."""
    mains = [r for r in rows if not is_index_row_key(r["RowKey"])]
    for rk, d, _, _ in _expected(cls, mains):
        if d.across:
            implied.add((index_partition_key(rk), rk))


async def _main_partition(
    table: TableClient,
    cls: type,
    rows: list[TableEntity],
    report: IndexReport,
    implied: set[tuple[str, str]],
    *,
    write: bool,
    remove: bool,
) -> None:
    """Check (and with ``write`` fix) one main partition: its own index rows, what it
    implies in other partitions (added to ``implied``), and its pending intents."""
    pk = rows[0]["PartitionKey"]
    mains = [r for r in rows if not is_index_row_key(r["RowKey"])]
    intents = [r for r in rows if is_intent_row_key(r["RowKey"])]
    stored = {
        r["RowKey"]: r
        for r in rows
        if is_index_row_key(r["RowKey"]) and not is_intent_row_key(r["RowKey"])
    }
    report.entities += len(mains)
    groups: list[list[BatchOperation]] = []
    wanted: set[str] = set()
    fixes: dict[str, list[BatchOperation]] = {}  # main RowKey -> its index rows to write
    guards: dict[str, BatchOperation] = {}
    elsewhere: dict[str, set[tuple[str, str]]] = {}  # main RowKey -> rows across partitions
    for rk, d, obj, main in _expected(cls, mains):
        if d.across:
            key = (index_partition_key(rk), rk)
            implied.add(key)
            elsewhere.setdefault(main["RowKey"], set()).add(key)
            continue
        wanted.add(rk)
        have = stored.get(rk)
        if have is None:
            report.missing += 1
            report._note(f"missing {d.name} row for ({pk!r}, {main['RowKey']!r})")
        elif (d.holds is Holds.ENTITY and _copy_differs(cls, obj, have)) or (
            d.holds is Holds.PROPERTIES and _held_differ(d, main, have)
        ):
            report.stale += 1
            report._note(f"stale {d.name} copy for ({pk!r}, {main['RowKey']!r})")
        else:
            continue
        mrk = main["RowKey"]
        guards.setdefault(
            mrk,
            BatchOperation(
                "update",
                {"PartitionKey": pk, "RowKey": mrk},
                mode=UpdateMode.MERGE,
                etag=main.metadata.etag or "*",
            ),
        )
        source = obj.to_entity() if d.holds is Holds.ENTITY else main
        row = index_row(d, rk, source)
        fixes.setdefault(mrk, []).append(BatchOperation("upsert", row, mode=UpdateMode.REPLACE))
    groups += [[guards[mrk], *ops] for mrk, ops in fixes.items()]
    for rk, row in stored.items():
        if rk not in wanted:
            report.orphans += 1
            report._note(f"orphan {index_name_of(rk)} row ({pk!r}, {rk!r})")
            if remove:
                etag = row.metadata.etag or "*"
                groups.append(
                    [BatchOperation("delete", {"PartitionKey": pk, "RowKey": rk}, etag=etag)]
                )
    if write and groups:
        await _send(table, groups, report)
    for row in intents:
        report.intents += 1
        report._note(f"pending intent ({pk!r}, {row['RowKey']!r})")
        if write:
            now = elsewhere.get(intent_main_row_key(row["RowKey"]), set())
            await _settle(table, row, now, report)


async def _settle(
    table: TableClient, row: TableEntity, now: set[tuple[str, str]], report: IndexReport
) -> None:
    """Carry out a pending intent as its main row now stands (``now``: the rows across
    partitions it implies): write the rows it listed that are still implied, delete the
    ones that no longer are, then delete the intent row, conditional on its ETag."""
    intent = intent_of(row)
    if intent is None:
        report.skipped += 1
        report._note(f"unreadable intent row ({row['PartitionKey']!r}, {row['RowKey']!r})")
        return
    puts = tuple(k for k in intent.put if k in now)
    gone = tuple(k for k in intent.delete if k not in now)
    try:
        await apply_intent(table, Intent(puts, gone))
        await table.delete_entity(row["PartitionKey"], row["RowKey"], etag=row.metadata.etag or "*")
    except (EntityNotFoundError, PreconditionFailedError):
        return  # its writer settled it meanwhile
    except AztError:
        report.skipped += 1
        return
    report.written += len(puts)
    report.deleted += len(gone) + 1


def _index_partition(
    rows: list[TableEntity],
    report: IndexReport,
    implied: set[tuple[str, str]],
    *,
    remove: bool,
) -> list[list[BatchOperation]]:
    """Check one partition of indexes across partitions: a row the main rows imply is
    taken off ``implied`` (what is left there is missing); any other row is an orphan,
    whose deletion (conditional on its ETag) is returned with ``remove``."""
    pk = rows[0]["PartitionKey"]
    groups: list[list[BatchOperation]] = []
    for row in rows:
        key = (pk, row["RowKey"])
        if key in implied:
            implied.discard(key)
            continue
        report.orphans += 1
        report._note(f"orphan {index_name_of(row['RowKey'])} row ({pk!r}, {row['RowKey']!r})")
        if remove:
            etag = row.metadata.etag or "*"
            groups.append(
                [BatchOperation("delete", {"PartitionKey": pk, "RowKey": key[1]}, etag=etag)]
            )
    return groups


async def _send(
    table: TableClient, groups: list[list[BatchOperation]], report: IndexReport
) -> None:
    """Send ``groups`` packed into transactions; a transaction that fails (a row changed
    meanwhile) is sent again group by group, and a group that still fails is skipped."""
    for batch, _ in pack_groups(table.batch, groups):
        try:
            await table.submit_transaction(batch)
        except AztError:
            for group in _split(batch.operations):
                try:
                    await table.submit_transaction(group)
                except AztError:
                    report.skipped += 1
                    continue
                _count(group, report)
            continue
        _count(batch.operations, report)


def _split(ops: list[BatchOperation]) -> list[list[BatchOperation]]:
    """The groups of a packed transaction again: each guard with the row after it, each
    orphan delete on its own."""
    out: list[list[BatchOperation]] = []
    for op in ops:
        if op.kind == "upsert" and out and out[-1][0].kind == "update":
            out[-1].append(op)
        else:
            out.append([op])
    return out


def _count(ops: list[BatchOperation], report: IndexReport) -> None:
    for op in ops:
        if op.kind == "upsert":
            report.written += 1
        elif op.kind == "delete":
            report.deleted += 1


async def verify_index(
    table: TableClient,
    cls: type,
    *,
    after: str | None = None,
    progress: PartitionDone | None = None,
) -> IndexReport:
    """Compare the index rows of ``table`` with what the main rows of entity class
    ``cls`` imply, changing nothing.

    Example::

        report = await verify_index(table, Post)
        assert report.consistent, report.problems
    """
    return await _run(table, cls, write=False, remove=False, after=after, progress=progress)


async def build_index(
    table: TableClient,
    cls: type,
    *,
    after: str | None = None,
    progress: PartitionDone | None = None,
) -> IndexReport:
    """Write the index rows of ``cls``'s declared indexes that ``table`` lacks (adopting an
    index on a table that already holds data) and refresh stale copies; orphans are
    reported, not removed. ``after``: resume after that PartitionKey.

    Example::

        report = await build_index(table, Post)
        print(report.written, "index rows written")
    """
    return await _run(table, cls, write=True, remove=False, after=after, progress=progress)


async def repair_index(
    table: TableClient,
    cls: type,
    *,
    after: str | None = None,
    progress: PartitionDone | None = None,
) -> IndexReport:
    """:func:`build_index`, and delete every orphan index row, the rows of indexes ``cls``
    no longer declares included (how a removed index's rows go away).

    Example::

        report = await repair_index(table, Post)
        assert (await verify_index(table, Post)).consistent
    """
    return await _run(table, cls, write=True, remove=True, after=after, progress=progress)
