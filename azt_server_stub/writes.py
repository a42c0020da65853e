"""What one entity write does (PROTOCOL.md 8): the operation, the If-Match rules, the result.

:func:`apply_write` applies a :class:`WriteOp` to the entity currently stored (or None)
and returns the entity to store, or raises the service's refusal; the backend owns
locking, timestamps and storage.

Example::

    >>> new = apply_write(WriteOp("insert", "p", "r"), None, 1)
    >>> new.pk, new.rk, new.timestamp
    ('p', 'r', 1)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from . import errors
from .errors import StubError
from .model import Entity, TypedValue
from .validation import check_entity_limits, validate_entity

__all__ = [
    "GroupWrite",
    "WriteKind",
    "WriteOp",
    "WriteResult",
    "apply_write",
    "invalid_etag",
    "is_weak_etag",
]


WriteKind = Literal["insert", "replace", "merge", "delete"]


@dataclass(slots=True)
class WriteOp:
    """One write, alone or inside a batch.

    ``kind``: ``insert`` (POST), ``replace`` (PUT), ``merge`` (MERGE/PATCH), ``delete``.
    ``if_match``: ``None`` (absent: replace/merge become upserts; delete is refused with
    ``400 InvalidInput``), ``"*"`` or an ETag string. Ignored by ``insert``.
    ``props``: custom properties, already parsed (no nulls; for merge, nulls were dropped
    by the parser). The backend validates keys and properties itself, unless ``checked``
    says the writer already knows that validation accepts them (as they are: the flag
    takes no part in comparisons). ``keys_at``: where the body had the keys among the
    properties (:func:`~azt_server_stub.model.key_places`), for a flavour that writes
    them there (Cosmos); 0 otherwise.

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
    checked: bool = field(default=False, compare=False, repr=False)
    keys_at: int = field(default=0, repr=False)


@dataclass(slots=True)
class WriteResult:
    """Outcome of one successful write: the stored entity (None after delete).

    Example::

        >>> WriteResult(None).created
        False
    """

    entity: Entity | None
    created: bool = False  # True when an insert or upsert created the entity


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


# The weak prefix in either case: Azure answers a stale w/"..." with 412, not 400
# (Azure/Azurite#1229, filed from Azure's behaviour, and Azurite's tests "from issue #1229"
# in tests/table/apis/table.entity.tests.issues.ts). RFC 7232 spells it "W/" only.
_WEAK_ETAG = re.compile(r'[Ww]/"[^"]*"\Z')


def _normalise_etag(etag: str) -> str:
    return etag.replace("%3A", ":").replace("%3a", ":")


def is_weak_etag(text: str) -> bool:
    """Whether ``text`` is one weak ETag, ``W/"..."`` (the only form the service issues) or
    ``w/"..."`` (well formed for Azure; it never equals an issued ETag, so it gets 412).

    Example::

        >>> is_weak_etag('W/"datetime-2020"'), is_weak_etag('"x"'), is_weak_etag('W/"a"b"')
        (True, False, False)
        >>> is_weak_etag('w/"datetime-2020"')
        True
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


def _ordered(props: dict[str, TypedValue], by_name: bool) -> dict[str, TypedValue]:
    """A copy of ``props``, in ordinal name order when ``by_name``."""
    return dict(sorted(props.items())) if by_name else dict(props)


def apply_write(
    op: WriteOp,
    current: Entity | None,
    timestamp: int,
    created: int | None = None,
    *,
    sorted_updates: bool = False,
) -> Entity | None:
    """One write against ``current``: the new stored entity (None: deleted), or raise.

    Check order (PROTOCOL.md 8.3): body validation (400), existence (404/409), ETag (412),
    then the limits of a merged entity. A new key gets the creation rank ``created``
    (default: ``timestamp``); a replace or merge keeps the current entity's.
    ``sorted_updates``: a replace or merge (upserts too) stores the properties in ordinal
    name order, as Azure Table storage answers afterwards (an insert keeps the order it was
    sent in; docs/stub.md, Fidelity decisions), and the keys first. Otherwise (Cosmos) the
    keys' places (``keys_at``) are the body's for an insert, a replace and a merge that
    creates the entity, and a merge into a stored entity keeps the stored places, as it
    keeps its properties' (new names go after them; docs/cosmos.md, Decisions).

    Example::

        >>> stored = apply_write(WriteOp("insert", "p", "r"), None, 1)
        >>> apply_write(WriteOp("delete", "p", "r", if_match="*"), stored, 2) is None
        True
    """
    kind = op.kind
    rank = current.created if current is not None else timestamp if created is None else created
    if kind == "insert":
        if not op.checked:
            validate_entity(op.pk, op.rk, op.props)
        if current is not None:
            raise errors.entity_already_exists()
        return Entity(op.pk, op.rk, timestamp, dict(op.props), rank, op.keys_at)
    if kind == "replace":
        if not op.checked:
            validate_entity(op.pk, op.rk, op.props)
        if op.if_match is not None:
            _check_if_match(op.if_match, current)
        places = 0 if sorted_updates else op.keys_at
        return Entity(op.pk, op.rk, timestamp, _ordered(op.props, sorted_updates), rank, places)
    if kind == "merge":
        if not op.checked:
            validate_entity(op.pk, op.rk, op.props)
        if op.if_match is not None:
            _check_if_match(op.if_match, current)
        if current is None:
            places = 0 if sorted_updates else op.keys_at
            props = _ordered(op.props, sorted_updates)
            return Entity(op.pk, op.rk, timestamp, props, rank, places)
        merged = dict(current.props)
        merged.update(op.props)
        check_entity_limits(op.pk, op.rk, merged)
        places = 0 if sorted_updates else current.keys_at
        return Entity(op.pk, op.rk, timestamp, _ordered(merged, sorted_updates), rank, places)
    if kind == "delete":
        if op.if_match is None:
            raise errors.invalid_input(
                "The If-Match header is required to delete an entity (use '*' to delete "
                "unconditionally)."
            )
        _check_if_match(op.if_match, current)
        return None
    raise errors.invalid_input(f"Unknown write kind {kind!r}.")
