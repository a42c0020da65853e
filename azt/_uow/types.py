"""The unit of work's vocabulary: entity states, change kinds, merge and save options,
save results, and the errors of tracking and saving (values only, no behaviour).

Example::

    >>> options = SaveChangesOptions.BATCH | SaveChangesOptions.REPLACE_ON_UPDATE
    >>> SaveChangesOptions.BATCH in options
    True
    >>> EntityState("added") is EntityState.ADDED
    True
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from typing import Any, Literal, overload

import attrs

from azt._core.results import timestamp_from_etag
from azt._edm.datetime import EdmDateTime
from azt._errors import AztError, ValidationError

__all__ = [
    "ChangeKind",
    "ContextBusyError",
    "EntityState",
    "IdentityConflictError",
    "IdentityKey",
    "MergeOption",
    "OperationResult",
    "SaveChangesError",
    "SaveChangesOptions",
    "SaveChangesResult",
    "TrackingError",
    "check_merge_option",
    "check_save_options",
]

IdentityKey = tuple[str, str, str]
"""``(table name lower-cased, PartitionKey, RowKey)``: table names are case-insensitive."""


# ============================================================================ errors


class TrackingError(AztError, RuntimeError):
    """An operation the entity's tracking state does not allow (the .NET
    ``InvalidOperationException`` of ``DataServiceContext``).

    Example::

        >>> from azt._uow.tracker import Tracker
        >>> from azt.dynamic import DynamicEntity
        >>> try:
        ...     Tracker().update(DynamicEntity("p", "r"))
        ... except TrackingError as exc:
        ...     print("not tracking" in str(exc))
        True
    """


class IdentityConflictError(TrackingError):
    """A different object is already tracked for the same (table, PartitionKey, RowKey).

    ``key`` is the identity key; ``tracked`` the object the context already tracks.

    Example::

        >>> from azt._uow.tracker import Tracker
        >>> from azt.dynamic import DynamicEntity
        >>> t = Tracker()
        >>> _ = t.attach("movies", DynamicEntity("p", "r"), None)
        >>> try:
        ...     t.attach("Movies", DynamicEntity("p", "r"), None)
        ... except IdentityConflictError as exc:
        ...     print(exc.key)
        ('movies', 'p', 'r')
    """

    def __init__(self, message: str, *, key: IdentityKey, tracked: object) -> None:
        super().__init__(message)
        self.key = key
        self.tracked = tracked


class ContextBusyError(TrackingError):
    """The context is in the middle of a save (or a query page fetch) and refuses a
    concurrent operation. Use one context per logical operation.

    Example::

        >>> issubclass(ContextBusyError, RuntimeError)
        True
    """


# ============================================================================ states and options


class EntityState(enum.Enum):
    """Where an object stands in the unit of work.

    Example::

        >>> EntityState("modified") is EntityState.MODIFIED
        True
    """

    DETACHED = "detached"  #: not tracked
    UNCHANGED = "unchanged"  #: tracked; matches its snapshot
    ADDED = "added"  #: inserted on the next save
    MODIFIED = "modified"  #: updated (or upserted) on the next save
    DELETED = "deleted"  #: deleted on the next save


class MergeOption(enum.Enum):
    """How query results are merged with entities the context already tracks (the seed's
    ``MergeOption``).

    * ``APPEND_ONLY``: a tracked entity is returned as it is: neither its values nor its
      ETag change (a later conditional update may fail with 412).
    * ``OVERWRITE_CHANGES``: the tracked entity is overwritten with the server's values and
      ETag and becomes Unchanged; local edits (and a pending delete) are discarded.
    * ``PRESERVE_CHANGES`` (default, as in the legacy ``TableServiceContext``): local edits
      are kept, the ETag becomes the server's (the way to recover from a 412). Properties
      without local edits take the server's values, so a later save sends exactly the
      local edits again.
    * ``NO_TRACKING``: results are not tracked (and not matched with tracked objects);
      updating one requires ``attach``.

    An entity that is Added (not yet inserted) is left alone by every option except
    ``OVERWRITE_CHANGES``, which replaces it with the stored entity (Unchanged).

    Example::

        >>> MergeOption.PRESERVE_CHANGES.value
        'preserve_changes'
    """

    APPEND_ONLY = "append_only"
    OVERWRITE_CHANGES = "overwrite_changes"
    PRESERVE_CHANGES = "preserve_changes"
    NO_TRACKING = "no_tracking"


class ChangeKind(enum.Enum):
    """The request a pending change becomes.

    Example::

        >>> ChangeKind.UPSERT.value
        'upsert'
    """

    INSERT = "insert"  #: POST (409 if the entity exists)
    UPDATE = "update"  #: MERGE/PUT with If-Match (the ETag, or "*")
    UPSERT = "upsert"  #: MERGE/PUT without If-Match (attached with no ETag)
    DELETE = "delete"  #: DELETE with If-Match (the ETag, or "*")


class SaveChangesOptions(enum.Flag):
    """How :meth:`TableContext.save_changes` sends pending changes (combine with ``|``).

    * ``NONE`` (default): one request per change, in the order the changes were made;
      the first failure stops the save (the rest is not sent and stays pending).
    * ``CONTINUE_ON_ERROR``: one request per change; failures are recorded and the save
      carries on.
    * ``BATCH``: entity group transactions, one per table and PartitionKey, split at 100
      operations and 4 MiB; each transaction is atomic and reported as a unit. Like
      ``NONE``, the save stops at the first failed transaction: the later ones are not
      sent and stay pending (with ``max_concurrency`` > 1, those already in flight finish).
    * ``REPLACE_ON_UPDATE``: updates replace the whole entity (PUT) instead of merging the
      changed properties, so properties removed locally disappear. Combines with the
      others.

    ``BATCH | CONTINUE_ON_ERROR`` is refused, as in .NET.

    Example::

        >>> opts = SaveChangesOptions.BATCH | SaveChangesOptions.REPLACE_ON_UPDATE
        >>> SaveChangesOptions.REPLACE_ON_UPDATE in opts
        True
    """

    NONE = 0
    BATCH = 1
    CONTINUE_ON_ERROR = 2
    REPLACE_ON_UPDATE = 4


def check_save_options(options: SaveChangesOptions) -> SaveChangesOptions:
    """``options`` if they are valid :class:`SaveChangesOptions`, else
    :class:`azt.ValidationError`.

    Example::

        >>> check_save_options(SaveChangesOptions.BATCH)
        <SaveChangesOptions.BATCH: 1>
    """
    if not isinstance(options, SaveChangesOptions):
        raise ValidationError(f"options must be SaveChangesOptions flags, got {options!r}")
    if SaveChangesOptions.BATCH in options and SaveChangesOptions.CONTINUE_ON_ERROR in options:
        raise ValidationError(
            "SaveChangesOptions.BATCH cannot be combined with CONTINUE_ON_ERROR (as in .NET): "
            "a batch save stops at its first failed transaction; to carry on past failures, "
            "save without BATCH"
        )
    return options


def check_merge_option(option: MergeOption) -> MergeOption:
    """``option`` if it is a :class:`MergeOption`, else :class:`azt.ValidationError`.

    Example::

        >>> check_merge_option(MergeOption.NO_TRACKING)
        <MergeOption.NO_TRACKING: 'no_tracking'>
    """
    if not isinstance(option, MergeOption):
        raise ValidationError(f"merge_option must be a MergeOption, got {option!r}")
    return option


# ============================================================================ results


@attrs.frozen
class OperationResult:
    """The outcome of one pending change in a save.

    ``kind`` says what was sent (insert, update, upsert, delete) and ``mode`` how
    (``"merge"``/``"replace"``); ``status`` is the HTTP status of the operation (``None``
    when it was not sent, or was rolled back with its transaction); ``etag`` the new ETag;
    ``error`` the exception (``None`` on success); ``sent`` whether a request carried it;
    ``batch`` the 0-based number of its entity group transaction (``BATCH`` saves only).

    Example::

        >>> r = OperationResult(entity=None, table="movies", partition_key="p",
        ...                     row_key="r", kind=ChangeKind.INSERT, mode=None,
        ...                     status=204, etag='W/"1"', error=None, sent=True)
        >>> r.succeeded
        True
    """

    entity: Any = attrs.field(repr=False)
    table: str
    partition_key: str
    row_key: str
    kind: ChangeKind
    mode: Literal["merge", "replace"] | None
    status: int | None
    etag: str | None
    error: BaseException | None
    sent: bool
    batch: int | None = None
    request_id: str | None = None

    @property
    def succeeded(self) -> bool:
        """True when the change was applied.

        Example::

            done = [r.entity for r in result if r.succeeded]
        """
        return self.sent and self.error is None

    @property
    def timestamp(self) -> EdmDateTime | None:
        """The entity's new ``Timestamp``, read from ``etag`` (``None`` for deletes and
        changes not applied); the saved object carries it too.

        Example::

            >>> etag = 'W/"datetime' + "'2026-01-02T03%3A04%3A05Z'" + '"'
            >>> OperationResult(entity=None, table="t", partition_key="p", row_key="r",
            ...                 kind=ChangeKind.UPDATE, mode="merge", status=204, etag=etag,
            ...                 error=None, sent=True).timestamp.year
            2026
        """
        return timestamp_from_etag(self.etag)


class SaveChangesResult(Sequence[OperationResult]):
    """One :class:`OperationResult` per pending change, in the order they were planned.

    Example::

        >>> res = SaveChangesResult([])
        >>> len(res), res.failed, bool(res.ok)
        (0, [], True)
    """

    __slots__ = ("_items",)

    def __init__(self, items: list[OperationResult]) -> None:
        self._items = items

    @overload
    def __getitem__(self, index: int) -> OperationResult: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[OperationResult]: ...
    def __getitem__(self, index: int | slice) -> OperationResult | Sequence[OperationResult]:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[OperationResult]:
        return iter(self._items)

    @property
    def succeeded(self) -> list[OperationResult]:
        """The changes that were applied.

        Example::

            >>> SaveChangesResult([]).succeeded
            []
        """
        return [r for r in self._items if r.succeeded]

    @property
    def failed(self) -> list[OperationResult]:
        """The changes that were sent and failed (or rolled back with their transaction).

        Example::

            >>> SaveChangesResult([]).failed
            []
        """
        return [r for r in self._items if r.error is not None]

    @property
    def not_sent(self) -> list[OperationResult]:
        """The changes not attempted (after the first failure of a ``NONE`` or ``BATCH``
        save).

        Example::

            >>> SaveChangesResult([]).not_sent
            []
        """
        return [r for r in self._items if not r.sent and r.error is None]

    @property
    def ok(self) -> bool:
        """True when every change was applied.

        Example::

            >>> SaveChangesResult([]).ok
            True
        """
        return all(r.succeeded for r in self._items)

    def __repr__(self) -> str:
        return (
            f"<SaveChangesResult {len(self.succeeded)} succeeded, {len(self.failed)} failed, "
            f"{len(self.not_sent)} not sent>"
        )


class SaveChangesError(AztError):
    """A save did not apply every change. ``result`` holds every operation's outcome;
    the failed ones stay pending in the context (saving again resends only them).

    Example::

        >>> err = SaveChangesError(SaveChangesResult([]))
        >>> err.result.ok
        True
    """

    def __init__(self, result: SaveChangesResult) -> None:
        self.result = result
        failed = result.failed
        lines = [
            f"{len(failed)} of {len(result)} changes failed"
            + (f", {len(result.not_sent)} not sent" if result.not_sent else "")
        ]
        for r in failed[:5]:
            lines.append(
                f"  {r.kind.value} {r.table}(PartitionKey={r.partition_key!r}, "
                f"RowKey={r.row_key!r}): {r.error}"
            )
        if len(failed) > 5:
            lines.append(f"  ... and {len(failed) - 5} more")
        super().__init__("\n".join(lines))

    @property
    def errors(self) -> list[BaseException]:
        """The distinct errors, in order.

        Example::

            >>> SaveChangesError(SaveChangesResult([])).errors
            []
        """
        out: list[BaseException] = []
        for r in self.result.failed:
            if r.error is not None and all(r.error is not e for e in out):
                out.append(r.error)
        return out
