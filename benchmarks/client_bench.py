"""azt (dicts and typed) vs azure-data-tables (aio) vs a bare aiohttp loop, against one stub.

Each client does the same requests against the same ``azt_server_stub`` server: by default
a separate process (``python -m azt_server_stub``), so that the server's time runs on the
other core rather than inside every client figure and the ratios show the clients' own
cost; ``--stub inprocess`` runs a ``StubServer`` on this event loop instead.

* single inserts (one entity per request),
* point reads,
* 100-operation entity group transactions,
* a 10,000-entity query (ten pages of 1,000).

The bare loop is the least a correct client does, written by hand for this one entity
shape (no checks, no general code): it signs and sends the request and builds each body
from the same dicts (the ``@odata.type`` annotations written by hand, stdlib ``json``);
it reads what a caller needs back: the ETag of an insert, and of every operation of a
transaction (it parses the multipart answer into each part's status and ETag, and checks
them), the typed values of an entity read (``json.loads``, then the three annotated
properties as ``int``, ``datetime`` and ``UUID``: what a typed client must hand back; the
other values are JSON's own types). Until 2026-11 the bare loop did less than that: it
ignored ETags, checked a transaction's answer with two substring searches, and handed
back query rows as ``json.loads`` gives them (Int64 as str, DateTime as text, Guid as
text), so its ratios were not like for like.

azt runs twice: with dicts (``insert_entity(dict)``, ``get_entity``, ``batch.create(dict)``,
``query_entities``) and typed (a declarative entity class with the same properties: objects
built from the same values, ``get_entity(..., entity_class=...)``, ``Query(cls, table)``).

It prints the cost per operation (per entity for the query) and the ratios to the bare
loop, twice: wall time, and this process's CPU time (the client's own work, which other load
on a shared machine disturbs far less than wall time). Run:
``.venv/bin/python benchmarks/client_bench.py [--n 200] [--rounds 5] [--stub process|inprocess]
[--only insert read batch query]``. The transaction's client cost without the network (and
its instruction counts): ``batch_build_bench.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import gc
import hashlib
import hmac
import json
import socket
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from email.utils import formatdate
from typing import Any

import aiohttp
import yarl

import azt
from azt.entity import Entity, Int64, Prop, prop
from azt.query import Query
from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubServer

QUERY_ENTITIES = 10_000
BATCH_SIZE = 100


def bench_when(i: int) -> datetime:
    """Entity ``i``'s DateTime: a clock reading's six microsecond digits (spread by a prime
    step), which the service sends back with only trailing zeros trimmed (mostly six
    fractional digits, one in ten five, and so on), as real data written from Python reads;
    until 2026-11 whole milliseconds (``.001Z`` to ``.999Z``), which flattered the parse."""
    return datetime(2024, 1, 1, 12, 0, i % 60, i * 7919 % 1_000_000, tzinfo=UTC)


def make_entity(pk: str, i: int) -> dict[str, Any]:
    return {
        "PartitionKey": pk,
        "RowKey": f"{i:08d}",
        "Name": f"name-{i}",
        "Count": i,
        "Score": i * 0.5,
        "Active": i % 2 == 0,
        "Big": 2**40 + i,
        "When": bench_when(i),
        "Id": uuid.UUID(int=i),
        "Note": "x" * 40,
    }


def wire_entity(entity: dict[str, Any]) -> dict[str, Any]:
    """The JSON the bare loop sends (annotations written by hand)."""
    out = dict(entity)
    out["Score@odata.type"] = "Edm.Double"
    out["Big@odata.type"] = "Edm.Int64"
    out["Big"] = str(entity["Big"])
    out["When@odata.type"] = "Edm.DateTime"
    out["When"] = entity["When"].strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    out["Id@odata.type"] = "Edm.Guid"
    out["Id"] = str(entity["Id"])
    return out


# --- the three contenders -------------------------------------------------------------------


def typed_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row's annotated values (Int64, DateTime, Guid) as Python values, written by hand
    for the bench's entity shape: the least a typed client does with each entity it reads."""
    row["Big"] = int(row["Big"])
    row["When"] = _fromisoformat(row["When"])
    row["Id"] = uuid.UUID(row["Id"])
    return row


_fromisoformat = datetime.fromisoformat


def batch_etags(content_type: str, body: bytes) -> list[str]:
    """The ETag of every operation of a successful change set answer (each part's status
    checked): the least a client reads from a transaction's multipart response."""
    del content_type  # the outer boundary: the change set's own is all the parts need
    start = body.index(b"boundary=", body.index(b"multipart/mixed")) + 9
    changeset = b"--" + body[start : body.index(b"\r\n", start)]
    etags = []
    for part in body.split(changeset)[1:-1]:
        i = part.index(b"HTTP/1.1 ") + 9
        status = int(part[i : i + 3])
        assert 200 <= status < 300, part
        j = part.index(b"\r\nETag: ") + 8
        etags.append(part[j : part.index(b"\r\n", j)].decode())
    return etags


def batch_body(url: str, entities: list[dict[str, Any]]) -> tuple[bytes, str]:
    """The bare loop's transaction request, written by hand: its body (a change set of
    one insert per entity, to ``url``) and its Content-Type."""
    boundary = f"batch_{uuid.uuid4()}"
    changeset = f"changeset_{uuid.uuid4()}"
    lines = [f"--{boundary}", f"Content-Type: multipart/mixed; boundary={changeset}", ""]
    for n, entity in enumerate(entities, 1):
        body = json.dumps(wire_entity(entity))
        lines += [
            f"--{changeset}",
            "Content-Type: application/http",
            "Content-Transfer-Encoding: binary",
            f"Content-ID: {n}",
            "",
            f"POST {url} HTTP/1.1",
            "Content-Type: application/json",
            "Accept: application/json;odata=minimalmetadata",
            "Prefer: return-no-content",
            "DataServiceVersion: 3.0",
            f"Content-Length: {len(body.encode())}",
            "",
            body,
        ]
    lines += [f"--{changeset}--", f"--{boundary}--", ""]
    return "\r\n".join(lines).encode(), f"multipart/mixed; boundary={boundary}"


class Bare:
    """The least a correct client does (see the module docstring): sign, send, build the
    body from the dicts, read the ETags and typed values back."""

    name = "bare aiohttp"

    def __init__(self, endpoint: str, account: str, key: str, table: str) -> None:
        self.endpoint = endpoint
        self.prefix = yarl.URL(endpoint).path
        self.account = account
        self.key = base64.b64decode(key)
        self.table = table
        self.session = aiohttp.ClientSession()

    def _headers(self, method: str, path: str, ctype: str = "") -> dict[str, str]:
        date = formatdate(usegmt=True)
        sts = f"{method}\n\n{ctype}\n{date}\n/{self.account}{self.prefix}{path}"
        sig = base64.b64encode(hmac.new(self.key, sts.encode(), hashlib.sha256).digest()).decode()
        headers = {
            "x-ms-date": date,
            "x-ms-version": "2019-02-02",
            "Accept": "application/json;odata=minimalmetadata",
            "DataServiceVersion": "3.0",
            "Authorization": f"SharedKey {self.account}:{sig}",
        }
        if ctype:
            headers["Content-Type"] = ctype
        return headers

    async def setup(self) -> None:
        path = "/Tables"
        async with self.session.post(
            yarl.URL(self.endpoint + path, encoded=True),
            data=json.dumps({"TableName": self.table}).encode(),
            headers=self._headers("POST", path, "application/json"),
        ) as resp:
            assert resp.status in (201, 204), resp.status

    async def insert(self, entity: dict[str, Any]) -> str:
        path = f"/{self.table}"
        headers = self._headers("POST", path, "application/json")
        headers["Prefer"] = "return-no-content"
        async with self.session.post(
            yarl.URL(self.endpoint + path, encoded=True),
            data=json.dumps(wire_entity(entity)).encode(),
            headers=headers,
        ) as resp:
            assert resp.status == 204, resp.status
            return resp.headers["ETag"]

    async def get(self, pk: str, rk: str) -> dict[str, Any]:
        path = f"/{self.table}(PartitionKey='{pk}',RowKey='{rk}')"
        async with self.session.get(
            yarl.URL(self.endpoint + path, encoded=True), headers=self._headers("GET", path)
        ) as resp:
            assert resp.status == 200
            return typed_row(json.loads(await resp.read()))

    async def batch(self, entities: list[dict[str, Any]]) -> list[str]:
        payload, ctype = batch_body(f"{self.endpoint}/{self.table}", entities)
        async with self.session.post(
            yarl.URL(self.endpoint + "/$batch", encoded=True),
            data=payload,
            headers=self._headers("POST", "/$batch", ctype),
        ) as resp:
            assert resp.status == 202
            etags = batch_etags(resp.headers["Content-Type"], await resp.read())
        assert len(etags) == len(entities)
        return etags

    async def query(self, pk: str) -> int:
        count = 0
        extra = ""
        while True:
            path = f"/{self.table}()"
            query = f"$filter=PartitionKey%20eq%20%27{pk}%27{extra}"
            async with self.session.get(
                yarl.URL(f"{self.endpoint}{path}?{query}", encoded=True),
                headers=self._headers("GET", path),
            ) as resp:
                assert resp.status == 200
                rows = json.loads(await resp.read())["value"]
                for row in rows:
                    typed_row(row)
                count += len(rows)
                npk = resp.headers.get("x-ms-continuation-NextPartitionKey")
                nrk = resp.headers.get("x-ms-continuation-NextRowKey")
            if npk is None:
                return count
            extra = f"&NextPartitionKey={npk}" + (f"&NextRowKey={nrk}" if nrk else "")

    async def close(self) -> None:
        await self.session.close()


class Azt:
    name = "azt"

    def __init__(self, conn: str, table: str) -> None:
        self.service = azt.TableServiceClient.from_connection_string(conn)
        self.table = self.service.get_table_client(table)

    async def setup(self) -> None:
        await self.table.create_table()

    async def insert(self, entity: dict[str, Any]) -> None:
        await self.table.insert_entity(entity)

    async def get(self, pk: str, rk: str) -> None:
        await self.table.get_entity(pk, rk)

    async def batch(self, entities: list[dict[str, Any]]) -> None:
        batch = self.table.batch()
        for entity in entities:
            batch.create(entity)
        await self.table.submit_transaction(batch)

    async def query(self, pk: str) -> int:
        count = 0
        async for page in self.table.query_entities(
            "PartitionKey eq @pk", parameters={"pk": pk}
        ).by_page():
            count += len(page.items)
        return count

    async def close(self) -> None:
        await self.service.aclose()


class BenchEntity(Entity):
    """The bench's entity shape as a declarative class (the typed path's contender)."""

    name: Prop[str] = prop(name="Name", default="")
    count: Prop[int] = prop(name="Count", default=0)
    score: Prop[float] = prop(name="Score", default=0.0)
    active: Prop[bool] = prop(name="Active", default=False)
    big: Prop[Int64] = prop(name="Big", default=0)
    when: Prop[datetime | None] = prop(name="When", default=None)
    id: Prop[uuid.UUID | None] = prop(name="Id", default=None)
    note: Prop[str] = prop(name="Note", default="")


def make_object(pk: str, i: int) -> BenchEntity:
    """The same entity as :func:`make_entity`, built as an object (building it is part of
    the typed path's cost, as building the dict is part of the others')."""
    return BenchEntity(
        pk,
        f"{i:08d}",
        name=f"name-{i}",
        count=i,
        score=i * 0.5,
        active=i % 2 == 0,
        big=2**40 + i,
        when=bench_when(i),
        id=uuid.UUID(int=i),
        note="x" * 40,
    )


class AztTyped(Azt):
    """azt's typed path: entity objects in (built from the same values), entity objects
    out (``get_entity(..., entity_class=...)``, ``Query``)."""

    name = "azt typed"
    objects = True

    async def insert(self, entity: dict[str, Any]) -> None:
        await self.table.insert_entity(entity)  # (an object: see ``_insert``)

    async def get(self, pk: str, rk: str) -> None:
        await self.table.get_entity(pk, rk, entity_class=BenchEntity)

    async def query(self, pk: str) -> int:
        count = 0
        query = Query(BenchEntity, self.table).where(BenchEntity.PartitionKey == pk)
        async for page in query.pages():
            count += len(page.items)
        return count


class AzureDataTables:
    name = "azure-data-tables"

    def __init__(self, conn: str, table: str) -> None:
        from azure.data.tables.aio import TableServiceClient

        self.service = TableServiceClient.from_connection_string(conn)
        self.table = self.service.get_table_client(table)

    async def setup(self) -> None:
        await self.table.create_table()

    async def insert(self, entity: dict[str, Any]) -> None:
        from azure.data.tables import EdmType

        e = dict(entity)
        e["Big"] = (entity["Big"], EdmType.INT64)
        await self.table.create_entity(e)

    async def get(self, pk: str, rk: str) -> None:
        await self.table.get_entity(pk, rk)

    async def batch(self, entities: list[dict[str, Any]]) -> None:
        from azure.data.tables import EdmType

        ops = []
        for entity in entities:
            e = dict(entity)
            e["Big"] = (entity["Big"], EdmType.INT64)
            ops.append(("create", e))
        await self.table.submit_transaction(ops)

    async def query(self, pk: str) -> int:
        count = 0
        async for _ in self.table.query_entities("PartitionKey eq @pk", parameters={"pk": pk}):
            count += 1
        return count

    async def close(self) -> None:
        await self.service.close()


# --- measurement ---------------------------------------------------------------------------


Timing = tuple[float, float]  # (wall seconds, this process's CPU seconds) per operation


class _Clock:
    """Wall time and this process's CPU time of a block, per ``units`` operations. The
    CPU figure is the client's own work (the stub runs in another process): it shows what
    a client costs even when other load on the machine makes wall times noisy."""

    def __init__(self, units: int) -> None:
        self.units = units

    def __enter__(self) -> _Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.result = (
            (time.perf_counter() - self.wall) / self.units,
            (time.process_time() - self.cpu) / self.units,
        )


def _maker(client: Any) -> Callable[[str, int], Any]:
    """How ``client`` builds the entity it writes: an object for the typed path."""
    return make_object if getattr(client, "objects", False) else make_entity


async def _insert(client: Any, r: int, n: int) -> Timing:
    pk = f"ins{r}"
    make = _maker(client)
    with _Clock(n) as clock:
        for i in range(n):
            await client.insert(make(pk, i))
    return clock.result


async def _read(client: Any, r: int, n: int) -> Timing:
    pk = f"ins{r}"
    with _Clock(n) as clock:
        for i in range(n):
            await client.get(pk, f"{i:08d}")
    return clock.result


async def _batch(client: Any, r: int, n: int) -> Timing:
    n_batches = max(3, n // 50)
    make = _maker(client)
    with _Clock(n_batches) as clock:
        for b in range(n_batches):
            await client.batch([make(f"b{r}x{b}", i) for i in range(BATCH_SIZE)])
    return clock.result


async def _query(client: Any, r: int, n: int) -> Timing:
    with _Clock(QUERY_ENTITIES) as clock:
        count = await client.query("Q")
    assert count == QUERY_ENTITIES, count
    return clock.result


#: the scenarios, in the order a round runs them (reads read that round's inserts)
SCENARIOS: dict[str, Callable[[Any, int, int], Awaitable[Timing]]] = {
    "single insert": _insert,
    "point read": _read,
    "100-op batch": _batch,
    "query (per entity)": _query,
}


async def measure_round(
    clients: list[Any], r: int, n: int, ops: tuple[str, ...] = tuple(SCENARIOS)
) -> dict[tuple[str, str], Timing]:
    """One round: each scenario of ``ops`` for every client in turn (the order rotated each
    round, so that no client always runs first and the machine's noise hits them alike);
    (wall, CPU) seconds per operation (per entity for the query)."""
    per: dict[tuple[str, str], Timing] = {}
    order = clients[r % len(clients) :] + clients[: r % len(clients)]
    for op in ops:
        scenario = SCENARIOS[op]
        for client in order:
            # Each measurement starts from the same state of the cyclic garbage collector:
            # otherwise one client pays for full collections that the objects another
            # client left behind made due (they all share this process).
            gc.collect()
            per[(client.name, op)] = await scenario(client, r, n)
    return per


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def stub_endpoint(mode: str) -> AsyncIterator[tuple[str, str, str, str]]:
    """(connection string, account, key, table endpoint) of a stub run in ``mode``:
    ``process`` (its own interpreter, stopped afterwards) or ``inprocess``."""
    if mode == "inprocess":
        async with StubServer() as stub:
            account = stub.account
            yield (
                stub.connection_string,
                account,
                stub.config.accounts[account][0],
                stub.table_endpoint(),
            )
        return
    port = _free_port()
    argv = [sys.executable, "-m", "azt_server_stub", "--port", str(port)]
    proc = await asyncio.create_subprocess_exec(
        *argv, "--log-level", "WARNING", stdout=asyncio.subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.returncode is not None:
                raise RuntimeError(f"the stub exited ({proc.returncode})")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the stub did not listen on {port} within 30 s")
            await asyncio.sleep(0.05)
        endpoint = f"http://127.0.0.1:{port}/{DEV_ACCOUNT}"
        conn = (
            f"DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};"
            f"TableEndpoint={endpoint};"
        )
        yield conn, DEV_ACCOUNT, DEV_KEY, endpoint
    finally:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()


NAMES = ("bare aiohttp", "azt", "azt typed", "azure-data-tables")


#: the short names ``--only`` takes, by scenario
SHORT_NAMES = {"insert": "single insert", "read": "point read", "batch": "100-op batch"}
SHORT_NAMES["query"] = "query (per entity)"


async def run(
    n: int, rounds: int, stub_mode: str = "process", ops: tuple[str, ...] = tuple(SCENARIOS)
) -> None:
    async with stub_endpoint(stub_mode) as (conn, account, key, endpoint):
        tables = dict(zip(NAMES, ("benchbare", "benchazt", "benchtyped", "benchadt"), strict=True))
        clients: list[Any] = [
            Bare(endpoint, account, key, tables["bare aiohttp"]),
            Azt(conn, tables["azt"]),
            AztTyped(conn, tables["azt typed"]),
            AzureDataTables(conn, tables["azure-data-tables"]),
        ]
        for client in clients:
            await client.setup()
        # load the 10,000-entity partition for each client (with its own batches)
        for client in clients if "query (per entity)" in ops else ():
            make = _maker(client)
            for start in range(0, QUERY_ENTITIES, BATCH_SIZE):
                await client.batch([make("Q", i) for i in range(start, start + BATCH_SIZE)])
        if "point read" in ops and "single insert" not in ops:  # what the reads read
            for client in clients:
                for r in range(rounds):
                    await _insert(client, r, n)
        runs: list[dict[tuple[str, str], Timing]] = []
        for r in range(rounds):
            runs.append(await measure_round(clients, r, n, ops))
        for client in clients:
            await client.close()
    report(runs, n, stub_mode, ops)


def report(
    runs: list[dict[tuple[str, str], Timing]],
    n: int,
    stub_mode: str,
    ops: tuple[str, ...] = tuple(SCENARIOS),
) -> None:
    """Per-operation costs (best of the rounds) and the ratios, each with its range over
    the rounds (the ratio of the two figures measured in the same round): the noise."""
    where = "in this process" if stub_mode == "inprocess" else "in a separate process"
    pairs = [("azt", "bare aiohttp"), ("azt typed", "bare aiohttp"), ("azt typed", "azt")]
    pairs.append(("azure-data-tables", "azt"))
    short = {"bare aiohttp": "bare", "azt": "azt", "azt typed": "typed"}
    short["azure-data-tables"] = "adt"
    for title, idx in (("wall time", 0), ("client CPU time (this process)", 1)):
        print(f"\nper-operation {title}, best of {len(runs)} rounds (n={n}; stub {where})")
        header = f"{'operation':<20}" + "".join(f"{short[c]:>11}" for c in NAMES)
        header += "".join(f"{short[a] + '/' + short[b]:>22}" for a, b in pairs)
        print(header)
        for op in ops:
            best = {c: min(run[(c, op)][idx] for run in runs) for c in NAMES}
            line = f"{op:<20}" + "".join(f"{best[c] * 1e6:>8.1f} us" for c in NAMES)
            for a, b in pairs:
                per_round = [run[(a, op)][idx] / run[(b, op)][idx] for run in runs]
                line += f"{best[a] / best[b]:>8.2f} ({min(per_round):.2f}-{max(per_round):.2f})"
            print(line)
    print(
        "ratio: of the best figures (in brackets: the least and the greatest of the ratios"
        " measured in one round, the noise); lower is better for azt/bare and typed/bare,"
        " higher for adt/azt"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=200, help="single inserts / reads per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--stub",
        choices=("process", "inprocess"),
        default="process",
        help="run the stub in its own process (default) or on this event loop",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=tuple(SHORT_NAMES),
        help="run only these scenarios (insert, read, batch, query; default: all)",
    )
    args = parser.parse_args()
    ops = tuple(SHORT_NAMES[o] for o in args.only) if args.only else tuple(SCENARIOS)
    asyncio.run(run(args.n, args.rounds, args.stub, ops))


if __name__ == "__main__":
    main()
