"""Backend single writes: the If-Match matrix (PROTOCOL.md 4.18), merge vs replace, Timestamps."""

from __future__ import annotations

import uuid

import pytest

from azt_server_stub.backend import Backend, WriteKind, WriteOp
from azt_server_stub.errors import StubError
from azt_server_stub.model import Edm, Entity, TypedValue, etag_for, parse_datetime

ACCOUNT = "devstoreaccount1"
TABLE = "Matrix"


@pytest.fixture
def backend() -> Backend:
    b = Backend()
    b.create_table(ACCOUNT, TABLE)
    return b


def _seed(b: Backend) -> Entity:
    result = b.write(
        ACCOUNT,
        TABLE,
        WriteOp("insert", "pk", "rk", {"A": (Edm.STRING, "a"), "B": (Edm.INT32, 1)}),
    )
    assert result.entity is not None
    return result.entity


def _code(exc: pytest.ExceptionInfo[StubError]) -> tuple[int, str]:
    return (exc.value.status, exc.value.code)


# (kind, if_match selector, entity exists) -> expected outcome.
# "ok" means success; otherwise (status, code).
MATRIX: list[tuple[WriteKind, str, bool, object]] = [
    ("replace", "none", True, "ok"),
    ("replace", "none", False, "ok"),
    ("replace", "star", True, "ok"),
    ("replace", "star", False, (404, "ResourceNotFound")),
    ("replace", "etag", True, "ok"),
    ("replace", "stale", True, (412, "UpdateConditionNotSatisfied")),
    ("replace", "etag", False, (404, "ResourceNotFound")),
    ("merge", "none", True, "ok"),
    ("merge", "none", False, "ok"),
    ("merge", "star", True, "ok"),
    ("merge", "star", False, (404, "ResourceNotFound")),
    ("merge", "etag", True, "ok"),
    ("merge", "stale", True, (412, "UpdateConditionNotSatisfied")),
    ("merge", "etag", False, (404, "ResourceNotFound")),
    ("delete", "none", True, (400, "InvalidInput")),
    ("delete", "none", False, (400, "InvalidInput")),
    ("delete", "star", True, "ok"),
    ("delete", "star", False, (404, "ResourceNotFound")),
    ("delete", "etag", True, "ok"),
    ("delete", "stale", True, (412, "UpdateConditionNotSatisfied")),
    ("delete", "etag", False, (404, "ResourceNotFound")),
    ("insert", "none", True, (409, "EntityAlreadyExists")),
    ("insert", "none", False, "ok"),
    ("insert", "star", True, (409, "EntityAlreadyExists")),
    ("insert", "stale", False, "ok"),  # If-Match is ignored by insert
]


@pytest.mark.parametrize(("kind", "selector", "exists", "expected"), MATRIX)
def test_write_matrix(
    backend: Backend, kind: WriteKind, selector: str, exists: bool, expected: object
) -> None:
    seeded = _seed(backend) if exists else None
    stale = etag_for(parse_datetime("2001-01-01T00:00:00Z"))
    if_match = {
        "none": None,
        "star": "*",
        "etag": seeded.etag if seeded else stale,
        "stale": stale,
    }[selector]
    props: dict[str, TypedValue] = {} if kind == "delete" else {"C": (Edm.BOOLEAN, True)}
    op = WriteOp(kind, "pk", "rk", props, if_match=if_match)
    before = backend.get_entity(ACCOUNT, TABLE, "pk", "rk") if exists else None
    if expected == "ok":
        result = backend.write(ACCOUNT, TABLE, op)
        assert result.created is (not exists and kind != "delete")
        if kind == "delete":
            assert result.entity is None
            with pytest.raises(StubError) as gone:
                backend.get_entity(ACCOUNT, TABLE, "pk", "rk")
            assert _code(gone) == (404, "ResourceNotFound")
        else:
            stored = backend.get_entity(ACCOUNT, TABLE, "pk", "rk")
            assert stored is result.entity
            if before is not None:
                assert stored.timestamp > before.timestamp
                assert stored.etag != before.etag
    else:
        with pytest.raises(StubError) as exc:
            backend.write(ACCOUNT, TABLE, op)
        assert _code(exc) == expected
        if exists:
            assert backend.get_entity(ACCOUNT, TABLE, "pk", "rk") is before
        else:
            with pytest.raises(StubError):
                backend.get_entity(ACCOUNT, TABLE, "pk", "rk")


def test_replace_drops_unmentioned_properties(backend: Backend) -> None:
    _seed(backend)
    backend.write(ACCOUNT, TABLE, WriteOp("replace", "pk", "rk", {"C": (Edm.DOUBLE, 2.5)}))
    assert backend.get_entity(ACCOUNT, TABLE, "pk", "rk").props == {"C": (Edm.DOUBLE, 2.5)}


def test_merge_keeps_untouched_and_overwrites_value_and_type(backend: Backend) -> None:
    _seed(backend)
    backend.write(
        ACCOUNT,
        TABLE,
        WriteOp("merge", "pk", "rk", {"B": (Edm.STRING, "one"), "C": (Edm.INT64, 2**40)}, "*"),
    )
    assert backend.get_entity(ACCOUNT, TABLE, "pk", "rk").props == {
        "A": (Edm.STRING, "a"),
        "B": (Edm.STRING, "one"),
        "C": (Edm.INT64, 2**40),
    }


def test_merge_with_no_properties_only_touches_timestamp(backend: Backend) -> None:
    first = _seed(backend)
    result = backend.write(ACCOUNT, TABLE, WriteOp("merge", "pk", "rk", {}, first.etag))
    assert result.entity is not None
    assert result.entity.props == first.props
    assert result.entity.timestamp > first.timestamp


def test_upserts_insert_when_missing(backend: Backend) -> None:
    backend.write(ACCOUNT, TABLE, WriteOp("replace", "p", "1", {"X": (Edm.INT32, 1)}))
    backend.write(ACCOUNT, TABLE, WriteOp("merge", "p", "2", {"Y": (Edm.INT32, 2)}))
    assert backend.get_entity(ACCOUNT, TABLE, "p", "1").props == {"X": (Edm.INT32, 1)}
    assert backend.get_entity(ACCOUNT, TABLE, "p", "2").props == {"Y": (Edm.INT32, 2)}


def test_etag_compare_accepts_decoded_colons(backend: Backend) -> None:
    first = _seed(backend)
    decoded = first.etag.replace("%3A", ":")
    assert decoded != first.etag
    backend.write(ACCOUNT, TABLE, WriteOp("merge", "pk", "rk", {}, decoded))
    second = backend.get_entity(ACCOUNT, TABLE, "pk", "rk")
    lower = second.etag.replace("%3A", "%3a")
    backend.write(ACCOUNT, TABLE, WriteOp("replace", "pk", "rk", {}, lower))


def test_old_etag_fails_after_update(backend: Backend) -> None:
    first = _seed(backend)
    backend.write(ACCOUNT, TABLE, WriteOp("merge", "pk", "rk", {}, first.etag))
    with pytest.raises(StubError) as exc:
        backend.write(ACCOUNT, TABLE, WriteOp("delete", "pk", "rk", if_match=first.etag))
    assert _code(exc) == (412, "UpdateConditionNotSatisfied")


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "garbage",
        "\"datetime'2020-01-01T00%3A00%3A00.0000000Z'\"",  # strong ETag
        'W/"a", W/"b"',  # a list
        "W/abc",
    ],
)
@pytest.mark.parametrize("exists", [True, False])
def test_malformed_etag_is_400_before_existence(backend: Backend, bad: str, exists: bool) -> None:
    if exists:
        _seed(backend)
    for kind in ("replace", "merge", "delete"):
        with pytest.raises(StubError) as exc:
            backend.write(ACCOUNT, TABLE, WriteOp(kind, "pk", "rk", {}, bad))
        assert _code(exc) == (400, "InvalidInput")
        assert "etag" in exc.value.message


@pytest.mark.parametrize("exists", [True, False])
def test_lowercase_weak_etag_is_well_formed(backend: Backend, exists: bool) -> None:
    """``w/"..."`` was pinned as 400 here; changed to follow Azure/Azurite#1229 (filed from
    Azure's answer; Azurite's tests "from issue #1229" expect 412 for ``w/"wrong"``):
    well formed, so 404 for a missing entity and 412 when it does not match (issue 18.4)."""
    if exists:
        _seed(backend)
    for kind in ("replace", "merge", "delete"):
        with pytest.raises(StubError) as exc:
            backend.write(ACCOUNT, TABLE, WriteOp(kind, "pk", "rk", {}, "w/\"datetime'x'\""))
        expected = (412, "UpdateConditionNotSatisfied") if exists else (404, "ResourceNotFound")
        assert _code(exc) == expected


def test_missing_table_is_404_table_not_found(backend: Backend) -> None:
    for kind in ("insert", "replace", "merge", "delete"):
        with pytest.raises(StubError) as exc:
            backend.write(ACCOUNT, "Nope", WriteOp(kind, "p", "r", if_match="*"))
        assert _code(exc) == (404, "TableNotFound")
    with pytest.raises(StubError) as exc:
        backend.get_entity(ACCOUNT, "Nope", "p", "r")
    assert _code(exc) == (404, "TableNotFound")


def test_invalid_table_name_on_entity_op_is_400(backend: Backend) -> None:
    with pytest.raises(StubError) as exc:
        backend.write(ACCOUNT, "bad-name", WriteOp("insert", "p", "r"))
    assert _code(exc) == (400, "InvalidResourceName")


def test_table_lookup_is_case_insensitive(backend: Backend) -> None:
    backend.write(ACCOUNT, "mAtRiX", WriteOp("insert", "p", "r"))
    assert backend.get_entity(ACCOUNT, "MATRIX", "p", "r").rk == "r"


def test_validation_runs_before_existence_checks(backend: Backend) -> None:
    _seed(backend)
    with pytest.raises(StubError) as exc:  # would be 409, but the body is invalid
        backend.write(ACCOUNT, TABLE, WriteOp("insert", "pk", "rk", {"1x": (Edm.INT32, 1)}))
    assert _code(exc) == (400, "PropertyNameInvalid")
    with pytest.raises(StubError) as exc:  # would be 404
        backend.write(
            ACCOUNT, TABLE, WriteOp("replace", "pk", "zz", {"S": (Edm.STRING, "x" * 40000)}, "*")
        )
    assert _code(exc) == (400, "PropertyValueTooLarge")
    with pytest.raises(StubError) as exc:
        backend.write(ACCOUNT, TABLE, WriteOp("insert", "a/b", "r"))
    assert _code(exc) == (400, "InvalidInput")


def test_merge_result_over_limits_is_refused_and_nothing_changes(backend: Backend) -> None:
    many = {f"P{i}": (Edm.INT32, i) for i in range(200)}
    backend.write(ACCOUNT, TABLE, WriteOp("insert", "p", "r", dict(many)))
    more = {f"Q{i}": (Edm.INT32, i) for i in range(60)}
    before = backend.get_entity(ACCOUNT, TABLE, "p", "r")
    with pytest.raises(StubError) as exc:
        backend.write(ACCOUNT, TABLE, WriteOp("merge", "p", "r", more, "*"))
    assert _code(exc) == (400, "TooManyProperties")
    assert backend.get_entity(ACCOUNT, TABLE, "p", "r") is before

    big = {f"B{i}": (Edm.BINARY, b"\0" * 60_000) for i in range(10)}
    backend.write(ACCOUNT, TABLE, WriteOp("insert", "p", "big", big))
    bigger = {f"C{i}": (Edm.BINARY, b"\0" * 60_000) for i in range(10)}
    with pytest.raises(StubError) as exc:
        backend.write(ACCOUNT, TABLE, WriteOp("merge", "p", "big", bigger))
    assert _code(exc) == (400, "EntityTooLarge")


def test_timestamps_strictly_increase_with_frozen_clock() -> None:
    frozen = parse_datetime("2024-05-01T12:00:00Z")
    b = Backend(clock=lambda: frozen)
    b.create_table(ACCOUNT, TABLE)
    stamps = []
    for i in range(50):
        result = b.write(ACCOUNT, TABLE, WriteOp("replace", "p", str(i % 3)))
        assert result.entity is not None
        stamps.append(result.entity.timestamp)
    assert stamps == sorted(set(stamps))
    assert stamps[0] == frozen
    assert len({b.get_entity(ACCOUNT, TABLE, "p", str(i)).etag for i in range(3)}) == 3


def test_timestamps_never_go_back_with_clock() -> None:
    now = [parse_datetime("2024-05-01T12:00:00Z")]
    b = Backend(clock=lambda: now[0])
    b.create_table(ACCOUNT, TABLE)
    first = b.write(ACCOUNT, TABLE, WriteOp("insert", "p", "1")).entity
    now[0] -= 10**9  # the wall clock jumps back 100 s
    second = b.write(ACCOUNT, TABLE, WriteOp("insert", "p", "2")).entity
    assert first is not None
    assert second is not None
    assert second.timestamp == first.timestamp + 1


def test_wall_clock_timestamp_is_recent(backend: Backend) -> None:
    import datetime as dt

    from azt_server_stub.model import datetime_from_ticks

    entity = backend.write(ACCOUNT, TABLE, WriteOp("insert", "p", "now")).entity
    assert entity is not None
    age = dt.datetime.now(dt.UTC) - datetime_from_ticks(entity.timestamp)
    assert abs(age.total_seconds()) < 60
    assert entity.etag == etag_for(entity.timestamp)


def test_returned_entities_are_snapshots(backend: Backend) -> None:
    first = _seed(backend)
    props_before = dict(first.props)
    backend.write(ACCOUNT, TABLE, WriteOp("merge", "pk", "rk", {"A": (Edm.STRING, "z")}))
    assert first.props == props_before


def test_all_types_stored_as_given(backend: Backend) -> None:
    props: dict[str, TypedValue] = {
        "S": (Edm.STRING, "héllo \U0001f600"),
        "I": (Edm.INT32, -(2**31)),
        "L": (Edm.INT64, 2**63 - 1),
        "D": (Edm.DOUBLE, float("nan")),
        "B": (Edm.BOOLEAN, False),
        "T": (Edm.DATETIME, parse_datetime("1601-01-01T00:00:00Z")),
        "G": (Edm.GUID, uuid.UUID(int=7)),
        "X": (Edm.BINARY, b"\x00\xff"),
    }
    backend.write(ACCOUNT, TABLE, WriteOp("insert", "", "", props))
    stored = backend.get_entity(ACCOUNT, TABLE, "", "").props
    assert stored.keys() == props.keys()
    assert stored["D"][1] != stored["D"][1]  # NaN
    assert {k: v for k, v in stored.items() if k != "D"} == {
        k: v for k, v in props.items() if k != "D"
    }


def test_concurrent_optimistic_increments_from_threads(backend: Backend) -> None:
    import threading

    backend.write(ACCOUNT, TABLE, WriteOp("insert", "c", "counter", {"N": (Edm.INT64, 0)}))
    conflicts = [0]
    failures: list[object] = []

    def worker() -> None:
        for _ in range(200):
            while True:
                current = backend.get_entity(ACCOUNT, TABLE, "c", "counter")
                value = current.props["N"][1] + 1
                try:
                    backend.write(
                        ACCOUNT,
                        TABLE,
                        WriteOp("merge", "c", "counter", {"N": (Edm.INT64, value)}, current.etag),
                    )
                    break
                except StubError as exc:
                    if exc.status != 412:
                        failures.append(exc)
                        return
                    conflicts[0] += 1

    def reader() -> None:
        for _ in range(200):
            page = backend.query_entities(ACCOUNT, TABLE, None, None, None)
            keys = [e.key for e in page.entities]
            if keys != sorted(keys):
                failures.append(keys)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert backend.get_entity(ACCOUNT, TABLE, "c", "counter").props["N"] == (Edm.INT64, 1200)
