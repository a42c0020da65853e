"""Unit tests of the tracker (azt._uow.tracker) and entity access (azt._uow.access): states,
transitions, identity map, snapshots, diffs, plans and merge options, for declarative,
dynamic and dict-shaped entities."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from azt._errors import ValidationError
from azt._orm.codec import codec_for
from azt._uow.access import access_for
from azt._uow.tracker import Tracker
from azt._uow.types import (
    ChangeKind,
    EntityState,
    IdentityConflictError,
    MergeOption,
    TrackingError,
)
from azt.dynamic import DynamicEntity
from azt.edm import EdmType, EntityMetadata, TableEntity, Typed

from .models import Movie

S = EntityState


# --------------------------------------------------------------------------- kinds of entity


def _decl(pk: str = "Action", rk: str = "Heat", **props: Any) -> Any:
    kw = {"rating": props.get("Rating", 4.0)}
    if "Language" in props:
        kw["language"] = props["Language"]
    return Movie(pk, rk, **kw)


def _dyn(pk: str = "Action", rk: str = "Heat", **props: Any) -> Any:
    props.setdefault("Rating", 4.0)
    return DynamicEntity(pk, rk, **props)


def _dict(pk: str = "Action", rk: str = "Heat", **props: Any) -> Any:
    props.setdefault("Rating", 4.0)
    return TableEntity(PartitionKey=pk, RowKey=rk, **props)


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, Movie):
        return {"Rating": obj.rating, "Language": obj.language}[name]
    return obj.get(name)


def _set(obj: Any, name: str, value: Any) -> None:
    if isinstance(obj, Movie):
        setattr(obj, {"Rating": "rating", "Language": "language"}[name], value)
    elif value is None and isinstance(obj, DynamicEntity):
        del obj[name]
    else:
        obj[name] = value


def _etag(obj: Any) -> str | None:
    if isinstance(obj, TableEntity):
        return obj.metadata.etag
    return obj.ETag  # type: ignore[no-any-return]


def _with_etag(obj: Any, etag: str) -> Any:
    if isinstance(obj, TableEntity):
        obj.metadata = EntityMetadata(etag)
    else:
        obj.ETag = etag
    return obj


KINDS: list[Callable[..., Any]] = [_decl, _dyn, _dict]
kinds = pytest.mark.parametrize("make", KINDS, ids=["declarative", "dynamic", "dict"])


# --------------------------------------------------------------------------- transitions


@kinds
def test_add_then_states(make: Callable[..., Any]) -> None:
    t = Tracker()
    e = make()
    assert t.state_of(e) is S.DETACHED
    d = t.add("movies", e)
    assert t.state_of(e) is S.ADDED
    assert d.etag is None
    t.update(e)  # Added stays Added
    assert t.state_of(e) is S.ADDED
    (change,) = t.plan()
    assert change.kind is ChangeKind.INSERT
    assert change.payload is not None
    assert change.payload["PartitionKey"] == "Action"
    assert change.payload["Rating"] == 4.0
    t.delete(e)  # never sent: forgotten
    assert t.state_of(e) is S.DETACHED
    assert len(t) == 0
    assert t.plan() == []


@kinds
def test_attach_unchanged_update_delete_detach(make: Callable[..., Any]) -> None:
    t = Tracker()
    e = make()
    t.attach("movies", e, 'W/"1"')
    assert t.state_of(e) is S.UNCHANGED
    assert t.plan() == []
    assert _etag(e) == 'W/"1"'  # mirrored onto the object
    t.update(e)
    assert t.state_of(e) is S.MODIFIED
    (c,) = t.plan()
    assert (c.kind, c.mode, c.if_match) == (ChangeKind.UPDATE, "merge", 'W/"1"')
    # forced update without changes sends every property
    assert c.payload is not None
    assert c.payload["Rating"] == 4.0
    t.delete(e)
    assert t.state_of(e) is S.DELETED
    t.delete(e)  # idempotent
    (c,) = t.plan()
    assert (c.kind, c.if_match, c.payload) == (ChangeKind.DELETE, 'W/"1"', None)
    with pytest.raises(TrackingError, match="marked for deletion"):
        t.update(e)
    assert t.detach(e) is True
    assert t.detach(e) is False
    assert t.state_of(e) is S.DETACHED


@kinds
def test_untracked_operations_refused(make: Callable[..., Any]) -> None:
    t = Tracker()
    e = make()
    for op in (t.update, t.delete):
        with pytest.raises(TrackingError, match="not tracking"):
            op(e)


@kinds
def test_attach_star_and_none(make: Callable[..., Any]) -> None:
    t = Tracker()
    star, upsert = make("p", "1"), make("p", "2")
    t.attach("movies", star, "*")
    t.attach("movies", upsert, None)
    t.update(star)
    t.update(upsert)
    a, b = t.plan()
    assert (a.kind, a.if_match) == (ChangeKind.UPDATE, "*")
    assert (b.kind, b.if_match) == (ChangeKind.UPSERT, None)
    t.delete(star)
    t.delete(upsert)
    a, b = t.plan()
    assert (a.kind, a.if_match) == (ChangeKind.DELETE, "*")
    assert (b.kind, b.if_match) == (ChangeKind.DELETE, "*")  # DELETE needs If-Match


@kinds
def test_identity_map_refuses_a_different_object(make: Callable[..., Any]) -> None:
    t = Tracker()
    first = make()
    t.attach("Movies", first, "*")
    with pytest.raises(IdentityConflictError) as info:
        t.add("movies", make())  # table names are case-insensitive
    assert info.value.key == ("movies", "Action", "Heat")
    assert info.value.tracked is first
    with pytest.raises(IdentityConflictError, match="different object"):
        t.attach("MOVIES", make(), "*")
    with pytest.raises(TrackingError, match="already tracked"):
        t.attach("movies", first, "*")
    with pytest.raises(TrackingError, match="already tracked"):
        t.add("movies", first)
    # the same object cannot be tracked under a second table either
    with pytest.raises(TrackingError, match="already tracked"):
        t.add("other", first)
    # a different table is a different identity
    t.add("other", make())
    assert len(t) == 2


def test_identity_conflict_is_a_tracking_error() -> None:
    assert issubclass(IdentityConflictError, TrackingError)
    assert issubclass(TrackingError, RuntimeError)


@kinds
def test_bad_inputs(make: Callable[..., Any]) -> None:
    t = Tracker()
    with pytest.raises(ValidationError):
        t.add("", make())
    with pytest.raises(ValidationError):
        t.attach("movies", make(), "")
    with pytest.raises(ValidationError, match="cannot track"):
        t.add("movies", object())
    with pytest.raises(ValidationError, match="str PartitionKey"):
        t.add("movies", {"PartitionKey": 1, "RowKey": "r"})
    assert len(t) == 0


# --------------------------------------------------------------------------- snapshots and diffs


@kinds
def test_snapshot_is_a_tuple_of_immutables(make: Callable[..., Any]) -> None:
    e = make()
    snap = access_for(e).snapshot(e)
    assert isinstance(snap, tuple)
    for item in snap:
        hash(item)  # every element (and nested tuple) is hashable, i.e. immutable


def test_mapping_snapshot_copies_mutable_bytes() -> None:
    buf = bytearray(b"abc")
    e = {"PartitionKey": "p", "RowKey": "r", "B": buf}
    t = Tracker()
    t.attach("t", e, "*")
    buf[0] = ord("x")  # mutated in place: must be seen as a change
    assert t.state_of(e) is S.MODIFIED
    (c,) = t.plan()
    assert c.payload is not None
    assert bytes(c.payload["B"]) == b"xbc"


@kinds
def test_change_detection_without_update_and_minimal_merge(make: Callable[..., Any]) -> None:
    t = Tracker()
    e = make(Language="en")
    t.attach("movies", e, 'W/"1"')
    _set(e, "Rating", 5.0)
    assert t.state_of(e) is S.MODIFIED
    (c,) = t.plan()
    assert c.kind is ChangeKind.UPDATE
    assert c.mode == "merge"
    assert c.payload is not None
    assert set(c.payload) == {"PartitionKey", "RowKey", "Rating"}
    assert c.payload["Rating"] == 5.0
    # setting a value back to the snapshot's is no change
    _set(e, "Rating", 4.0)
    assert t.state_of(e) is S.UNCHANGED
    assert t.plan() == []


@kinds
def test_removed_property_needs_replace(make: Callable[..., Any]) -> None:
    t = Tracker()
    e = make(Language="en")
    t.attach("movies", e, 'W/"1"')
    _set(e, "Language", None)
    assert t.state_of(e) is S.MODIFIED
    with pytest.raises(ValidationError, match="REPLACE_ON_UPDATE"):
        t.plan()
    (c,) = t.plan(replace=True)
    assert c.mode == "replace"
    assert c.payload is not None
    assert "Language" not in c.payload
    assert c.payload["Rating"] == 4.0


@kinds
def test_replace_sends_everything(make: Callable[..., Any]) -> None:
    t = Tracker()
    e = make(Language="en")
    t.attach("movies", e, 'W/"1"')
    _set(e, "Rating", 1.5)
    (c,) = t.plan(replace=True)
    assert c.payload is not None
    assert c.payload["Language"] == "en"
    assert c.payload["Rating"] == 1.5


@kinds
def test_upsert_sends_everything(make: Callable[..., Any]) -> None:
    t = Tracker()
    e = make(Language="en")
    t.attach("movies", e, None)
    _set(e, "Rating", 1.5)
    (c,) = t.plan()
    assert c.kind is ChangeKind.UPSERT
    assert c.payload is not None
    assert c.payload["Language"] == "en"  # an upsert may insert: no partial entity


def test_dict_type_changes_are_changes() -> None:
    t = Tracker()
    e = {"PartitionKey": "p", "RowKey": "r", "N": 1}
    t.attach("t", e, "*")
    e["N"] = 1.0
    assert t.state_of(e) is S.MODIFIED
    e["N"] = True
    assert t.state_of(e) is S.MODIFIED
    e["N"] = 1
    assert t.state_of(e) is S.UNCHANGED
    e["N"] = Typed(1, EdmType.INT64)
    assert t.state_of(e) is S.MODIFIED


def test_table_entity_explicit_types_count() -> None:
    t = Tracker()
    e = TableEntity(PartitionKey="p", RowKey="r", N=5)
    t.attach("t", e, "*")
    e.edm_types["N"] = EdmType.INT64
    assert t.state_of(e) is S.MODIFIED
    (c,) = t.plan()
    assert c.payload is not None
    assert c.payload.edm_types == {"N": EdmType.INT64}


def test_dynamic_type_change_is_a_change() -> None:
    t = Tracker()
    e = DynamicEntity("p", "r", N=5)
    t.attach("t", e, "*")
    e.set("N", 5, EdmType.INT64)
    (c,) = t.plan()
    assert c.payload is not None
    assert c.payload.edm_types["N"] is EdmType.INT64


def test_nan_is_not_a_change() -> None:
    t = Tracker()
    e = DynamicEntity("p", "r", X=float("nan"))
    t.attach("t", e, "*")
    e["X"] = float("nan")
    assert t.state_of(e) is S.UNCHANGED
    m = Movie("p", "m", rating=math.nan)
    t.attach("t", m, "*")
    m.rating = float("nan")
    assert t.state_of(m) is S.UNCHANGED


def test_int64_payload_keeps_its_type() -> None:
    t = Tracker()
    m = Movie("p", "r")
    t.attach("t", m, "*")
    m.views = 7
    (c,) = t.plan()
    assert c.payload is not None
    assert dict(c.payload) == {"PartitionKey": "p", "RowKey": "r", "Views": 7}
    assert c.payload.edm_types == {"Views": EdmType.INT64}


@kinds
def test_changed_keys_refused(make: Callable[..., Any]) -> None:
    t = Tracker()
    e = make()
    t.attach("movies", e, "*")
    if isinstance(e, dict):
        e["RowKey"] = "Other"
    else:
        e.RowKey = "Other"
    with pytest.raises(ValidationError, match="keys of the tracked entity"):
        t.plan()


def test_plan_order_follows_changes() -> None:
    t = Tracker()
    a, b, c = _dyn("p", "a"), _dyn("p", "b"), _dyn("p", "c")
    t.attach("t", a, "*")
    t.attach("t", b, "*")
    t.add("t", c)
    t.update(b)
    t.delete(a)
    assert [(x.row_key, x.kind) for x in t.plan()] == [
        ("c", ChangeKind.INSERT),
        ("b", ChangeKind.UPDATE),
        ("a", ChangeKind.DELETE),
    ]


# --------------------------------------------------------------------------- commit


@kinds
def test_commit_moves_to_unchanged_with_new_etag(make: Callable[..., Any]) -> None:
    t = Tracker()
    added, modified, deleted = make("p", "1"), make("p", "2"), make("p", "3")
    t.add("movies", added)
    t.attach("movies", modified, 'W/"a"')
    t.attach("movies", deleted, 'W/"b"')
    _set(modified, "Rating", 9.0)
    t.delete(deleted)
    plan = t.plan()
    for i, c in enumerate(plan):
        t.commit(c, None if c.kind is ChangeKind.DELETE else f'W/"new{i}"')
    assert t.state_of(added) is S.UNCHANGED
    assert _etag(added) == 'W/"new0"'
    assert t.state_of(modified) is S.UNCHANGED
    assert _etag(modified) == 'W/"new1"'
    assert t.descriptor(modified).etag == 'W/"new1"'  # type: ignore[union-attr]
    assert t.state_of(deleted) is S.DETACHED
    assert t.plan() == []  # nothing is resent


def test_commit_records_what_was_sent_not_later_edits() -> None:
    t = Tracker()
    e = _dyn()
    t.attach("t", e, 'W/"1"')
    e["Rating"] = 5.0
    (c,) = t.plan()
    e["Rating"] = 6.0  # edited while the request was in flight
    t.commit(c, 'W/"2"')
    (c2,) = t.plan()
    assert c2.payload is not None
    assert c2.payload["Rating"] == 6.0
    assert c2.if_match == 'W/"2"'


def test_commit_after_detach_is_ignored() -> None:
    t = Tracker()
    e = _dyn()
    t.add("t", e)
    (c,) = t.plan()
    t.detach(e)
    t.commit(c, 'W/"1"')
    assert t.state_of(e) is S.DETACHED
    assert len(t) == 0


def test_upsert_commit_becomes_conditional() -> None:
    t = Tracker()
    e = _dyn()
    t.attach("t", e, None)
    t.update(e)
    (c,) = t.plan()
    t.commit(c, 'W/"9"')
    t.update(e)
    (c,) = t.plan()
    assert c.kind is ChangeKind.UPDATE
    assert c.if_match == 'W/"9"'


# --------------------------------------------------------------------------- merge options


def _server(make: Callable[..., Any], etag: str, **props: Any) -> Any:
    return _with_etag(make(**props), etag)


@kinds
def test_query_result_new_entity_is_tracked(make: Callable[..., Any]) -> None:
    for option in (
        MergeOption.APPEND_ONLY,
        MergeOption.OVERWRITE_CHANGES,
        MergeOption.PRESERVE_CHANGES,
    ):
        t = Tracker()
        row = _server(make, 'W/"s"')
        assert t.materialize("movies", row, option) is row
        assert t.state_of(row) is S.UNCHANGED
        assert t.descriptor(row).etag == 'W/"s"'  # type: ignore[union-attr]


@kinds
def test_no_tracking(make: Callable[..., Any]) -> None:
    t = Tracker()
    local = make()
    t.attach("movies", local, 'W/"1"')
    row = _server(make, 'W/"2"', Rating=9.0)
    assert t.materialize("movies", row, MergeOption.NO_TRACKING) is row
    assert t.state_of(row) is S.DETACHED
    assert _get(local, "Rating") == 4.0
    assert t.descriptor(local).etag == 'W/"1"'  # type: ignore[union-attr]


@kinds
def test_append_only_keeps_everything(make: Callable[..., Any]) -> None:
    t = Tracker()
    local = make()
    t.attach("movies", local, 'W/"1"')
    _set(local, "Rating", 5.0)
    row = _server(make, 'W/"2"', Rating=9.0)
    assert t.materialize("movies", row, MergeOption.APPEND_ONLY) is local
    assert _get(local, "Rating") == 5.0
    assert t.descriptor(local).etag == 'W/"1"'  # type: ignore[union-attr]
    (c,) = t.plan()
    assert c.if_match == 'W/"1"'  # stale: the seed warns this may fail with 412


@kinds
def test_overwrite_changes_discards_local_edits(make: Callable[..., Any]) -> None:
    t = Tracker()
    local = make(Language="en")
    t.attach("movies", local, 'W/"1"')
    _set(local, "Rating", 5.0)
    row = _server(make, 'W/"2"', Rating=9.0, Language="fr")
    assert t.materialize("movies", row, MergeOption.OVERWRITE_CHANGES) is local
    assert _get(local, "Rating") == 9.0
    assert _get(local, "Language") == "fr"
    assert t.state_of(local) is S.UNCHANGED
    assert _etag(local) == 'W/"2"'
    # a pending delete is discarded too
    t.delete(local)
    t.materialize("movies", _server(make, 'W/"3"'), MergeOption.OVERWRITE_CHANGES)
    assert t.state_of(local) is S.UNCHANGED
    assert t.descriptor(local).etag == 'W/"3"'  # type: ignore[union-attr]


@kinds
def test_overwrite_changes_replaces_an_added_entity(make: Callable[..., Any]) -> None:
    t = Tracker()
    local = make()
    t.add("movies", local)
    t.materialize("movies", _server(make, 'W/"2"', Rating=7.0), MergeOption.OVERWRITE_CHANGES)
    assert t.state_of(local) is S.UNCHANGED
    assert _get(local, "Rating") == 7.0


@kinds
def test_preserve_changes_keeps_edits_takes_etag(make: Callable[..., Any]) -> None:
    t = Tracker()
    local = make(Language="en")
    t.attach("movies", local, 'W/"1"')
    _set(local, "Rating", 5.0)
    # someone else changed Language and Rating meanwhile
    row = _server(make, 'W/"2"', Rating=9.0, Language="fr")
    assert t.materialize("movies", row, MergeOption.PRESERVE_CHANGES) is local
    assert _get(local, "Rating") == 5.0  # the local edit is preserved
    assert _get(local, "Language") == "fr"  # untouched properties take the server's value
    assert t.descriptor(local).etag == 'W/"2"'  # type: ignore[union-attr]
    (c,) = t.plan()
    assert c.if_match == 'W/"2"'
    assert c.payload is not None
    assert set(c.payload) == {"PartitionKey", "RowKey", "Rating"}  # exactly the local edit


@kinds
def test_preserve_changes_unchanged_entity_is_refreshed(make: Callable[..., Any]) -> None:
    t = Tracker()
    local = make()
    t.attach("movies", local, 'W/"1"')
    t.materialize("movies", _server(make, 'W/"2"', Rating=9.0), MergeOption.PRESERVE_CHANGES)
    assert _get(local, "Rating") == 9.0
    assert t.state_of(local) is S.UNCHANGED


@kinds
def test_preserve_changes_keeps_deleted_and_added(make: Callable[..., Any]) -> None:
    t = Tracker()
    gone, new = make("p", "1"), make("p", "2")
    t.attach("movies", gone, 'W/"1"')
    t.delete(gone)
    t.add("movies", new)
    t.materialize("movies", _server(make, 'W/"2"', pk="p", rk="1"), MergeOption.PRESERVE_CHANGES)
    t.materialize("movies", _server(make, 'W/"3"', pk="p", rk="2"), MergeOption.PRESERVE_CHANGES)
    assert t.state_of(gone) is S.DELETED
    assert t.descriptor(gone).etag == 'W/"2"'  # type: ignore[union-attr]
    assert t.state_of(new) is S.ADDED


def test_preserve_changes_with_projection_keeps_unloaded() -> None:
    t = Tracker()
    local = Movie("p", "r", rating=1.0, language="en")
    t.attach("movies", local, 'W/"1"')
    partial = codec_for(Movie, frozenset({"Rating"})).from_entity(
        {"PartitionKey": "p", "RowKey": "r", "Rating": 3.0}
    )
    partial.ETag = 'W/"2"'
    t.materialize("movies", partial, MergeOption.PRESERVE_CHANGES, partial=True)
    assert local.rating == 3.0
    assert local.language == "en"
    assert t.state_of(local) is S.UNCHANGED


def test_dynamic_projection_does_not_delete_unloaded() -> None:
    t = Tracker()
    local = DynamicEntity("p", "r", A=1, B=2)
    t.attach("t", local, 'W/"1"')
    row = DynamicEntity("p", "r", A=5)
    row.ETag = 'W/"2"'
    t.materialize("t", row, MergeOption.OVERWRITE_CHANGES, partial=True)
    assert dict(local) == {"A": 5, "B": 2}
    row2 = DynamicEntity("p", "r", A=6)
    row2.ETag = 'W/"3"'
    t.materialize("t", row2, MergeOption.OVERWRITE_CHANGES)
    assert dict(local) == {"A": 6}
    assert t.state_of(local) is S.UNCHANGED


def test_materialize_type_mismatch_is_refused() -> None:
    t = Tracker()
    t.attach("t", DynamicEntity("p", "r"), "*")
    with pytest.raises(IdentityConflictError, match="tracked as a DynamicEntity"):
        t.materialize("t", Movie("p", "r"), MergeOption.PRESERVE_CHANGES)
