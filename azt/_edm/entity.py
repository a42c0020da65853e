"""``TableEntity``, the dict-shaped entity, and its service ``EntityMetadata``.

Decoded entities keep ``Timestamp`` out of the property dict: it is read-only and the
service overwrites it, so it lives in ``entity.metadata.timestamp`` next to the ETag.

Example::

    >>> from azt.edm import TableEntity
    >>> TableEntity(PartitionKey="p", RowKey="r", Count=5)["Count"]
    5
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import attrs

from azt._edm.datetime import EdmDateTime
from azt._edm.types import EdmType
from azt._errors import PropertyLossError

__all__ = [
    "PARTIAL_ATTR",
    "PROJECTED",
    "EntityMetadata",
    "PartialRead",
    "PartialSlot",
    "SharedEdmTypes",
    "TableEntity",
    "partial_of",
    "projected_rows",
    "property_loss_error",
    "refuse_property_loss",
    "set_partial",
]

#: The attribute (a slot on every entity kind azt decodes into) holding an object's
#: :class:`PartialRead` record; absent or ``None``: the object holds the whole entity.
PARTIAL_ATTR: Final = "_azt_partial"


@attrs.frozen(slots=True)
class PartialRead:
    """What an object read from the service does not hold of the stored entity, recorded
    by the decoders on the object itself (so the knowledge travels with it: read without
    tracking and attached later, or read by one context and attached to another).

    ``missing`` names stored properties the object does not hold (a row's properties its
    class does not declare; a class's properties a projection did not select);
    ``projection`` says the object came from a ``$select``, so stored properties beyond
    ``missing`` may exist too. A whole-entity replace of such an object would delete them:
    it is refused with :class:`azt.PropertyLossError` unless the caller opts in.

    Example::

        >>> rec = PartialRead(missing=("Genre",), projection=True)
        >>> rec.describe()
        "'Genre' and any other stored property outside the projection"
    """

    missing: tuple[str, ...] = ()
    projection: bool = False

    def describe(self) -> str:
        """The lost properties in words, for messages.

        Example::

            >>> PartialRead(missing=("A", "B")).describe()
            "'A', 'B'"
        """
        names = ", ".join(repr(n) for n in self.missing)
        if not self.projection:
            return names
        if names:
            return names + " and any other stored property outside the projection"
        return "any stored property outside the projection"

    def with_missing(self, names: tuple[str, ...]) -> PartialRead:
        """This record with more missing names (kept once, in order).

        Example::

            >>> PartialRead(missing=("A",)).with_missing(("B", "A")).missing
            ('A', 'B')
        """
        extra = tuple(n for n in dict.fromkeys(names) if n not in self.missing)
        return PartialRead(self.missing + extra, self.projection) if extra else self


class PartialSlot:
    """A base class giving entity classes the slot of their :class:`PartialRead` record
    (declarative entities get it through :class:`azt.entity.Entity`).

    Example::

        >>> class Row(PartialSlot):
        ...     __slots__ = ()
        >>> r = Row(); set_partial(r, PartialRead(projection=True)); partial_of(r).projection
        True
    """

    __slots__ = ("_azt_partial",)


#: the record of an object read with a projection whose class declares nothing (a
#: ``TableEntity`` or ``DynamicEntity``): it cannot know what else is stored
PROJECTED: Final = PartialRead(projection=True)


def projected_rows(decode: Callable[[bytes], list[Any]]) -> Callable[[bytes], list[Any]]:
    """``decode`` (a page body -> entities), recording :data:`PROJECTED` on each entity:
    the decoder of a query with ``select``.

    Example::

        >>> dec = projected_rows(lambda body: [TableEntity(PartitionKey="p", RowKey="r")])
        >>> partial_of(dec(b"")[0]).projection
        True
    """

    def decode_projected(body: bytes) -> list[Any]:
        rows = decode(body)
        for row in rows:
            set_partial(row, PROJECTED)
        return rows

    return decode_projected


def partial_of(obj: object) -> PartialRead | None:
    """The :class:`PartialRead` record of an object (``None``: it holds the whole entity,
    as far as azt knows).

    Example::

        >>> partial_of({"PartitionKey": "p", "RowKey": "r"}) is None
        True
    """
    rec: PartialRead | None = getattr(obj, PARTIAL_ATTR, None)
    return rec


def set_partial(obj: object, record: PartialRead | None) -> None:
    """Record (or, with ``None``, clear) what ``obj`` lacks of the stored entity; objects
    without a place for it (a plain ``dict``) are left alone.

    Example::

        >>> e = TableEntity(PartitionKey="p", RowKey="r")
        >>> set_partial(e, PartialRead(projection=True)); partial_of(e).projection
        True
        >>> set_partial(e, None); partial_of(e) is None
        True
    """
    if isinstance(obj, TableEntity):
        obj._meta = obj.metadata  # built, so decoders know to look for the record
    with contextlib.suppress(AttributeError, TypeError):
        object.__setattr__(obj, PARTIAL_ATTR, record)


def property_loss_error(
    record: PartialRead, what: str, partition_key: Any, row_key: Any, opt_in: str
) -> PropertyLossError:
    """The :class:`azt.PropertyLossError` refusing ``what`` (a whole-entity replace) of an
    object with ``record``; ``opt_in`` says how the caller may replace anyway.

    Example::

        >>> err = property_loss_error(PartialRead(("B",)), "a replace", "p", "r",
        ...                           "allow_property_loss=True")
        >>> err.properties, "'B'" in str(err)
        (('B',), True)
    """
    how = (
        "with a projection (select)"
        if record.projection
        else "from a row with stored properties its class does not hold"
    )
    return PropertyLossError(
        f"{what} of entity (PartitionKey={partition_key!r}, RowKey={row_key!r}) was refused "
        f"and nothing was sent: the object was read {how}, so replacing the stored entity "
        f"with it would delete {record.describe()}. Merge instead, read the whole entity, "
        f"or opt in explicitly ({opt_in})",
        properties=record.missing,
        may_lose_more=record.projection,
        partition_key=partition_key if isinstance(partition_key, str) else None,
        row_key=row_key if isinstance(row_key, str) else None,
    )


def refuse_property_loss(obj: object, what: str) -> None:
    """Raise :class:`azt.PropertyLossError` if replacing the stored entity with ``obj`` (an
    entity about to be sent whole) would delete properties it does not hold, per its
    :class:`PartialRead` record and less any it has been given since. ``what`` names the
    operation in the message.

    Example::

        >>> e = TableEntity(PartitionKey="p", RowKey="r", A=1)
        >>> refuse_property_loss(e, "upsert_entity(mode=REPLACE)")   # complete: passes
        >>> set_partial(e, PartialRead(missing=("B",)))
        >>> try:
        ...     refuse_property_loss(e, "upsert_entity(mode=REPLACE)")
        ... except PropertyLossError as exc:
        ...     print(exc.properties)
        ('B',)
    """
    rec = partial_of(obj)
    if rec is None:
        return
    if isinstance(obj, Mapping):
        lost = tuple(n for n in rec.missing if n not in obj)
        pk, rk = obj.get("PartitionKey"), obj.get("RowKey")
    else:  # an entity object
        lost = rec.missing
        pk, rk = getattr(obj, "PartitionKey", None), getattr(obj, "RowKey", None)
    if not lost and not rec.projection:
        return  # every property the read left out has been set since
    raise property_loss_error(
        PartialRead(lost, rec.projection), what, pk, rk, "allow_property_loss=True"
    )


@attrs.frozen(slots=True)
class EntityMetadata(Mapping[str, Any]):
    """Service metadata of an entity: its ETag and last-modified Timestamp.

    Read as attributes (``meta.etag``) or, as ``azure-data-tables`` spells it, as a
    read-only mapping of the same names (``meta["etag"]``, ``meta.get("timestamp")``,
    ``dict(meta)``): one object, two spellings, the same values.

    Example::

        >>> m = EntityMetadata(etag='W/"datetime\\'2020-01-01T00%3A00%3A00Z\\'"')
        >>> m.timestamp is None
        True
        >>> m["etag"] == m.etag, sorted(m)
        (True, ['etag', 'timestamp'])
    """

    etag: str | None = None
    timestamp: EdmDateTime | None = None

    def __getitem__(self, key: str) -> Any:
        if key not in _metadata_names(type(self)):
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(_metadata_names(type(self)))

    def __len__(self) -> int:
        return len(_metadata_names(type(self)))


@functools.cache
def _metadata_names(cls: type[EntityMetadata]) -> tuple[str, ...]:
    """The field names of an :class:`EntityMetadata` class, its mapping keys."""
    return tuple(field.name for field in attrs.fields(cls))


_EMPTY_METADATA: Final = EntityMetadata()


class SharedEdmTypes(dict[str, EdmType]):
    """The ``edm_types`` a page decoder gives every entity of one shape: one read-only
    mapping shared by them all (one object fewer per decoded entity for the allocator and
    the cyclic garbage collector to handle). ``entity.edm_types`` replaces it by the
    entity's own mutable copy on first use, so that no caller ever sees it shared.

    Example::

        >>> shared = SharedEdmTypes({"Big": EdmType.INT64})
        >>> e = TableEntity(Big=5)
        >>> e._types = shared
        >>> e.edm_types["Big"] is EdmType.INT64, type(e.edm_types) is dict
        (True, True)
        >>> shared["Big"] = EdmType.INT32
        Traceback (most recent call last):
        ...
        TypeError: SharedEdmTypes is read-only
    """

    __slots__ = ()

    def _read_only(self, *args: object, **kwargs: object) -> Any:
        raise TypeError("SharedEdmTypes is read-only")

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only


class TableEntity(dict[str, Any]):
    """A dict-shaped entity: property name -> plain Python value.

    ``PartitionKey`` and ``RowKey`` are ordinary keys. ``metadata`` holds the ETag and
    Timestamp (``Timestamp`` is not a property of the dict). ``edm_types`` maps property
    names to an :class:`EdmType` where the Python type alone is ambiguous (Int64, or any
    property whose type the service annotated), so that a read-modify-write keeps the
    stored types. Values may also be :class:`Typed` when writing.

    Example::

        >>> e = TableEntity(PartitionKey="p", RowKey="r", Big=5)
        >>> e.edm_types["Big"] = EdmType.INT64
        >>> e.metadata.etag is None
        True
        >>> e2 = e.copy(); e2.edm_types
        {'Big': <EdmType.INT64: 'Edm.Int64'>}
    """

    # _etag / _ts are filled by the decoders; metadata is built from them on first use so
    # that a page decode does not parse 1,000 Timestamps nobody reads.
    __slots__ = ("_azt_partial", "_etag", "_meta", "_ts", "_types")
    _azt_partial: PartialRead | None
    _etag: str | None
    _ts: str | EdmDateTime | None
    _meta: EntityMetadata
    _types: dict[str, EdmType]

    @property
    def metadata(self) -> EntityMetadata:
        """ETag and Timestamp as last seen from the service (empty for new entities).

        Example::

            >>> TableEntity(PartitionKey="p").metadata
            EntityMetadata(etag=None, timestamp=None)
        """
        meta: EntityMetadata | None = getattr(self, "_meta", None)
        if meta is not None:
            return meta
        etag = getattr(self, "_etag", None)
        ts = getattr(self, "_ts", None)
        if etag is None and ts is None:
            return _EMPTY_METADATA
        if isinstance(ts, str):
            ts = EdmDateTime.parse(ts)
        meta = self._meta = EntityMetadata(etag, ts)
        return meta

    @metadata.setter
    def metadata(self, value: EntityMetadata) -> None:
        self._meta = value

    @property
    def edm_types(self) -> dict[str, EdmType]:
        """Explicit EDM types by property name (mutable; created on first use).

        Example::

            >>> e = TableEntity(N=1)
            >>> e.edm_types["N"] = EdmType.INT64
            >>> e.edm_types
            {'N': <EdmType.INT64: 'Edm.Int64'>}
        """
        t: dict[str, EdmType] | None = getattr(self, "_types", None)
        if t is None:
            t = self._types = {}
        elif type(t) is SharedEdmTypes:
            t = self._types = dict(t)  # the decoder's shared mapping: this entity's own copy
        return t

    @edm_types.setter
    def edm_types(self, value: dict[str, EdmType]) -> None:
        self._types = value

    def copy(self) -> TableEntity:
        """A shallow copy that keeps metadata and a copy of ``edm_types``.

        Example::

            >>> e = TableEntity(a=1)
            >>> e.metadata = EntityMetadata(etag="W/1")
            >>> e.copy().metadata.etag
            'W/1'
        """
        new = TableEntity(self)
        new._meta = self.metadata
        types = getattr(self, "_types", None)
        if types:
            new._types = dict(types)
        partial = getattr(self, PARTIAL_ATTR, None)
        if partial is not None:
            new._azt_partial = partial  # a copy lacks what the original lacks
        return new

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _restore_entity,
            (dict(self), self.metadata, dict(self.edm_types), partial_of(self)),
        )

    def __repr__(self) -> str:
        return f"TableEntity({dict.__repr__(self)})"


def _restore_entity(
    props: dict[str, Any],
    meta: EntityMetadata,
    types: dict[str, EdmType],
    partial: PartialRead | None = None,
) -> TableEntity:
    ent = TableEntity(props)
    ent._meta = meta
    if types:
        ent._types = types
    if partial is not None:
        ent._azt_partial = partial
    return ent
