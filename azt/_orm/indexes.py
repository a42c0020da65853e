"""Declarative secondary indexes: :class:`Index` declares one on an entity class, and this
module builds its rows and the operations that keep them in step with the main rows.

An index row lives in the main row's partition, under a RowKey in the range reserved for
azt's index rows: every such RowKey starts with :data:`RESERVED` (U+FFFD, the highest
character an Atom/XML body can carry, then ``ix;``), so the main rows of a class that
declares indexes are exactly the RowKeys below it, and every other reader tells index rows
by that prefix. The index row's RowKey is::

    U+FFFD ix; <index name> ; <key part> ; ... ; <main RowKey>

with each part encoded so that it sorts as its value does (zero-padded numbers, ticks for
times) and escaped so that it never holds ``;`` or a character keys may not hold.
``Holds.KEYS`` rows are just the keys (the main RowKey is the last part); ``Holds.ENTITY``
rows also carry a copy of every property of the main row.

An index declared ``across_partitions=True`` keeps its rows in partitions of its own
instead (for "find by email" over all users)::

    PartitionKey: U+FFFD ix; <index name> ; <first key part>
    RowKey:       U+FFFD ix; <index name> ; <key part> ; ... ; <main PartitionKey> ; <main RowKey>

The service cannot write two partitions atomically, so such a row is written after the
main row's transaction commits: the transaction holds an *intent row* (RowKey
``U+FFFD ix;~;<main RowKey>;<unique id>``, see ``azt._core.intents``) listing the index
rows to put and delete, which the client carries out and then deletes; a crash in between
leaves the intent for ``repair_index``.

Example::

    >>> class Post(Entity):
    ...     category: Prop[str] = prop(default="")
    ...     class Meta:
    ...         indexes = (Index("by_category", "category"),)
    >>> index_row_keys(Post("brady", "p1", category="Sports"))
    {'by_category': '\\ufffdix;by_category;Sports;p1'}
"""

from __future__ import annotations

import enum
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import attrs

from azt._core.batch import BatchOperation
from azt._core.intents import INTENT_PROPERTY, Intent
from azt._core.results import UpdateMode
from azt._edm.entity import TableEntity, partial_of
from azt._edm.types import EdmType
from azt._edm.validation import validate_key
from azt._errors import ValidationError
from azt._orm.keys import padded, ticks_key
from azt._orm.planner import ordinal

__all__ = [
    "INDEX_RECORD",
    "INTENT_PREFIX",
    "RESERVED",
    "Holds",
    "Index",
    "IndexDef",
    "companion_operations",
    "copy_index_record",
    "declared_indexes",
    "encode_part",
    "index_partition_key",
    "index_prefix",
    "index_row",
    "index_row_keys",
    "intent_row_key",
    "is_index_partition",
    "is_index_row_key",
    "is_intent_row_key",
    "main_keys",
    "main_row_key",
    "note_index_keys",
    "recorded_index_keys",
]

#: every index row's RowKey starts with this marker (U+FFFD, then ``ix;``); no main row
#: written by azt does, and a class that declares indexes keeps its main RowKeys below it
RESERVED: Final = "\ufffdix;"
SEP: Final = ";"
#: the RowKey prefix of intent rows (``~`` is never the first character of an index name)
INTENT_PREFIX: Final = RESERVED + "~" + SEP
#: the slot of entity objects that records the index RowKeys of their stored version
INDEX_RECORD: Final = "_azt_ix"

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,62}")
_ESCAPE = re.compile(r"[%;/\\#?\x00-\x1f\x7f-\x9f\ufffd]")
_INT64 = 2**63


class Holds(enum.StrEnum):
    """What an index row holds.

    ``ENTITY``: a copy of the whole entity (a lookup reads the index rows only; every
    write of the entity also rewrites its copy). ``KEYS``: only the keys (a lookup reads
    the small index rows, then the main rows by point reads; writes touch the index row
    only when an indexed property changes). ``PROPERTIES`` (``holds=("title", "year")``):
    a copy of those; a lookup that needs only them reads the index rows alone, others read
    the main rows as ``KEYS`` does; every write of the entity rewrites the row.

    Example::

        >>> Holds("keys") is Holds.KEYS
        True
    """

    ENTITY = "entity"
    KEYS = "keys"
    PROPERTIES = "properties"


#: a key part: a property name, or (property name, function from its value to a key str)
PartSpec = str | tuple[str, Callable[[Any], str]]


@attrs.frozen(init=False)
class Index:
    """A secondary index over properties of an entity class, declared in the class's
    ``Meta.indexes``.

    ``parts`` are property names (Python attribute names) in key order; a part may be
    ``(name, function)`` where ``function`` turns the value into a key string (e.g.
    ``lambda t: reverse_ticks_key(t)`` for newest first). Without a function, ``str``,
    ``bool``, ``int`` (Int32/Int64), ``datetime``, ``UUID`` and ``Enum`` values are
    encoded so that keys sort as the values do. An entity whose indexed property is
    ``None`` has no row in that index (a sparse index). ``holds`` is :class:`Holds`, or a
    tuple of property names the rows hold a copy of (a projection: ``Holds.PROPERTIES``).

    ``across_partitions=True`` keeps the index rows in partitions of their own, one per
    value of the first part, so that a lookup needs no PartitionKey (for "find by email"
    over all users). Such an index is eventually consistent, not atomic (see the
    "Secondary indexes" docs page), and holds keys only: a copy in another partition could
    not be checked against its entity without reading the entity.

    Example::

        >>> Index("by_category", "category", holds=Holds.KEYS).name
        'by_category'
        >>> Index("by_email", "email", across_partitions=True).across_partitions
        True
        >>> Index("by_cat", "category", holds=("title",)).held
        ('title',)
    """

    name: str
    parts: tuple[PartSpec, ...]
    holds: Holds
    across_partitions: bool
    held: tuple[str, ...]

    def __init__(
        self,
        name: str,
        *parts: PartSpec,
        holds: Holds | str | tuple[str, ...] = Holds.KEYS,
        across_partitions: bool = False,
    ) -> None:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise TypeError(
                f"index name {name!r}: a letter, then letters, digits or '_' (at most 63)"
            )
        if not parts:
            raise TypeError(f"index {name!r} names no property")
        for part in parts:
            ok = isinstance(part, str) or (
                isinstance(part, tuple)
                and len(part) == 2
                and isinstance(part[0], str)
                and callable(part[1])
            )
            if not ok:
                raise TypeError(
                    f"index {name!r}: a part is a property name or (name, function), got {part!r}"
                )
        if not isinstance(across_partitions, bool):
            raise TypeError(f"index {name!r}: across_partitions is True or False")
        held: tuple[str, ...] = ()
        if not isinstance(holds, tuple) and Holds(holds) is Holds.PROPERTIES:
            holds = ()  # the properties must be named
        if isinstance(holds, tuple):
            if not holds or not all(isinstance(h, str) for h in holds):
                raise TypeError(f"index {name!r}: holds=(...) names at least one property")
            held, holds = tuple(holds), Holds.PROPERTIES
        if across_partitions and Holds(holds) is not Holds.KEYS:
            raise TypeError(
                f"index {name!r}: an index across partitions holds keys only (a copy in "
                "another partition could not be checked against its entity without reading it)"
            )
        self.__attrs_init__(name, tuple(parts), Holds(holds), across_partitions, held)


@attrs.frozen
class IndexDef:
    """An :class:`Index` bound to its class: the properties of its parts and their key
    encoders.

    Example::

        >>> class Tag(Entity):
        ...     label: Prop[str] = prop(default="")
        ...     class Meta:
        ...         indexes = (Index("by_label", "label"),)
        >>> d = declared_indexes(Tag)[0]
        >>> d.attrs_, d.holds
        (('label',), <Holds.KEYS: 'keys'>)
    """

    name: str
    attrs_: tuple[str, ...]
    wires: tuple[str, ...]
    encoders: tuple[Callable[[Any], str], ...]
    holds: Holds
    #: rows in partitions of their own (``Index(..., across_partitions=True)``)
    across: bool = False
    held: tuple[str, ...] = ()  # Holds.PROPERTIES: the attributes held, and their wires
    held_wires: tuple[str, ...] = ()

    @property
    def prefix(self) -> str:
        """The RowKey prefix of every row of this index.

        Example::

            >>> IndexDef("i", ("a",), ("a",), (str,), Holds.KEYS).prefix
            '\\ufffdix;i;'
        """
        return RESERVED + self.name + SEP

    def row_key(self, values: Sequence[Any], main_rk: str, main_pk: str = "") -> str | None:
        """The index RowKey for these part values and main RowKey (``None``: a value is
        ``None``, so the entity has no row in this index); an index across partitions
        also holds the main PartitionKey. A key over the service's limit raises
        :class:`azt.ValidationError`.

        Example::

            >>> IndexDef("i", ("a",), ("a",), (encode_part,), Holds.KEYS).row_key(["x"], "r")
            '\\ufffdix;i;x;r'
            >>> IndexDef("e", ("a",), ("a",), (encode_part,), Holds.KEYS, True).row_key(
            ...     ["x"], "r", "p")
            '\\ufffdix;e;x;p;r'
        """
        if any(v is None for v in values):
            return None
        parts = [enc(v) for enc, v in zip(self.encoders, values, strict=True)]
        main = _escape(main_pk) + SEP + _escape(main_rk) if self.across else _escape(main_rk)
        key = self.prefix + SEP.join(parts) + SEP + main
        if self.across:
            validate_key(f"the PartitionKey of index {self.name!r}", self.prefix + parts[0])
        return validate_key(f"the RowKey of index {self.name!r}", key)

    def lookup_prefix(self, values: Sequence[Any]) -> str:
        """The RowKey prefix of the rows whose first ``len(values)`` parts equal
        ``values``.

        Example::

            >>> IndexDef("i", ("a",), ("a",), (encode_part,), Holds.KEYS).lookup_prefix(["x"])
            '\\ufffdix;i;x;'
        """
        parts = [enc(v) for enc, v in zip(self.encoders, values, strict=False)]
        return self.prefix + "".join(p + SEP for p in parts)

    def partition_for(self, first: Any) -> str:
        """The PartitionKey of the rows of an index across partitions whose first part is
        ``first``.

        Example::

            >>> IndexDef("e", ("a",), ("a",), (encode_part,), Holds.KEYS, True).partition_for("x")
            '\\ufffdix;e;x'
        """
        return self.prefix + self.encoders[0](first)


def _escape(s: str) -> str:
    if _ESCAPE.search(s) is None:
        return s
    return _ESCAPE.sub(lambda m: f"%{ord(m.group()):02X}" if ord(m.group()) < 256 else "%FFFD", s)


def _unescape(s: str) -> str:
    if "%" not in s:
        return s
    out: list[str] = []
    i = 0
    while i < len(s):
        ch = s[i]
        if ch == "%":
            if s.startswith("%FFFD", i):
                out.append("\ufffd")
                i += 5
                continue
            out.append(chr(int(s[i + 1 : i + 3], 16)))
            i += 3
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def encode_part(value: Any) -> str:
    """A value as an index key part that sorts as the value does: strings escaped
    (``%`` and characters keys may not hold, and ``;``, as ``%XX``), ``bool`` as 0/1,
    ``int`` offset into 20 zero-padded digits (negative numbers sort first), aware
    ``datetime`` as 19-digit ticks, ``UUID`` as text, an ``Enum`` as its value.

    Example::

        >>> encode_part("a;b/c"), encode_part(True), encode_part(-1) < encode_part(0)
        ('a%3Bb%2Fc', '1', True)
    """
    if isinstance(value, enum.Enum):
        return encode_part(value.value)
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        if not -_INT64 <= value < _INT64:
            raise ValidationError(f"an indexed int must fit 64 bits, got {value}")
        return padded(value + _INT64, 20)
    if isinstance(value, str):
        return _escape(value)
    if isinstance(value, datetime):
        return ticks_key(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    raise ValidationError(
        f"cannot index a {type(value).__name__} value without a key function: declare the "
        "part as (name, function)"
    )


_DEFAULT_EDM = {
    EdmType.STRING,
    EdmType.BOOLEAN,
    EdmType.INT32,
    EdmType.INT64,
    EdmType.DATETIME,
    EdmType.GUID,
}


def _checked_encoder(fn: Callable[[Any], str], where: str) -> Callable[[Any], str]:
    def encode(value: Any) -> str:
        out = fn(value)
        if not isinstance(out, str):
            raise ValidationError(f"{where}: the key function returned {type(out).__name__}")
        return _escape(out)

    return encode


def bind_indexes(
    cls_name: str, declared: object, by_attr: Mapping[str, Any]
) -> tuple[IndexDef, ...]:
    """The class's ``Meta.indexes`` checked against its properties (a :class:`TypeError`
    at class creation for anything wrong).

    Example::

        >>> bind_indexes("X", (), {})
        ()
    """
    if declared is None:
        return ()
    if isinstance(declared, Index) or not isinstance(declared, Iterable):
        raise TypeError(f"{cls_name}: Meta.indexes is a tuple of Index")
    out: list[IndexDef] = []
    seen: set[str] = set()
    for ix in declared:
        if not isinstance(ix, Index):
            raise TypeError(f"{cls_name}: Meta.indexes holds Index objects, got {ix!r}")
        if ix.name in seen:
            raise TypeError(f"{cls_name}: two indexes are named {ix.name!r}")
        seen.add(ix.name)
        names: list[str] = []
        wires: list[str] = []
        encoders: list[Callable[[Any], str]] = []
        for part in ix.parts:
            attr, fn = (part, None) if isinstance(part, str) else part
            p = by_attr.get(attr)
            where = f"{cls_name} index {ix.name!r}"
            if p is None or attr in ("Timestamp", "ETag"):
                raise TypeError(f"{where}: {attr!r} is not a data property of {cls_name}")
            if p.is_key:
                raise TypeError(f"{where}: the keys are indexed already; index other properties")
            if fn is None:
                if p.edm not in _DEFAULT_EDM:
                    raise TypeError(
                        f"{where}: {attr} is {p.edm}; give a key function: ({attr!r}, function)"
                    )
                encoders.append(encode_part)
            else:
                encoders.append(_checked_encoder(fn, where))
            names.append(attr)
            wires.append(p.wire)
        held_wires: list[str] = []
        for attr in ix.held:
            p = by_attr.get(attr)
            if p is None or p.is_key or attr in ("Timestamp", "ETag"):
                raise TypeError(f"{cls_name} index {ix.name!r}: {attr!r} is not a data property")
            held_wires.append(p.wire)
        out.append(
            IndexDef(
                ix.name,
                tuple(names),
                tuple(wires),
                tuple(encoders),
                ix.holds,
                ix.across_partitions,
                tuple(ix.held),
                tuple(held_wires),
            )
        )
    return tuple(out)


def declared_indexes(cls: type) -> tuple[IndexDef, ...]:
    """The indexes an entity class declares (empty for anything else).

    Example::

        >>> declared_indexes(int)
        ()
    """
    info = getattr(cls, "__azt_info__", None)
    found = getattr(info, "indexes", ())
    return found if isinstance(found, tuple) else ()


def is_index_row_key(row_key: object) -> bool:
    """Whether a RowKey lies in the range reserved for index rows.

    Example::

        >>> is_index_row_key("\\ufffdix;i;x;r"), is_index_row_key("r")
        (True, False)
    """
    return isinstance(row_key, str) and row_key.startswith(RESERVED)


def main_row_key(index_row_key: str) -> str:
    """The main row's RowKey an index row points to (its last part).

    Example::

        >>> main_row_key("\\ufffdix;i;x;a%3Bb")
        'a;b'
    """
    return _unescape(index_row_key.rsplit(SEP, 1)[1])


def main_keys(index_row_key: str) -> tuple[str, str]:
    """The (PartitionKey, RowKey) of the main row a row of an index across partitions
    points to (its last two parts).

    Example::

        >>> main_keys("\\ufffdix;e;x;p%3B1;r")
        ('p;1', 'r')
    """
    _, pk, rk = index_row_key.rsplit(SEP, 2)
    return _unescape(pk), _unescape(rk)


def index_partition_key(index_row_key: str) -> str:
    """The PartitionKey of a row of an index across partitions, from its RowKey (the index
    name and the first part).

    Example::

        >>> index_partition_key("\\ufffdix;e;x;y;p;r")
        '\\ufffdix;e;x'
    """
    name, first, _ = index_row_key[len(RESERVED) :].split(SEP, 2)
    return RESERVED + name + SEP + first


def is_index_partition(partition_key: object) -> bool:
    """Whether a PartitionKey is one of the partitions indexes across partitions keep
    their rows in.

    Example::

        >>> is_index_partition("\\ufffdix;e;x"), is_index_partition("users")
        (True, False)
    """
    return isinstance(partition_key, str) and partition_key.startswith(RESERVED)


def intent_row_key(main_rk: str) -> str:
    """A new intent row's RowKey for a write of the main row ``main_rk`` (unique, so that
    every write records its own intent).

    Example::

        >>> intent_row_key("r").startswith(INTENT_PREFIX + "r;")
        True
    """
    return INTENT_PREFIX + _escape(main_rk) + SEP + uuid.uuid4().hex


def is_intent_row_key(row_key: object) -> bool:
    """Whether a RowKey is an intent row's.

    Example::

        >>> is_intent_row_key(intent_row_key("r")), is_intent_row_key("\\ufffdix;i;x;r")
        (True, False)
    """
    return isinstance(row_key, str) and row_key.startswith(INTENT_PREFIX)


def intent_main_row_key(row_key: str) -> str:
    """The main RowKey an intent row was written with.

    Example::

        >>> intent_main_row_key(intent_row_key("a;b"))
        'a;b'
    """
    return _unescape(row_key[len(INTENT_PREFIX) :].rsplit(SEP, 1)[0])


def index_name_of(index_row_key: str) -> str:
    """The index an index row belongs to.

    Example::

        >>> index_name_of("\\ufffdix;by_x;a;r")
        'by_x'
    """
    return index_row_key[len(RESERVED) :].split(SEP, 1)[0]


def index_prefix(name: str) -> str:
    """The RowKey prefix of the rows of the index ``name``.

    Example::

        >>> index_prefix("by_x")
        '\\ufffdix;by_x;'
    """
    return RESERVED + name + SEP


def index_row_keys(obj: Any) -> dict[str, str | None]:
    """The index RowKeys of an entity object's current values (``None``: no row in that
    index); an indexed property left unset by a projection raises ``AttributeError``.

    Example::

        >>> index_row_keys(object())
        {}
    """
    defs = declared_indexes(type(obj))
    if not defs:
        return {}
    rk = obj.RowKey
    pk = obj.PartitionKey
    return {d.name: d.row_key([getattr(obj, a) for a in d.attrs_], rk, pk) for d in defs}


def recorded_index_keys(obj: Any) -> dict[str, str | None] | None:
    """The index RowKeys recorded on an entity object for its stored version (when it was
    read or last written), ``None`` when it carries no record.

    Example::

        >>> recorded_index_keys(object()) is None
        True
    """
    rec = getattr(obj, INDEX_RECORD, None)
    return rec if isinstance(rec, dict) else None


def note_index_keys(obj: Any) -> None:
    """Record on an object of an indexed class the index RowKeys of its current values:
    what it was just read as, or written as (projections that left an indexed property
    unset record nothing).

    Example::

        >>> note_index_keys(object())
    """
    if not declared_indexes(type(obj)):
        return
    try:
        keys = index_row_keys(obj)
    except AttributeError:
        keys = None
    object.__setattr__(obj, INDEX_RECORD, keys)


def copy_index_record(source: Any, target: Any) -> None:
    """Give ``target`` the index record of ``source`` (a fresh read of the same entity
    whose ETag ``target`` now carries).

    Example::

        >>> copy_index_record(object(), object())
    """
    if declared_indexes(type(target)):
        object.__setattr__(target, INDEX_RECORD, recorded_index_keys(source))


def index_row(d: IndexDef, row_key: str, entity: Mapping[str, Any]) -> TableEntity:
    """The row of index ``d`` for the main ``entity`` (keys only, or a copy).

    Example::

        >>> d = IndexDef("i", ("a",), ("a",), (encode_part,), Holds.KEYS)
        >>> index_row(d, "\\ufffdix;i;x;r", {"PartitionKey": "p", "RowKey": "r", "a": "x"})
        TableEntity({'PartitionKey': 'p', 'RowKey': '\\ufffdix;i;x;r'})
    """
    if d.holds is Holds.KEYS:
        return TableEntity(PartitionKey=entity["PartitionKey"], RowKey=row_key)
    types = getattr(entity, "edm_types", None) or {}
    if d.holds is Holds.PROPERTIES:
        row = TableEntity(PartitionKey=entity["PartitionKey"], RowKey=row_key)
        for wire in d.held_wires:
            if wire in entity:
                row[wire] = entity[wire]
                if wire in types:
                    row.edm_types[wire] = types[wire]
        return row
    row = TableEntity(entity)
    if types:
        row.edm_types = dict(types)
    row["RowKey"] = row_key
    return row


def companion_operations(
    obj: Any,
    kind: str,
    mode: UpdateMode | None,
    payload: Mapping[str, Any] | None,
    etag: str | None,
) -> list[BatchOperation]:
    """The index-row operations that must go in the same transaction as a write of
    ``obj`` (``kind``: ``create``, ``update``, ``upsert`` or ``delete``; ``payload``: the
    main row's entity as sent, ``etag``: its ``If-Match``). Refused with
    :class:`azt.ValidationError`, before anything is sent: an unconditional change of an
    indexed entity (the stored indexed values would be unknown), a change of an object
    that carries no record of its stored index keys (build it by reading, or attach it),
    and a copy-holding index row rebuilt from a partial object.

    Example::

        >>> companion_operations(object(), "create", None, {}, None)
        []
    """
    rk = getattr(obj, "RowKey", None)
    defs = declared_indexes(type(obj))
    if is_index_row_key(rk) or (defs and isinstance(rk, str) and ordinal(rk) >= RESERVED):
        raise ValidationError(
            f"RowKey {rk!r}: RowKeys starting with {RESERVED!r} are reserved for secondary "
            "index rows, and a class that declares indexes keeps its RowKeys below them"
        )
    if not defs:
        return []
    if is_index_partition(getattr(obj, "PartitionKey", None)) and any(d.across for d in defs):
        raise ValidationError(
            f"PartitionKey {obj.PartitionKey!r}: PartitionKeys starting with {RESERVED!r} "
            "hold the rows of indexes across partitions"
        )
    label = f"{type(obj).__name__}(PartitionKey={obj.PartitionKey!r}, RowKey={obj.RowKey!r})"
    if kind == "create":
        old: Mapping[str, str | None] = {}
    else:
        rec = recorded_index_keys(obj)
        if kind == "upsert" or etag in (None, "*") or rec is None:
            why = (
                "an upsert is unconditional"
                if kind == "upsert"
                else "the write is unconditional"
                if etag in (None, "*")
                else "the object carries no record of its stored indexed values"
            )
            raise ValidationError(
                f"{kind} of {label} refused, nothing was sent: {type(obj).__name__} declares "
                f"indexes, whose rows are kept exact only by writes conditional on the ETag "
                f"of a version whose indexed values are known ({why}); read the entity "
                "(get_entity, a query, or a context) and write it with its ETag"
            )
        old = rec
    ops: list[BatchOperation] = []
    pk = obj.PartitionKey
    puts: list[tuple[str, str]] = []
    gone: list[tuple[str, str]] = []
    if kind == "delete":
        for d in defs:
            o = old.get(d.name)
            if o is None:
                continue
            if d.across:
                gone.append((index_partition_key(o), o))
            else:
                ops.append(BatchOperation("delete", {"PartitionKey": pk, "RowKey": o}, etag="*"))
        return _with_intent(ops, pk, obj.RowKey, puts, gone)
    assert payload is not None
    try:
        new = index_row_keys(obj)
    except AttributeError:
        raise ValidationError(
            f"{kind} of {label} refused, nothing was sent: an indexed property is unset "
            "(read with a projection); read the whole entity to change it"
        ) from None
    partial = partial_of(obj) is not None
    for d in defs:
        o, n = old.get(d.name), new[d.name]
        if d.across:
            _check_merge_keeps(d, o, n, mode, obj, kind, label)
            if o != n:
                if o is not None:
                    gone.append((index_partition_key(o), o))
                if n is not None:
                    puts.append((index_partition_key(n), n))
            continue
        copy = d.holds is not Holds.KEYS  # a copy of the entity or of some properties
        _check_merge_keeps(d, o, n, mode, obj, kind, label)
        if o == n:
            if n is not None and copy and kind != "create":
                ops.append(
                    BatchOperation(
                        "upsert", index_row(d, n, payload), mode=mode or UpdateMode.REPLACE
                    )
                )
            elif n is not None and kind == "create":
                ops.append(
                    BatchOperation("upsert", index_row(d, n, payload), mode=UpdateMode.REPLACE)
                )
            continue
        if o is not None:
            ops.append(BatchOperation("delete", {"PartitionKey": pk, "RowKey": o}, etag="*"))
        if n is not None:
            if copy and partial:
                raise ValidationError(
                    f"{kind} of {label} refused, nothing was sent: index {d.name!r} holds "
                    "whole entities and its row moves, but the object does not hold the "
                    "whole entity; read the whole entity to change an indexed property"
                )
            full = payload if not copy else _full_entity(obj, payload)
            ops.append(BatchOperation("upsert", index_row(d, n, full), mode=UpdateMode.REPLACE))
    return _with_intent(ops, pk, obj.RowKey, puts, gone)


def _check_merge_keeps(
    d: IndexDef,
    old: str | None,
    new: str | None,
    mode: UpdateMode | None,
    obj: Any,
    kind: str,
    label: str,
) -> None:
    """Refuse a MERGE that would clear an indexed property (the service keeps the stored
    value, so the index would no longer match)."""
    if new is None and old is not None and mode is UpdateMode.MERGE:
        cleared = [a for a in d.attrs_ if getattr(obj, a) is None]
        raise ValidationError(
            f"{kind} of {label} refused, nothing was sent: a MERGE cannot remove the "
            f"indexed propert{'y' if len(cleared) == 1 else 'ies'} {cleared} (the service "
            f"keeps the stored value, so index {d.name!r} would no longer match); "
            "replace the entity (UpdateMode.REPLACE, SaveChangesOptions.REPLACE_ON_UPDATE)"
        )


def _with_intent(
    ops: list[BatchOperation],
    pk: str,
    rk: str,
    puts: list[tuple[str, str]],
    gone: list[tuple[str, str]],
) -> list[BatchOperation]:
    """``ops`` and, when rows of indexes across partitions change, the intent row that
    records them (written in the main row's transaction, carried out after it)."""
    if puts or gone:
        row = TableEntity(PartitionKey=pk, RowKey=intent_row_key(rk))
        row[INTENT_PROPERTY] = Intent(tuple(puts), tuple(gone)).encode()
        ops.append(BatchOperation("upsert", row, mode=UpdateMode.REPLACE))
    return ops


def _full_entity(obj: Any, payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """The whole entity of ``obj`` (a MERGE payload may carry only changed properties)."""
    to_entity = getattr(obj, "to_entity", None)
    if callable(to_entity):
        full: Mapping[str, Any] = to_entity()
        return full
    return payload
