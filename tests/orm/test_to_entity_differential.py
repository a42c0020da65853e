"""``to_entity`` generated per class (``azt._orm.codec._fast_to_entity``: straight-line
code) against the loops it replaces (``_general_to_entity``), on objects with random
values and Nones in every optional property, Int64 properties required and optional, and
objects from a projection (unset properties): the same ``TableEntity`` (members, order,
values and ``edm_types``)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from azt._edm.entity import TableEntity
from azt._orm.codec import _general_to_entity, _unstructure_fn, codec_for
from azt._orm.columns import entity_info
from azt.edm import EdmType
from azt.entity import Entity, Int64, Prop, prop

from .models import AllTypes, Movie, Required


class Counters(Entity):
    """Int64 properties required and optional, around other optional ones."""

    total: Prop[Int64] = prop(default=0)
    spare: Prop[Int64 | None] = prop(default=None)
    label: Prop[str | None] = prop(default=None)
    later: Prop[Int64 | None] = prop(default=None)


class OnlyOptionalInt64(Entity):
    """No Int64 left in the entity when the optional one is None."""

    maybe: Prop[Int64 | None] = prop(default=None)


_CLASSES = [AllTypes, Movie, Required, Counters, OnlyOptionalInt64]


def _general(cls: type) -> Any:
    info = entity_info(cls)
    fns: tuple[Any, Any] = _unstructure_fn(cls, info, "value")
    un_value, partial_value = fns
    optional = tuple(p.wire for p in info.data_props if p.optional)
    int64 = tuple(p.wire for p in info.data_props if p.edm is EdmType.INT64)
    return _general_to_entity(optional, int64, un_value, partial_value)


def _seen(e: TableEntity) -> tuple[Any, ...]:
    return (type(e), list(e.items()), getattr(e, "_types", None))


def _values(cls: type) -> st.SearchStrategy[dict[str, Any]]:
    choices: dict[str, st.SearchStrategy[Any]] = {}
    for p in entity_info(cls).data_props:
        if p.is_key or p.converter is not None:
            continue  # (converters keep their defaults)
        if p.edm is EdmType.INT64:
            base: st.SearchStrategy[Any] = st.integers(-(2**63), 2**63 - 1)
        elif p.edm is EdmType.INT32:
            base = st.integers(-(2**31), 2**31 - 1)
        elif p.edm is EdmType.DOUBLE:
            base = st.floats(allow_nan=False)
        elif p.edm is EdmType.STRING:
            base = st.text(max_size=8)
        elif p.edm is EdmType.DATETIME:
            base = st.datetimes(min_value=datetime(1601, 1, 2), timezones=st.just(UTC))
        elif p.edm is EdmType.GUID:
            base = st.uuids()
        elif p.edm is EdmType.BINARY:
            base = st.binary(max_size=8)
        else:
            base = st.booleans()
        choices[p.attr] = st.one_of(st.none(), base) if p.optional else base
    return st.fixed_dictionaries({}, optional=choices)


@st.composite
def _objects(draw: st.DrawFn) -> Any:
    cls = draw(st.sampled_from(_CLASSES))
    kwargs = draw(_values(cls))
    if cls is Required:
        kwargs["title"] = "t"
    obj = cls("p", "r", **kwargs)
    for p in entity_info(cls).data_props:  # a projection's object: some slots unset
        if not p.is_key and draw(st.integers(0, 9)) == 0:
            object.__delattr__(obj, p.attr)
    return obj


@given(_objects())
def test_generated_to_entity_builds_what_the_loops_build(obj: Any) -> None:
    cls = type(obj)
    assert _seen(codec_for(cls).to_entity(obj)) == _seen(_general(cls)(obj))


@pytest.mark.parametrize("cls", _CLASSES, ids=lambda c: c.__name__)
def test_defaults_and_every_int64(cls: type) -> None:
    kwargs: dict[str, Any] = {"title": "t"} if cls is Required else {}
    obj = cls("p", "r", **kwargs)
    assert _seen(codec_for(cls).to_entity(obj)) == _seen(_general(cls)(obj))


def test_the_edm_types_left() -> None:
    e = Counters("p", "r", spare=5).to_entity()
    assert e.edm_types == {"total": EdmType.INT64, "spare": EdmType.INT64}
    assert list(e) == ["PartitionKey", "RowKey", "total", "spare"]
    assert getattr(OnlyOptionalInt64("p", "r").to_entity(), "_types", None) is None
    full = AllTypes("p", "r", g=uuid.UUID(int=3), i64=7).to_entity()
    assert full.edm_types == {"i64": EdmType.INT64}
    assert full["g"] == uuid.UUID(int=3)
