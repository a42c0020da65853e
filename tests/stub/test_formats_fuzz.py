"""Property test: every entity validation accepts can be written in every format and read back.

Whatever a JSON client stored (any key, name or value the service accepts), each response
format renders it without failing, and the JSON levels that carry types round-trip it.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from azt_server_stub import validation
from azt_server_stub.errors import StubError
from azt_server_stub.formats import atom
from azt_server_stub.formats import json as jsonfmt
from azt_server_stub.formats.negotiation import Fmt
from azt_server_stub.model import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    MAX_DATETIME_TICKS,
    MIN_DATETIME_TICKS,
    Edm,
    Entity,
    TypedValue,
)

# Characters that trouble some format: XML non-characters and controls, quotes, markup,
# astral and private-use characters.
_ODD = st.sampled_from(["\ufffe", "\uffff", "\U0010ffff", "\ue000", "'", "&", "<", '"', " "])
_KEY_TEXT = st.one_of(
    st.text(
        alphabet=st.one_of(
            st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/\\#?"), _ODD
        ),
        max_size=12,
    ),
    st.lists(_ODD, max_size=3).map("".join),
)
_TEXT = st.text(  # any Unicode scalar value, odd ones often
    alphabet=st.one_of(st.characters(codec="utf-8"), _ODD, st.just("\x01")),
    max_size=12,
)
_NAMES = st.text(
    alphabet=st.characters(whitelist_categories=("Lu", "Ll", "Lo", "Nl", "Nd", "Mn", "Pc")),
    min_size=1,
    max_size=8,
).filter(validation.is_property_name)

_VALUES: st.SearchStrategy[TypedValue] = st.one_of(
    _TEXT.map(lambda v: (Edm.STRING, v)),
    st.integers(INT32_MIN, INT32_MAX).map(lambda v: (Edm.INT32, v)),
    st.integers(INT64_MIN, INT64_MAX).map(lambda v: (Edm.INT64, v)),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda v: (Edm.DOUBLE, v)),
    st.booleans().map(lambda v: (Edm.BOOLEAN, v)),
    st.integers(MIN_DATETIME_TICKS, MAX_DATETIME_TICKS).map(lambda v: (Edm.DATETIME, v)),
    st.uuids().map(lambda v: (Edm.GUID, v)),
    st.binary(max_size=16).map(lambda v: (Edm.BINARY, v)),
)


@st.composite
def entities(draw: st.DrawFn) -> Entity:
    pk = draw(_KEY_TEXT)
    rk = draw(_KEY_TEXT)
    props = draw(st.dictionaries(_NAMES, _VALUES, max_size=6))
    props = {k: v for k, v in props.items() if k not in validation.RESERVED_PROPERTY_NAMES}
    try:
        validation.validate_entity(pk, rk, props)
    except StubError:
        pass
    else:
        return Entity(pk, rk, draw(st.integers(MIN_DATETIME_TICKS, MAX_DATETIME_TICKS)), props)
    draw(st.nothing())
    raise AssertionError  # pragma: no cover


def _same(a: TypedValue, b: TypedValue) -> bool:
    if a[0] is Edm.DOUBLE and b[0] is Edm.DOUBLE and math.isnan(a[1]):
        return math.isnan(b[1])
    if a[0] is Edm.DOUBLE and b[0] is Edm.DOUBLE:
        return a[1] == b[1] and math.copysign(1, a[1]) == math.copysign(1, b[1])
    return a == b


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(entities())
def test_every_accepted_entity_renders_in_every_format(entity: Entity) -> None:
    endpoint = "http://127.0.0.1:10002/devstoreaccount1"
    for fmt in (Fmt.NOMETADATA, Fmt.MINIMAL, Fmt.FULL):
        writer = jsonfmt.EntityWriter(fmt, endpoint, "devstoreaccount1", "t")
        single = writer.single(entity)
        writer.feed([entity, entity])
        if fmt is Fmt.NOMETADATA:
            continue
        members: dict[str, Any] = jsonfmt.loads_object(single)
        pk, rk, props = jsonfmt.entity_from_members(members, keys_required=True)
        assert (pk, rk) == (entity.pk, entity.rk)
        assert props.keys() == entity.props.keys()
        for name, typed in entity.props.items():
            got = props[name]
            assert _same(typed, got), (name, typed, got)
    writer_atom = atom.AtomWriter(endpoint, "devstoreaccount1", "t")
    for body in (writer_atom.single(entity), writer_atom.feed([entity])):
        etree.fromstring(body)  # well-formed XML
    selected = atom.AtomWriter(endpoint, "devstoreaccount1", "t", [*entity.props, "Missing"])
    etree.fromstring(selected.single(entity))
