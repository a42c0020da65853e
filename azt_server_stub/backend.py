"""Storage and semantics of the stub: accounts -> tables -> sorted entities.

CONTRACT: the HTTP layer (``handlers``) calls exactly this API; the backend
owner implements it. No aiohttp here. Every method is synchronous, so one call
is atomic with respect to other requests on the event loop; with a durable
location, a write method returns only after its transaction is committed to
disk. Refusals are raised as :class:`~azt_server_stub.errors.StubError`.

The signatures below are the agreed contract; bodies are filled in by the
backend's implementation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .model import Entity, TypedValue
from .odata import EntityFilter  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class SignedIdentifier:
    """A stored access policy of a table ACL (``si`` in a SAS). Times are kept verbatim."""

    id: str
    start: str | None = None
    expiry: str | None = None
    permission: str | None = None


@dataclass(slots=True)
class QueryPage:
    """One page of a query: entities in ordinal order and where the next page starts."""

    entities: list[Entity]
    next_key: tuple[str, str] | None = None  # (NextPartitionKey, NextRowKey) or None when done


@dataclass(slots=True)
class TablePage:
    """One page of Query Tables: names as created, and NextTableName."""

    names: list[str]
    next_name: str | None = None


WriteKind = Literal["insert", "replace", "merge", "delete"]


@dataclass(slots=True)
class WriteOp:
    """One write, alone or inside a batch.

    ``kind``: ``insert`` (POST), ``replace`` (PUT), ``merge`` (MERGE/PATCH), ``delete``.
    ``if_match``: ``None`` (absent: replace/merge become upserts; delete is refused by
    the HTTP layer before reaching here), ``"*"`` or an ETag string.
    ``props``: custom properties, already parsed and validated (no nulls; for merge,
    nulls were dropped by the parser).
    """

    kind: WriteKind
    pk: str
    rk: str
    props: dict[str, TypedValue] = field(default_factory=dict)
    if_match: str | None = None


@dataclass(slots=True)
class WriteResult:
    """Outcome of one successful write: the stored entity (None after delete)."""

    entity: Entity | None
    created: bool = False  # True when an insert or upsert created the entity


class Backend:
    """All accounts' tables and entities. See the module docstring for the rules.

    ``location``: a directory for the durable SQLite store, or None for memory only.
    """

    def __init__(self, location: Path | None = None) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Flush and close the durable store (no-op in memory)."""
        raise NotImplementedError

    # -- tables ---------------------------------------------------------------
    def create_table(self, account: str, name: str) -> str:
        """Create a table; return its name as created. 409 TableAlreadyExists."""
        raise NotImplementedError

    def delete_table(self, account: str, name: str) -> None:
        """Delete a table and its entities and ACL. 404 ResourceNotFound."""
        raise NotImplementedError

    def table_name(self, account: str, name: str) -> str | None:
        """The table's name as created (case-insensitive lookup), or None."""
        raise NotImplementedError

    def query_tables(
        self,
        account: str,
        predicate: Callable[[str], bool] | None,
        top: int | None,
        next_table_name: str | None,
    ) -> TablePage:
        """Tables in order of their lower-cased names, at most ``top`` (default 1000)."""
        raise NotImplementedError

    def get_acl(self, account: str, table: str) -> list[SignedIdentifier]:
        """The table's stored access policies. 404 TableNotFound."""
        raise NotImplementedError

    def set_acl(self, account: str, table: str, acl: Sequence[SignedIdentifier]) -> None:
        """Replace the table's policies (at most 5: 400 InvalidXmlDocument). 404 TableNotFound."""
        raise NotImplementedError

    def get_service_properties(self, account: str) -> bytes | None:
        """The last service-properties XML document stored (None: never set)."""
        raise NotImplementedError

    def set_service_properties(self, account: str, document: bytes) -> None:
        """Store the (already validated and normalised) service-properties XML document."""
        raise NotImplementedError

    # -- entities -------------------------------------------------------------
    def get_entity(self, account: str, table: str, pk: str, rk: str) -> Entity:
        """Point read. 404 TableNotFound / 404 ResourceNotFound."""
        raise NotImplementedError

    def write(self, account: str, table: str, op: WriteOp) -> WriteResult:
        """Apply one write with the service's If-Match matrix (PROTOCOL.md 4.18)."""
        raise NotImplementedError

    def execute_batch(self, account: str, table: str, ops: Sequence[WriteOp]) -> list[WriteResult]:
        """Apply a change set atomically: all or nothing, in order.

        Validates the batch rules (<= 100 ops, one PartitionKey, each entity once); on the
        first failure raises the StubError with ``index`` set and applies nothing.
        """
        raise NotImplementedError

    def query_entities(
        self,
        account: str,
        table: str,
        flt: EntityFilter | None,
        top: int | None,
        start_after: tuple[str, str] | None,
        restrict: Callable[[str, str], bool] | None = None,
    ) -> QueryPage:
        """One page in ordinal order, at most ``top`` (default and max 1000).

        ``start_after`` is the continuation (NextPartitionKey, NextRowKey): the page starts
        at that key, inclusive. ``restrict`` (a SAS key range) excludes keys it rejects.
        Cost is O(log n + k) for the planner's ranges, not a table scan.
        """
        raise NotImplementedError
