"""Static typing of the ORM surface, checked by ``mypy --strict`` (assert_type), and
importable by pytest (the checks also hold at run time where they can run).

Negative lines carry ``# type: ignore[<code>]``: with ``warn_unused_ignores`` (part of
``--strict``) mypy fails if any of those errors disappears, so each one proves that a
wrong comparison or assignment *is* a type error.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator
from datetime import UTC, datetime
from typing import Any, assert_type

import pytest

from azt._orm.codec import EntityCodec, codec_for
from azt.dynamic import DynamicEntity, Resolver, by_property, by_row_key_prefix, column
from azt.edm import TableEntity
from azt.entity import Entity, Int64, Prop, prop
from azt.query import Comparison, Condition, Query, QueryPage, QueryPlan, page_decoder_for


class Movie(Entity):
    rating: Prop[float] = prop(default=0.0)
    year: Prop[int] = prop(name="ReleaseYear", default=2000)
    views: Prop[Int64] = prop(default=0)
    title: Prop[str | None] = prop(default=None)
    favorite: Prop[bool] = prop(default=False)
    released: Prop[datetime | None] = prop(default=None)
    gid: Prop[uuid.UUID | None] = prop(default=None)
    poster: Prop[bytes | None] = prop(default=None)


class Rental(Entity):
    movie: Prop[str]


class Flagged(Entity):
    flag: Prop[bool | None] = prop(default=None)


def test_optional_boolean_columns_are_conditions_too() -> None:
    assert_type(Query(Flagged).where(Flagged.flag), Query[Flagged])
    assert_type(~Flagged.flag, Condition)
    assert_type(Flagged.flag & (Flagged.PartitionKey == "p"), Condition)
    assert_type((Flagged.PartitionKey == "p") | Flagged.flag, Condition)
    assert str(Query(Flagged).where(~Flagged.flag).condition) == "not (flag eq true)"


def test_instance_fields_have_value_types() -> None:
    m = Movie("Action", "Alien", rating=4.5)
    assert_type(m.rating, float)
    assert_type(m.year, int)
    assert_type(m.views, int)
    assert_type(m.title, str | None)
    assert_type(m.favorite, bool)
    assert_type(m.released, datetime | None)
    assert_type(m.gid, uuid.UUID | None)
    assert_type(m.poster, bytes | None)
    assert_type(m.PartitionKey, str)
    assert_type(m.RowKey, str)
    assert_type(m.Timestamp, datetime | None)
    assert_type(m.ETag, str | None)
    m.ETag = 'W/"1"'
    m.ETag = None
    m.rating = 3  # int is accepted where float is expected (and stored as 3.0)
    assert m.rating == 3.0


def test_class_fields_are_columns_and_build_conditions() -> None:
    assert_type(Movie.rating, Prop[float])
    assert_type(Movie.PartitionKey, Prop[str])
    assert_type(Movie.rating > 4.0, Comparison)
    assert_type(Movie.rating > 4, Comparison)
    assert_type(Movie.PartitionKey == "Action", Comparison)
    assert_type(Movie.title == "x", Comparison)
    assert_type((Movie.rating > 4.0) & Movie.favorite, Condition)
    assert_type(Movie.favorite & (Movie.rating > 4.0), Condition)
    assert_type(~Movie.favorite, Condition)
    assert_type((Movie.year < 1980) | (Movie.year > 2000), Condition)
    assert_type(Movie.RowKey.startswith("Sh"), Condition)
    assert_type(Movie.title.startswith("Sh"), Condition)
    assert_type(Movie.rating.between(1.0, 2.0), Condition)
    assert_type(Movie.year.in_([1, 2]), Condition)
    assert_type(column("Rating", float), Prop[float])


def test_queries_are_typed_by_their_target() -> None:
    q = Query(Movie).where(Movie.PartitionKey == "Action", Movie.favorite)
    assert_type(q, Query[Movie])
    assert_type(q.take(3).select(Movie.rating), Query[Movie])
    assert_type(q.explain(), QueryPlan)
    assert_type(Query(DynamicEntity), Query[DynamicEntity])
    r: Resolver[Movie | Rental | DynamicEntity] = by_row_key_prefix(
        {"Movie": Movie, "Rental_": Rental}
    )
    assert_type(Query(r), Query[Movie | Rental | DynamicEntity])
    strict: Resolver[Movie | Rental] = by_row_key_prefix(
        {"Movie": Movie, "Rental_": Rental}, fallback=None
    )
    assert_type(Query(strict), Query[Movie | Rental])
    # rows no class claims become DynamicEntity: leaving it out of the annotation is an error
    lying: Resolver[Movie | Rental] = by_row_key_prefix(  # type: ignore[assignment]
        {"Movie": Movie, "Rental_": Rental}
    )
    assert lying is not None
    # one class (or a typed mapping): the result type follows, with the fallback unless
    # fallback=None; mypy joins several classes in a dict literal to their metaclass, so
    # such resolvers are Resolver[Any] unless annotated as above
    assert_type(by_row_key_prefix({"Rental_": Rental}), Resolver[Rental | DynamicEntity])
    assert_type(by_row_key_prefix({"Rental_": Rental}, fallback=None), Resolver[Rental])
    assert_type(by_property("Kind", {"m": Movie}, fallback=None), Resolver[Movie])
    typed: dict[str, type[Movie | Rental]] = {"Movie": Movie, "Rental_": Rental}
    assert_type(by_row_key_prefix(typed), Resolver[Movie | Rental | DynamicEntity])
    assert_type(Query(by_row_key_prefix(typed)), Query[Movie | Rental | DynamicEntity])


def test_codec_functions_are_typed_by_their_class() -> None:
    codec = codec_for(Movie)
    assert_type(codec, EntityCodec[Movie])
    row = {"PartitionKey": "Action", "RowKey": "Alien", "views": "5"}
    assert_type(codec.from_json(row), Movie)
    assert_type(codec.from_entity(row), Movie)
    assert_type(codec.decode_rows([row]), list[Movie])
    assert_type(codec.to_entity(codec.from_json(row)), TableEntity)
    assert_type(codec.to_json(codec.from_json(row)), dict[str, Any])
    assert_type(Movie.from_entity(row), Movie)
    assert codec.decode_rows([row])[0].views == 5
    dec = page_decoder_for(Movie, None)
    assert dec is not None
    codec.to_json(Rental("p", "r", movie="x"))  # type: ignore[arg-type]


async def _results(table: Any) -> None:  # type-checked, not run (needs a table)
    q = Query(Movie, table)
    assert_type(await q.first(), Movie | None)
    assert_type(await q.one_or_none(), Movie | None)
    assert_type(await q.to_list(), list[Movie])
    async for m in q:
        assert_type(m, Movie)
    async for page in q.pages():
        assert_type(page, QueryPage[Movie])
        assert_type(page.items, list[Movie])
        assert_type(page.continuation, str | None)
    assert_type(q.__aiter__(), AsyncGenerator[Movie, None])
    dyn = await Query(DynamicEntity, table).first()
    assert_type(dyn, DynamicEntity | None)


def test_wrong_types_are_type_errors() -> None:
    m = Movie("Action", "Alien")
    with pytest.raises(ValueError, match="expects float"):
        m.rating = "high"  # type: ignore[assignment]
    with pytest.raises(ValueError, match="expects int"):
        m.year = 1.5  # type: ignore[assignment]
    with pytest.raises(ValueError, match="cannot be None"):
        m.views = None  # type: ignore[assignment]
    with pytest.raises(ValueError, match="expects float"):
        Movie("Action", "Alien", rating="x")  # type: ignore[arg-type]
    for bad in (
        lambda: Movie("Action"),  # type: ignore[call-arg]
        lambda: Movie.rating > "4",  # type: ignore[operator]
        lambda: Movie.year < 2.5,  # type: ignore[operator]
        lambda: Movie.released > 5,  # type: ignore[operator]
        lambda: Movie.rating.startswith("4"),  # type: ignore[misc]
        lambda: Movie.rating & Movie.favorite,  # type: ignore[operator]
        # a wrong-typed == falls back to object.__eq__ (a bool), which where() refuses:
        lambda: Query(Movie).where(Movie.rating == "x"),  # type: ignore[arg-type]
        lambda: Query(Movie).where(Movie.rating),  # type: ignore[arg-type]
        lambda: Movie.year.in_(["a"]),  # type: ignore[list-item]
        lambda: m.not_a_field,  # type: ignore[attr-defined]
        lambda: Movie.not_a_column,  # type: ignore[attr-defined]
        # None is not a literal, also for Optional properties: such a comparison has the
        # static type bool (mypy falls back to object.__eq__ for a wrong-typed ==, so bool is
        # what every refused comparison gets), which where(), &, | and ~ do not accept
        lambda: Query(Movie).where(Movie.title == None),  # type: ignore[arg-type]  # noqa: E711
        lambda: Query(Movie).where(Movie.title != None),  # type: ignore[arg-type]  # noqa: E711
        lambda: Query(Movie).where(Movie.released > None),  # type: ignore[arg-type]
        lambda: Query(Movie).where(Movie.gid <= None),  # type: ignore[arg-type]
        lambda: Query(Movie).where(Movie.title.in_(["a", None])),  # type: ignore[arg-type]
        lambda: Query(Movie).where(Movie.title.between(None, "b")),  # type: ignore[arg-type]
        lambda: (Movie.title == None) & Movie.favorite,  # type: ignore[operator]  # noqa: E711
        lambda: Movie.rating < None,  # type: ignore[operator]
        # the ETag is response metadata, not a stored property: no comparisons
        lambda: Movie.ETag == 'W/"x"',  # type: ignore[comparison-overlap]
        lambda: Query(Movie).where(Movie.ETag != "x"),  # type: ignore[comparison-overlap, arg-type]
        lambda: Movie.ETag > "x",  # type: ignore[operator]
        lambda: Movie.rating.in_([None]),  # type: ignore[list-item]
    ):
        with pytest.raises((TypeError, ValueError, AttributeError)):
            bad()


def test_refused_comparisons_are_bool_statically() -> None:
    with pytest.raises(ValueError, match="null is not a"):
        assert_type(Movie.title == None, bool)  # noqa: E711
    with pytest.raises(ValueError, match="null is not a"):
        assert_type(Movie.released >= None, bool)
    with pytest.raises(ValueError, match="expects float"):
        assert_type(Movie.rating == "x", bool)
    # the legitimate comparisons of Optional properties keep their type
    assert_type(Movie.title != "x", Comparison)
    assert_type(Movie.released < datetime(2020, 1, 1, tzinfo=UTC), Comparison)
    assert_type(Movie.title.in_(["a", "b"]), Condition)
    assert_type(Movie.title.between("a", "b"), Condition)
    assert_type(Movie.gid == uuid.UUID(int=1), Comparison)
