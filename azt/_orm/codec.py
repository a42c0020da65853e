"""Per-class encode/decode between entity objects and wire-shaped dicts, generated once
per class (and per ``$select`` projection) with ``cattrs.gen`` and cached:
``from_json`` / ``decode_rows`` (the service's JSON rows, any metadata level, to objects),
``from_entity`` (a ``TableEntity``), ``to_entity`` and ``to_json``. The value hooks and type
tables they are built from are in ``azt._orm.codec_hooks``; the query path's page decoder
in ``azt._orm.page_decoder``.

A JSON ``null`` (the service never sends one) counts as an absent property: default, None
or :class:`MissingPropertyError`. A value of another stored EDM type than the declared one
(bar the lossless widenings Int32 -> Int64 / Double) is refused with
:class:`azt.WireDecodeError` naming the row, the property and both types.

Example::

    >>> codec_for(Movie).decode_rows([{"PartitionKey": "a", "RowKey": "b", "rating": 4}])[0].rating
    4.0
"""

from __future__ import annotations

import binascii
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar, cast

import attrs
from cattrs.fns import identity
from cattrs.gen import (
    make_dict_structure_fn_from_attrs,
    make_dict_unstructure_fn_from_attrs,
    override,
)

from azt._core.wire import WireDecodeError
from azt._core.wire.writers import declared_writer
from azt._edm.entity import PARTIAL_ATTR, PartialRead, SharedEdmTypes, TableEntity
from azt._edm.types import EdmType
from azt._orm.codec_hooks import (
    _ANN,
    _ANNOTATED,
    _MISSING,
    _PY_TYPE,
    _READS,
    ANNOTATED,
    Form,
    MissingPropertyError,
    _json_type_check,
    _known,
    _missing,
    _partial_markers,
    _plain_store,
    _slot_setter,
    _stored_as,
    _struct_hook,
    _unstruct_hook,
    _wrong_type,
    converter,
    layout_twin,
    make_converter,
    wire_type,
)
from azt._orm.columns import EntityInfo, Prop, entity_info
from azt._orm.page_decoder import page_decoder

E = TypeVar("E")

__all__ = [
    "ANNOTATED",
    "EntityCodec",
    "MissingPropertyError",
    "codec_for",
    "converter",
    "json_hook",
    "make_converter",
    "wire_type",
]


def _meta(d: Mapping[str, Any]) -> tuple[Any, str | None, PartialRead | None]:
    """(Timestamp as text or datetime, ETag, what the row itself lacks) of a decoded row,
    without forcing the TableEntity to parse its Timestamp. A TableEntity with a
    :class:`PartialRead` record always has its metadata built (see ``set_partial``), so
    page rows, which have not, cost no lookup of the record."""
    if isinstance(d, TableEntity):
        meta = getattr(d, "_meta", None)
        if meta is not None:
            return meta.timestamp, meta.etag, getattr(d, PARTIAL_ATTR, None)
        return getattr(d, "_ts", None), getattr(d, "_etag", None), None
    return d.get("Timestamp"), d.get("odata.etag"), None


# --------------------------------------------------------------------------------------------
# Per-class codecs
# --------------------------------------------------------------------------------------------


class EntityCodec(Generic[E]):
    """The compiled functions for one entity class (optionally one projection of it).

    Example::

        >>> codec = codec_for(Movie)
        >>> codec.from_entity({"PartitionKey": "a", "RowKey": "b"}).RowKey
        'b'
    """

    __slots__ = (
        "_check_json",
        "_decode_page",
        "_from_json_fast",
        "_mark_json",
        "_mark_rows",
        "cls",
        "from_entity",
        "from_json",
        "info",
        "select",
        "to_entity",
        "to_json",
    )

    cls: type[E]
    info: EntityInfo
    select: frozenset[str] | None
    from_json: Callable[[Mapping[str, Any]], E]
    from_entity: Callable[[Mapping[str, Any]], E]
    to_entity: Callable[[E], TableEntity]
    to_json: Callable[[E], dict[str, Any]]
    _from_json_fast: Callable[[Mapping[str, Any]], E]
    _check_json: Callable[[Mapping[str, Any]], None]
    _decode_page: Callable[[list[Any]], list[E]]
    #: record on one object (or, ``_mark_rows``, on a page's objects) what the row had
    #: that the object does not hold: see ``_partial_markers``
    _mark_json: Callable[[Any, Mapping[str, Any]], None]
    _mark_rows: Callable[[list[Any], list[Any]], None]

    # The second JSON decoder beside azt._core.wire.json (JSON -> TableEntity, for untyped
    # dicts): this one converts by the declared EDM types straight into objects.
    def decode_rows(self, rows: list[Any]) -> list[E]:
        """Decode the JSON entity objects of one query page (any metadata level); a
        malformed row raises :class:`azt.WireDecodeError` naming the row and property.

        Example::

            >>> codec_for(Movie).decode_rows([{"PartitionKey": "a", "RowKey": "b"}])[0].RowKey
            'b'
        """
        try:
            return self._decode_page(rows)  # (which marks what rows had beyond objects)
        except Exception:
            pass
        return self._decode_general(rows)

    def _decode_general(self, rows: list[Any]) -> list[E]:
        """``decode_rows`` of a page the generated decoder left: the annotations checked
        first, then every row through the general functions (nulls as absent, errors
        named)."""
        dec = self._from_json_fast
        check = self._check_json
        try:
            for r in rows:
                check(r)
            out = [dec(r) for r in rows]
        except WireDecodeError:
            raise
        except _DECODE_ERRORS:
            pass
        else:
            self._mark_rows(rows, out)
            return out
        # the slow path of a bad page: row by row, nulls as absent, errors named
        out = []
        for row in rows:
            if type(row) is not dict:
                raise WireDecodeError(
                    f"an entity must be a JSON object, got {type(row).__name__}"
                ) from None
            out.append(self.from_json(row))  # marks what the row had beyond the object
        return out


_DECODE_ERRORS = (ValueError, TypeError, AttributeError, KeyError, binascii.Error)


def _without_nulls(
    fn: Callable[[Mapping[str, Any]], E], d: Mapping[str, Any], exc: BaseException
) -> E:
    """Decode again with JSON nulls treated as absent (the service never sends null; other
    writers might), or re-raise ``exc`` if there is no null to blame."""
    if (
        isinstance(exc, MissingPropertyError)
        or not isinstance(d, Mapping)
        or None not in d.values()
    ):
        raise exc
    return fn({k: v for k, v in d.items() if v is not None})


def _retry_without_nulls(
    info: EntityInfo,
    fn: Callable[[Mapping[str, Any]], E],
    d: Mapping[str, Any],
    exc: BaseException,
    form: Form,
) -> E:
    """The slow path of a row that failed to decode: again without its nulls, else a
    :class:`WireDecodeError` naming the property (missing properties stay
    :class:`MissingPropertyError`)."""
    try:
        return _without_nulls(fn, d, exc)
    except MissingPropertyError:
        raise
    except _DECODE_ERRORS as again:
        if not isinstance(d, Mapping):
            raise
        raise _diagnose(info, d, again, form) from None


_CACHE: dict[tuple[type, frozenset[str] | None], EntityCodec[Any]] = {}
#: the codecs of whole reads and writes (``select`` None) by class alone: what every write
#: of an entity object asks for, without building the key tuple
_PLAIN: dict[type, EntityCodec[Any]] = {}


def codec_for(cls: type[E], select: frozenset[str] | None = None) -> EntityCodec[E]:
    """The cached codec of ``cls``; ``select`` (wire names) builds a projection decoder,
    which leaves properties outside the projection unset on the objects it makes.

    Example::

        >>> codec_for(Movie) is codec_for(Movie)
        True
    """
    if select is None:
        codec = _PLAIN.get(cls)
        if codec is not None:
            return codec
    key = (cls, select)
    codec = _CACHE.get(key)
    if codec is None:
        codec = _build(cls, select)
        if codec.info.evolution is not None:
            codec = _evolving(codec)
        _CACHE[key] = codec
    if select is None:
        _PLAIN[cls] = codec
    return codec


def json_hook(p: Prop[Any]) -> Callable[[Any], Any]:
    """A property's value as a JSON body carries it (its unstructure hook; ``None`` kept).

    Example::

        >>> json_hook(entity_info(Movie).by_attr["rating"])(float("nan"))
        'NaN'
    """
    return _unstruct_hook(p, "json")


class _EvolvingCodec(EntityCodec[E]):
    """The codec of a class with ``Meta.evolution``: each row is brought to the current
    shape (azt._orm.evolution) before the generated decoders read it, and every write
    carries the shape marker. Classes without an evolution never meet this type."""

    __slots__ = ()

    def decode_rows(self, rows: list[Any]) -> list[E]:
        up = self.info.evolution.upgrade_json  # type: ignore[union-attr]
        return super().decode_rows([up(r) if type(r) is dict else r for r in rows])


def _evolving(plain: EntityCodec[E]) -> EntityCodec[E]:
    evo = plain.info.evolution
    assert evo is not None
    codec: EntityCodec[E] = _EvolvingCodec()
    for name in EntityCodec.__slots__:
        setattr(codec, name, getattr(plain, name))
    up_json, up_value = evo.upgrade_json, evo.upgrade_value
    from_json, from_entity = plain.from_json, plain.from_entity
    to_entity, to_json = plain.to_entity, plain.to_json
    codec.from_json = lambda d: from_json(up_json(d))
    codec.from_entity = lambda d: from_entity(up_value(d))
    marker, version = evo.marker, evo.version
    if marker is not None:

        def marked_entity(obj: E) -> TableEntity:
            e = to_entity(obj)
            e[marker] = version
            return e

        def marked_json(obj: E) -> dict[str, Any]:
            e = to_json(obj)
            e[marker] = version
            return e

        codec.to_entity = marked_entity
        codec.to_json = marked_json
    return codec


def _constructor(
    cls: type, fields: list[tuple[Prop[Any], Any, type | None]], kind: str
) -> Callable[..., Any]:
    """The read path's constructor: keyword arguments straight into the slots.

    ``fields`` is (property, default, exact) where default is ``attrs.NOTHING`` (required:
    a missing value raises :class:`MissingPropertyError`), an ``attrs.Factory``,
    ``_MISSING`` (left unset when absent) or a value, and ``exact`` is the class a value
    without a hook (String, Int32, Boolean) must have: one ``__class__`` test, so that a
    column stored with another type is refused rather than put in a typed slot. For such
    values a null counts as absent; values with a hook refuse a null, and the row is then
    decoded again without its nulls.
    """
    # Parameter names are the property names; every other name starts with "_", which
    # property names cannot.
    ns: dict[str, Any] = {
        "_new": object.__new__,
        "_cls": cls,
        "_M": _MISSING,
        "_miss": _missing,
        "_wrong": _wrong_type,
    }
    twin = layout_twin(cls)  # filled by plain stores, then given its class
    ns["_TW"] = cls if twin is None else twin
    params: list[str] = []
    body = ["    _o = _new(_TW)"]
    # the keys' parameters (their Python names), for messages about the other properties
    key_attr = {p.wire: p.attr for p, _, _ in fields if p.is_key}
    pk_attr, rk_attr = key_attr.get("PartitionKey"), key_attr.get("RowKey")
    for i, (p, default, exact) in enumerate(fields):
        a = p.attr
        if twin is not None and _plain_store(cls, twin, a):
            put = f"_o.{a} = {a}"
        else:
            ns[f"_S{i}"] = _slot_setter(cls, a)
            put = f"_S{i}(_o, {a})"
        t = f"_T{i}"
        ns[t] = exact
        wrong = f"_wrong(_cls, {a!r}, {t}, {a})"
        if default is attrs.NOTHING:
            params.append(f"{a}=_M")
            pk = pk_attr if pk_attr is not None and p.wire != "PartitionKey" else "None"
            rk = rk_attr if rk_attr is not None and not p.is_key else "None"
            body += [
                f"    if {a} is _M or {a} is None:",
                f"        _miss(_cls.__name__, {a!r}, {p.wire!r}, {pk}, {rk})",
            ]
            if exact is not None:
                body += [f"    if {a}.__class__ is not {t}:", f"        {a} = {wrong}"]
        elif isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            ns[f"_F{i}"] = default.factory
            params.append(f"{a}=_M")
            if exact is not None:
                body += [
                    f"    if {a}.__class__ is not {t}:",
                    f"        {a} = _F{i}() if {a} is _M or {a} is None else {wrong}",
                ]
            else:
                body += [f"    if {a} is _M:", f"        {a} = _F{i}()"]
        elif default is _MISSING:
            params.append(f"{a}=_M")
            if exact is not None:
                body += [
                    f"    if {a} is not _M and {a} is not None:",
                    f"        if {a}.__class__ is not {t}:",
                    f"            {a} = {wrong}",
                    f"        {put}",
                ]
            else:
                body += [f"    if {a} is not _M:", f"        {put}"]
            continue
        else:
            ns[f"_D{i}"] = default
            params.append(f"{a}=_D{i}")
            if exact is not None and p.optional:
                body += [
                    f"    if {a} is not None and {a}.__class__ is not {t}:",
                    f"        {a} = {wrong}",
                ]
            elif exact is not None:
                body += [
                    f"    if {a}.__class__ is not {t}:",
                    f"        {a} = _D{i} if {a} is None else {wrong}",
                ]
        body.append(f"    {put}")
    if twin is not None:
        body.append("    _o.__class__ = _cls")
    src = f"def {kind}(*, {', '.join(params)}):\n" + "\n".join(body) + "\n    return _o\n"
    exec(compile(src, f"<azt {kind} {cls.__qualname__}>", "exec"), ns)
    fn: Callable[..., Any] = ns[kind]
    # cattrs names the generated function and its linecache entry after its target
    fn.__qualname__ = cls.__qualname__
    fn.__module__ = cls.__module__
    return fn


# Read path: the generated function calls _constructor's slot-filling function, not the
# validating attrs __init__ (2.8-3.1x slower per page in benchmarks/orm_bench.py). Wire values
# are trusted once converted to their declared type (the service stores only valid values);
# what is checked is the stored type: an annotated (JSON) or recorded (TableEntity) type must
# be the declared one or a lossless widening, and unannotated text (nometadata) is parsed by
# the declared type. Known gap: at minimal metadata a String column of digits reads into an
# Int64 or Double property (a row does not say its metadata level).
def _structure_fn(
    cls: type[E], info: EntityInfo, select: frozenset[str] | None, form: Form
) -> Callable[[Mapping[str, Any]], E]:
    fields = {a.name: a for a in attrs.fields(cast(Any, cls))}
    st_attrs: list[attrs.Attribute[Any]] = []
    overrides: dict[str, Any] = {}
    ctor_fields: list[tuple[Prop[Any], Any, type | None]] = []
    for p in info.props:
        a = fields[p.attr]
        default = a.default
        exact: type | None = None
        if p.attr in ("Timestamp", "ETag"):
            if form == "value":
                continue  # TableEntity keeps them as metadata, not as keys: see _meta
            wire = "Timestamp" if p.attr == "Timestamp" else "odata.etag"
            overrides[p.attr] = override(rename=wire)
        else:
            if not (select is None or p.wire in select or p.is_key):
                continue  # outside the projection: left unset
            hook = _struct_hook(p, form)
            overrides[p.attr] = override(rename=p.wire, struct_hook=hook)
            if default is attrs.NOTHING and p.optional:
                default = None
            elif default is attrs.NOTHING and select is not None and not p.is_key:
                default = _MISSING  # projected but absent: left unset
            if hook is None:
                exact = _PY_TYPE[p.edm]
        ctor_fields.append((p, default, exact))
        # Every argument is passed by keyword and may be absent: the constructor supplies
        # defaults and reports missing required properties with the row's keys.
        st_attrs.append(a.evolve(default=_MISSING, kw_only=True, type=None))
    ctor = _constructor(cls, ctor_fields, f"{form}_{cls.__name__}")
    fn = make_dict_structure_fn_from_attrs(
        st_attrs,
        ctor,  # type: ignore[arg-type]
        converter,
        _cattrs_detailed_validation=False,
        _cattrs_prefer_attrib_converters=True,
        _cattrs_forbid_extra_keys=False,
        **overrides,
    )
    return fn


def _unstructure_fn(
    cls: type[E], info: EntityInfo, form: Form
) -> tuple[Callable[[E], dict[str, Any]], Callable[[E], dict[str, Any]]]:
    """(generated function, slow path for objects with unset properties)."""
    fields = {a.name: a for a in attrs.fields(cast(Any, cls))}
    un_attrs: list[attrs.Attribute[Any]] = []
    overrides: dict[str, Any] = {}
    hooks: list[tuple[str, str, Callable[[Any], Any]]] = []
    for p in info.data_props:
        hook = _unstruct_hook(p, form)
        hooks.append((p.attr, p.wire, hook))
        overrides[p.attr] = override(rename=p.wire, unstruct_hook=hook)
        un_attrs.append(fields[p.attr].evolve(default=attrs.NOTHING, type=None))
    fn = make_dict_unstructure_fn_from_attrs(un_attrs, cls, converter, **overrides)

    def partial(obj: E) -> dict[str, Any]:
        # objects from a projection lack the properties outside it
        out: dict[str, Any] = {}
        for attr, wire, hook in hooks:
            v = getattr(obj, attr, None)
            out[wire] = None if v is None else hook(v)
        return out

    return fn, partial


#: JSON members that are not stored properties (metadata, at every level)


# Built on cattrs (the project's dependency) rather than a hand-written generator
# (git show f403ac4:azt/_codec.py): measured within about 1.3x of it on JSON page decodes and
# both encoders, 1.8x on from_entity (Atom pages, point reads, user calls, where HTTP and
# parsing dominate); azure-data-tables' own dict conversions are 5x slower on a page.
def _build(cls: type[E], select: frozenset[str] | None) -> EntityCodec[E]:
    info = entity_info(cls)
    info.key_props()  # a class without keys (EntityBase, a mixin) cannot be stored
    from_json_fast = _structure_fn(cls, info, select, "json")
    from_value = _structure_fn(cls, info, select, "value")
    set_ts = _slot_setter(cls, "Timestamp")
    set_etag = _slot_setter(cls, "ETag")
    meta = _meta
    errors = _DECODE_ERRORS

    check_json = _json_type_check(info)
    reads = {p.wire: (p.attr, _READS[p.edm]) for p in info.data_props if not p.is_key}
    mark_json, mark_rows = _partial_markers(cls, info, select, "json")
    mark_value, _ = _partial_markers(cls, info, select, "value")
    covered = _known(info, select, "value").issuperset
    put_partial = _slot_setter(cls, PARTIAL_ATTR)
    projection = select is not None

    def from_json(d: Mapping[str, Any]) -> E:
        check_json(d)
        try:
            o = from_json_fast(d)
        except errors as exc:
            o = _retry_without_nulls(info, from_json_fast, d, exc, "json")
        mark_json(o, d)
        return o

    def from_entity(d: Mapping[str, Any]) -> E:
        types = getattr(d, "_types", None)  # the stored types a decoded TableEntity knows
        if types:
            for name, stored in types.items():
                r = reads.get(name)
                if r is not None and stored not in r[1]:
                    _stored_as(cls, r[0], stored, d)
        try:
            o = from_value(d)
        except errors as exc:
            o = _retry_without_nulls(info, from_value, d, exc, "value")
        ts, etag, lacking = meta(d)
        set_ts(o, ts)
        set_etag(o, etag)
        if lacking is not None:  # a client-core projection passes on what it lacks
            mark_value(o, d)
            own = getattr(o, PARTIAL_ATTR, None)
            put_partial(o, lacking.with_missing(own.missing) if own is not None else lacking)
        elif projection or not covered(d):
            mark_value(o, d)
        return o

    optional = tuple(p.wire for p in info.data_props if p.optional)
    int64 = tuple(p.wire for p in info.data_props if p.edm is EdmType.INT64)
    annotations = tuple(
        (p.wire, p.wire + _ANN, p.edm.value) for p in info.data_props if p.edm in _ANNOTATED
    )
    un_value, partial_value = _unstructure_fn(cls, info, "value")
    un_json, partial_json = _unstructure_fn(cls, info, "json")
    to_entity = _fast_to_entity(info, _general_to_entity(optional, int64, un_value, partial_value))

    def to_json(obj: E) -> dict[str, Any]:
        try:
            e = un_json(obj)
        except AttributeError:
            e = partial_json(obj)
            for k in [k for k, v in e.items() if v is None]:
                del e[k]
        else:
            for n in optional:
                if e[n] is None:
                    del e[n]
        for n, an, t in annotations:
            if n in e:
                e[an] = t
        return e

    codec: EntityCodec[E] = EntityCodec()
    codec.cls = cls
    codec.info = info
    codec.select = select
    codec.from_json = from_json
    codec._from_json_fast = from_json_fast
    codec._check_json = check_json
    codec._decode_page = page_decoder(cls, info, select)
    codec._mark_json = mark_json
    codec._mark_rows = mark_rows
    codec.from_entity = from_entity
    codec.to_entity = to_entity
    codec.to_json = to_json
    return codec


def _general_to_entity(
    optional: tuple[str, ...],
    int64: tuple[str, ...],
    un_value: Callable[[E], dict[str, Any]],
    partial_value: Callable[[E], dict[str, Any]],
) -> Callable[[E], TableEntity]:
    """``to_entity`` by loops over the optional and Int64 properties: what
    :func:`_fast_to_entity` does in straight-line code, and what it calls for an object
    with unset properties (from a projection)."""
    int64_type = EdmType.INT64

    def to_entity(obj: E) -> TableEntity:
        try:
            e = TableEntity(un_value(obj))
        except AttributeError:
            e = TableEntity(partial_value(obj))
            for k in [k for k, v in e.items() if v is None]:
                del e[k]
        else:
            for n in optional:
                if e[n] is None:
                    del e[n]
        if int64:
            types = {n: int64_type for n in int64 if n in e}
            if types:
                e.edm_types = types
        return e

    return to_entity


def _fast_to_entity(
    info: EntityInfo, general: Callable[[E], TableEntity]
) -> Callable[[E], TableEntity]:
    """``to_entity`` generated for one class: the values read into a dict display as the
    ``value`` form's unstructure function reads them (each property's unstructure hook,
    ``_unstruct_hook``, called unless it is the identity), the optional properties that
    are None dropped one by one, and the ``edm_types`` of the Int64 properties written as
    a dict display (in declaration order, as ``general`` builds it; none when no Int64
    property is left); an object with unset properties goes to ``general``."""
    props = info.data_props
    ns: dict[str, Any] = {"_general": general}
    members = []
    for i, p in enumerate(props):
        hook = _unstruct_hook(p, "value")
        if hook is identity:
            members.append(f"{p.wire!r}: obj.{p.attr}")
        else:
            ns[f"_h{i}"] = hook
            members.append(f"{p.wire!r}: _h{i}(obj.{p.attr})")
    body = [
        "def to_entity(obj):",
        "    try:",
        "        d = {" + ", ".join(members) + "}",
        "    except AttributeError:",
        "        return _general(obj)",
    ]
    body += [f"    if d[{p.wire!r}] is None: del d[{p.wire!r}]" for p in props if p.optional]
    body += _entity_lines(props, ns)
    body.append("    return e")
    exec(compile("\n".join(body) + "\n", f"<azt to_entity {info.cls.__qualname__}>", "exec"), ns)
    fn: Callable[[E], TableEntity] = ns["to_entity"]
    return fn


def _entity_lines(props: tuple[Prop[Any], ...], ns: dict[str, Any]) -> list[str]:
    """The lines of generated code that make ``e``, the ``TableEntity`` of the dict ``d``
    (its optional properties that are None dropped already), with the ``edm_types`` of its
    Int64 properties: one read-only mapping shared by every entity of the class when none
    of them is optional (``SharedEdmTypes``: ``edm_types`` gives each entity its own copy
    on first use), else a dict of those present (none when none is)."""
    ns["_TE"] = TableEntity
    ns["_I64"] = EdmType.INT64
    lines = ["    e = _TE(d)"]
    int64 = [p for p in props if p.edm is EdmType.INT64]
    if int64 and not any(p.optional for p in int64):
        ns["_SHARED_TYPES"] = SharedEdmTypes({p.wire: EdmType.INT64 for p in int64})
        lines.append("    e._types = _SHARED_TYPES")
    elif int64:
        lines.append("    t = {}")
        for p in int64:
            put = f"t[{p.wire!r}] = _I64"
            lines.append(f"    if {p.wire!r} in d: {put}" if p.optional else f"    {put}")
        lines.append("    if t: e._types = t")
    return lines


#: the kind of :func:`azt._core.wire.writers.declared_writer` of each EDM type's values
_WRITER_KINDS: dict[EdmType, str] = {
    EdmType.STRING: "str",
    EdmType.INT32: "int32",
    EdmType.INT64: "Int64",
    EdmType.DOUBLE: "float",
    EdmType.BOOLEAN: "bool",
    EdmType.DATETIME: "EdmDateTime",
    EdmType.GUID: "UUID",
    EdmType.BINARY: "bytes",
}


def object_encoder(cls: type[E], indexed: bool, reserved: str) -> Callable[[E], Any] | None:
    """The ``__azt_encoded__`` of the entity class ``cls`` (see
    :func:`azt._core.base.encoded_source`), generated once: each property read once, the
    entity built as ``to_entity`` builds it, and the same values handed to a
    :func:`~azt._core.wire.writers.declared_writer` of the class's shape (the body checked
    and encoded in one pass, or ``None``), without the entity's shape looked up again.
    ``indexed``: whether the class declares indexes (its writes may then carry index rows),
    else only a RowKey starting with ``reserved`` (refused by ``__azt_companions__``) takes
    the companions' path. An object with unset properties (a projection) gives ``None``
    (``__azt_entity__`` then). ``None`` for a class with a schema evolution (its marker).

    Example::

        >>> encode = object_encoder(Movie, False, "\ufffdix;")
        >>> entity, obj, etag, body, more = encode(Movie("Action", "Heat"))
        >>> body.startswith(b'{"PartitionKey":"Action","RowKey":"Heat"'), more
        (True, False)
    """
    info = entity_info(cls)
    if info.evolution is not None:
        return None
    props = info.data_props
    write = declared_writer(
        tuple(p.wire for p in props),
        tuple(_WRITER_KINDS.get(p.edm, "") for p in props),
        tuple(p.optional for p in props),
    )
    if write is None:
        return None
    ns: dict[str, Any] = {"_write": write, "_isinstance": isinstance, "_str": str}
    ns["_reserved"] = reserved
    values = [f"v{i}" for i in range(len(props))]
    # (a hook's AttributeError too goes where to_entity's goes: the general path)
    body = ["def encoded(obj):", "    try:"]
    for i, p in enumerate(props):
        hook = _unstruct_hook(p, "value")
        if hook is identity:
            body.append(f"        v{i} = obj.{p.attr}")
        else:
            ns[f"_h{i}"] = hook
            body.append(f"        v{i} = _h{i}(obj.{p.attr})")
    body += ["        etag = obj.ETag", "    except AttributeError:", "        return None"]
    body.append("    d = {" + ", ".join(f"{p.wire!r}: v{i}" for i, p in enumerate(props)) + "}")
    body += [f"    if v{i} is None: del d[{p.wire!r}]" for i, p in enumerate(props) if p.optional]
    body += _entity_lines(props, ns)
    rk = values[[p.wire for p in props].index("RowKey")]
    more = "True" if indexed else f"_isinstance({rk}, _str) and {rk}.startswith(_reserved)"
    body.append(f"    return e, obj, etag, _write({', '.join(values)}), {more}")
    src = "\n".join(body) + "\n"
    exec(compile(src, f"<azt encoded {info.cls.__qualname__}>", "exec"), ns)
    fn: Callable[[E], Any] = ns["encoded"]
    return fn


def _diagnose(
    info: EntityInfo, row: Mapping[str, Any], exc: BaseException, form: Form = "json"
) -> WireDecodeError:
    """Name the property a row failed on (the slow path of an error)."""
    where = f"row PartitionKey={row.get('PartitionKey')!r} RowKey={row.get('RowKey')!r}"
    for p in info.props:
        if p.attr in ("Timestamp", "ETag") or p.wire not in row:
            continue
        hook = _struct_hook(p, form)
        raw = row[p.wire]
        if raw is None:
            continue
        try:
            if hook is None:
                _wrong_type(info.cls, p.attr, _PY_TYPE[p.edm], raw)
            else:
                hook(raw, None)
        except _DECODE_ERRORS as e:
            return WireDecodeError(
                f"{where}: property {p.wire!r} = {raw!r} is not a valid {p.edm} for "
                f"{info.cls.__name__}.{p.attr}: {e}"
            )
    return WireDecodeError(f"{where} cannot be decoded as {info.cls.__name__}: {exc!r}")
