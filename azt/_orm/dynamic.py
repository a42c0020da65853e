"""Dynamic entities: schemaless typed property bags, and resolvers that pick a class per row.

A table is schemaless; the seed article keeps members and their rentals in one table,
one partition per member::

    PartitionKey  RowKey                 properties
    m-17          Member                 Name, RentalCount
    m-17          Rental_Alien           Movie, Due
    m-17          Rental_Heat            Movie, Due

With a resolver, one query returns typed objects of both classes, in key order::

    resolver = by_row_key_prefix({"Member": Member, "Rental_": Rental})
    async for row in Query(resolver, table).where(Entity.PartitionKey == "m-17"):
        ...   # Member(...) then Rental(...), Rental(...)

Rows no class claims become :class:`DynamicEntity` (or raise, if ``fallback=None``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping
from datetime import datetime
from typing import Any, Generic, NoReturn, Self, TypeVar, overload

from azt._core.wire import WireDecodeError
from azt._core.wire.json import decode_entity
from azt._core.wire.writers import encode_valid
from azt._edm.entity import PARTIAL_ATTR, PROJECTED, PartialRead, TableEntity
from azt._edm.types import EdmType, Typed, coerce_value, infer_edm_type
from azt._edm.validation import validate_entity, validate_key
from azt._errors import ValidationError
from azt._orm.codec import EntityCodec, codec_for
from azt._orm.columns import Prop, PropSpec, make_prop
from azt._orm.entity import EntityBase
from azt._orm.values import check_property_name, refuse_lone_surrogate

__all__ = [
    "DynamicEntity",
    "Resolver",
    "by_property",
    "by_row_key_prefix",
    "column",
]

T = TypeVar("T")
E = TypeVar("E", bound=EntityBase)
R = TypeVar("R", covariant=True)

_RESERVED = frozenset({"PartitionKey", "RowKey", "Timestamp", "ETag"})


class DynamicEntity(MutableMapping[str, Any]):
    """A schemaless entity: keys, server metadata, and a typed property bag.

    Values are validated when set; each property keeps its EDM type (inferred, or given with
    :class:`azt.edm.Typed`, or as read from the service), so a read-modify-write keeps Int64
    as Int64.

    Example::

        >>> from azt.edm import Typed, EdmType
        >>> e = DynamicEntity("m-17", "Member", Name="Ann", Views=Typed(5, EdmType.INT64))
        >>> e["Name"], e.types["Views"]
        ('Ann', <EdmType.INT64: 'Edm.Int64'>)
        >>> e["RentalCount"] = 2
        >>> sorted(e)
        ['Name', 'RentalCount', 'Views']
    """

    __slots__ = ("ETag", "Timestamp", "_azt_partial", "_pk", "_rk", "_types", "_values")

    _azt_partial: PartialRead | None
    _pk: str
    _rk: str
    Timestamp: datetime | None
    ETag: str | None

    def __init__(self, PartitionKey: str, RowKey: str, /, **properties: Any) -> None:
        self.PartitionKey = PartitionKey
        self.RowKey = RowKey
        self.Timestamp = None
        self.ETag = None
        self._values: dict[str, Any] = {}
        self._types: dict[str, EdmType] = {}
        for name, value in properties.items():
            self[name] = value

    @property
    def PartitionKey(self) -> str:
        """The partition key; validated when assigned.

        Example::

            >>> e = DynamicEntity("m-17", "Member"); e.PartitionKey = "m-18"; e.PartitionKey
            'm-18'
        """
        return self._pk

    @PartitionKey.setter
    def PartitionKey(self, value: str) -> None:
        self._pk = _valid_key("PartitionKey", value)

    @property
    def RowKey(self) -> str:
        """The row key; validated when assigned.

        Example::

            >>> DynamicEntity("m-17", "Rental_Alien").RowKey
            'Rental_Alien'
        """
        return self._rk

    @RowKey.setter
    def RowKey(self, value: str) -> None:
        self._rk = _valid_key("RowKey", value)

    # -- mapping -------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __setitem__(self, name: str, value: Any) -> None:
        if value is None:
            self._values.pop(name, None)  # the service does not store nulls
            self._types.pop(name, None)
            return
        if isinstance(value, Typed):
            self.set(name, value.value, value.edm_type)
            return
        try:
            edm = infer_edm_type(value)
        except TypeError as exc:
            raise ValidationError(f"property {name!r}: {exc}") from None
        self.set(name, value, edm)

    def set(self, name: str, value: Any, edm: EdmType) -> None:
        """Set a property with an explicit EDM type.

        Example::

            >>> e = DynamicEntity("p", "r"); e.set("N", 5, EdmType.INT64); e.types["N"]
            <EdmType.INT64: 'Edm.Int64'>
        """
        if name in _RESERVED:
            raise ValidationError(f"{name} is a system property; set it as an attribute")
        _name_check(name)
        value = coerce_value(value, edm, name)
        if edm is EdmType.STRING and not value.isascii():
            refuse_lone_surrogate(f"property {name!r}", value)
        self._values[name] = value
        self._types[name] = edm

    def __delitem__(self, name: str) -> None:
        del self._values[name]
        del self._types[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    @property
    def types(self) -> Mapping[str, EdmType]:
        """The EDM type of each property (a copy).

        Example::

            >>> DynamicEntity("p", "r", A=1.5).types
            {'A': <EdmType.DOUBLE: 'Edm.Double'>}
        """
        return dict(self._types)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DynamicEntity):
            return NotImplemented
        return (
            self.PartitionKey == other.PartitionKey
            and self.RowKey == other.RowKey
            and self._values == other._values
            and self._types == other._types
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        props = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        sep = ", " if props else ""
        return f"DynamicEntity({self.PartitionKey!r}, {self.RowKey!r}{sep}{props})"

    # -- conversion ----------------------------------------------------------------------
    def to_entity(self) -> TableEntity:
        """The dict-shaped entity to send, with every property's EDM type.

        Example::

            >>> DynamicEntity("p", "r", N=1).to_entity().edm_types
            {'N': <EdmType.INT32: 'Edm.Int32'>}
        """
        ent = TableEntity(self._values)
        ent["PartitionKey"] = self.PartitionKey
        ent["RowKey"] = self.RowKey
        ent.edm_types = dict(self._types)
        validate_entity(ent)
        return ent

    @classmethod
    def from_entity(cls, entity: Mapping[str, Any]) -> DynamicEntity:
        """Build from a dict-shaped entity as the client core returns it (no re-validation).

        Example::

            >>> DynamicEntity.from_entity({"PartitionKey": "p", "RowKey": "r", "A": 1.5})["A"]
            1.5
        """
        self = cls.__new__(cls)
        self._pk = entity.get("PartitionKey", "")
        self._rk = entity.get("RowKey", "")
        meta = getattr(entity, "metadata", None)
        self.Timestamp = meta.timestamp if meta is not None else None
        self.ETag = meta.etag if meta is not None else None
        explicit: Mapping[str, EdmType] = getattr(entity, "edm_types", None) or {}
        values: dict[str, Any] = {}
        types: dict[str, EdmType] = {}
        for k, v in entity.items():
            if k == "PartitionKey" or k == "RowKey" or v is None:
                continue
            values[k] = v
            t = explicit.get(k)
            if t is None:
                try:
                    t = infer_edm_type(v)
                except TypeError:
                    t = EdmType.STRING
            types[k] = t
        self._values = values
        self._types = types
        partial = getattr(entity, PARTIAL_ATTR, None)  # a projection lacks the rest
        if partial is not None:
            self._azt_partial = partial
        return self

    # -- what the client core asks of entity objects (azt._core.base.EntityObject) ----------

    def __azt_entity__(self) -> tuple[TableEntity, str | None]:
        """The entity to send and this object's ETag (``TableClient`` writes call it).

        Example::

            >>> DynamicEntity("p", "r", N=1).__azt_entity__()
            (TableEntity({'N': 1, 'PartitionKey': 'p', 'RowKey': 'r'}), None)
        """
        return self.to_entity(), self.ETag

    def __azt_encoded__(self) -> tuple[TableEntity, Self, str | None, bytes | None, bool]:
        """The entity to send, this object, its ETag, the entity's JSON body checked
        against Azure Table storage's limits by the per-shape writers (``None``: check and
        encode it as usual), and ``True`` (ask for companions), in one call
        (``azt._core.base.encoded_source``).

        Example::

            >>> entity, obj, etag, body, more = DynamicEntity("p", "r", N=1).__azt_encoded__()
            >>> entity, etag, more
            (TableEntity({'N': 1, 'PartitionKey': 'p', 'RowKey': 'r'}), None, True)
        """
        data = self.to_entity()
        return data, self, self.ETag, encode_valid(data), True

    def __azt_written__(self, etag: str | None, timestamp: datetime | None) -> None:
        """Take the ETag and Timestamp of a successful write.

        Example::

            >>> e = DynamicEntity("p", "r"); e.__azt_written__('W/"x"', None); e.ETag
            'W/"x"'
        """
        self.ETag = etag
        self.Timestamp = timestamp

    @classmethod
    def __azt_decode__(cls, entity: TableEntity, select: frozenset[str] | None) -> DynamicEntity:
        """An instance from a read entity (``TableClient.get_entity(entity_class=...)``).

        Example::

            >>> DynamicEntity.__azt_decode__(TableEntity(PartitionKey="p", RowKey="r"), None)
            DynamicEntity('p', 'r')
        """
        return cls.from_entity(entity)

    @classmethod
    def decoder(
        cls, select: frozenset[str] | None = None
    ) -> Callable[[Mapping[str, Any]], DynamicEntity]:
        """Row decoder for queries (``Query(DynamicEntity, table)``).

        Example::

            >>> DynamicEntity.decoder()({"PartitionKey": "p", "RowKey": "r"}).RowKey
            'r'
        """
        if select is None:
            return cls.from_entity
        return _projected(cls.from_entity)


def _projected(
    decode: Callable[[Mapping[str, Any]], DynamicEntity],
) -> Callable[[Mapping[str, Any]], DynamicEntity]:
    """``decode``, recording on each object that it came from a projection."""

    def decode_projected(row: Mapping[str, Any]) -> DynamicEntity:
        obj = decode(row)
        obj._azt_partial = PROJECTED
        return obj

    return decode_projected


def _valid_key(which: str, value: Any) -> str:
    key = validate_key(which, value)
    if not key.isascii():
        refuse_lone_surrogate(which, key)
    return key


def _name_check(name: str) -> None:
    try:
        check_property_name("DynamicEntity", name)
    except TypeError as exc:
        raise ValidationError(str(exc)) from None


class _DynamicOwner:
    """Owner shown in messages about columns made by :func:`column`."""

    __name__ = "column"


@overload
def column(name: str, py_type: type[T]) -> Prop[T]: ...
@overload
def column(name: str, py_type: type[T], edm: EdmType) -> Prop[T]: ...
def column(name: str, py_type: type[T], edm: EdmType | None = None) -> Prop[T]:
    """A query column for a property no entity class declares (dynamic and mixed tables).

    Example::

        >>> str(column("Rating", float) > 4)
        'Rating gt 4.0'
        >>> str(column("Views", int, EdmType.INT64) > 4)
        'Views gt 4L'
    """
    if name not in ("PartitionKey", "RowKey", "Timestamp"):
        _name_check(name)
    p: Prop[T] = make_prop("column", name, py_type, False, None, PropSpec(edm=edm))
    p.owner = _DynamicOwner
    return p


class Resolver(Generic[R]):
    """Chooses the entity class for each row of a mixed table.

    ``choose(row)`` gets the row (a ``TableEntity``) and returns an entity class, or
    ``None`` for "no class": such rows become ``fallback`` (a :class:`DynamicEntity` by
    default) or, with ``fallback=None``, raise :class:`azt.ValidationError`.

    Example::

        >>> r: Resolver[Entity | DynamicEntity] = Resolver(lambda row: None)
        >>> r.decoder(None)({"PartitionKey": "p", "RowKey": "x"})
        DynamicEntity('p', 'x')
    """

    def __init__(
        self,
        choose: Callable[[Mapping[str, Any]], type[EntityBase] | None],
        *,
        fallback: type[DynamicEntity] | None = DynamicEntity,
    ) -> None:
        self._choose = choose
        self._fallback = fallback
        #: properties a projection must keep for ``choose`` to work (``Query.select`` adds them)
        self.required_properties: tuple[str, ...] = ()
        # a chooser that also understands raw JSON rows (the built-in resolvers have one)
        self._json_choose: Callable[[Mapping[str, Any]], type[EntityBase] | None] | None = None

    def decoder(self, select: frozenset[str] | None) -> Callable[[Mapping[str, Any]], R]:
        """Row decoder for queries (``Query(resolver, table)`` calls it).

        Example::

            >>> by_row_key_prefix({}).decoder(None)({"PartitionKey": "p", "RowKey": "r"})
            DynamicEntity('p', 'r')
        """
        choose = self._choose
        fallback = self._fallback
        cache: dict[type[EntityBase], Callable[[Mapping[str, Any]], Any]] = {}
        fall = None
        if fallback is not None:
            fall = fallback.decoder(select)

        def decode(row: Mapping[str, Any]) -> Any:
            cls = choose(row)
            if cls is None:
                if fall is None:
                    _no_class(row)
                return fall(row)
            dec = cache.get(cls)
            if dec is None:
                dec = cache[cls] = codec_for(cls, select).from_entity
            return dec(row)

        return decode

    def page_decoder(self, select: frozenset[str] | None) -> Callable[[list[Any]], list[R]] | None:
        """Decoder of a query page's raw JSON rows (``None`` for resolvers built from a
        custom ``choose``, which is promised ``TableEntity`` rows). Rows of entity classes
        go straight to objects; the others through ``TableEntity`` to the fallback.

        Example::

            >>> dec = by_row_key_prefix({"Member": Entity}).page_decoder(None)
            >>> [type(x).__name__ for x in dec([{"PartitionKey": "m", "RowKey": "Member"},
            ...                                 {"PartitionKey": "m", "RowKey": "Note"}])]
            ['Entity', 'DynamicEntity']
        """
        choose = self._json_choose
        if choose is None:
            return None
        fallback = self._fallback
        fall = None
        if fallback is not None:
            fall = fallback.decoder(select)
        cache: dict[type[EntityBase], EntityCodec[Any]] = {}

        def decode(rows: list[Any]) -> list[Any]:
            out: list[Any] = []
            append = out.append
            for row in rows:
                if type(row) is not dict:
                    raise WireDecodeError(
                        f"an entity must be a JSON object, got {type(row).__name__}"
                    )
                cls = choose(row)
                if cls is None:
                    if fall is None:
                        _no_class(row)
                    append(fall(decode_entity(row)))
                    continue
                codec = cache.get(cls)
                if codec is None:
                    codec = cache[cls] = codec_for(cls, select)
                codec._check_json(row)  # stored types the class does not read: refused
                try:
                    obj = codec._from_json_fast(row)
                except (ValueError, TypeError, AttributeError, KeyError):
                    append(codec.from_json(row))  # nulls as absent, errors named
                    continue
                codec._mark_json(obj, row)  # the row's properties the class lacks
                append(obj)
            return out

        return decode


def _no_class(row: Mapping[str, Any]) -> NoReturn:
    raise ValidationError(
        f"no entity class for row PartitionKey={row.get('PartitionKey')!r} "
        f"RowKey={row.get('RowKey')!r} (the resolver chose none and has no fallback)"
    )


@overload
def by_row_key_prefix(classes: Mapping[str, type[E]], *, fallback: None) -> Resolver[E]: ...
@overload
def by_row_key_prefix(
    classes: Mapping[str, type[E]], *, fallback: type[DynamicEntity] = ...
) -> Resolver[E | DynamicEntity]: ...
@overload
def by_row_key_prefix(
    classes: Mapping[str, type[EntityBase]], *, fallback: type[DynamicEntity] | None = ...
) -> Resolver[Any]: ...
def by_row_key_prefix(
    classes: Mapping[str, type[EntityBase]], *, fallback: type[DynamicEntity] | None = DynamicEntity
) -> Resolver[Any]:
    """A resolver choosing by RowKey prefix (longest prefix wins), as in the seed's
    ``Member`` / ``Rental_<Movie Name>`` rows.

    Example::

        >>> r = by_row_key_prefix({"Member": Entity})
        >>> type(r.decoder(None)({"PartitionKey": "m", "RowKey": "Member"})).__name__
        'Entity'
    """
    ordered = sorted(classes.items(), key=lambda kv: len(kv[0]), reverse=True)

    def choose(row: Mapping[str, Any]) -> type[EntityBase] | None:
        rk = row.get("RowKey", "")
        for prefix, cls in ordered:
            if rk.startswith(prefix):
                return cls
        return None

    resolver: Resolver[Any] = Resolver(choose, fallback=fallback)
    resolver._json_choose = choose  # RowKey is the same string in a raw JSON row
    return resolver


@overload
def by_property(name: str, classes: Mapping[Any, type[E]], *, fallback: None) -> Resolver[E]: ...
@overload
def by_property(
    name: str, classes: Mapping[Any, type[E]], *, fallback: type[DynamicEntity] = ...
) -> Resolver[E | DynamicEntity]: ...
@overload
def by_property(
    name: str,
    classes: Mapping[Any, type[EntityBase]],
    *,
    fallback: type[DynamicEntity] | None = ...,
) -> Resolver[Any]: ...
def by_property(
    name: str,
    classes: Mapping[Any, type[EntityBase]],
    *,
    fallback: type[DynamicEntity] | None = DynamicEntity,
) -> Resolver[Any]:
    """A resolver choosing by the value of a discriminator property (e.g. ``Kind``); each
    class should declare that property with its own default so that writes carry it.

    Example::

        >>> r = by_property("Kind", {"member": Entity})
        >>> type(r.decoder(None)({"PartitionKey": "m", "RowKey": "1", "Kind": "x"})).__name__
        'DynamicEntity'
    """

    def choose(row: Mapping[str, Any]) -> type[EntityBase] | None:
        v = row.get(name)
        try:
            return classes.get(v)
        except TypeError:  # unhashable
            return None

    annotation = name + "@odata.type"

    def choose_json(row: Mapping[str, Any]) -> type[EntityBase] | None:
        if annotation in row:  # a typed value (Int64, Guid, ...): read it as TableEntity does
            return choose(decode_entity({name: row[name], annotation: row[annotation]}))
        return choose(row)

    resolver: Resolver[Any] = Resolver(choose, fallback=fallback)
    resolver._json_choose = choose_json
    resolver.required_properties = (name,)
    return resolver
