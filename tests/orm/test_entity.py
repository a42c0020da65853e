"""Entity classes: construction, validation, defaults, system fields, class-level columns."""

from __future__ import annotations

import enum
import uuid
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, ClassVar, cast

import pytest

from azt._errors import ValidationError
from azt.edm import EdmDateTime, EdmType
from azt.entity import Entity, Int64, Prop, entity_info, prop
from azt.query import Comparison

from .models import AllTypes, Genre, Level, Movie, Required


def test_positional_keys_and_keyword_properties() -> None:
    m = Movie("Action", "Terminator", rating=4.5, favorite=True)
    assert (m.PartitionKey, m.RowKey, m.rating, m.favorite) == ("Action", "Terminator", 4.5, True)
    assert m.release_year == 2000
    assert m.language is None
    assert m.Timestamp is None
    assert m.ETag is None
    with pytest.raises(TypeError):
        cast(Any, Movie)("Action", "Terminator", 4.5)


def test_required_property_without_default() -> None:
    with pytest.raises(TypeError):
        Required("p", "r")  # type: ignore[call-arg]
    assert Required("p", "r", title="t").title == "t"


def test_class_access_is_a_column_instance_access_is_the_value() -> None:
    m = Movie("Action", "Alien", rating=3.0)
    assert isinstance(Movie.rating, Prop)
    assert Movie.rating.wire == "Rating"
    assert Movie.rating.edm is EdmType.DOUBLE
    assert isinstance(Movie.rating > 4.0, Comparison)
    assert m.rating == 3.0
    assert Movie.PartitionKey.owner is Movie
    assert Entity.PartitionKey.owner is Entity
    with pytest.raises(ValidationError, match=r"^Movie\.PartitionKey"):
        Movie("a/b", "r")


def test_inferred_edm_types() -> None:
    info = entity_info(AllTypes)
    got = {p.attr: p.edm for p in info.props}
    assert got["s"] is EdmType.STRING
    assert got["i32"] is EdmType.INT32
    assert got["i64"] is EdmType.INT64
    assert got["d"] is EdmType.DOUBLE
    assert got["b"] is EdmType.BOOLEAN
    assert got["dt"] is EdmType.DATETIME
    assert got["g"] is EdmType.GUID
    assert got["bin"] is EdmType.BINARY
    assert got["genre"] is EdmType.STRING
    assert got["level"] is EdmType.INT32
    assert got["price"] is EdmType.STRING
    assert got["Timestamp"] is EdmType.DATETIME
    assert [p.wire for p in info.props[:4]] == ["PartitionKey", "RowKey", "Timestamp", "ETag"]


def test_explicit_int64_through_prop() -> None:
    assert Required.count.edm is EdmType.INT64
    r = Required("p", "r", title="t", count=2**40)
    assert r.count == 2**40


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("i32", 2**31, "outside the Edm.Int32 range"),
        ("i32", -(2**31) - 1, "outside the Edm.Int32 range"),
        ("i64", 2**63, "outside the Edm.Int64 range"),
        ("i32", True, "expects int"),
        ("i32", 1.5, "expects int"),
        ("d", "1.0", "expects float"),
        ("b", 1, "expects bool"),
        ("s", 5, "expects str"),
        ("s", "x" * 32769, "exceeds 64 KiB"),
        ("s", "\U0001f600" * 16385, "exceeds 64 KiB"),
        ("bin", b"x" * 65537, "exceeds 64 KiB"),
        ("g", "c9da6455-213d-42c9-9a79-3e9149a57833", "expects uuid.UUID"),
        ("dt", datetime(2020, 1, 1), "naive datetime"),
        ("dt", datetime(1600, 12, 31, tzinfo=UTC), "before 1601"),
        pytest.param("d", 10**5000, "too big for an Edm.Double", id="d-huge-int"),
        ("s", "a\ud800b", "lone surrogate"),
        ("opt", "\udfff", "lone surrogate"),
        ("genre", "Action", "expects Genre"),
        ("price", 1.5, "expects Decimal"),
    ],
)
def test_validation_on_construction_and_assignment(field: str, value: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        AllTypes("p", "r", **{field: value})
    e = AllTypes("p", "r")
    before = getattr(e, field)
    with pytest.raises(ValidationError, match=message):
        setattr(e, field, value)
    assert getattr(e, field) == before  # nothing lost on refusal


def test_limits_that_are_accepted() -> None:
    e = AllTypes(
        "p",
        "r",
        i32=2**31 - 1,
        i64=-(2**63),
        s="x" * 32768,
        bin=b"\0" * 65536,
        dt=datetime(1601, 1, 1, tzinfo=UTC),
    )
    assert e.i32 == 2**31 - 1
    assert e.i64 == -(2**63)


def test_none_only_for_optional() -> None:
    with pytest.raises(ValidationError, match="required and cannot be None"):
        Movie("a", "b", rating=None)  # type: ignore[arg-type]
    m = Movie("a", "b", language="en")
    m.language = None
    assert m.language is None


def test_normalisation() -> None:
    cet = timezone(timedelta(hours=1))
    e = AllTypes("p", "r", d=3, dt=datetime(2020, 1, 1, 1, 0, tzinfo=cet), bin=bytearray(b"ab"))  # type: ignore[arg-type]
    assert e.d == 3.0
    assert type(e.d) is float
    assert isinstance(e.dt, EdmDateTime)
    assert e.dt == datetime(2020, 1, 1, tzinfo=UTC)
    assert type(e.bin) is bytes


@pytest.mark.parametrize(
    "bad", ["a/b", "a\\b", "a#b", "a?b", "a\tb", "a\x7fb", "x" * 1025, "a\ud800"]
)
def test_key_rules(bad: str) -> None:
    with pytest.raises(ValidationError):
        Movie(bad, "r")
    with pytest.raises(ValidationError):
        Movie("p", bad)
    m = Movie("p", "r")
    with pytest.raises(ValidationError):
        m.RowKey = bad
    assert m.RowKey == "r"


def test_empty_keys_are_legal() -> None:
    assert Movie("", "").PartitionKey == ""


def test_equality_ignores_timestamp_and_etag() -> None:
    a = Movie("a", "b", rating=1.0)
    b = Movie("a", "b", rating=1.0, ETag='W/"x"', Timestamp=datetime.now(UTC))
    assert a == b
    assert a != Movie("a", "b", rating=2.0)


def test_enum_and_custom_converters() -> None:
    e = AllTypes("p", "r", genre=Genre.COMEDY, level=Level.HIGH, price=Decimal("1.50"))
    ent = e.to_entity()
    assert ent["genre"] == "Comedy"
    assert ent["level"] == 2
    assert ent["price"] == "1.50"
    assert AllTypes.from_entity(ent) == e


def test_columns_cannot_be_replaced_on_the_class() -> None:
    class Local(Entity):
        n: Prop[int] = prop(default=1)

    for name in ("n", "PartitionKey", "Timestamp"):
        with pytest.raises(AttributeError, match="cannot replace or delete"):
            setattr(Local, name, 5)
        with pytest.raises(AttributeError, match="cannot replace or delete"):
            delattr(Local, name)
    assert Local("p", "r", n=2).n == 2  # the class still works
    Local.other = 1  # type: ignore[attr-defined]  # other class attributes are not columns
    assert Local.other == 1  # type: ignore[attr-defined]


def test_slots_and_no_instance_dict() -> None:
    m = Movie("a", "b")
    assert not hasattr(m, "__dict__")
    with pytest.raises(AttributeError):
        m.not_a_field = 1  # type: ignore[attr-defined]


def test_inheritance_keeps_columns() -> None:
    class_ns: dict[str, Any] = {}
    exec(
        "from azt._orm.entity import Prop, prop\n"
        "from tests.orm.models import Movie\n"
        "class SciFi(Movie):\n"
        "    aliens: Prop[int] = prop(default=0)\n",
        class_ns,
    )
    scifi = class_ns["SciFi"]
    s = scifi("SciFi", "Alien", rating=4.0, aliens=1)
    assert (s.rating, s.aliens) == (4.0, 1)
    assert str(scifi.rating > 1.0) == "Rating gt 1.0"
    assert [p.attr for p in entity_info(scifi).props][-1] == "aliens"


class _Plain(Entity):
    count: ClassVar[int] = 0  # not a property
    n: Prop[int] = prop(default=1)


def test_classvar_is_not_a_property() -> None:
    assert "count" not in entity_info(_Plain).by_attr
    assert _Plain.count == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("x: Prop[list[int]]", "not an EDM type"),
        ("x: Prop[int] = prop(name='bad-name', default=0)", "not a valid Table property name"),
        ("x: Prop[int] = prop(name='RowKey', default=0)", "second RowKey"),
        ("x: Prop[str] = prop(edm=EdmType.INT32, default='')", "cannot be stored as"),
        ("x: Prop[int] = prop(default=2**40)", "outside the Edm.Int32 range"),
        ("x: Prop[int | str]", "one type"),
        ("_x: Prop[int]", "cannot start with '_'"),
        ("x: Prop[Mixed]", "all-str or all-int"),
        ("to_entity: Prop[int] = prop(default=0)", "would hide Entity.to_entity"),
    ],
)
def test_class_definition_errors(body: str, message: str) -> None:
    src = (
        "import enum\n"
        "from azt._edm.types import EdmType\n"
        "from azt._orm.entity import Entity, Prop, prop\n"
        "class Mixed(enum.Enum):\n    A = 1\n    B = 'b'\n"
        f"class Bad(Entity):\n    {body}\n"
    )
    with pytest.raises((TypeError, ValidationError), match=message):
        exec(src, {})


def test_columns_have_no_truth_value() -> None:
    with pytest.raises(TypeError, match="no truth value"):
        bool(Movie.rating)
    with pytest.raises(TypeError, match="no truth value"):
        bool(Movie.rating > 4.0)


def test_int64_annotation_alias() -> None:
    assert Int64 is not int
    assert entity_info(AllTypes).by_attr["i64"].edm is EdmType.INT64


def test_uuid_roundtrip_value() -> None:
    g = uuid.uuid4()
    assert AllTypes("p", "r", g=g).g == g


class _Colour(enum.Enum):
    RED = "red"


def test_repr_shows_fields() -> None:
    assert "rating=4.5" in repr(Movie("a", "b", rating=4.5))
