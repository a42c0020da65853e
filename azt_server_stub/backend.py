"""Storage and semantics of the stub: accounts -> tables -> sorted entities.

The HTTP layer (``handlers``) calls exactly this API; no aiohttp here. Every
method is synchronous and holds the backend's lock, so one call is atomic with
respect to other requests (on the event loop or in threads); with a durable
location, a write method returns only after its transaction is committed to
disk. Refusals are raised as :class:`~azt_server_stub.errors.StubError`.

Storage model:

* Each table keeps its entities in a ``SortedDict`` keyed by the entity's sort
  key: ``(PartitionKey, RowKey)`` compared by UTF-16 code units, as the service
  does (PROTOCOL.md 7.5). For keys without characters above U+FFFF the sort key
  is the key itself. Point reads are dict lookups; a query scans only the
  filter planner's ranges from the continuation key: O(log n + k).
* Stored :class:`~azt_server_stub.model.Entity` objects are never mutated: a
  write stores a new object. Entities handed out by reads stay valid snapshots;
  callers must not mutate them.
* Timestamps are 100 ns ticks from the wall clock, strictly increasing across the
  whole backend (a write never reuses an earlier Timestamp). All entities written
  by one batch share its Timestamp, as on the service.
* With ``location``, every write is first committed to SQLite (see ``_store``),
  then applied in memory; at start the database is loaded into memory.
  :meth:`Backend.commit_group` commits several write requests with one
  transaction (group commit); the HTTP layer feeds it from one writer thread
  (``_commit``), so reads are served while a group waits for its fsync.
* Two locks: writers serialize on a write lock (held from the checks to the
  in-memory apply, across the disk commit); the in-memory state has its own lock,
  which a write holds only to check and to apply. Readers never wait for an fsync:
  until a group is applied (and only then acknowledged) they see the state before
  it, never half of it.

Example::

    >>> b = Backend()
    >>> b.create_table("devstoreaccount1", "Movies")
    'Movies'
    >>> r = b.write("devstoreaccount1", "movies", WriteOp("insert", "Action", "Heat"))
    >>> b.get_entity("devstoreaccount1", "MOVIES", "Action", "Heat").etag == r.entity.etag
    True
"""

from __future__ import annotations

import bisect
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from sortedcontainers import SortedDict

from . import errors
from ._store import SqliteStore
from .errors import StubError
from .model import Entity, TypedValue
from .validation import check_entity_limits, validate_entity, validate_table_name

__all__ = [
    "Backend",
    "EntityFilter",
    "GroupWrite",
    "KeyRange",
    "QueryPage",
    "SignedIdentifier",
    "TablePage",
    "WriteKind",
    "WriteOp",
    "WriteResult",
    "invalid_etag",
    "is_weak_etag",
]

Key = tuple[str, str]
"""An entity key ``(PartitionKey, RowKey)``."""
KeyRange = tuple[Key, Key | None]
"""A half-open range ``[lo, hi)`` over ``(PartitionKey, RowKey)``; ``hi is None``: unbounded."""


class EntityFilter(Protocol):
    """What the backend needs from a compiled ``$filter`` (``odata.compile_entity_filter``).

    ``ranges``: sorted, disjoint half-open key ranges that contain every match.
    ``matches``: the exact predicate, applied to every entity in the ranges.

    Example::

        >>> class Everything:
        ...     ranges = [(("", ""), None)]
        ...     def matches(self, entity: Entity) -> bool:
        ...         return True
    """

    @property
    def ranges(self) -> Sequence[KeyRange]:
        """The planner's key ranges.

        Example::

            >>> from azt_server_stub.odata import compile_entity_filter
            >>> compile_entity_filter("PartitionKey eq 'p' and RowKey ge 'r'").ranges
            [(('p', 'r'), ('p\\x00', ''))]
        """
        ...

    def matches(self, entity: Entity) -> bool:
        """Whether ``entity`` satisfies the filter.

        Example::

            >>> from azt_server_stub.model import Edm
            >>> from azt_server_stub.odata import compile_entity_filter
            >>> adults = compile_entity_filter("Age ge 18")
            >>> adults.matches(Entity("p", "r", 0, {"Age": (Edm.INT32, 30)}))
            True
            >>> adults.matches(Entity("p", "r", 0))  # no Age at all
            False
        """
        ...


@dataclass(frozen=True, slots=True)
class SignedIdentifier:
    """A stored access policy of a table ACL (``si`` in a SAS). Times are kept verbatim.

    Example::

        >>> SignedIdentifier("readers", permission="r").id
        'readers'
    """

    id: str
    start: str | None = None
    expiry: str | None = None
    permission: str | None = None


@dataclass(slots=True)
class QueryPage:
    """One page of a query: entities in ordinal order and where the next page starts.

    ``next_key`` is the (NextPartitionKey, NextRowKey) of the next entity to
    examine, or None when the query is complete. ``scanned`` counts the entities
    the page examined (for tests of scan cost and for scan budgets).

    Example::

        >>> QueryPage([]).next_key is None
        True
    """

    entities: list[Entity]
    next_key: tuple[str, str] | None = None
    scanned: int = 0


@dataclass(slots=True)
class TablePage:
    """One page of Query Tables: names as created, and NextTableName.

    Example::

        >>> TablePage(["a1b"]).next_name is None
        True
    """

    names: list[str]
    next_name: str | None = None


WriteKind = Literal["insert", "replace", "merge", "delete"]


@dataclass(slots=True)
class WriteOp:
    """One write, alone or inside a batch.

    ``kind``: ``insert`` (POST), ``replace`` (PUT), ``merge`` (MERGE/PATCH), ``delete``.
    ``if_match``: ``None`` (absent: replace/merge become upserts; delete is refused with
    ``400 InvalidInput``), ``"*"`` or an ETag string. Ignored by ``insert``.
    ``props``: custom properties, already parsed (no nulls; for merge, nulls were dropped
    by the parser). The backend validates keys and properties itself.

    Example::

        >>> from azt_server_stub.model import Edm
        >>> WriteOp("merge", "pk", "rk", {"Age": (Edm.INT32, 24)}, if_match="*").kind
        'merge'
    """

    kind: WriteKind
    pk: str
    rk: str
    props: dict[str, TypedValue] = field(default_factory=dict)
    if_match: str | None = None


@dataclass(slots=True)
class WriteResult:
    """Outcome of one successful write: the stored entity (None after delete).

    Example::

        >>> WriteResult(None).created
        False
    """

    entity: Entity | None
    created: bool = False  # True when an insert or upsert created the entity


# --- helpers ------------------------------------------------------------------------

#: Most entities (or tables) in one page, and the default and maximum ``$top``.
MAX_PAGE = 1000
#: Most operations in one change set.
MAX_BATCH = 100
#: Most stored access policies per table.
MAX_ACL = 5
_UNIX_EPOCH_TICKS = 621_355_968_000_000_000
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_WEAK_ETAG = re.compile(r'W/"[^"]*"\Z')
_ACL_PERMISSIONS = frozenset("raud")


def _pair(match: re.Match[str]) -> str:
    code = ord(match.group()) - 0x10000
    return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))


def _sort_str(text: str) -> str:
    """``text`` rewritten so that code-point order equals UTF-16 code-unit order."""
    if text.isascii() or _ASTRAL.search(text) is None:
        return text
    return _ASTRAL.sub(_pair, text)


def _sort_key(pk: str, rk: str) -> Key:
    return (_sort_str(pk), _sort_str(rk))


def _wall_clock_ticks() -> int:
    return time.time_ns() // 100 + _UNIX_EPOCH_TICKS


def _normalise_etag(etag: str) -> str:
    return etag.replace("%3A", ":").replace("%3a", ":")


def is_weak_etag(text: str) -> bool:
    """Whether ``text`` is one weak ETag, ``W/"..."`` (the only form the service issues).

    Example::

        >>> is_weak_etag('W/"datetime-2020"'), is_weak_etag('"x"'), is_weak_etag('W/"a"b"')
        (True, False, False)
    """
    return _WEAK_ETAG.match(text) is not None


def invalid_etag(value: str) -> StubError:
    """``400 InvalidInput`` for an ``If-Match`` value that is neither ``*`` nor one weak ETag.

    Example::

        >>> invalid_etag('"x"').code
        'InvalidInput'
    """
    return errors.invalid_input(
        f"The etag value '{value}' specified in one of the request headers is not "
        "valid. Please make sure only one etag value is specified and is valid."
    )


def _check_if_match(if_match: str, current: Entity | None) -> None:
    """The If-Match rules for ``*`` or an ETag (PROTOCOL.md 8.2); None is the caller's."""
    if if_match != "*":
        if _WEAK_ETAG.match(if_match) is None:
            raise invalid_etag(if_match)
        if current is None:
            raise errors.resource_not_found()
        if _normalise_etag(if_match) != _normalise_etag(current.etag):
            raise errors.update_condition_not_satisfied()
    elif current is None:
        raise errors.resource_not_found()


def _apply(op: WriteOp, current: Entity | None, timestamp: int) -> Entity | None:
    """One write against ``current``: the new stored entity (None: deleted), or raise.

    Check order (PROTOCOL.md 8.3): body validation (400), existence (404/409), ETag (412),
    then the limits of a merged entity.
    """
    kind = op.kind
    if kind == "insert":
        validate_entity(op.pk, op.rk, op.props)
        if current is not None:
            raise errors.entity_already_exists()
        return Entity(op.pk, op.rk, timestamp, dict(op.props))
    if kind == "replace":
        validate_entity(op.pk, op.rk, op.props)
        if op.if_match is not None:
            _check_if_match(op.if_match, current)
        return Entity(op.pk, op.rk, timestamp, dict(op.props))
    if kind == "merge":
        validate_entity(op.pk, op.rk, op.props)
        if op.if_match is not None:
            _check_if_match(op.if_match, current)
        if current is None:
            return Entity(op.pk, op.rk, timestamp, dict(op.props))
        merged = dict(current.props)
        merged.update(op.props)
        check_entity_limits(op.pk, op.rk, merged)
        return Entity(op.pk, op.rk, timestamp, merged)
    if kind == "delete":
        if op.if_match is None:
            raise errors.invalid_input(
                "The If-Match header is required to delete an entity (use '*' to delete "
                "unconditionally)."
            )
        _check_if_match(op.if_match, current)
        return None
    raise errors.invalid_input(f"Unknown write kind {kind!r}.")


def _current(tbl: _Table, key: Key, overlay: _Overlay) -> Entity | None:
    """The entity at ``key`` as earlier writes of the same group left it."""
    pending = overlay.get((id(tbl), key))
    if pending is not None:
        return pending[3]
    return tbl.rows.get(key)


@dataclass(slots=True)
class GroupWrite:
    """One write request for :meth:`Backend.commit_group`: a single write or a change set.

    Example::

        >>> GroupWrite("acct", "t", [WriteOp("insert", "p", "r")]).batch
        False
    """

    account: str
    table: str
    ops: list[WriteOp]
    batch: bool = False


class _Table:
    __slots__ = ("account", "acl", "name", "rows")

    def __init__(self, name: str, account: str) -> None:
        self.name = name
        self.account = account
        self.rows: SortedDict[Key, Entity] = SortedDict()
        self.acl: list[SignedIdentifier] = []


_Overlay = dict[tuple[int, Key], tuple[_Table, Key, Key, "Entity | None"]]
"""Changes of a group so far: (table id, sort key) -> (table, sort key, key, new entity)."""


class _Account:
    __slots__ = ("service_properties", "tables")

    def __init__(self) -> None:
        self.tables: SortedDict[str, _Table] = SortedDict()  # keyed by lower-cased name
        self.service_properties: bytes | None = None


def _acl_to_json(acl: Sequence[SignedIdentifier]) -> list[dict[str, str | None]]:
    return [
        {"id": s.id, "start": s.start, "expiry": s.expiry, "permission": s.permission} for s in acl
    ]


def _acl_from_json(data: list[dict[str, str | None]]) -> list[SignedIdentifier]:
    out = []
    for item in data:
        ident = item["id"]
        assert ident is not None
        out.append(SignedIdentifier(ident, item["start"], item["expiry"], item["permission"]))
    return out


class Backend:
    """All accounts' tables and entities. See the module docstring for the rules.

    ``location``: a directory for the durable SQLite store, or None for memory only.
    ``clock``: returns the current time in 100 ns ticks since 0001-01-01 (tests may fix it;
    Timestamps still strictly increase).
    ``table_deletion_seconds``: how long a deleted table's name stays unavailable
    (``409 TableBeingDeleted`` on create), as on the service (about 40 s there). Default 0:
    the name is free at once. ``monotonic`` is the clock for that delay (a test hook).

    Example::

        >>> b = Backend()
        >>> b.create_table("acct", "People")
        'People'
        >>> b.table_name("acct", "PEOPLE")
        'People'
    """

    def __init__(
        self,
        location: Path | None = None,
        *,
        clock: Callable[[], int] | None = None,
        table_deletion_seconds: float = 0.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lock = threading.RLock()  # the in-memory state
        self._write_lock = threading.RLock()  # one writer at a time, across its disk commit
        self._clock = clock or _wall_clock_ticks
        self._deletion_seconds = table_deletion_seconds
        self._monotonic = monotonic
        self._being_deleted: dict[tuple[str, str], float] = {}  # (account, lname) -> until
        self._last_ts = 0
        self._accounts: dict[str, _Account] = {}
        self._store: SqliteStore | None = None
        if location is not None:
            self._store = SqliteStore(Path(location))
            self._load(self._store)

    def _load(self, store: SqliteStore) -> None:
        state = store.load()
        self._last_ts = state.last_timestamp
        for account_name, tables in state.tables.items():
            account = self._account(account_name)
            for lname, loaded in tables.items():
                table = _Table(loaded.name, account_name)
                table.acl = _acl_from_json(loaded.acl)
                table.rows = SortedDict({_sort_key(e.pk, e.rk): e for e in loaded.entities})
                account.tables[lname] = table
        for account_name, doc in state.service.items():
            self._account(account_name).service_properties = doc

    @property
    def durable(self) -> bool:
        """Whether writes go to a durable store (each commit then waits for an fsync).

        Example::

            >>> Backend().durable
            False
        """
        return self._store is not None

    def close(self) -> None:
        """Flush and close the durable store (no-op in memory). Idempotent.

        Example::

            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as folder:
            ...     backend = Backend(Path(folder))
            ...     _ = backend.create_table("acct", "Kept")
            ...     backend.close()
            ...     backend.close()  # a second close does nothing
            ...     with Backend(Path(folder)) as reopened:
            ...         reopened.table_name("acct", "kept")
            'Kept'
        """
        with self._write_lock, self._lock:
            if self._store is not None:
                self._store.close()

    def __enter__(self) -> Backend:
        """Use as a context manager that closes the store on exit.

        Example::

            >>> with Backend() as b:
            ...     _ = b.create_table("acct", "Scoped")
        """
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the store."""
        self.close()

    # -- internals --------------------------------------------------------------------
    def _account(self, name: str) -> _Account:
        account = self._accounts.get(name)
        if account is None:
            account = self._accounts[name] = _Account()
        return account

    def _table(self, account: str, name: str) -> _Table:
        """The table, or 400 for an invalid name, or 404 TableNotFound."""
        table = self._account(account).tables.get(name.lower())
        if table is None:
            validate_table_name(name)
            raise errors.table_not_found()
        return table

    def _next_timestamp(self) -> int:
        now = self._clock()
        if now <= self._last_ts:
            now = self._last_ts + 1
        self._last_ts = now
        return now

    def _durably(self, write: Callable[..., None], *args: object) -> None:
        """Run one store write; an I/O failure becomes ``500 InternalError``.

        Called before the in-memory change, so a failure leaves memory untouched.
        A closed store raises ``RuntimeError`` (a programming error, not a request error).
        """
        try:
            write(*args)
        except (sqlite3.Error, OSError) as exc:  # disk full, I/O error
            raise errors.internal_error() from exc

    def _persist(self, overlay: _Overlay) -> None:
        """Commit the final state of every changed key to disk in one transaction, if durable."""
        if self._store is None:
            return
        groups: dict[int, tuple[_Table, list[Entity], list[Key]]] = {}
        for tbl, _, original, new in overlay.values():
            group = groups.get(id(tbl))
            if group is None:
                group = groups[id(tbl)] = (tbl, [], [])
            if new is None:
                group[2].append(original)
            else:
                group[1].append(new)
        self._durably(
            self._store.write_entity_groups,
            [
                (tbl.account, tbl.name.lower(), puts, deletes)
                for tbl, puts, deletes in groups.values()
            ],
            self._last_ts,
        )

    # -- tables -----------------------------------------------------------------------
    def create_table(self, account: str, name: str) -> str:
        """Create a table; return its name as created.

        ``400 OutOfRangeInput`` / ``400 InvalidResourceName`` for a bad name,
        ``409 TableAlreadyExists`` if the name exists in any casing.

        Example::

            >>> Backend().create_table("acct", "Orders")
            'Orders'
        """
        validate_table_name(name)
        with self._write_lock, self._lock:
            acct = self._account(account)
            lname = name.lower()
            if lname in acct.tables:
                raise errors.table_already_exists()
            if self._being_deleted:
                until = self._being_deleted.get((account, lname))
                if until is not None:
                    if self._monotonic() < until:
                        raise errors.table_being_deleted()
                    del self._being_deleted[(account, lname)]
            if self._store is not None:
                self._durably(self._store.create_table, account, lname, name)
            acct.tables[lname] = _Table(name, account)
            return name

    def delete_table(self, account: str, name: str) -> None:
        """Delete a table and its entities and ACL. 404 ResourceNotFound.

        Example::

            >>> b = Backend(); _ = b.create_table("acct", "Tmp"); b.delete_table("acct", "tmp")
            >>> b.table_name("acct", "Tmp") is None
            True
        """
        with self._write_lock, self._lock:
            acct = self._account(account)
            lname = name.lower()
            if lname not in acct.tables:
                validate_table_name(name)
                raise errors.resource_not_found()
            if self._store is not None:
                self._durably(self._store.delete_table, account, lname)
            del acct.tables[lname]
            if self._deletion_seconds > 0:
                self._being_deleted[(account, lname)] = self._monotonic() + self._deletion_seconds

    def table_name(self, account: str, name: str) -> str | None:
        """The table's name as created (case-insensitive lookup), or None.

        Example::

            >>> Backend().table_name("acct", "Missing") is None
            True
        """
        with self._lock:
            table = self._account(account).tables.get(name.lower())
            return None if table is None else table.name

    def query_tables(
        self,
        account: str,
        predicate: Callable[[str], bool] | None,
        top: int | None,
        next_table_name: str | None,
    ) -> TablePage:
        """Tables in order of their lower-cased names, at most ``top`` (default 1000).

        ``next_table_name`` resumes at that table (inclusive, any casing). The returned
        ``next_name`` is the next table after the page, present whenever more tables
        follow (they may all fail the predicate: the next page is then empty).

        Example::

            >>> b = Backend(); _ = b.create_table("a", "Bbb"); _ = b.create_table("a", "Aaa")
            >>> b.query_tables("a", None, 1, None)
            TablePage(names=['Aaa'], next_name='Bbb')
        """
        limit = _page_size(top)
        with self._lock:
            tables = self._account(account).tables
            start = next_table_name.lower() if next_table_name else None
            names: list[str] = []
            for lname in tables.irange(minimum=start):
                table_name = tables[lname].name
                if len(names) >= limit:
                    return TablePage(names, table_name)
                if predicate is None or predicate(table_name):
                    names.append(table_name)
            return TablePage(names, None)

    def get_acl(self, account: str, table: str) -> list[SignedIdentifier]:
        """The table's stored access policies. 404 TableNotFound.

        Example::

            >>> b = Backend(); _ = b.create_table("a", "Acl1"); b.get_acl("a", "Acl1")
            []
        """
        with self._lock:
            return list(self._table(account, table).acl)

    def set_acl(self, account: str, table: str, acl: Sequence[SignedIdentifier]) -> None:
        """Replace the table's policies. 404 TableNotFound.

        More than 5 policies, an Id that is empty or longer than 64 characters, a
        repeated Id, or permission letters outside ``raud`` -> ``400 InvalidXmlDocument``.

        Example::

            >>> b = Backend(); _ = b.create_table("a", "Acl2")
            >>> b.set_acl("a", "Acl2", [SignedIdentifier("p1", permission="ra")])
            >>> b.get_acl("a", "Acl2")[0].permission
            'ra'
        """
        policies = list(acl)
        if len(policies) > MAX_ACL:
            raise errors.invalid_xml_document(
                "XML specified is not syntactically valid. At most 5 signed identifiers "
                "(stored access policies) are allowed."
            )
        seen: set[str] = set()
        for policy in policies:
            if not 1 <= len(policy.id) <= 64 or policy.id in seen:
                raise errors.invalid_xml_document()
            seen.add(policy.id)
            if policy.permission is not None and not set(policy.permission) <= _ACL_PERMISSIONS:
                raise errors.invalid_xml_document()
        with self._write_lock, self._lock:
            tbl = self._table(account, table)
            if self._store is not None:
                self._durably(
                    self._store.set_acl, account, tbl.name.lower(), _acl_to_json(policies)
                )
            tbl.acl = policies

    def get_service_properties(self, account: str) -> bytes | None:
        """The last service-properties XML document stored (None: never set).

        Example::

            >>> Backend().get_service_properties("acct") is None
            True
        """
        with self._lock:
            return self._account(account).service_properties

    def set_service_properties(self, account: str, document: bytes) -> None:
        """Store the (already validated and normalised) service-properties XML document.

        Example::

            >>> b = Backend(); b.set_service_properties("a", b"<StorageServiceProperties/>")
            >>> b.get_service_properties("a")
            b'<StorageServiceProperties/>'
        """
        document = bytes(document)
        with self._write_lock, self._lock:
            if self._store is not None:
                self._durably(self._store.set_service, account, document)
            self._account(account).service_properties = document

    # -- entities ---------------------------------------------------------------------
    def get_entity(self, account: str, table: str, pk: str, rk: str) -> Entity:
        """Point read. 404 TableNotFound / 404 ResourceNotFound.

        Example::

            >>> b = Backend(); _ = b.create_table("a", "Pts")
            >>> b.get_entity("a", "Pts", "p", "r")
            Traceback (most recent call last):
            ...
            azt_server_stub.errors.StubError: 404 ResourceNotFound: The specified resource \
does not exist.
        """
        with self._lock:
            rows = self._table(account, table).rows
            entity = rows.get(_sort_key(pk, rk))
            if entity is None:
                raise errors.resource_not_found()
            return entity

    def write(self, account: str, table: str, op: WriteOp) -> WriteResult:
        """Apply one write with the service's If-Match matrix (PROTOCOL.md 4.18).

        insert: ``409 EntityAlreadyExists``. replace/merge: If-Match None upserts,
        ``*`` needs the entity (``404 ResourceNotFound``), an ETag must match
        (``412 UpdateConditionNotSatisfied``; malformed ETag ``400 InvalidInput``).
        delete: If-Match required (``400 InvalidInput``), then as for replace.
        Missing table: ``404 TableNotFound``. Validation errors: 400 (``validation``).

        Example::

            >>> b = Backend(); _ = b.create_table("a", "Write1")
            >>> b.write("a", "Write1", WriteOp("replace", "p", "r", if_match="*"))
            Traceback (most recent call last):
            ...
            azt_server_stub.errors.StubError: 404 ResourceNotFound: The specified resource \
does not exist.
        """
        outcome = self.commit_group([GroupWrite(account, table, [op], batch=False)])[0]
        if isinstance(outcome, StubError):
            raise outcome
        return outcome[0]

    def execute_batch(self, account: str, table: str, ops: Sequence[WriteOp]) -> list[WriteResult]:
        """Apply a change set atomically: all or nothing, in order (PROTOCOL.md 9.1, 9.5).

        Checks, each reported as a StubError with ``index`` set: table exists (``404
        TableNotFound`` at index 0); at most 100 operations (``400 InvalidInput`` at index
        99, the last operation allowed); one PartitionKey
        (``CommandsInBatchActOnDifferentPartitions`` at the first offender); each entity
        once (``InvalidDuplicateRow`` at the second occurrence). Then the operations run
        in order against a private view of the partition with the single-operation rules;
        the first failure raises with its index and nothing is applied. All entities of
        a successful batch share one Timestamp.

        Example::

            >>> b = Backend(); _ = b.create_table("a", "Batch1")
            >>> ops = [WriteOp("insert", "p", "1"), WriteOp("insert", "q", "2")]
            >>> b.execute_batch("a", "Batch1", ops)
            Traceback (most recent call last):
            ...
            azt_server_stub.errors.StubError: 400 CommandsInBatchActOnDifferentPartitions: \
All commands in a batch must operate on same entity group.
        """
        outcome = self.commit_group([GroupWrite(account, table, list(ops), batch=True)])[0]
        if isinstance(outcome, StubError):
            raise outcome
        return outcome

    def commit_group(self, items: Sequence[GroupWrite]) -> list[list[WriteResult] | StubError]:
        """Run several write requests as one durable commit (group commit); per-item outcomes.

        Each item is a single write or a change set with exactly the rules of
        :meth:`write` / :meth:`execute_batch`, run in order against the state the
        earlier items leave. A refused item changes nothing and its outcome is the
        error; the others are committed to disk together (one transaction, one fsync),
        then applied in memory at once, so a reader sees all of them or none. A disk
        failure raises ``500 InternalError`` for the whole group, with nothing applied.

        Example::

            >>> b = Backend(); _ = b.create_table("a", "Group1")
            >>> out = b.commit_group([
            ...     GroupWrite("a", "Group1", [WriteOp("insert", "p", "1")]),
            ...     GroupWrite("a", "Group1", [WriteOp("insert", "p", "1")]),
            ... ])
            >>> out[0][0].created, out[1].code
            (True, 'EntityAlreadyExists')
        """
        with self._write_lock:
            outcomes: list[list[WriteResult] | StubError] = []
            overlay: _Overlay = {}
            with self._lock:
                for item in items:
                    try:
                        outcomes.append(self._check_item(item, overlay))
                    except StubError as exc:
                        outcomes.append(exc)
            if not overlay:
                return outcomes
            self._persist(overlay)
            with self._lock:
                for tbl, key, _, new in overlay.values():
                    if new is None:
                        tbl.rows.pop(key, None)
                    else:
                        tbl.rows[key] = new
            return outcomes

    def _check_item(self, item: GroupWrite, overlay: _Overlay) -> list[WriteResult]:
        """Check one write request against the state plus ``overlay``; record its changes."""
        ops = item.ops
        if not item.batch:
            op = ops[0]
            tbl = self._table(item.account, item.table)
            key = _sort_key(op.pk, op.rk)
            current = _current(tbl, key, overlay)
            new = _apply(op, current, self._next_timestamp())
            overlay[(id(tbl), key)] = (tbl, key, (op.pk, op.rk), new)
            return [WriteResult(new, created=current is None and new is not None)]
        try:
            tbl = self._table(item.account, item.table)
        except StubError as exc:
            raise exc.at(0) from None
        if len(ops) > MAX_BATCH:
            raise errors.batch_too_many_operations().at(MAX_BATCH - 1)
        if not ops:
            return []
        pk = ops[0].pk
        for i, op in enumerate(ops):
            if op.pk != pk:
                raise errors.commands_in_batch_act_on_different_partitions().at(i)
        seen: set[str] = set()
        for i, op in enumerate(ops):
            if op.rk in seen:
                raise errors.invalid_duplicate_row().at(i)
            seen.add(op.rk)
        timestamp = self._next_timestamp()
        changes: list[tuple[Key, Key, Entity | None]] = []
        results: list[WriteResult] = []
        for i, op in enumerate(ops):
            key = _sort_key(op.pk, op.rk)
            current = _current(tbl, key, overlay)
            try:
                new = _apply(op, current, timestamp)
            except StubError as exc:
                raise exc.at(i) from None
            changes.append((key, (op.pk, op.rk), new))
            results.append(WriteResult(new, created=current is None and new is not None))
        for key, original, new in changes:  # only once every operation passed: all or nothing
            overlay[(id(tbl), key)] = (tbl, key, original, new)
        return results

    def query_entities(
        self,
        account: str,
        table: str,
        flt: EntityFilter | None,
        top: int | None,
        start_after: tuple[str, str] | None,
        restrict: Callable[[str, str], bool] | None = None,
        *,
        scan_budget: int | None = None,
        boundaries: Sequence[str] | None = None,
    ) -> QueryPage:
        """One page in ordinal order, at most ``top`` (default and max 1000).

        ``start_after`` is the continuation (NextPartitionKey, NextRowKey): the page starts
        at that key, inclusive. ``restrict`` (a SAS key range) excludes keys it rejects.
        Only the filter's ranges are scanned, from the continuation key: O(log n + k).

        The page ends early, with ``next_key`` set, when ``top`` entities matched (the
        next key is the next entity in the ranges, matching or not), when ``scan_budget``
        entities were examined, or when the scan reaches a PartitionKey ``boundary``
        above the page's starting PartitionKey (hooks for range-partition realism; a
        page may then be empty). ``scan_budget`` must be >= 1.

        Example::

            >>> b = Backend(); _ = b.create_table("a", "Query1")
            >>> for rk in "abc":
            ...     _ = b.write("a", "Query1", WriteOp("insert", "p", rk))
            >>> page = b.query_entities("a", "Query1", None, 2, None)
            >>> [e.rk for e in page.entities], page.next_key
            (['a', 'b'], ('p', 'c'))
        """
        limit = _page_size(top)
        if scan_budget is not None and scan_budget < 1:
            raise ValueError("scan_budget must be at least 1")
        with self._lock:
            rows = self._table(account, table).rows
            ranges = [(("", ""), None)] if flt is None else flt.ranges
            sorted_ranges = [
                (_sort_key(*lo), None if hi is None else _sort_key(*hi)) for lo, hi in ranges
            ]
            if not sorted_ranges:
                return QueryPage([], None, 0)
            sorted_ranges.sort(key=_range_lo)
            start = sorted_ranges[0][0]
            if start_after is not None:
                start = max(start, _sort_key(*start_after))
            stop: Key | None = None
            if boundaries:
                bounds = sorted(_sort_str(b) for b in boundaries)
                i = bisect.bisect_right(bounds, start[0])
                if i < len(bounds):
                    stop = (bounds[i], "")
            matches = None if flt is None else flt.matches
            found: list[Entity] = []
            scanned = 0
            scan = _scan(rows, sorted_ranges, start)
            for key, entity in scan:
                if (stop is not None and key >= stop) or scanned == scan_budget:
                    return QueryPage(found, (entity.pk, entity.rk), scanned)
                scanned += 1
                if restrict is not None and not restrict(entity.pk, entity.rk):
                    continue
                if matches is not None and not matches(entity):
                    continue
                found.append(entity)
                if len(found) >= limit:
                    following = next(scan, None)
                    next_key = None if following is None else following[1].key
                    return QueryPage(found, next_key, scanned)
            return QueryPage(found, None, scanned)


def _range_lo(item: tuple[Key, Key | None]) -> Key:
    return item[0]


def _page_size(top: int | None) -> int:
    if top is None:
        return MAX_PAGE
    if top < 1:
        raise errors.out_of_range_query_parameter_value()
    return min(top, MAX_PAGE)


def _scan(
    rows: SortedDict[Key, Entity], ranges: Sequence[tuple[Key, Key | None]], start: Key
) -> Iterator[tuple[Key, Entity]]:
    """Entities of ``rows`` inside ``ranges`` at or after ``start``, in order."""
    for lo, hi in ranges:
        if hi is not None and hi <= start:
            continue
        if lo < start:
            lo = start
        for key in rows.irange(lo, hi, inclusive=(True, False)):
            yield key, rows[key]
