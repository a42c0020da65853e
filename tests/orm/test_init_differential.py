"""The generated ``__init__`` of entity classes (``azt._orm.values.fast_init``: each
value's plain check inline, slots set directly) against the ``__init__`` attrs generated
for the same class (kept in ``azt._orm.entity._ATTRS_INIT``), on edge values of every EDM
type and random values, for every property: both must build the same object (same values,
same types, same 100 ns digits) or raise the same error; and they take the same
parameters."""

from __future__ import annotations

import inspect
import math
import uuid
from datetime import UTC, datetime
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from azt._edm.datetime import EdmDateTime
from azt._errors import ValidationError
from azt._orm.columns import entity_info
from azt._orm.entity import _ATTRS_INIT
from azt.entity import EntityBase, Int64, Prop, partition_key, prop, row_key

from .models import AllTypes, Movie, Required
from .test_value_checker_differential import _EDGE, _VALUES


class Bare(EntityBase, table="bare"):
    """Domain keys, required properties of the eight EDM types, a factory default and a
    positional property."""

    owner: Prop[str] = partition_key()
    item: Prop[str] = row_key()
    text: Prop[str]
    n32: Prop[int]
    n64: Prop[Int64]
    x: Prop[float]
    flag: Prop[bool]
    when: Prop[datetime]
    gid: Prop[uuid.UUID]
    blob: Prop[bytes]
    tags: Prop[str] = prop(factory=lambda: "made")


class WithPostInit(AllTypes):
    """A class with attrs' post-init hook keeps attrs' own ``__init__``."""

    def __attrs_post_init__(self) -> None:
        self.s = self.s.upper()


_CLASSES = [AllTypes, Required, Movie, Bare]


def _slots(obj: Any) -> list[Any]:
    out: list[Any] = []
    for a in attrs.fields(type(obj)):
        try:
            v = object.__getattribute__(obj, a.name)
        except AttributeError:
            out.append("<unset>")
            continue
        if isinstance(v, EdmDateTime):
            out.append((type(v), v, v._hns, v.tzinfo))
        elif isinstance(v, float) and math.isnan(v):
            out.append((float, "nan"))
        else:
            out.append((type(v), v))
    return out


def _init(cls: type) -> Any:
    return type.__getattribute__(cls, "__init__")


def _build(cls: type, init: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    obj: Any = object.__new__(cls)
    try:
        init(obj, *args, **kwargs)
    except (ValidationError, TypeError) as exc:
        return ("error", type(exc), str(exc))
    return ("object", _slots(obj))


def _base_args(cls: type) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if cls is Bare:
        kwargs: dict[str, Any] = {
            "owner": "o",
            "item": "i",
            "text": "t",
            "n32": 1,
            "n64": 2**40,
            "x": 1.5,
            "flag": True,
            "when": datetime(2024, 1, 1, tzinfo=UTC),
            "gid": uuid.UUID(int=1),
            "blob": b"b",
        }
        return (), kwargs
    if cls is Required:
        return ("p", "r"), {"title": "t"}
    return ("p", "r"), {}


def _cases() -> list[tuple[type, str]]:
    return [
        (cls, p.attr)
        for cls in _CLASSES
        for p in entity_info(cls).props
        if p.attr not in ("Timestamp", "ETag") or cls is AllTypes
    ]


def _compare(cls: type, attr: str, value: Any) -> None:
    args, kwargs = _base_args(cls)
    if attr in ("PartitionKey", "RowKey") and args:
        args = (value, args[1]) if attr == "PartitionKey" else (args[0], value)
    else:
        kwargs = {**kwargs, attr: value}
    fast = _build(cls, _init(cls), args, kwargs)
    general = _build(cls, _ATTRS_INIT[cls], args, kwargs)
    assert fast == general, (cls.__name__, attr, value)


@pytest.mark.parametrize(("cls", "attr"), _cases(), ids=lambda c: getattr(c, "__name__", c))
def test_edge_values_built_alike(cls: type, attr: str) -> None:
    for value in _EDGE:
        _compare(cls, attr, value)


@given(st.sampled_from(_cases()), _VALUES)
def test_random_values_built_alike(case: tuple[type, str], value: Any) -> None:
    _compare(case[0], case[1], value)


@pytest.mark.parametrize("cls", _CLASSES, ids=lambda c: c.__name__)
def test_same_parameters_and_defaults(cls: type) -> None:
    assert cls in _ATTRS_INIT
    assert "<azt init" in _init(cls).__code__.co_filename
    assert inspect.signature(_init(cls)) == inspect.signature(_ATTRS_INIT[cls])
    args, kwargs = _base_args(cls)
    assert _build(cls, _init(cls), args, kwargs) == _build(cls, _ATTRS_INIT[cls], args, kwargs)


def test_defaults_left_out_and_factories() -> None:
    args, kwargs = _base_args(Bare)
    obj = Bare(*args, **kwargs)
    assert obj.tags == "made"
    assert type(obj.when) is EdmDateTime
    with pytest.raises(TypeError):
        Bare(owner="o", item="i")  # type: ignore[call-arg]  # required properties missing: attrs' own TypeError
    for cls in (Bare, Required):
        missing = _build(cls, _init(cls), (), {})
        assert missing == _build(cls, _ATTRS_INIT[cls], (), {})
        assert missing[0] == "error"


def test_attrs_hooks_keep_attrs_init() -> None:
    assert WithPostInit not in _ATTRS_INIT
    assert WithPostInit("p", "r", s="abc").s == "ABC"


def test_assignment_still_checked() -> None:
    obj = AllTypes("p", "r")
    with pytest.raises(ValidationError, match=r"AllTypes\.i32"):
        obj.i32 = 2**31
    obj.dt = datetime(2024, 1, 1, tzinfo=UTC)
    assert type(obj.dt) is EdmDateTime
