"""Static types of ``BatchWriter`` with entity objects, checked by ``mypy --strict``: its
``insert``/``upsert``/``update``/``delete`` take what ``TableClient``'s single-entity
methods take (a mapping or an entity object; ``delete`` by keys or one entity, overloads).
Negative lines carry ``# type: ignore[<code>]`` so that mypy fails if those errors
disappear."""

from __future__ import annotations

from typing import Any, assert_type

import azt
from azt import DynamicEntity, Entity, Prop, UpdateMode, prop


class Review(Entity, table="reviews"):
    stars: Prop[int] = prop(default=0)


async def _writer(table: azt.TableClient, review: Review, bag: DynamicEntity) -> None:
    async with table.batch_writer() as writer:
        assert_type(writer, azt.BatchWriter)
        assert_type(await writer.insert(review), None)
        assert_type(await writer.insert({"PartitionKey": "p", "RowKey": "r"}), None)
        assert_type(await writer.upsert(bag, UpdateMode.REPLACE), None)
        assert_type(await writer.update(review), None)
        assert_type(await writer.update(bag, etag="*"), None)
        assert_type(await writer.delete(review), None)
        assert_type(await writer.delete(review, etag="*"), None)
        assert_type(await writer.delete("p", "r", etag="*"), None)
        await writer.insert(42)  # type: ignore[arg-type]
        await writer.delete("p")  # type: ignore[call-overload]
        await writer.delete(review, "r")  # type: ignore[call-overload]


def test_the_checks_are_importable() -> None:
    checks: list[Any] = [_writer]
    assert callable(checks[0])
