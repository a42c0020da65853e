"""The migration scenario of issue 30, shared by the test (5,000 rows) and
``scripts/migrate_scenario.py`` (100,000 rows):

1. a table written by version 1 of a class (``CustomerV1``, with two secondary indexes);
2. a stub throttling and failing 10 % of the requests (503 ServerBusy, 500
   OperationTimedOut, and connections dropped after the write was applied);
3. a real ``azt migrate up`` subprocess, killed with SIGKILL twice and run again, while the
   application (version 2, ``Customer``) inserts new rows and updates old ones with their
   ETags;
4. the checks: every row in the new shape, none lost or duplicated, every write of the
   application present, the indexes consistent, no row left to migrate.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs

import azt
from azt._core.retry import is_retryable
from azt.edm import EdmType
from azt.entity import EntityTable
from azt.indexes import is_index_row_key, verify_index
from azt.migrate import MIGRATIONS_TABLE, migration_status, verify_migrations
from azt.testing import stub_retry_policy
from azt_server_stub import StubConfig, ThreadedStubServer
from azt_server_stub.realism.faults import FaultInjector
from azt_server_stub.realism.throttle import Throttle, ThrottleLimits
from tests.migrate import models
from tests.migrate.models import Customer, CustomerV1

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@attrs.define
class Outcome:
    """What a scenario run measured."""

    rows: int
    inserted: int = 0
    updated: int = 0
    app_conflicts: int = 0
    kills: int = 0
    exit_codes: list[int] = attrs.field(factory=list)
    seconds: float = 0.0
    faults: int = 0
    throttled: int = 0


@contextmanager
def realistic_stub(rows: int) -> Iterator[tuple[ThreadedStubServer, FaultInjector, Throttle]]:
    """A stub throttling (a per-partition and an account pace) with no faults yet."""
    faults = FaultInjector(seed=30)
    throttle = Throttle(ThrottleLimits(partition_rate=None, account_rate=None))
    with ThreadedStubServer(StubConfig(faults=faults, throttle=throttle)) as server:
        yield server, faults, throttle


def turn_on_realism(faults: FaultInjector, throttle: Throttle) -> None:
    """10 % of the requests fail (4 % 503 ServerBusy, 3 % 500 OperationTimedOut, 3 % a
    connection dropped after the request was applied); the account is held to 2,000
    entities/s and each partition to 300/s."""
    faults.fail_rate("busy", 0.04)
    faults.fail_rate("timeout", 0.03)
    faults.fail_rate("drop-after", 0.03)
    throttle.set_limits(ThrottleLimits(partition_rate=300.0, account_rate=2000.0))


def v1_rows(n: int) -> Iterator[CustomerV1]:
    partitions = max(1, n // 100)
    for i in range(n):
        yield CustomerV1(
            f"c{i % partitions:04d}",
            f"{i:07d}",
            Name=f"name {i}",
            Visits=i,
            Joined=f"2020-01-{1 + i % 28:02d}T10:00:00",
            City=f"city{i % 7}",
            Legacy="old" if i % 3 == 0 else None,
        )


async def write_v1(conn: str, table: str, n: int) -> None:
    async with azt.TableServiceClient.from_connection_string(
        conn, retry=stub_retry_policy()
    ) as service:
        client = await service.create_table(table)
        async with client.batch_writer() as writer:
            for obj in v1_rows(n):
                await writer.insert(obj)


class Application:
    """Version 2 of the application: inserts new customers and updates old ones (read,
    change, replace with the ETag read; a 412 means read again and apply again), keeping
    what it wrote to compare at the end."""

    def __init__(self, conn: str, table: str, n: int) -> None:
        self.conn = conn
        self.table = table
        self.n = n
        self.stop = threading.Event()
        self.inserted: dict[tuple[str, str], str] = {}
        self.updated: dict[tuple[str, str], tuple[str, int]] = {}
        self.conflicts = 0
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(timeout=120)
        assert not self.thread.is_alive(), "the application did not stop"
        if self.error is not None:
            raise self.error

    def _main(self) -> None:
        try:
            asyncio.run(self._run())
        except BaseException as exc:  # reported by finish()
            self.error = exc

    async def _run(self) -> None:
        rng = random.Random(7)
        partitions = max(1, self.n // 100)
        async with azt.TableServiceClient.from_connection_string(
            self.conn, retry=stub_retry_policy()
        ) as service:
            customers = EntityTable(Customer, service.get_table_client(self.table))
            k = 0
            while not self.stop.is_set():
                k += 1
                if k % 3 == 0:
                    await self._insert(customers, f"c{rng.randrange(partitions):04d}", k)
                else:
                    i = rng.randrange(self.n)
                    await self._update(customers, f"c{i % partitions:04d}", f"{i:07d}", k)
                await asyncio.sleep(0.005)

    async def _insert(self, customers: EntityTable[Customer], pk: str, k: int) -> None:
        rk = f"new{k:07d}"
        obj = Customer(
            pk,
            rk,
            full_name=f"new {k}",
            visits=2**40 + k,
            joined=datetime(2024, 5, 1, tzinfo=UTC),
            tier="new",
            city=f"city{k % 7}",
        )
        for _ in range(50):
            try:
                try:
                    await customers.insert(obj)
                    break
                except (azt.EntityAlreadyExistsError, azt.AmbiguousOutcomeError):
                    # the keys are new to this run: our own earlier attempt, applied
                    # before its answer was lost, if the row is there
                    if await customers.get_or_none(pk, rk) is not None:
                        break
            except azt.AztError as exc:
                if not is_retryable(exc):
                    raise
                await asyncio.sleep(0.05)
        else:
            raise AssertionError(f"could not insert {pk}/{rk}")
        self.inserted[(pk, rk)] = obj.full_name

    async def _update(self, customers: EntityTable[Customer], pk: str, rk: str, k: int) -> None:
        tag = f"gold {k}"
        for _ in range(50):
            try:
                obj = await customers.get(pk, rk)
                if obj.tier == tag:
                    break  # applied by an attempt whose answer was lost
                obj.tier = tag
                obj.visits = 10**9 + k
                await customers.save(obj)
                break
            except (azt.PreconditionFailedError, azt.AmbiguousOutcomeError):
                self.conflicts += 1  # the migration (or our lost attempt) wrote it: again
            except azt.AztError as exc:
                if not is_retryable(exc):
                    raise
                await asyncio.sleep(0.05)
        else:
            raise AssertionError(f"could not update {pk}/{rk}")
        self.updated[(pk, rk)] = (tag, 10**9 + k)


def migrate_cmd(conn: str, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "azt",
        "migrate",
        *args,
        "--migrations",
        "tests.migrate.models",
        "--connection-string",
        conn,
    ]


def child_env(table: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([ROOT, *sys.path]),
        "AZT_MIGRATE_TEST_TABLE": table,
    }


async def recorded_rows(conn: str, table: str, name: str) -> int:
    async with azt.TableClient.from_connection_string(
        conn, MIGRATIONS_TABLE, retry=stub_retry_policy()
    ) as log:
        try:
            rec = await log.get_entity(table, name)
        except azt.AztError:
            return 0
        return int(rec.get("Rows", 0))


def run_with_kills(conn: str, table: str, n: int, outcome: Outcome) -> None:
    """``azt migrate up`` killed with SIGKILL once the first migration's checkpoint has
    passed 20 % of the rows, again past 50 %, then run to the end."""
    env = child_env(table)
    first = models.migrations[0].name
    for run, share in enumerate((0.2, 0.5, None)):
        # the output goes to files: a pipe nobody reads until the end fills up with the
        # retries' warnings and stalls the child
        log = Path(tempfile.gettempdir()) / f"azt-migrate-{os.getpid()}-{run}"
        with log.with_suffix(".out").open("wb") as out, log.with_suffix(".err").open("wb") as err:
            proc = subprocess.Popen(
                [*migrate_cmd(conn, "up"), "--progress", "never"],
                env=env,
                stdout=out,
                stderr=err,
                cwd=ROOT,
            )
        try:
            if share is None:
                proc.wait(timeout=3600)
                outcome.exit_codes.append(proc.returncode)
                assert proc.returncode == 0, (
                    log.with_suffix(".out").read_text(),
                    log.with_suffix(".err").read_text()[-4000:],
                )
                continue
            deadline = time.monotonic() + 1800
            while asyncio.run(recorded_rows(conn, table, first)) < share * n:
                assert proc.poll() is None, (
                    proc.returncode,
                    log.with_suffix(".out").read_text(),
                    log.with_suffix(".err").read_text()[-4000:],
                )
                assert time.monotonic() < deadline, "the migration made no progress"
                time.sleep(0.1)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
            outcome.kills += 1
            outcome.exit_codes.append(proc.returncode)
            assert proc.returncode == -signal.SIGKILL
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for suffix in (".out", ".err"):
                log.with_suffix(suffix).unlink(missing_ok=True)


async def check(conn: str, table: str, n: int, app: Application) -> None:
    """Every row in the new shape, none lost or duplicated, the application's writes
    present, the indexes consistent, nothing left to migrate."""
    partitions = max(1, n // 100)
    async with azt.TableServiceClient.from_connection_string(
        conn, retry=stub_retry_policy()
    ) as service:
        client = service.get_table_client(table)
        rows: dict[tuple[str, str], Any] = {}
        async for e in client.list_entities():
            if is_index_row_key(e["RowKey"]):
                continue
            key = (e["PartitionKey"], e["RowKey"])
            assert key not in rows, f"{key} twice"
            rows[key] = e
        expected = {(f"c{i % partitions:04d}", f"{i:07d}") for i in range(n)} | set(app.inserted)
        assert set(rows) == expected, (len(rows), len(expected))
        for key, e in rows.items():
            assert e.get("Shape") == 2, (key, dict(e))
            assert "Name" not in e, (key, dict(e))
            assert "Legacy" not in e, (key, dict(e))
            assert e.edm_types.get("Visits") is EdmType.INT64, (key, dict(e))
            assert isinstance(e["Joined"], datetime), (key, dict(e))
            assert isinstance(e.get("Tier"), str)
            assert isinstance(e.get("FullName"), str)
        for i in range(n):
            key = (f"c{i % partitions:04d}", f"{i:07d}")
            e = rows[key]
            assert e["FullName"] == f"name {i}"
            assert e["City"] == f"city{i % 7}"
            if key in app.updated:
                tag, visits = app.updated[key]
                assert (e["Tier"], e["Visits"]) == (tag, visits), (key, dict(e))
            else:
                assert (e["Tier"], e["Visits"]) == ("basic", i), (key, dict(e))
        for key, name in app.inserted.items():
            if key not in app.updated:
                assert rows[key]["FullName"] == name
                assert rows[key]["Tier"] == "new"
        report = await verify_index(client, Customer)
        assert report.consistent, report
        for r in await verify_migrations(service, models.migrations):
            assert r.pending == 0, r
        states = [s.state for s in await migration_status(service, models.migrations)]
        assert states == ["applied"] * len(models.migrations)


def run_scenario(n: int, table: str = "customers") -> Outcome:
    """The whole scenario on ``n`` rows; raises on the first check that fails."""
    outcome = Outcome(rows=n)
    with realistic_stub(n) as (server, faults, throttle):
        conn = server.connection_string
        asyncio.run(write_v1(conn, table, n))
        turn_on_realism(faults, throttle)
        app = Application(conn, table, n)
        started = time.monotonic()
        app.start()
        try:
            run_with_kills(conn, table, n, outcome)
        finally:
            app.finish()
        outcome.seconds = time.monotonic() - started
        outcome.inserted = len(app.inserted)
        outcome.updated = len(app.updated)
        outcome.app_conflicts = app.conflicts
        outcome.faults = sum(faults.counters.values())
        outcome.throttled = sum(throttle.stats.throttled.values())
        faults.clear()
        throttle.set_limits(ThrottleLimits(partition_rate=None, account_rate=None))
        asyncio.run(check(conn, table, n, app))
    return outcome
