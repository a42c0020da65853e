"""Keys with domain names cost nothing on the typed path: the same twelve-property entities
declared twice, once on ``Entity`` (keys named PartitionKey / RowKey) and once on
``EntityBase`` with ``partition_key()`` / ``row_key()`` (``customer_id`` / ``order_id``),
through the codec's page decoder (``decode_rows``), ``from_entity``, both encoders and the
tracker's key read; the figure is the ratio domain / plain (1.00: the same speed). The
codec maps the names when it generates a class's functions, so the two classes run the
same generated code with other slot names.

Run: ``.venv/bin/python benchmarks/domain_keys_bench.py``
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from azt._orm.codec import codec_for
from azt._uow.access import access_for
from azt.entity import Entity, EntityBase, Int64, Prop, partition_key, prop, row_key

N = 1000
ROUNDS = 15


class Plain(Entity):
    name: Prop[str] = prop(default="")
    city: Prop[str] = prop(default="")
    note: Prop[str | None] = prop(default=None)
    age: Prop[int] = prop(default=0)
    orders: Prop[Int64] = prop(default=0)
    score: Prop[float] = prop(default=0.0)
    active: Prop[bool] = prop(default=False)
    created: Prop[datetime | None] = prop(default=None)
    code: Prop[uuid.UUID | None] = prop(default=None)
    avatar: Prop[bytes | None] = prop(default=None)


class Domain(EntityBase):
    customer_id: Prop[str] = partition_key()
    order_id: Prop[str] = row_key()
    name: Prop[str] = prop(default="")
    city: Prop[str] = prop(default="")
    note: Prop[str | None] = prop(default=None)
    age: Prop[int] = prop(default=0)
    orders: Prop[Int64] = prop(default=0)
    score: Prop[float] = prop(default=0.0)
    active: Prop[bool] = prop(default=False)
    created: Prop[datetime | None] = prop(default=None)
    code: Prop[uuid.UUID | None] = prop(default=None)
    avatar: Prop[bytes | None] = prop(default=None)


def _props(i: int) -> dict[str, Any]:
    base = datetime(2024, 1, 1, tzinfo=UTC)
    return {
        "name": f"Customer {i}",
        "city": "Mountain View",
        "note": "likes tables" if i % 2 else None,
        "age": 20 + i % 60,
        "orders": 2**40 + i,
        "score": i * 1.25,
        "active": i % 3 == 0,
        "created": base + timedelta(seconds=i),
        "code": uuid.UUID(int=i),
        "avatar": bytes([i % 256]) * 32,
    }


def _best(fns: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Best time per call of each, measured in interleaved rounds."""
    best = dict.fromkeys(fns, float("inf"))
    for fn in fns.values():
        fn()
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def main() -> None:
    plain = [Plain(f"p{i // 100:03d}", f"r{i:06d}", **_props(i)) for i in range(N)]
    domain = [
        Domain(customer_id=f"p{i // 100:03d}", order_id=f"r{i:06d}", **_props(i)) for i in range(N)
    ]
    pc, dc = codec_for(Plain), codec_for(Domain)
    p_rows, d_rows = [pc.to_json(o) for o in plain], [dc.to_json(o) for o in domain]
    assert p_rows == d_rows  # the same rows on the wire
    p_ents, d_ents = [pc.to_entity(o) for o in plain], [dc.to_entity(o) for o in domain]
    pa, da = access_for(plain[0]), access_for(domain[0])
    cases: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
        "decode_rows (a query page)": (
            lambda: pc.decode_rows(p_rows),
            lambda: dc.decode_rows(d_rows),
        ),
        "from_entity": (
            lambda: [pc.from_entity(e) for e in p_ents],
            lambda: [dc.from_entity(e) for e in d_ents],
        ),
        "to_json": (
            lambda: [pc.to_json(o) for o in plain],
            lambda: [dc.to_json(o) for o in domain],
        ),
        "to_entity": (
            lambda: [pc.to_entity(o) for o in plain],
            lambda: [dc.to_entity(o) for o in domain],
        ),
        "tracker keys": (
            lambda: [pa.keys(o) for o in plain],
            lambda: [da.keys(o) for o in domain],
        ),
    }
    fns: dict[str, Callable[[], object]] = {}
    for name, (plain_fn, domain_fn) in cases.items():
        fns["plain " + name], fns["domain " + name] = plain_fn, domain_fn
    best = _best(fns)
    print(f"{N} entities x 10 properties, best of {ROUNDS} interleaved rounds")
    print(f"  {'':<28}{'plain us/entity':>16}{'domain/plain':>14}")
    for name in cases:
        p, d = best["plain " + name], best["domain " + name]
        print(f"  {name:<28}{p / N * 1e6:>16.2f}{d / p:>13.2f}x")


if __name__ == "__main__":
    main()
