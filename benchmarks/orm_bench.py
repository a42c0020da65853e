"""ORM mapping speed: 1,000 twelve-property entities, azt vs azure-data-tables, in one run.

Decode (a query page -> objects):

* azt ``from_json``: the service's JSON dicts -> entity objects directly (compiled per class);
* azt ``decode_feed + from_entity``: the client core's ``TableEntity`` rows -> objects (the
  path queries take today);
* azure-data-tables ``_convert_to_entity``: JSON dicts -> its ``TableEntity`` dicts (no
  typed objects at all);
* both from the raw body too (``json.loads`` included).

Encode (objects -> request JSON dicts): azt ``to_json`` vs azure-data-tables
``_add_entity_properties`` on the same values (Int64 as ``EntityProperty``).

Also: instance attribute reads on the attrs slotted class (class-level columns answered by
the metaclass) vs a Python descriptor wrapping each slot (the alternative design).

Run: ``.venv/bin/python benchmarks/orm_bench.py``
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from azure.data.tables import EdmType as AzEdmType
from azure.data.tables import EntityProperty
from azure.data.tables._deserialize import _convert_to_entity as _az_convert
from azure.data.tables._serialize import _add_entity_properties

from azt._codec import codec_for
from azt._wire.json import decode_feed
from azt.entity import Entity, Int64, Prop, prop

N = 1000
_convert_to_entity: Callable[[dict[str, Any]], Any] = _az_convert


class Customer(Entity):
    name: Prop[str] = prop(default="")
    city: Prop[str] = prop(default="")
    note: Prop[str | None] = prop(default=None)
    age: Prop[int] = prop(default=0)
    orders: Prop[Int64] = prop(default=0)
    score: Prop[float] = prop(default=0.0)
    ratio: Prop[float] = prop(default=0.0)
    active: Prop[bool] = prop(default=False)
    created: Prop[datetime | None] = prop(default=None)
    updated: Prop[datetime | None] = prop(default=None)
    code: Prop[uuid.UUID | None] = prop(default=None)
    avatar: Prop[bytes | None] = prop(default=None)


def make_objects() -> list[Customer]:
    base = datetime(2024, 1, 1, tzinfo=UTC)
    return [
        Customer(
            f"p{i // 100:03d}",
            f"r{i:06d}",
            name=f"Customer {i}",
            city="Mountain View",
            note="likes tables" if i % 2 else None,
            age=20 + i % 60,
            orders=2**40 + i,
            score=i * 1.25,
            ratio=1.0 / (i + 1),
            active=i % 3 == 0,
            created=base + timedelta(seconds=i),
            updated=base + timedelta(days=1, microseconds=i),
            code=uuid.UUID(int=i),
            avatar=bytes([i % 256]) * 32,
        )
        for i in range(N)
    ]


def service_page(objs: list[Customer]) -> bytes:
    """A minimal-metadata Query Entities body as the service sends it."""
    codec = codec_for(Customer)
    rows = []
    for i, o in enumerate(objs):
        row: dict[str, Any] = {
            "odata.etag": f"W/\"datetime'2024-01-01T00%3A00%3A{i % 60:02d}.1234567Z'\"",
            "PartitionKey": o.PartitionKey,
            "RowKey": o.RowKey,
            "Timestamp": "2024-01-01T00:00:00.1234567Z",
        }
        body = codec.to_json(o)
        for k, v in body.items():
            if k in ("PartitionKey", "RowKey") or k.endswith("Double"):
                continue
            if k.endswith("@odata.type") and v == "Edm.Double":
                continue  # the service does not annotate finite doubles
            row[k] = v
        rows.append(row)
    return json.dumps({"odata.metadata": "http://h/acct/$metadata#T", "value": rows}).encode()


def azure_source(o: Customer) -> dict[str, Any]:
    return {
        "PartitionKey": o.PartitionKey,
        "RowKey": o.RowKey,
        "name": o.name,
        "city": o.city,
        "note": o.note,
        "age": o.age,
        "orders": EntityProperty(o.orders, AzEdmType.INT64),
        "score": o.score,
        "ratio": o.ratio,
        "active": o.active,
        "created": o.created,
        "updated": o.updated,
        "code": o.code,
        "avatar": o.avatar,
    }


def best(fn: Callable[[], object], repeat: int = 7, number: int = 3) -> float:
    """Best per-call time in seconds."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


class _SlotDescriptor:
    """A Python descriptor wrapping a slot: the alternative to metaclass class access."""

    __slots__ = ("slot",)

    def __init__(self, slot: Any) -> None:
        self.slot = slot

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return self.slot.__get__(obj, owner)


def attribute_reads() -> tuple[float, float]:
    class Plain:
        __slots__ = ("rating",)

        def __init__(self) -> None:
            self.rating = 1.0

    class Wrapped:
        __slots__ = ("_rating",)

        def __init__(self) -> None:
            self._rating = 1.0

    Wrapped.rating = _SlotDescriptor(Wrapped.__dict__["_rating"])  # type: ignore[attr-defined]
    c = Customer("p", "r", score=1.0)
    w: Any = Wrapped()
    loops = 200_000

    def read_entity() -> None:
        for _ in range(loops):
            c.score  # noqa: B018

    def read_wrapped() -> None:
        for _ in range(loops):
            w.rating  # noqa: B018

    return best(read_entity) / loops, best(read_wrapped) / loops


def main() -> None:
    objs = make_objects()
    body = service_page(objs)
    dicts: list[dict[str, Any]] = json.loads(body)["value"]
    codec = codec_for(Customer)
    # correctness first: both decoders give back the objects
    assert [codec.from_json(d) for d in dicts] == objs
    assert [codec.from_entity(e) for e in decode_feed(body)] == objs
    feed = decode_feed(body)
    sources = [azure_source(o) for o in objs]

    results: dict[str, float] = {
        "decode azt from_json (dicts -> objects)": best(
            lambda: [codec.from_json(d) for d in dicts]
        ),
        "decode azt from_entity (TableEntity -> objects)": best(
            lambda: [codec.from_entity(e) for e in feed]
        ),
        "decode azure _convert_to_entity (dicts -> dicts)": best(
            lambda: [_convert_to_entity(d) for d in dicts]
        ),
        "decode azt body: json.loads + from_json": best(
            lambda: [codec.from_json(d) for d in json.loads(body)["value"]]
        ),
        "decode azt body: decode_feed + from_entity": best(
            lambda: [codec.from_entity(e) for e in decode_feed(body)]
        ),
        "decode azure body: json.loads + _convert_to_entity": best(
            lambda: [_convert_to_entity(d) for d in json.loads(body)["value"]]
        ),
        "encode azt to_json (objects -> dicts)": best(lambda: [codec.to_json(o) for o in objs]),
        "encode azt to_entity (objects -> TableEntity)": best(
            lambda: [codec.to_entity(o) for o in objs]
        ),
        "encode azure _add_entity_properties (dicts -> dicts)": best(
            lambda: [_add_entity_properties(s) for s in sources]
        ),
    }
    print(f"ORM mapping, {N} entities x 12 properties (+ keys, Timestamp, ETag); best of 7\n")
    for name, secs in results.items():
        print(f"  {name:<55} {secs * 1e3:8.2f} ms  {N / secs:>10,.0f} entities/s")

    def ratio(azure: str, azt: str) -> str:
        return f"{results[azure] / results[azt]:.2f}x"

    az_dec = "decode azure _convert_to_entity (dicts -> dicts)"
    az_body = "decode azure body: json.loads + _convert_to_entity"
    az_enc = "encode azure _add_entity_properties (dicts -> dicts)"
    print("\nratios (azure-data-tables time / azt time; > 1 means azt is faster)")
    rows = [
        ("decode dicts: from_json", az_dec, "decode azt from_json (dicts -> objects)"),
        ("decode dicts: from_entity", az_dec, "decode azt from_entity (TableEntity -> objects)"),
        ("decode body: json.loads + from_json", az_body, "decode azt body: json.loads + from_json"),
        (
            "decode body: decode_feed + from_entity",
            az_body,
            "decode azt body: decode_feed + from_entity",
        ),
        ("encode: to_json", az_enc, "encode azt to_json (objects -> dicts)"),
    ]
    for label, az, ours in rows:
        print(f"  {label:<42} {ratio(az, ours)}")
    native, wrapped = attribute_reads()
    print("\ninstance attribute read (per read, loop overhead included)")
    print(f"  attrs slot, class columns via metaclass: {native * 1e9:6.1f} ns")
    slower = wrapped / native
    print(f"  Python descriptor wrapping the slot:     {wrapped * 1e9:6.1f} ns  ({slower:.1f}x)")


async def end_to_end(n: int = 5000) -> None:
    """A whole-table query through the in-process stub: raw client rows vs ORM objects."""
    import azt
    from azt.query import Query
    from azt_server_stub import StubServer

    async with StubServer() as stub:
        service = azt.TableServiceClient.from_connection_string(stub.connection_string)
        async with service:
            table = await service.create_table("ormbench")
            objs = [
                Customer(f"p{i // 100:03d}", f"r{i:06d}", name=f"c{i}", orders=i, score=i / 3)
                for i in range(n)
            ]
            for start in range(0, n, 100):
                batch = table.batch()
                for o in objs[start : start + 100]:
                    batch.create(o.to_entity())
                await table.submit_transaction(batch)

            async def timed(coro_fn: Callable[[], Any]) -> float:
                best_t = float("inf")
                for _ in range(3):
                    t0 = time.perf_counter()
                    rows = await coro_fn()
                    best_t = min(best_t, time.perf_counter() - t0)
                    assert len(rows) == n
                return best_t

            raw = await timed(lambda: table.query_entities().to_list())
            orm = await timed(lambda: Query(Customer, table).to_list())
            fan = await timed(
                lambda: (
                    Query(Customer, table)
                    .where(Customer.PartitionKey.in_([f"p{i:03d}" for i in range(n // 100)]))
                    .to_list()
                )
            )
    print(f"\nend to end, {n} entities through the in-process stub (loopback HTTP)")
    print(f"  TableClient.query_entities (TableEntity rows): {raw * 1e3:8.1f} ms")
    print(
        f"  Query(Customer) (entity objects):             {orm * 1e3:8.1f} ms  ({orm / raw:.2f}x)"
    )
    print(
        f"  same, as {n // 100} partition sub-queries (fan-out): {fan * 1e3:8.1f} ms  "
        f"({fan / raw:.2f}x)"
    )


if __name__ == "__main__":
    main()
    import asyncio

    asyncio.run(end_to_end())
