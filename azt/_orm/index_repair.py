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

Example::

    report = await repair_index(table, Post)
    print(report.missing, report.orphans, report.written, report.deleted)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs

from azt._core.batch import BatchOperation
from azt._core.packing import pack_groups
from azt._core.results import UpdateMode
from azt._core.table_client import TableClient
from azt._edm.entity import TableEntity
from azt._errors import AztError, ValidationError
from azt._orm.indexes import (
    Holds,
    IndexDef,
    declared_indexes,
    index_name_of,
    index_row,
    index_row_keys,
    is_index_row_key,
    main_row_key,
)

__all__ = ["IndexReport", "build_index", "repair_index", "verify_index"]

#: callback told each finished partition: (PartitionKey, the report so far)
PartitionDone = Callable[[str, "IndexReport"], None]

_PROBLEMS = 50


@attrs.define
class IndexReport:
    """What a verify, build or repair found and did.

    ``entities``: main rows read; ``partitions``: partitions finished; ``missing``: index
    rows the main rows imply that were absent; ``stale``: copy-holding rows whose copy
    differed from the main row; ``orphans``: index rows no main row implies (rows of an
    index the class does not declare included); ``written``/``deleted``: rows this run
    wrote or removed; ``skipped``: rows left alone because their main row (or the orphan)
    changed while the run read it; ``problems``: the first few, described; ``last``: the
    last partition finished (give it as ``after`` to resume).

    Example::

        >>> IndexReport().consistent
        True
    """

    entities: int = 0
    partitions: int = 0
    missing: int = 0
    stale: int = 0
    orphans: int = 0
    written: int = 0
    deleted: int = 0
    skipped: int = 0
    problems: list[str] = attrs.field(factory=list)
    last: str | None = None

    @property
    def consistent(self) -> bool:
        """Whether nothing was missing, stale or orphaned.

        Example::

            assert (await verify_index(table, Post)).consistent
        """
        return not (self.missing or self.stale or self.orphans)

    def _note(self, text: str) -> None:
        if len(self.problems) < _PROBLEMS:
            self.problems.append(text)


async def _partitions(table: TableClient, after: str | None) -> Any:
    """The table's rows, one partition (a list, in RowKey order) at a time."""
    rows = (
        table.list_entities()
        if after is None
        else table.query_entities("PartitionKey gt @after", parameters={"after": after})
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
    main rows imply."""
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


async def _run(
    table: TableClient,
    cls: type,
    *,
    write: bool,
    remove: bool,
    after: str | None,
    progress: PartitionDone | None,
) -> IndexReport:
    if not declared_indexes(cls):
        raise ValidationError(f"{cls.__name__} declares no secondary index (Meta.indexes)")
    report = IndexReport(last=after)
    async for rows in _partitions(table, after):
        pk = rows[0]["PartitionKey"]
        mains = [r for r in rows if not is_index_row_key(r["RowKey"])]
        stored = {r["RowKey"]: r for r in rows if is_index_row_key(r["RowKey"])}
        report.entities += len(mains)
        groups: list[list[BatchOperation]] = []
        wanted: set[str] = set()
        fixes: dict[str, list[BatchOperation]] = {}  # main RowKey -> its index rows to write
        guards: dict[str, BatchOperation] = {}
        for rk, d, obj, main in _expected(cls, mains):
            wanted.add(rk)
            have = stored.get(rk)
            if have is None:
                report.missing += 1
                report._note(f"missing {d.name} row for ({pk!r}, {main['RowKey']!r})")
            elif d.holds is Holds.ENTITY and _copy_differs(cls, obj, have):
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
        report.partitions += 1
        report.last = pk
        if progress is not None:
            progress(pk, report)
    return report


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
