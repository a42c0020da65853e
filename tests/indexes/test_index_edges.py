"""Index declarations and keys at their edges, each refusal by its error type and message
and each limit on both sides: index names (63 characters, not 64), parts, an int part's
64-bit range and its exact stored text (index rows already written depend on it), and the
key limits of an index across partitions (its PartitionKey is checked first)."""

from __future__ import annotations

import enum
import uuid

import pytest

from azt._core.results import UpdateMode
from azt._edm.datetime import EdmDateTime
from azt._errors import ValidationError
from azt._orm.indexes import (
    INDEX_RECORD,
    RESERVED,
    Holds,
    Index,
    IndexDef,
    _escape,
    _unescape,
    bind_indexes,
    companion_operations,
    declared_indexes,
    encode_part,
    index_prefix,
    index_row,
    index_row_keys,
    note_index_keys,
)
from azt.edm import EdmType, TableEntity
from azt.entity import Entity, Prop, prop

from .models import Plain


def test_index_names_up_to_63_characters() -> None:
    assert Index("a" + "b" * 62, "x").name == "a" + "b" * 62
    assert Index("A_1", "x").name == "A_1"
    for bad in ("a" + "b" * 63, "1abc", "_a", "a-b", "", "a b"):
        with pytest.raises(
            TypeError, match=r"a letter, then letters, digits or '_' \(at most 63\)"
        ):
            Index(bad, "x")
    with pytest.raises(TypeError, match="index name 5"):
        Index(5, "x")  # type: ignore[arg-type]


def test_index_parts_are_names_or_name_and_function_pairs() -> None:
    index = Index("i", "a", ("b", str.lower))
    assert index.parts == ("a", ("b", str.lower))
    for bad in (5, ("b",), ("b", "c"), (str.lower, "b"), ("b", str.lower, 1)):
        with pytest.raises(TypeError, match="a part is a property name or \\(name, function\\)"):
            Index("i", bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="names no property"):
        Index("i")


def test_an_index_across_partitions_holds_keys_only() -> None:
    assert Index("i", "a", across_partitions=True).across_partitions is True
    with pytest.raises(TypeError, match="holds keys only"):
        Index("i", "a", holds=Holds.ENTITY, across_partitions=True)
    with pytest.raises(TypeError, match="across_partitions is True or False"):
        Index("i", "a", across_partitions=1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "09223372036854775808"),
        (-(2**63), "00000000000000000000"),
        (2**63 - 1, "18446744073709551615"),
        (-1, "09223372036854775807"),
    ],
)
def test_an_int_part_is_stored_offset_by_2_to_the_63(value: int, text: str) -> None:
    assert encode_part(value) == text


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1])
def test_an_int_part_outside_64_bits_is_refused(value: int) -> None:
    with pytest.raises(ValidationError, match="an indexed int must fit 64 bits"):
        encode_part(value)


def test_an_index_def_is_in_its_own_partition_unless_said() -> None:
    local = IndexDef("i", ("a",), ("a",), (encode_part,), Holds.KEYS)
    assert local.across is False
    assert local.row_key(["x"], "r", "p") == "\ufffdix;i;x;r"
    across = IndexDef("e", ("a",), ("a",), (encode_part,), Holds.KEYS, True)
    assert across.row_key(["x"], "r", "p") == "\ufffdix;e;x;p;r"


def test_the_partition_key_of_an_index_across_partitions_is_checked_first() -> None:
    across = IndexDef("e", ("a",), ("a",), (encode_part,), Holds.KEYS, True)
    local = IndexDef("e", ("a",), ("a",), (encode_part,), Holds.KEYS)
    long = "x" * 1020
    with pytest.raises(ValidationError, match="the PartitionKey of index 'e'"):
        across.row_key([long], "r", "p")
    with pytest.raises(ValidationError, match="the RowKey of index 'e'"):
        local.row_key([long], "r", "p")
    # a part that fits the PartitionKey but not the RowKey (which adds the main keys)
    with pytest.raises(ValidationError, match="the RowKey of index 'e'"):
        across.row_key(["x" * 1000], "r" * 30, "p")


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("plain", "plain"),
        ("a%b;c", "a%25b%3Bc"),
        ("a/b\\c#d?e", "a%2Fb%5Cc%23d%3Fe"),
        ("\x00\x1f\x7f\x9f", "%00%1F%7F%9F"),
        ("x\ufffdy", "x%FFFDy"),
        ("\ufffd\ufffd", "%FFFD%FFFD"),
        ("\u0100\u00a0", "\u0100\u00a0"),
    ],
)
def test_key_text_escapes_and_comes_back(raw: str, escaped: str) -> None:
    assert _escape(raw) == escaped
    assert _unescape(escaped) == raw


class _Colour(enum.Enum):
    RED = "r;ed"


def test_each_part_type_is_stored_as_documented() -> None:
    assert encode_part(_Colour.RED) == "r%3Bed"
    assert (encode_part(True), encode_part(False)) == ("1", "0")
    assert encode_part(EdmDateTime(2020, 1, 1)) == "0637134336000000000"
    guid = uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833")
    assert encode_part(guid) == "c9da6455-213d-42c9-9a79-3e9149a57833"
    with pytest.raises(ValidationError, match="cannot index a float value without a key function"):
        encode_part(1.5)


class _Shelf(Entity):
    """A renamed property indexed through a key function."""

    colour: Prop[str] = prop(name="Colour", default="")
    size: Prop[int] = prop(default=0)

    class Meta:
        indexes = (Index("by_colour", ("colour", str.lower), "size"),)


def test_a_declared_index_binds_wire_names_and_key_functions() -> None:
    [d] = declared_indexes(_Shelf)
    assert (d.attrs_, d.wires) == (("colour", "size"), ("Colour", "size"))
    keys = index_row_keys(_Shelf("p", "r1", colour="RED", size=2))
    assert keys == {"by_colour": "\ufffdix;by_colour;red;09223372036854775810;r1"}
    assert index_prefix("by_colour") == "\ufffdix;by_colour;"
    assert d.prefix == index_prefix("by_colour")


@pytest.mark.parametrize("part", ["Timestamp", "ETag", "nope"])
def test_an_index_part_must_be_a_data_property(part: str) -> None:
    with pytest.raises(TypeError, match=f"{part!r} is not a data property of Bad"):
        bind_indexes("Bad", (Index("i", part),), {"Timestamp": object(), "ETag": object()})


def test_an_object_missing_an_indexed_property_records_no_keys() -> None:
    obj = object.__new__(_Shelf)  # nothing set, as a projection that left them out
    note_index_keys(obj)
    assert getattr(obj, INDEX_RECORD) is None
    full = _Shelf("p", "r", colour="Blue")
    note_index_keys(full)
    assert getattr(full, INDEX_RECORD) == index_row_keys(full)


def test_a_copy_row_keeps_the_stored_types() -> None:
    d = IndexDef("c", ("a",), ("a",), (encode_part,), Holds.ENTITY)
    main = TableEntity(PartitionKey="p", RowKey="r", a="x", n=5)
    main.edm_types = {"n": EdmType.INT64}
    row = index_row(d, "\ufffdix;c;x;r", main)
    assert dict(row) == {"PartitionKey": "p", "RowKey": "\ufffdix;c;x;r", "a": "x", "n": 5}
    assert row.edm_types == {"n": EdmType.INT64}
    keys_only = index_row(IndexDef("k", ("a",), ("a",), (encode_part,), Holds.KEYS), "k1", main)
    assert dict(keys_only) == {"PartitionKey": "p", "RowKey": "k1"}


class _Mail(Entity):
    """An index across partitions."""

    email: Prop[str | None] = prop(default=None)

    class Meta:
        indexes = (Index("by_email", "email", across_partitions=True),)


def test_row_keys_at_and_above_the_reserved_character_are_refused() -> None:
    below = _Shelf("p", "\ufffc", colour="red")
    note_index_keys(below)
    payload = {"PartitionKey": "p", "RowKey": "\ufffc", "Colour": "red", "size": 0}
    assert companion_operations(below, "update", UpdateMode.REPLACE, payload, 'W/"1"') == []
    # in the service's order (UTF-16) an astral character sorts below U+FFFD
    astral = _Shelf("p", "\U0001f600", colour="red")
    created = companion_operations(
        astral, "create", None, {"PartitionKey": "p", "RowKey": "\U0001f600"}, None
    )
    assert [op.row_key for op in created] == [index_row_keys(astral)["by_colour"]]
    for rk in (RESERVED, RESERVED + "x", "\uffff"):
        obj = _Shelf("p", rk, colour="red")
        with pytest.raises(ValidationError, match="are reserved for secondary index rows"):
            companion_operations(obj, "create", None, {}, None)
    # an index row's key is refused for any class
    with pytest.raises(ValidationError, match="are reserved for secondary index rows"):
        companion_operations(Plain("p", index_prefix("i") + "x"), "create", None, {}, None)


def test_a_merge_may_not_clear_a_property_indexed_across_partitions() -> None:
    obj = _Mail("p", "r", email="a@b")
    note_index_keys(obj)
    obj.email = None
    with pytest.raises(
        ValidationError, match=r"a MERGE cannot remove the indexed property \['email'\]"
    ):
        companion_operations(obj, "update", UpdateMode.MERGE, {}, 'W/"1"')
    ops = companion_operations(obj, "update", UpdateMode.REPLACE, {}, 'W/"1"')
    assert ops  # a replace may clear it: the index row goes


class _Pair(Entity):
    """One index over two optional parts, and a copy-holding one."""

    x: Prop[str | None] = prop(default=None)
    y: Prop[str | None] = prop(default=None)
    note: Prop[str] = prop(default="")

    class Meta:
        indexes = (Index("by_xy", "x", "y"), Index("copy_x", "x", holds=Holds.ENTITY))


def test_a_merge_clearing_indexed_properties_names_them() -> None:
    obj = _Pair("p", "r", x="a", y="b")
    note_index_keys(obj)
    obj.y = None
    with pytest.raises(ValidationError, match=r"cannot remove the indexed property \['y'\] "):
        companion_operations(obj, "update", UpdateMode.MERGE, {}, 'W/"1"')
    obj.x = None
    with pytest.raises(ValidationError, match=r"the indexed properties \['x', 'y'\] "):
        companion_operations(obj, "update", UpdateMode.MERGE, {}, 'W/"1"')


def test_an_update_refreshes_the_copy_row_even_when_its_keys_stay() -> None:
    obj = _Pair("p", "r", x="a", y="b", note="old")
    note_index_keys(obj)
    obj.note = "new"
    payload = {"PartitionKey": "p", "RowKey": "r", "x": "a", "y": "b", "note": "new"}
    ops = companion_operations(obj, "update", UpdateMode.REPLACE, payload, 'W/"1"')
    copy_key = index_row_keys(obj)["copy_x"]
    assert [(op.kind, op.row_key) for op in ops] == [("upsert", copy_key)]
    assert ops[0].entity["note"] == "new"
    # keys-only rows whose keys stay need nothing; a create writes every row
    created = companion_operations(obj, "create", None, payload, None)
    assert sorted(op.row_key for op in created) == sorted(
        k for k in index_row_keys(obj).values() if k is not None
    )
