"""Index lookups beyond equality: a range or a prefix on the part after the parts pinned
with ``==`` (the seeds' "last names between A and C in a department") reads a RowKey
range of the index, never misses a row (awkward strings included: escaped characters,
one name the prefix of another, names shorter than the bound) and reads far fewer rows
than a scan. Rows read are the stub's count of entities examined (query pages are
charged what they examined, point reads one each)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import azt
from azt import TableClient, TableServiceClient
from azt.entity import Entity, Prop, prop
from azt.indexes import Holds, Index, verify_index
from azt.query import PlanKind, Query
from azt_server_stub import StubConfig, StubServer
from azt_server_stub.realism.throttle import Throttle, ThrottleLimits


class Employee(Entity):
    """PartitionKey: the company; RowKey: the employee id."""

    department: Prop[str] = prop(default="")
    last: Prop[str] = prop(default="")
    age: Prop[int] = prop(default=0)
    hired: Prop[datetime | None] = prop(default=None)

    class Meta:
        indexes = (
            Index("by_dept_last", "department", "last"),
            Index("by_dept_age", "department", "age", holds=Holds.ENTITY),
            Index("by_hired", "hired"),
        )


AWKWARD = ["", "A", "Ab", "Ab0", "Ab;", "Ab/x", "Ab%", "B", "C", "Cz", "C;", "D", "d", " A",
           "#B", "\\C", "Ä", "A\ufffd", "Mc", "McA", "Mc;", "Mc0", "Md", "\U0001f600"]  # fmt: skip
START = datetime(2020, 1, 1, tzinfo=UTC)


def people(n: int) -> list[Employee]:
    rng = random.Random(7)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabc0;/% "
    out = []
    for i in range(n):
        last = (
            rng.choice(AWKWARD)
            if i % 5 == 0
            else rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
            + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
        )
        out.append(
            Employee(
                "contoso",
                f"e{i:05d}",
                department=f"dept{i % 4}",
                last=last,
                age=rng.randint(18, 70),
                hired=START + timedelta(days=rng.randint(0, 2000)),
            )
        )
    return out


@pytest.fixture
async def env() -> AsyncIterator[tuple[TableClient, Throttle, list[Employee]]]:
    counter = Throttle(ThrottleLimits(partition_rate=None, account_rate=None))
    async with (
        StubServer(StubConfig(throttle=counter)) as stub,
        TableServiceClient.from_connection_string(
            stub.connection_string, retry=azt.RetryPolicy.no_retries()
        ) as service,
    ):
        table = await service.create_table("staff")
        staff = people(1200)
        async with table.batch_writer() as writer:
            for e in staff:
                await writer.insert(e)
        assert all(o.ok for o in writer.results)
        yield table, counter, staff


def keys(found: list[Employee]) -> list[str]:
    return sorted(e.RowKey for e in found)


async def check(
    env: tuple[TableClient, Throttle, list[Employee]],
    cond: Any,
    wanted: Callable[[Employee], bool],
    index: str,
    ranged: str,
) -> tuple[int, int]:
    """The indexed lookup equals the scan; (rows it read, rows the scan read)."""
    table, counter, staff = env
    q = Query(Employee, table).where(cond)
    plan = q.explain()
    assert plan.kind is PlanKind.INDEX, plan
    assert (plan.index, plan.index_range) == (index, ranged), plan
    assert f"a range of {ranged}" in str(plan)
    before = counter.stats.admitted_entities
    found = await q.to_list()
    read = counter.stats.admitted_entities - before
    expected = keys([e for e in staff if wanted(e)])
    assert keys(found) == expected
    assert expected  # the case is not vacuous
    before = counter.stats.admitted_entities
    scan = [
        e async for e in table.query_entities("PartitionKey eq 'contoso' and RowKey lt 'e99999'")
    ]
    scanned = counter.stats.admitted_entities - before
    assert len(scan) == len(staff)
    return read, scanned


async def test_last_names_between_a_and_c_in_a_department(env: Any) -> None:
    E = Employee
    read, scanned = await check(
        env,
        (E.PartitionKey == "contoso")
        & (E.department == "dept1")
        & (E.last >= "A")
        & (E.last < "D"),
        lambda e: e.department == "dept1" and "A" <= e.last < "D",
        "by_dept_last",
        "last",
    )
    assert read < scanned / 5, (read, scanned)


BOUNDS = [("Ab", "Ab0"), ("A", "Ab;"), ("Mc", "Md"), ("", "B"), (" ", "#"), ("C", "C;"),
          ("Ab", "Ab%"), ("A", "\U0001f600"), ("Ab", "Ab"), ("B", "A"),
          ("Mc", "Mc\uffff")]  # fmt: skip


async def test_string_ranges_with_awkward_values(env: Any) -> None:
    E = Employee
    table, _, staff = env
    for lo, hi in BOUNDS:
        for low_op, high_op in (("ge", "le"), ("gt", "lt")):
            cond = (E.PartitionKey == "contoso") & (E.department == "dept0")
            cond = cond & (E.last >= lo if low_op == "ge" else E.last > lo)
            cond = cond & (E.last <= hi if high_op == "le" else E.last < hi)
            q = Query(Employee, table).where(cond)
            assert q.explain().index == "by_dept_last"
            expected = keys(
                [
                    e
                    for e in staff
                    if e.department == "dept0"
                    and (lo <= e.last if low_op == "ge" else lo < e.last)
                    and (e.last <= hi if high_op == "le" else e.last < hi)
                ]
            )
            assert keys(await q.to_list()) == expected, (lo, hi, low_op, high_op)


async def test_a_prefix_in_a_department(env: Any) -> None:
    E = Employee
    read, scanned = await check(
        env,
        (E.PartitionKey == "contoso") & (E.department == "dept2") & E.last.startswith("Mc"),
        lambda e: e.department == "dept2" and e.last.startswith("Mc"),
        "by_dept_last",
        "last",
    )
    assert read < scanned / 20, (read, scanned)


async def test_an_int_range_read_from_copies(env: Any) -> None:
    E = Employee
    read, scanned = await check(
        env,
        (E.PartitionKey == "contoso") & (E.department == "dept3") & (E.age > 30) & (E.age <= 35),
        lambda e: e.department == "dept3" and 30 < e.age <= 35,
        "by_dept_age",
        "age",
    )
    assert read < scanned / 10, (read, scanned)


async def test_a_datetime_range_on_the_first_part(env: Any) -> None:
    E = Employee
    lo, hi = START + timedelta(days=100), START + timedelta(days=200)
    read, scanned = await check(
        env,
        (E.PartitionKey == "contoso") & (E.hired >= lo) & (E.hired < hi),
        lambda e: e.hired is not None and lo <= e.hired < hi,
        "by_hired",
        "hired",
    )
    assert read < scanned / 4, (read, scanned)
    table, _, _ = env
    assert (await verify_index(table, Employee)).consistent
