"""EDM values: EdmDateTime, TableEntity, Typed, inference, literals and limits."""

from __future__ import annotations

import copy
import doctest
import math
import pickle
import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import azt._edm.datetime
import azt._edm.entity
import azt._edm.types
import azt._edm.validation
from azt._errors import ValidationError
from azt.edm import (
    DATETIME_MAX,
    DATETIME_MIN,
    EdmDateTime,
    EdmType,
    EntityMetadata,
    TableEntity,
    Typed,
    coerce_value,
    format_literal,
    infer_edm_type,
    utf16_len,
    validate_entity,
    validate_key,
)


def test_docstring_examples() -> None:
    modules = (azt._edm.datetime, azt._edm.entity, azt._edm.types, azt._edm.validation)
    results = [doctest.testmod(m, optionflags=doctest.ELLIPSIS) for m in modules]
    assert sum(r.attempted for r in results) > 30
    assert sum(r.failed for r in results) == 0


def test_edm_type_values() -> None:
    assert [t.value for t in EdmType] == [
        "Edm.String",
        "Edm.Int32",
        "Edm.Int64",
        "Edm.Double",
        "Edm.Boolean",
        "Edm.DateTime",
        "Edm.Guid",
        "Edm.Binary",
    ]
    assert EdmType("Edm.Int64") is EdmType.INT64


# ----------------------------------------------------------------------- EdmDateTime


@pytest.mark.parametrize(
    ("text", "wire", "us", "ns"),
    [
        ("2020-09-15T23:02:10.4363943Z", "2020-09-15T23:02:10.4363943Z", 436394, 300),
        ("2021-09-21T07:50:52.398525Z", "2021-09-21T07:50:52.3985250Z", 398525, 0),
        ("1973-10-04T00:00:00Z", "1973-10-04T00:00:00.0000000Z", 0, 0),
        ("2008-07-10T00:00:00", "2008-07-10T00:00:00.0000000Z", 0, 0),
        ("2008-07-10T00:00:00.1Z", "2008-07-10T00:00:00.1000000Z", 100000, 0),
        ("2008-07-10T00:00:00.0000001Z", "2008-07-10T00:00:00.0000001Z", 0, 100),
        ("2008-07-10T02:00:00+02:00", "2008-07-10T00:00:00.0000000Z", 0, 0),
        ("2008-07-09T22:30:00-01:30", "2008-07-10T00:00:00.0000000Z", 0, 0),
        ("9999-12-31T23:59:59.9999999Z", "9999-12-31T23:59:59.9999999Z", 999999, 900),
        ("1601-01-01T00:00:00Z", "1601-01-01T00:00:00.0000000Z", 0, 0),
    ],
)
def test_parse_and_wire(text: str, wire: str, us: int, ns: int) -> None:
    t = EdmDateTime.parse(text)
    assert t.to_wire() == wire
    assert (t.microsecond, t.nanosecond) == (us, ns)
    assert t.tzinfo is UTC
    assert EdmDateTime.parse(t.to_wire()) == t


@pytest.mark.parametrize(
    "bad",
    ["", "2020-13-01T00:00:00Z", "2020-01-01T00:00:00.12345678Z", "yesterday", "2020-01-01T25:00Z"],
)
def test_parse_rejects(bad: str) -> None:
    with pytest.raises(ValidationError):
        EdmDateTime.parse(bad)


@pytest.mark.parametrize(
    "bad",
    [
        "2020-01-01T00:00:00.Z",
        "2020-01-01T00:00:60Z",
        "2020-02-30T00:00:00Z",
        "2024-W01-1T12:00:00Z",
        "2020-01-01T00:00:00.1a3Z",
        "2020-01-01T00:00:00.\u0663Z",
        "2020-01-01T00:00:00.-1Z",
    ],
)
def test_parse_fast_path_rejects_what_the_grammar_rejects(bad: str) -> None:
    with pytest.raises(ValidationError):
        EdmDateTime.parse(bad)


@given(
    st.datetimes(min_value=datetime(1601, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),
    st.integers(min_value=0, max_value=9),
    st.integers(min_value=0, max_value=7),
)
def test_parse_every_fraction_length_of_the_service_form(
    dt: datetime, hns: int, digits: int
) -> None:
    # The service trims trailing zeros of the 7-digit fraction (or drops it when zero).
    full = f"{dt.microsecond:06d}{hns}"
    frac = full[:digits]
    text = dt.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if digits else "") + "Z"
    parsed = EdmDateTime.parse(text)
    padded = frac.ljust(7, "0")
    assert parsed.replace(microsecond=0).to_datetime() == dt.replace(microsecond=0, tzinfo=UTC)
    assert (parsed.microsecond, parsed.nanosecond) == (int(padded[:6]), int(padded[6]) * 100)
    assert parsed.tzinfo is UTC
    assert type(parsed) is EdmDateTime


def test_ticks_match_dotnet() -> None:
    # .NET: DateTime.MaxValue.Ticks == 3155378975999999999, MinValue.Ticks == 0.
    assert DATETIME_MAX.ticks == 3155378975999999999
    assert EdmDateTime(1, 1, 1).ticks == 0
    # new DateTime(1601, 1, 1).Ticks (the FILETIME epoch)
    assert DATETIME_MIN.ticks == 504911232000000000
    t = EdmDateTime.parse("2020-09-15T23:02:10.4363943Z")
    assert EdmDateTime.from_ticks(t.ticks).to_wire() == "2020-09-15T23:02:10.4363943Z"
    with pytest.raises(ValidationError):
        EdmDateTime.from_ticks(-1)


@given(st.integers(min_value=0, max_value=3155378975999999999))
def test_ticks_round_trip(ticks: int) -> None:
    t = EdmDateTime.from_ticks(ticks)
    assert t.ticks == ticks
    assert EdmDateTime.parse(t.to_wire()).ticks == ticks
    assert len(t.to_wire()) == 28


def test_compare_and_hash_include_seventh_digit() -> None:
    a = EdmDateTime.parse("2020-01-01T00:00:00.0000003Z")
    b = EdmDateTime.parse("2020-01-01T00:00:00.0000004Z")
    plain = datetime(2020, 1, 1, tzinfo=UTC)
    assert a < b
    assert b > a
    assert a <= b
    assert b >= a
    assert a != b
    assert a > plain
    assert plain < a
    assert a != plain
    assert EdmDateTime(2020, 1, 1) == plain
    assert hash(EdmDateTime(2020, 1, 1)) == hash(plain)
    assert len({a, b, EdmDateTime.parse(a.to_wire())}) == 2
    assert sorted([b, plain, a]) == [plain, a, b]
    # aware vs naive: like datetime (equality False, ordering TypeError)
    assert a != datetime(2020, 1, 1)
    with pytest.raises(TypeError):
        _ = a < datetime(2020, 1, 1)


def test_arithmetic_keeps_ticks() -> None:
    a = EdmDateTime.parse("2020-01-01T00:00:00.0000003Z")
    later = a + timedelta(days=1, microseconds=2)
    assert isinstance(later, EdmDateTime)
    assert later.to_wire() == "2020-01-02T00:00:00.0000023Z"
    assert (timedelta(seconds=1) + a).to_wire() == "2020-01-01T00:00:01.0000003Z"
    assert (a - timedelta(seconds=1)).to_wire() == "2019-12-31T23:59:59.0000003Z"
    assert later - a == timedelta(days=1, microseconds=2)
    b = EdmDateTime.parse("2020-01-01T00:00:00.0000018Z")
    assert b - a == timedelta(microseconds=2)  # 1.5 us rounds half to even
    assert EdmDateTime.parse("2020-01-01T00:00:00.0000013Z") - a == timedelta(microseconds=1)


def test_constructor_timezones_and_replace() -> None:
    cet = timezone(timedelta(hours=1))
    assert EdmDateTime(2020, 1, 1, 1, tzinfo=cet).to_wire() == "2020-01-01T00:00:00.0000000Z"
    assert EdmDateTime(2020, 1, 1, tzinfo=None).tzinfo is UTC
    with pytest.raises(ValidationError):
        EdmDateTime(2020, 1, 1, nanosecond=150)
    t = EdmDateTime(2020, 1, 1, nanosecond=300)
    assert t.replace(year=2021).to_wire() == "2021-01-01T00:00:00.0000003Z"
    assert t.replace(nanosecond=0).to_wire() == "2020-01-01T00:00:00.0000000Z"
    local = t.astimezone(cet)
    assert type(local) is datetime
    assert local.hour == 1
    assert t.isoformat() == "2020-01-01T00:00:00.0000003+00:00"
    assert str(t) == "2020-01-01 00:00:00.0000003+00:00"  # datetime's text, seven digits
    assert eval(repr(t), {"EdmDateTime": EdmDateTime}) == t


@given(
    st.datetimes(
        min_value=datetime(1601, 1, 1),
        max_value=datetime(9999, 12, 31, 23, 59, 59, 999999),
        timezones=st.just(UTC),
    )
)
def test_a_value_a_datetime_can_hold_prints_as_that_datetime(value: datetime) -> None:
    """str(), format() and isoformat() of an EdmDateTime holding a datetime-representable
    value are the datetime's own, as read back from the service or built here."""
    for edm in (EdmDateTime.from_datetime(value), EdmDateTime.parse(value.isoformat())):
        assert str(edm) == str(value)
        assert f"{edm}" == f"{value}"
        assert f"{edm:%Y-%m-%d %H:%M}" == f"{value:%Y-%m-%d %H:%M}"
        assert edm.isoformat() == value.isoformat()
        assert edm.isoformat(" ", "seconds") == value.isoformat(" ", "seconds")


def test_clock_constructors_are_utc() -> None:
    before = datetime.now(UTC)
    for now in (EdmDateTime.now(), EdmDateTime.utcnow(), EdmDateTime.today()):
        assert isinstance(now, EdmDateTime)
        assert abs(now - before) < timedelta(minutes=5)
    assert EdmDateTime.fromtimestamp(1.5).to_wire() == "1970-01-01T00:00:01.5000000Z"
    assert EdmDateTime.utcfromtimestamp(0) == datetime(1970, 1, 1, tzinfo=UTC)
    assert EdmDateTime.fromisoformat("2020-01-01T00:00:00.0000001").nanosecond == 100


def test_from_datetime() -> None:
    assert EdmDateTime.from_datetime(datetime(2020, 5, 6, 7, 8, 9, 10, tzinfo=UTC)).to_wire() == (
        "2020-05-06T07:08:09.0000100Z"
    )
    with pytest.raises(ValidationError, match="naive"):
        EdmDateTime.from_datetime(datetime(2020, 1, 1))
    t = EdmDateTime(2020, 1, 1, nanosecond=500)
    assert EdmDateTime.from_datetime(t) is t


def test_pickle_and_copy_keep_ticks() -> None:
    t = EdmDateTime.parse("2020-09-15T23:02:10.4363943Z")
    for other in (pickle.loads(pickle.dumps(t)), copy.copy(t), copy.deepcopy(t)):
        assert isinstance(other, EdmDateTime)
        assert other.to_wire() == t.to_wire()


# ----------------------------------------------------------------------- entities


def test_table_entity_metadata_and_types() -> None:
    e = TableEntity(PartitionKey="p", RowKey="r", N=5)
    assert e.metadata == EntityMetadata()
    assert e.edm_types == {}
    e.edm_types["N"] = EdmType.INT64
    e.metadata = EntityMetadata(etag='W/"x"')
    c = e.copy()
    assert isinstance(c, TableEntity)
    assert c == e
    assert c.edm_types == {"N": EdmType.INT64}
    assert c.metadata.etag == 'W/"x"'
    c.edm_types["M"] = EdmType.INT32
    assert "M" not in e.edm_types
    p = pickle.loads(pickle.dumps(e))
    assert p == e
    assert p.edm_types == e.edm_types
    assert p.metadata == e.metadata
    assert repr(TableEntity(a=1)) == "TableEntity({'a': 1})"


def test_typed_normalises_and_checks() -> None:
    assert Typed(3, EdmType.DOUBLE).value == 3.0
    assert Typed("C9DA6455-213D-42C9-9A79-3E9149A57833", "Edm.Guid").value == uuid.UUID(
        "c9da6455-213d-42c9-9a79-3e9149a57833"
    )
    with pytest.raises(ValidationError, match="Int32"):
        Typed(2**31, EdmType.INT32)
    with pytest.raises(ValidationError, match="Int64"):
        Typed(2**63, EdmType.INT64)
    assert Typed(-(2**63), EdmType.INT64).value == -(2**63)
    with pytest.raises(ValidationError):
        Typed(True, EdmType.INT32)
    with pytest.raises(ValidationError):
        Typed("x", EdmType.INT64)
    with pytest.raises(ValueError):
        Typed("x", "Edm.Decimal")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("s", EdmType.STRING),
        (True, EdmType.BOOLEAN),
        (2**31 - 1, EdmType.INT32),
        (-(2**31), EdmType.INT32),
        (2**31, EdmType.INT64),
        (-(2**31) - 1, EdmType.INT64),
        (1.0, EdmType.DOUBLE),
        (datetime(2020, 1, 1, tzinfo=UTC), EdmType.DATETIME),
        (EdmDateTime(2020, 1, 1), EdmType.DATETIME),
        (uuid.uuid4(), EdmType.GUID),
        (b"", EdmType.BINARY),
        (bytearray(b"x"), EdmType.BINARY),
        (Typed(1, EdmType.INT64), EdmType.INT64),
    ],
)
def test_infer(value: object, expected: EdmType) -> None:
    assert infer_edm_type(value) is expected


def test_infer_refuses_other_types() -> None:
    with pytest.raises(TypeError, match="no EDM type"):
        infer_edm_type([1])
    with pytest.raises(TypeError):
        infer_edm_type(None)


def test_coerce_datetime_range() -> None:
    with pytest.raises(ValidationError, match="1601"):
        coerce_value(datetime(1600, 12, 31, 23, 59, tzinfo=UTC), EdmType.DATETIME, "When")
    assert coerce_value("2020-01-01T00:00:00Z", EdmType.DATETIME) == EdmDateTime(2020, 1, 1)
    with pytest.raises(ValidationError, match="property 'When'"):
        coerce_value(datetime(2020, 1, 1), EdmType.DATETIME, "When")


# ----------------------------------------------------------------------- literals


@pytest.mark.parametrize(
    ("value", "edm_type", "expected"),
    [
        ("O'Brien", None, "'O''Brien'"),
        ("", None, "''"),
        ("''", None, "''''''"),
        ("é😀", None, "'é😀'"),
        (42, None, "42"),
        (-(2**31), None, "-2147483648"),
        (2**31, None, "2147483648L"),
        (-(2**63), None, "-9223372036854775808L"),
        (5, EdmType.INT64, "5L"),
        (5, EdmType.DOUBLE, "5.0"),
        (2.0, None, "2.0"),
        (1e20, None, "1e+20"),
        (-1.5e-7, None, "-1.5e-07"),
        (True, None, "true"),
        (False, None, "false"),
        (EdmDateTime(2008, 7, 10), None, "datetime'2008-07-10T00:00:00.0000000Z'"),
        (
            datetime(2008, 7, 10, 2, tzinfo=timezone(timedelta(hours=2))),
            None,
            "datetime'2008-07-10T00:00:00.0000000Z'",
        ),
        (
            uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833"),
            None,
            "guid'c9da6455-213d-42c9-9a79-3e9149a57833'",
        ),
        (
            "C9DA6455-213D-42C9-9A79-3E9149A57833",
            EdmType.GUID,
            "guid'c9da6455-213d-42c9-9a79-3e9149a57833'",
        ),
        (b"\x0a\x1b\xff", None, "X'0a1bff'"),
        (b"", None, "X''"),
        (Typed(7, EdmType.INT64), None, "7L"),
    ],
)
def test_format_literal(value: object, edm_type: EdmType | None, expected: str) -> None:
    assert format_literal(value, edm_type) == expected


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_format_literal_refuses_special_doubles(bad: float) -> None:
    with pytest.raises(ValidationError, match="NaN or infinity"):
        format_literal(bad)


def test_format_literal_refusals() -> None:
    with pytest.raises(ValidationError, match="null"):
        format_literal(None)
    with pytest.raises(ValidationError, match="naive"):
        format_literal(datetime(2020, 1, 1))
    with pytest.raises(ValidationError, match="Int32"):
        format_literal(2**31, EdmType.INT32)
    with pytest.raises(ValidationError):
        format_literal(2**64)
    with pytest.raises(ValidationError, match="no EDM type"):
        format_literal(object())


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_double_literal_always_reads_back_as_double(x: float) -> None:
    lit = format_literal(x)
    assert "." in lit or "e" in lit
    assert float(lit) == x


# ----------------------------------------------------------------------- limits


def test_utf16_len() -> None:
    assert utf16_len("") == 0
    assert utf16_len("abc") == 3
    assert utf16_len("é") == 1
    assert utf16_len("😀") == 2
    assert utf16_len("\ud800") == 1


def test_validate_key() -> None:
    assert validate_key("PartitionKey", "") == ""
    assert validate_key("RowKey", "x" * 1024) == "x" * 1024
    with pytest.raises(ValidationError, match="1024"):
        validate_key("RowKey", "x" * 1025)
    with pytest.raises(ValidationError, match="1024"):
        validate_key("RowKey", "😀" * 513)  # 1026 UTF-16 units
    for ch in "/\\#?\x00\t\n\r\x1f\x7f\x85\x9f":
        with pytest.raises(ValidationError, match="contains"):
            validate_key("PartitionKey", f"a{ch}b")
    assert validate_key("PartitionKey", "a\xa0b'@*$!%") == "a\xa0b'@*$!%"
    with pytest.raises(ValidationError, match="must be a str"):
        validate_key("PartitionKey", 5)


def _base(**props: object) -> dict[str, object]:
    return {"PartitionKey": "p", "RowKey": "r", **props}


def test_validate_entity_accepts_limits() -> None:
    props: dict[str, object] = {f"p{i}": i for i in range(252)}
    validate_entity(_base(**props))
    validate_entity(_base(S="x" * 32768, B=b"x" * 65536, N=None, Timestamp="ignored"))
    validate_entity(_base(**{"_x": 1, "a" * 255: 1, "Ünïcode": 1}))
    validate_entity({"A": 1}, require_keys=False)
    validate_entity(_base(Nan=math.nan, Inf=math.inf))


@pytest.mark.parametrize(
    ("entity", "match"),
    [
        ({"RowKey": "r"}, "PartitionKey is missing"),
        ({"PartitionKey": "p"}, "RowKey is missing"),
        (_base(**{f"p{i}": i for i in range(253)}), "253 custom properties.*252"),
        (_base(S="x" * 32769), "property 'S'.*32769.*32768"),
        (_base(S="😀" * 16385), "property 'S'.*32770"),
        (_base(B=b"x" * 65537), "property 'B'.*65537 bytes.*65536"),
        (_base(**{"a" * 256: 1}), "256 characters.*255"),
        (_base(**{"bad-name": 1}), "'bad-name' is invalid"),
        (_base(**{"1abc": 1}), "'1abc' is invalid"),
        (_base(**{"odata.etag": "x"}), "'odata.etag' is invalid"),
        (_base(N=2**63), "property 'N'.*Int64"),
        (_base(D=datetime(1600, 1, 1, tzinfo=UTC)), "property 'D'.*1601"),
        (_base(D=datetime(2020, 1, 1)), "property 'D'.*naive"),
        (_base(L=[1]), "property 'L'.*no EDM type"),
        (_base(T=Typed(1, EdmType.INT32), U=Typed("x", EdmType.STRING)), None),
        ({"PartitionKey": "a/b", "RowKey": "r"}, "PartitionKey"),
        ({"PartitionKey": 1, "RowKey": "r"}, "PartitionKey must be a str"),
        (_base(**{f"s{i}": "x" * 32000 for i in range(20)}), "about .* bytes.*1 MiB"),
    ],
)
def test_validate_entity_refusals(entity: dict[str, object], match: str | None) -> None:
    if match is None:
        validate_entity(entity)
        return
    with pytest.raises(ValidationError, match=match):
        validate_entity(entity)


def test_validate_entity_uses_explicit_types() -> None:
    e = TableEntity(_base(N=2**40))
    e.edm_types["N"] = EdmType.INT32
    with pytest.raises(ValidationError, match="Int32"):
        validate_entity(e)
    validate_entity(e, types={"N": EdmType.INT64})
    with pytest.raises(ValidationError, match=r"Edm\.Guid"):
        validate_entity(_base(G=5), types={"G": EdmType.GUID})


def test_literals_match_azure_data_tables_where_it_is_right() -> None:
    from azure.data.tables._serialize import _parameter_filter_substitution

    def theirs(value: object) -> str:
        params: dict[str, Any] = {"v": value}
        out: str = _parameter_filter_substitution(params, "@v")
        return out

    for value in [
        "O'Brien",
        "",
        42,
        -7,
        2**40,
        True,
        2.5,
        uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833"),
        b"\x0a\x1b",
    ]:
        assert format_literal(value) == theirs(value), value
    # Surprise: the SDK writes ints of 32 bits without L even when they overflow Int32
    # (bit_length() <= 32), which the service rejects; azt types them as Int64.
    assert theirs(2**31) == "2147483648"
    assert format_literal(2**31) == "2147483648L"
