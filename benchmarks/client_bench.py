"""azt vs azure-data-tables (aio) vs a bare aiohttp loop, against one in-process stub.

Each client does the same requests against the same ``azt_server_stub.StubServer``
(started in this process, on this event loop, so server time is part of every figure):

* single inserts (one entity per request),
* point reads,
* 100-operation entity group transactions,
* a 10,000-entity query (ten pages of 1,000).

It prints the cost per operation (per entity for the query) and the ratios to the bare
loop. Run: ``.venv/bin/python benchmarks/client_bench.py [--n 300] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import json
import time
import uuid
from datetime import UTC, datetime
from email.utils import formatdate
from typing import Any

import aiohttp
import yarl

import azt
from azt_server_stub import StubServer

QUERY_ENTITIES = 10_000
BATCH_SIZE = 100


def make_entity(pk: str, i: int) -> dict[str, Any]:
    return {
        "PartitionKey": pk,
        "RowKey": f"{i:08d}",
        "Name": f"name-{i}",
        "Count": i,
        "Score": i * 0.5,
        "Active": i % 2 == 0,
        "Big": 2**40 + i,
        "When": datetime(2024, 1, 1, 12, 0, 0, i % 1000 * 1000, tzinfo=UTC),
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


class Bare:
    """The least a client can do: sign, send, json.loads."""

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

    async def insert(self, entity: dict[str, Any]) -> None:
        path = f"/{self.table}"
        headers = self._headers("POST", path, "application/json")
        headers["Prefer"] = "return-no-content"
        async with self.session.post(
            yarl.URL(self.endpoint + path, encoded=True),
            data=json.dumps(wire_entity(entity)).encode(),
            headers=headers,
        ) as resp:
            assert resp.status == 204, resp.status

    async def get(self, pk: str, rk: str) -> None:
        path = f"/{self.table}(PartitionKey='{pk}',RowKey='{rk}')"
        async with self.session.get(
            yarl.URL(self.endpoint + path, encoded=True), headers=self._headers("GET", path)
        ) as resp:
            assert resp.status == 200
            json.loads(await resp.read())

    async def batch(self, entities: list[dict[str, Any]]) -> None:
        boundary = f"batch_{uuid.uuid4()}"
        changeset = f"changeset_{uuid.uuid4()}"
        lines = [f"--{boundary}", f"Content-Type: multipart/mixed; boundary={changeset}", ""]
        url = f"{self.endpoint}/{self.table}"
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
        payload = "\r\n".join(lines).encode()
        ctype = f"multipart/mixed; boundary={boundary}"
        async with self.session.post(
            yarl.URL(self.endpoint + "/$batch", encoded=True),
            data=payload,
            headers=self._headers("POST", "/$batch", ctype),
        ) as resp:
            assert resp.status == 202
            text = await resp.read()
            assert b"HTTP/1.1 204" in text
            assert b" 409 " not in text

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
                count += len(json.loads(await resp.read())["value"])
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


async def measure(client: Any, r: int, n: int) -> dict[str, float]:
    """One round of the four scenarios for one client; seconds per operation/entity."""
    per: dict[str, float] = {}
    pk = f"ins{r}"
    start = time.perf_counter()
    for i in range(n):
        await client.insert(make_entity(pk, i))
    per["single insert"] = (time.perf_counter() - start) / n
    start = time.perf_counter()
    for i in range(n):
        await client.get(pk, f"{i:08d}")
    per["point read"] = (time.perf_counter() - start) / n
    n_batches = max(3, n // 50)
    start = time.perf_counter()
    for b in range(n_batches):
        await client.batch([make_entity(f"b{r}x{b}", i) for i in range(BATCH_SIZE)])
    per["100-op batch"] = (time.perf_counter() - start) / n_batches
    start = time.perf_counter()
    count = await client.query("Q")
    per["query (per entity)"] = (time.perf_counter() - start) / QUERY_ENTITIES
    assert count == QUERY_ENTITIES, count
    return per


async def run(n: int, rounds: int) -> None:
    results: dict[str, dict[str, float]] = {}
    async with StubServer() as stub:
        conn = stub.connection_string
        account = stub.account
        key = stub.config.accounts[account][0]
        endpoint = stub.table_endpoint()
        names = {"bare aiohttp": "benchbare", "azt": "benchazt", "azure-data-tables": "benchadt"}
        clients: list[Any] = [
            Bare(endpoint, account, key, names["bare aiohttp"]),
            Azt(conn, names["azt"]),
            AzureDataTables(conn, names["azure-data-tables"]),
        ]
        for client in clients:
            await client.setup()
        # load the 10,000-entity partition for each client (with its own batches)
        for client in clients:
            for start in range(0, QUERY_ENTITIES, BATCH_SIZE):
                await client.batch([make_entity("Q", i) for i in range(start, start + BATCH_SIZE)])
        best: dict[tuple[str, str], float] = {}
        for r in range(rounds):
            # rotate the order each round so no client always runs first (warm-up, GC)
            for client in clients[r % 3 :] + clients[: r % 3]:
                per = await measure(client, r, n)
                for op, value in per.items():
                    key2 = (client.name, op)
                    best[key2] = min(best.get(key2, float("inf")), value)
        for client in clients:
            await client.close()
        for (name, op), value in best.items():
            results.setdefault(op, {})[name] = value

    print(f"\nper-operation cost, best of {rounds} rounds (n={n}; stub in-process)")
    header = f"{'operation':<20}{'bare aiohttp':>14}{'azt':>14}{'azure-data-tables':>20}"
    header += f"{'azt/bare':>10}{'adt/azt':>10}"
    print(header)
    for op, row in results.items():
        bare, ours, adt = row["bare aiohttp"], row["azt"], row["azure-data-tables"]
        print(
            f"{op:<20}{bare * 1e6:>11.1f} us{ours * 1e6:>11.1f} us{adt * 1e6:>17.1f} us"
            f"{ours / bare:>10.2f}{adt / ours:>10.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=300, help="single inserts / reads per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(run(args.n, args.rounds))


if __name__ == "__main__":
    main()
