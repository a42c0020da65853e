"""The fast entity check agrees with the full one: it never accepts what the full check
(``azt._edm.validation._check_fully``, which ``validate_entity`` falls back to) refuses,
and the errors stay the full check's."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import azt
from azt._edm.datetime import EdmDateTime
from azt._edm.entity import TableEntity
from azt._edm.types import EdmType, Typed
from azt._edm.validation import _check_fully, _plainly_valid
from azt.edm import validate_entity


def _full_accepts(entity: dict[str, Any]) -> bool:
    try:
        _check_fully(entity)
    except azt.ValidationError:
        return False
    return True


def _keys(**props: Any) -> dict[str, Any]:
    return {"PartitionKey": "p", "RowKey": "r", **props}


CASES: list[tuple[dict[str, Any], bool]] = [
    (_keys(), True),
    (_keys(a="x", b=1, c=2**40, d=1.5, e=True, f=datetime(2020, 1, 1, tzinfo=UTC)), True),
    (_keys(g=uuid.uuid4(), h=b"\x00" * 10, Timestamp=object(), n=None), True),
    ({"PartitionKey": "p"}, False),
    ({"PartitionKey": "p", "RowKey": None}, False),
    ({"PartitionKey": "p", "RowKey": 5}, False),
    (_keys(x=2**63), False),
    (_keys(x=-(2**63) - 1), False),
    (_keys(x=2**63 - 1), True),
    (_keys(x=datetime(1600, 12, 31, tzinfo=UTC)), False),
    (_keys(x=datetime(2020, 1, 1)), False),  # naive
    (_keys(x=b"a" * 65536), True),
    (_keys(x=b"a" * 65537), False),
    (_keys(x="a" * 32768), True),
    (_keys(x="a" * 32769), False),
    (_keys(x="\U0001f600" * 16384), True),  # 32768 UTF-16 code units
    (_keys(x="\U0001f600" * 16385), False),
    ({"PartitionKey": "k" * 1024, "RowKey": ""}, True),
    ({"PartitionKey": "k" * 1025, "RowKey": ""}, False),
    ({"PartitionKey": "\U0001f600" * 513, "RowKey": ""}, False),
    ({"PartitionKey": "a/b", "RowKey": ""}, False),
    ({"PartitionKey": "a\x7f", "RowKey": ""}, False),
    (_keys(**{"a" * 255: 1}), True),
    (_keys(**{"a" * 256: 1}), False),
    (_keys(**{"bad-name": 1}), False),
    (_keys(**{"odata.etag": "x"}), False),
    (_keys(**{f"p{i}": i for i in range(252)}), True),
    (_keys(**{f"p{i}": i for i in range(253)}), False),
    (_keys(**{f"s{i}": "x" * 30000 for i in range(17)}), True),  # ~1,020,300 bytes
    (_keys(**{f"s{i}": "x" * 30000 for i in range(18)}), False),
    (_keys(x=[1, 2]), False),
]


@pytest.mark.parametrize(("entity", "valid"), CASES)
def test_fast_path_never_accepts_more_than_the_full_check(
    entity: dict[str, Any], valid: bool
) -> None:
    assert _full_accepts(entity) is valid
    if _plainly_valid(entity):
        assert valid
    if valid:
        validate_entity(entity)
    else:
        with pytest.raises(azt.ValidationError):
            validate_entity(entity)


def test_plain_entities_take_the_fast_path() -> None:
    common = _keys(a="x", b=1, c=2**40, d=1.5, e=True, f=datetime(2020, 1, 1, tzinfo=UTC))
    assert _plainly_valid(common)
    assert _plainly_valid(TableEntity(common))
    assert _plainly_valid(_keys(t=EdmDateTime(2020, 1, 1, tzinfo=UTC)))


def test_unusual_but_valid_entities_go_to_the_full_check() -> None:
    cet = timezone(timedelta(hours=1))
    unusual = [
        _keys(x=Typed(5, EdmType.INT64)),
        _keys(x=datetime(2020, 1, 1, tzinfo=cet)),
        _keys(x=bytearray(b"ab")),
    ]
    typed = TableEntity(_keys(x=5))
    typed.edm_types["x"] = EdmType.DOUBLE
    unusual.append(typed)
    for entity in unusual:
        assert not _plainly_valid(entity)
        validate_entity(entity)  # still accepted


def test_errors_name_the_problem() -> None:
    with pytest.raises(azt.ValidationError, match="property name 'bad-name' is invalid"):
        validate_entity(_keys(**{"bad-name": 1}))
    with pytest.raises(azt.ValidationError, match="1 MiB"):
        validate_entity(_keys(**{f"s{i}": "x" * 30000 for i in range(18)}))


VALUES = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=True),
    st.booleans(),
    st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=-3))])),
    st.datetimes(),
    st.uuids(),
    st.binary(max_size=40),
    st.lists(st.integers(), max_size=2),
)
NAMES = st.one_of(
    st.sampled_from(["Name", "_x", "Timestamp", "odata.type", "a-b", "9lives", "ÄÖ"]),
    st.text(min_size=1, max_size=12),
)
KEYS = st.one_of(st.text(max_size=20), st.none(), st.integers())


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(NAMES, VALUES, max_size=8), KEYS, KEYS)
def test_fast_path_agrees_with_the_full_check(props: dict[str, Any], pk: Any, rk: Any) -> None:
    entity = dict(props)
    if pk is not None:
        entity["PartitionKey"] = pk
    if rk is not None:
        entity["RowKey"] = rk
    if _plainly_valid(entity):
        assert _full_accepts(entity), entity


TYPED_CASES: list[tuple[dict[str, Any], dict[str, EdmType], bool, bool]] = [
    # (entity, explicit types, fast path taken, valid)
    (_keys(n=5), {"n": EdmType.INT64}, True, True),
    (_keys(n=2**40), {"n": EdmType.INT64}, True, True),
    (_keys(n=2**63), {"n": EdmType.INT64}, False, False),
    (_keys(n=5), {"n": EdmType.INT32}, True, True),
    (_keys(n=2**40), {"n": EdmType.INT32}, False, False),
    (_keys(n=5), {"n": EdmType.DOUBLE}, False, True),  # coerced by the full check
    (_keys(n=True), {"n": EdmType.INT64}, False, False),
    (_keys(s="x", d=1.5, b=True), {"s": EdmType.STRING, "d": EdmType.DOUBLE}, True, True),
    (_keys(g=uuid.UUID(int=1)), {"g": EdmType.GUID}, True, True),
    (_keys(g="c9da6455-213d-42c9-9a79-3e9149a57833"), {"g": EdmType.GUID}, False, True),
    (_keys(t=datetime(2020, 1, 1, tzinfo=UTC)), {"t": EdmType.DATETIME}, True, True),
    (_keys(h=b"ab"), {"h": EdmType.BINARY}, True, True),
    (_keys(h=b"ab"), {"h": EdmType.STRING}, False, False),
    (_keys(n=None), {"n": EdmType.INT64}, True, True),
]


@pytest.mark.parametrize(("props", "types", "fast", "valid"), TYPED_CASES)
def test_explicit_types_of_the_value_s_own_kind_take_the_fast_path(
    props: dict[str, Any], types: dict[str, EdmType], fast: bool, valid: bool
) -> None:
    entity = TableEntity(props)
    entity.edm_types = dict(types)
    assert _plainly_valid(entity) is fast
    assert _plainly_valid(dict(props), types) is fast
    try:
        _check_fully(entity)
    except azt.ValidationError:
        assert not valid
    else:
        assert valid
    if valid:
        validate_entity(entity)
    else:
        with pytest.raises(azt.ValidationError):
            validate_entity(entity)


def test_int64_counts_eight_bytes_in_the_size_estimate() -> None:
    # Near the 1 MiB limit, 100 ints typed Int64 (8 bytes each, not an Int32's 4) decide
    # whether the entity fits: the fast path must count them as the full check does.
    base = _keys(
        **{f"a{i:02d}": "x" * 32768 for i in range(15)}, **{f"n{j:03d}": 1 for j in range(100)}
    )
    types = {f"n{j:03d}": EdmType.INT64 for j in range(100)}
    outcomes = set()
    for length in range(31300, 31700, 7):
        entity = {**base, "z": "y" * length}
        fits = _full_accepts_typed(entity, types)
        outcomes.add(fits)
        assert _plainly_valid(entity, types) is fits, length
        assert _plainly_valid(entity) is _full_accepts(entity), length
    assert outcomes == {True, False}


def _full_accepts_typed(entity: dict[str, Any], types: dict[str, EdmType]) -> bool:
    try:
        _check_fully(entity, types=types)
    except azt.ValidationError:
        return False
    return True


EDM_TYPES = st.sampled_from(list(EdmType))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(NAMES, VALUES, max_size=8), st.dictionaries(NAMES, EDM_TYPES, max_size=8))
def test_fast_path_with_explicit_types_agrees_with_the_full_check(
    props: dict[str, Any], types: dict[str, EdmType]
) -> None:
    entity = _keys(**{k: v for k, v in props.items() if k not in ("PartitionKey", "RowKey")})
    if _plainly_valid(entity, types):
        try:
            _check_fully(entity, types=types)
        except azt.ValidationError as exc:  # pragma: no cover - the failure being tested
            raise AssertionError(f"fast path accepted {entity} {types}: {exc}") from None
