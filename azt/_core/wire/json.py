"""JSON ("OData v3 JSON light") entity, table and error payloads (PROTOCOL.md 6.1-6.4, 11.1).

Example::

    >>> from azt.edm import Typed, EdmType
    >>> encode_entity({"PartitionKey": "p", "RowKey": "r", "N": Typed(5, EdmType.INT64)})
    b'{"PartitionKey":"p","RowKey":"r","N@odata.type":"Edm.Int64","N":"5"}'
    >>> e = decode_entry(b'{"PartitionKey":"p","RowKey":"r","N@odata.type":"Edm.Int64","N":"5"}')
    >>> e["N"], e.edm_types["N"]
    (5, <EdmType.INT64: 'Edm.Int64'>)
"""

from __future__ import annotations

import binascii
import json
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from azt._core.wire import WireDecodeError, decode_base64, decode_guid
from azt._edm.datetime import EdmDateTime
from azt._edm.entity import SharedEdmTypes, TableEntity
from azt._edm.types import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    EdmType,
    Typed,
    coerce_value,
    infer_edm_type,
)
from azt._errors import ValidationError

__all__ = [
    "decode_entity",
    "decode_entry",
    "decode_error",
    "decode_feed",
    "decode_rows",
    "decode_table",
    "decode_tables",
    "encode_entity",
    "encode_table",
    "entity_json",
    "parse_datetime",
]

_json_loads = json.loads
_fast_loads = msgspec.json.Decoder().decode


def _loads(body: bytes | str) -> Any:
    """``json.loads``, about twice as fast: msgspec's decoder gives the same objects for
    the JSON it accepts (integers of any size stay ints, floats round-trip, last duplicate
    key wins); what it refuses (``NaN`` literals, numbers past the double range, lone
    surrogates, a BOM, bad UTF-8) goes to ``json.loads``, which reads it or raises as
    before."""
    try:
        return _fast_loads(body)
    except Exception:
        return _json_loads(body)


def _no_default(o: object) -> Any:
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


# json.dumps with non-default options builds a new encoder per call; the C encoder is
# made once here (compact separators, UTF-8 output, NaN refused, no circularity check).
_c_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
if _c_encoder is not None:  # pragma: no branch - CPython
    _c_encode = _c_encoder(
        None, _no_default, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )

    def _dumps_str(obj: Any) -> str:
        return "".join(_c_encode(obj, 0))

else:  # pragma: no cover - other interpreters
    _dumps_str = json.JSONEncoder(  # type: ignore[assignment]
        ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
    ).encode
_b64encode = binascii.b2a_base64
_b64decode = decode_base64

_ANN: Final = "@odata.type"
_INF: Final = float("inf")


# --------------------------------------------------------------------------- encode


def _dumps(obj: Any) -> bytes:
    try:
        return _dumps_str(obj).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(
            f"a string contains a lone surrogate ({exc.object[exc.start : exc.end]!r}) that "
            "cannot be sent as UTF-8"
        ) from None


def _double(v: float) -> float | str:
    if v != v:
        return "NaN"
    if v == _INF:
        return "Infinity"
    if v == -_INF:
        return "-Infinity"
    return v


def _datetime(name: str, v: datetime) -> str:
    if type(v) is EdmDateTime and v.year >= 1601:
        return v.to_wire()
    dt: EdmDateTime = coerce_value(v, EdmType.DATETIME, name)  # converts or raises
    return dt.to_wire()


def _binary(v: bytes | bytearray | memoryview) -> str:
    return _b64encode(v, newline=False).decode("ascii")


# Wire value of an already coerced (canonical) value, by type.
_WIRE: Final[dict[EdmType, Callable[[Any], Any]]] = {
    EdmType.STRING: lambda v: v,
    EdmType.INT32: lambda v: v,
    EdmType.BOOLEAN: lambda v: v,
    EdmType.INT64: str,
    EdmType.DOUBLE: _double,
    EdmType.DATETIME: EdmDateTime.to_wire,
    EdmType.GUID: str,
    EdmType.BINARY: _binary,
}
_ANNOTATED: Final = frozenset(
    {EdmType.INT64, EdmType.DOUBLE, EdmType.DATETIME, EdmType.GUID, EdmType.BINARY}
)


def _put_explicit(out: dict[str, Any], name: str, value: Any, t: EdmType) -> None:
    v = coerce_value(value, t, name)
    if t in _ANNOTATED:
        out[name + _ANN] = t.value
    out[name] = _WIRE[t](v)


def _put_other(out: dict[str, Any], name: str, value: Any) -> None:
    """Values whose exact type is not in the fast table: Typed, subclasses, errors."""
    if isinstance(value, Typed):
        _put_explicit(out, name, value.value, value.edm_type)
        return
    try:
        t = infer_edm_type(value)
    except TypeError as exc:
        raise ValidationError(f"property {name!r}: {exc}") from None
    _put_explicit(out, name, value, t)


def _enc_double(out: dict[str, Any], name: str, v: float) -> None:
    out[name + _ANN] = "Edm.Double"
    out[name] = v if -_INF < v < _INF else _double(v)


def _enc_datetime(out: dict[str, Any], name: str, v: datetime) -> None:
    out[name + _ANN] = "Edm.DateTime"
    out[name] = _datetime(name, v)


def _enc_guid(out: dict[str, Any], name: str, v: uuid.UUID) -> None:
    out[name + _ANN] = "Edm.Guid"
    out[name] = str(v)


def _enc_binary(out: dict[str, Any], name: str, v: bytes) -> None:
    out[name + _ANN] = "Edm.Binary"
    out[name] = _b64encode(v, newline=False).decode("ascii")


def _enc_plain(out: dict[str, Any], name: str, v: Any) -> None:
    out[name] = v


def _enc_int32(out: dict[str, Any], name: str, v: int) -> None:
    if not INT32_MIN <= v <= INT32_MAX:
        coerce_value(v, EdmType.INT32, name)  # raises the range error
    out[name] = v


def _enc_int64(out: dict[str, Any], name: str, v: int) -> None:
    if not INT64_MIN <= v <= INT64_MAX:
        coerce_value(v, EdmType.INT64, name)  # raises the range error
    out[name + _ANN] = "Edm.Int64"
    out[name] = str(v)


def _enc_int_double(out: dict[str, Any], name: str, v: int) -> None:
    _enc_double(out, name, float(v))


_Enc = Callable[[dict[str, Any], str, Any], None]

_ENCODERS: Final[dict[type, _Enc]] = {
    float: _enc_double,
    EdmDateTime: _enc_datetime,
    datetime: _enc_datetime,
    uuid.UUID: _enc_guid,
    bytes: _enc_binary,
    bytearray: _enc_binary,
    memoryview: _enc_binary,
}

# Explicitly typed values whose Python type is already the canonical one for the EDM
# type; anything else goes through coerce_value.
_EXPLICIT: Final[dict[tuple[EdmType, type], _Enc]] = {
    (EdmType.STRING, str): _enc_plain,
    (EdmType.BOOLEAN, bool): _enc_plain,
    (EdmType.INT32, int): _enc_int32,
    (EdmType.INT64, int): _enc_int64,
    (EdmType.DOUBLE, float): _enc_double,
    (EdmType.DOUBLE, int): _enc_int_double,
    (EdmType.DATETIME, EdmDateTime): _enc_datetime,
    (EdmType.DATETIME, datetime): _enc_datetime,
    (EdmType.GUID, uuid.UUID): _enc_guid,
    (EdmType.BINARY, bytes): _enc_binary,
}


# One flat object per entity. Int64, DateTime, Guid, Binary and Double values carry an
# @odata.type annotation (Double always, so 2.0 is stored as a Double and not as Int32 2);
# String, Int32 and Boolean are written bare; None values are omitted; Timestamp is not
# sent (the service sets it).
def encode_entity(
    entity: Mapping[str, Any], *, types: Mapping[str, EdmType] | None = None
) -> bytes:
    """Encode an entity as a JSON request body (UTF-8 bytes).

    Types come from, in order: ``types`` (overrides), ``entity.edm_types`` (for a
    :class:`~azt.edm.TableEntity`), :class:`~azt.edm.Typed` values, then inference
    (``int`` outside Int32 range becomes Int64). Values are range-checked; a bad one
    raises ``ValidationError`` naming the property. Limits beyond single values (sizes,
    names, property count) are :func:`azt.edm.validate_entity`'s job.

    Example::

        >>> encode_entity({"PartitionKey": "p", "RowKey": "r", "x": 2.0, "n": None, "ok": True})
        b'{"PartitionKey":"p","RowKey":"r","x@odata.type":"Edm.Double","x":2.0,"ok":true}'
    """
    out, plain = _entity_json(entity, types)
    if plain:
        # msgspec writes such an object byte for byte as the stdlib encoder does (compact,
        # UTF-8, the same string escapes), about five times faster; anything it refuses
        # (a lone surrogate, a str subclass) goes to the stdlib path, which raises or
        # writes it as before.
        try:
            return _ms_encode(out)
        except (TypeError, ValueError):
            pass
    return _dumps(out)


_ms_encode = msgspec.json.Encoder().encode
# msgspec and repr() agree on a float's digits, but not on the exponent form: repr writes
# "1e+16" and "1e-05" where msgspec writes "1e16" and "0.00001". repr uses positional
# notation exactly for 1e-4 <= |v| < 1e16 (and zero); only such floats go to msgspec.
_POS_MIN: Final = 1e-4
_POS_MAX: Final = 1e16


def entity_json(
    entity: Mapping[str, Any], *, types: Mapping[str, EdmType] | None = None
) -> dict[str, Any]:
    """The JSON object :func:`encode_entity` serialises (values annotated as on the wire).

    Example::

        >>> entity_json({"PartitionKey": "p", "RowKey": "r", "n": 2**40})
        {'PartitionKey': 'p', 'RowKey': 'r', 'n@odata.type': 'Edm.Int64', 'n': '1099511627776'}
    """
    return _entity_json(entity, types)[0]


def _entity_json(
    entity: Mapping[str, Any], types: Mapping[str, EdmType] | None
) -> tuple[dict[str, Any], bool]:
    """:func:`entity_json`, and whether msgspec encodes the object exactly as the stdlib
    encoder does: every key a ``str``, every float in positional notation (see
    ``_POS_MIN``), no value of another type than the plain JSON ones."""
    tmap: Mapping[str, EdmType] | None = getattr(entity, "_types", None) or None
    if types:
        tmap = {**tmap, **types} if tmap else types
    out: dict[str, Any] = {}
    plain = True
    for name, v in entity.items():
        if type(name) is not str:
            plain = False
        if tmap is not None and name in tmap:
            if v is not None:
                t = tmap[name]
                if t is EdmType.DOUBLE:
                    plain = False
                enc = _EXPLICIT.get((t, type(v)))
                if enc is None:
                    plain = False
                    _put_explicit(out, name, v, t)
                else:
                    enc(out, name, v)
            continue
        tv = type(v)
        if tv is str or tv is bool:
            out[name] = v
        elif tv is int:
            if INT32_MIN <= v <= INT32_MAX:
                out[name] = v
            elif INT64_MIN <= v <= INT64_MAX:
                out[name + _ANN] = "Edm.Int64"
                out[name] = str(v)
            else:
                coerce_value(v, EdmType.INT64, name)  # raises the range error
        elif tv is float:
            out[name + _ANN] = "Edm.Double"
            if _POS_MIN <= v < _POS_MAX or -_POS_MAX < v <= -_POS_MIN or v == 0.0:
                out[name] = v
            elif -_INF < v < _INF:
                out[name] = v
                plain = False
            else:
                out[name] = _double(v)
        elif tv is datetime and v.tzinfo is UTC and v.year >= 1601:
            # what coerce_value and to_wire make of an aware UTC datetime, without them
            out[name + _ANN] = "Edm.DateTime"
            out[name] = _iso(v, "T", "microseconds")[:26] + "0Z"
        elif v is None:
            continue
        else:
            enc = _ENCODERS.get(tv)
            if enc is None:
                plain = False
                _put_other(out, name, v)
            else:
                enc(out, name, v)
    out.pop("Timestamp", None)
    out.pop("Timestamp" + _ANN, None)
    for key in ("PartitionKey", "RowKey"):
        if key + _ANN in out or (key in out and type(out[key]) is not str):
            raise ValidationError(f"{key} must be a str, got {entity[key]!r}")
    return out, plain


_iso = datetime.isoformat


def encode_table(name: str) -> bytes:
    """The Create Table body.

    Example::

        >>> encode_table("mytable")
        b'{"TableName":"mytable"}'
    """
    return _dumps({"TableName": name})


# --------------------------------------------------------------------------- decode


def _dec_bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if v in ("true", "false"):
        return bool(v == "true")
    raise ValueError(f"not a boolean: {v!r}")


def _dec_binary(v: str) -> bytes:
    return _b64decode(v)


_dec_guid = decode_guid  # the canonical 8-4-4-4-12 form only


def _dec_str(v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError(f"not a string: {v!r}")
    return v


#: the service's DateTime text read as EdmDateTime (its parse has the fast path for the
#: service's own form)
parse_datetime = EdmDateTime.parse


# Annotation value -> (decoder, EdmType). Keys are the exact wire strings.
_DECODERS: Final[dict[str, tuple[Callable[[Any], Any], EdmType]]] = {
    "Edm.Int64": (int, EdmType.INT64),
    "Edm.DateTime": (parse_datetime, EdmType.DATETIME),
    "Edm.Guid": (_dec_guid, EdmType.GUID),
    "Edm.Binary": (_dec_binary, EdmType.BINARY),
    "Edm.Double": (float, EdmType.DOUBLE),
    "Edm.Int32": (int, EdmType.INT32),
    "Edm.Boolean": (_dec_bool, EdmType.BOOLEAN),
    "Edm.String": (_dec_str, EdmType.STRING),
}


_PLAN_CACHE_MAX: Final = 512
_plans: dict[tuple[str, ...], tuple[tuple[str, ...], tuple[tuple[str, str], ...], bool, bool]] = {}


def _plan(
    keys: tuple[str, ...],
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...], bool, bool]:
    """What to do with an entity of this key sequence (computed once per shape).

    Property names are C#-identifier-like, so a '.' marks the only keys needing work:
    ``odata.*`` members and ``Name@odata.type`` annotations.
    """
    drop = tuple(k for k in keys if "." in k or k == "Timestamp")
    present = set(keys)
    conv = tuple(
        (k, k[:-11])
        for k in keys
        if k.endswith(_ANN) and k != "Timestamp@odata.type" and k[:-11] in present
    )
    plan = (drop, conv, "odata.etag" in present, "Timestamp" in present)
    if len(_plans) >= _PLAN_CACHE_MAX:
        _plans.clear()
    _plans[keys] = plan
    return plan


# Decoding accepts no-, minimal- and full-metadata bodies, annotations before or after
# their values. Annotated values become Python values and their type is recorded in
# entity.edm_types; odata.etag and Timestamp become entity.metadata (the Timestamp parsed on
# first access) and no odata.* member stays among the properties. With nometadata nothing
# is annotated, so values stay as JSON gave them (an Int64 arrives as a str).
def _decode_list(objs: list[dict[str, Any]]) -> list[TableEntity]:
    # Entities of one page almost always share their key sequence, so the key analysis
    # is cached per shape; per entity there is one dict copy, a few deletions and the
    # conversions of annotated values. ``objs`` is consumed: each JSON object is released
    # as soon as its entity is built, so that a page never holds both forms of all its
    # rows (a thousand objects fewer alive at once, and fewer collections of the cyclic
    # garbage collector, whose count of allocated objects they would raise).
    out: list[TableEntity] = []
    append = out.append
    decoders = _DECODERS
    plans = _plans
    rows = _row_decoders
    objs.reverse()
    pop = objs.pop
    last: tuple[str, ...] | None = None  # the previous row's keys, and its decoder in row
    row: RowDecoder | None = None
    while objs:
        obj = pop()
        keys = tuple(obj)
        if keys != last:
            row = rows.get(keys, _UNSET)
            if row is _UNSET:
                row = _new_row_decoder(keys, obj)
            last = keys
        if row is not None:
            done = row(obj)
            if done is not None:
                append(done)
                continue
        plan = plans.get(keys)
        if plan is None:
            plan = _plan(keys)
        drop, conv, has_etag, has_ts = plan
        ent = TableEntity(obj)
        for k in drop:
            del ent[k]
        if conv:
            types: dict[str, EdmType] = {}
            for ann, name in conv:
                raw = obj[name]
                if raw is None:
                    continue
                t = obj[ann]
                try:
                    dec, edm = decoders[t]
                except (KeyError, TypeError):
                    continue  # unknown type: keep the JSON value as it is
                try:
                    ent[name] = dec(raw)
                except (ValueError, TypeError, binascii.Error, ValidationError) as exc:
                    raise WireDecodeError(
                        f"property {name!r}: invalid {t} value {raw!r}: {exc}"
                    ) from None
                types[name] = edm
            if types:
                ent._types = types
        if has_etag:
            ent._etag = obj["odata.etag"]
        if has_ts:
            ent._ts = obj["Timestamp"]
        append(ent)
    return out


# The same per entity shape, in straight-line code generated once per shape: the rows of a
# page almost always share their annotations too, so a shape's decoder expects those of
# its first row. A row it is not sure of (other annotations, a null, a value its decoder
# refuses) is left to the loop above, which decodes it or raises the precise error.
RowDecoder = Callable[[dict[str, Any]], TableEntity | None]
_row_decoders: dict[tuple[str, ...], RowDecoder | None] = {}
_UNSET: Any = object()


def _new_row_decoder(keys: tuple[str, ...], sample: dict[str, Any]) -> RowDecoder | None:
    if len(_row_decoders) >= _PLAN_CACHE_MAX:
        _row_decoders.clear()
    decoder = _row_decoders[keys] = _generate_row_decoder(keys, sample)
    return decoder


def _generate_row_decoder(keys: tuple[str, ...], sample: dict[str, Any]) -> RowDecoder | None:
    drop, conv, has_etag, has_ts = _plans.get(keys) or _plan(keys)
    if any(name in drop for _, name in conv):
        return None  # (the loop re-adds such a property at the end)
    namespace: dict[str, Any] = {"TableEntity": TableEntity}
    checks: list[str] = []
    reads: list[str] = []
    converts: list[str] = []
    types: dict[str, EdmType] = {}
    for i, (ann, name) in enumerate(conv):
        t = sample[ann]
        if type(t) is not str or t not in _DECODERS:
            return None
        namespace[f"dec{i}"] = _DECODERS[t][0]
        checks.append(f"o[{ann!r}] != {t!r}")
        reads.append(f"r{i} = o[{name!r}]")
        checks.append(f"r{i} is None")
        converts.append(f"c{i} = dec{i}(r{i})")
        types[name] = _DECODERS[t][1]
    lines = [*reads]
    if checks:
        lines.append(f"if {' or '.join(checks)}: return None")
    if converts:
        lines += ["try:", *(f"    {c}" for c in converts), "except Exception:", "    return None"]
    lines.append("e = TableEntity(o)")
    lines += [f"del e[{k!r}]" for k in drop]
    lines += [f"e[{name!r}] = c{i}" for i, (_, name) in enumerate(conv)]
    if types:
        # one read-only mapping for every row of the shape (edm_types copies it on use)
        namespace["types"] = SharedEdmTypes(types)
        lines.append("e._types = types")
    if has_etag:
        lines.append('e._etag = o["odata.etag"]')
    if has_ts:
        lines.append('e._ts = o["Timestamp"]')
    lines.append("return e")
    source = "def row(o):\n" + "".join(f"    {line}\n" for line in lines)
    exec(compile(source, "<azt row decoder>", "exec"), namespace)
    decoder: RowDecoder = namespace["row"]
    return decoder


def _load(body: bytes | str) -> Any:
    try:
        return _loads(body)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise WireDecodeError(f"response body is not JSON: {exc}") from None


def decode_rows(body: bytes | str) -> list[Any]:
    """The rows of a Query Entities page (``{"value": [...]}``) as the service sent them:
    JSON objects, annotations and ``odata.etag`` included (for ``page_decoder``).

    Example::

        >>> decode_rows(b'{"value":[{"PartitionKey":"p","RowKey":"r","A":1}]}')
        [{'PartitionKey': 'p', 'RowKey': 'r', 'A': 1}]
    """
    doc = _load(body)
    values = doc.get("value") if type(doc) is dict else None
    if type(values) is not list:
        raise WireDecodeError("a query response must be an object with a 'value' list")
    return values


# The hot path of every query: one json.loads and one pass over each entity's keys, with
# a type-string -> decoder table for the rare annotated values.
def decode_feed(body: bytes | str) -> list[TableEntity]:
    """Decode a Query Entities page (``{"value": [...]}``) into entities.

    Example::

        >>> page = decode_feed(b'{"value":[{"odata.etag":"W/\\\\"x\\\\"","PartitionKey":"p",'
        ...                    b'"RowKey":"r","Timestamp":"2020-09-15T23:02:10.4363943Z","A":1}]}')
        >>> page[0], page[0].metadata.etag, page[0].metadata.timestamp.nanosecond
        (TableEntity({'PartitionKey': 'p', 'RowKey': 'r', 'A': 1}), 'W/"x"', 300)
    """
    values = decode_rows(body)
    try:
        return _decode_list(values)
    except (TypeError, ValueError, AttributeError) as exc:
        raise WireDecodeError(f"malformed entity in query response: {exc}") from None


# JSON -> TableEntity for untyped use; typed classes decode JSON rows in azt._orm.codec.
def decode_entity(obj: dict[str, Any], *, etag: str | None = None) -> TableEntity:
    """Decode one already-parsed JSON entity object.

    ``etag`` (for example from the ``ETag`` response header) is used when the body has
    no ``odata.etag`` (nometadata).

    Example::

        >>> decode_entity({"PartitionKey": "p", "RowKey": "r", "G@odata.type": "Edm.Guid",
        ...                "G": "c9da6455-213d-42c9-9a79-3e9149a57833"})["G"]
        UUID('c9da6455-213d-42c9-9a79-3e9149a57833')
    """
    if type(obj) is not dict:
        raise WireDecodeError(f"an entity must be a JSON object, got {type(obj).__name__}")
    ent = _decode_list([obj])[0]
    if etag is not None and getattr(ent, "_etag", None) is None:
        ent._etag = etag
    return ent


def decode_entry(body: bytes | str, *, etag: str | None = None) -> TableEntity:
    """Decode a single-entity response body (point query, insert echo).

    Example::

        >>> decode_entry(b'{"PartitionKey":"p","RowKey":"r"}', etag='W/"1"').metadata.etag
        'W/"1"'
    """
    return decode_entity(_load(body), etag=etag)


def decode_tables(body: bytes | str) -> list[str]:
    """Table names from a Query Tables response.

    Example::

        >>> decode_tables(b'{"value":[{"TableName":"a"},{"TableName":"b"}]}')
        ['a', 'b']
    """
    doc = _load(body)
    try:
        return [str(t["TableName"]) for t in doc["value"]]
    except (KeyError, TypeError):
        raise WireDecodeError("a Query Tables response must list objects with TableName") from None


def decode_table(body: bytes | str) -> str:
    """The table name from a Create Table echo or a single-table response.

    Example::

        >>> decode_table(b'{"odata.metadata":"x","TableName":"mytable"}')
        'mytable'
    """
    doc = _load(body)
    try:
        return str(doc["TableName"])
    except (KeyError, TypeError):
        raise WireDecodeError("a table response must have TableName") from None


def decode_error(body: bytes | str) -> tuple[str | None, str | None]:
    """``(code, message)`` from an ``odata.error`` body; ``(None, None)`` if it is not one.

    Example::

        >>> decode_error(b'{"odata.error":{"code":"TableNotFound","message":'
        ...              b'{"lang":"en-US","value":"The table specified does not exist."}}}')
        ('TableNotFound', 'The table specified does not exist.')
    """
    try:
        doc = _loads(body)
    except ValueError:
        return None, None
    if not isinstance(doc, dict):
        return None, None
    err = doc.get("odata.error") or doc.get("error")  # OData v3 form, then v4
    if not isinstance(err, dict):
        return None, None
    code = err.get("code")
    msg = err.get("message")
    if isinstance(msg, dict):
        msg = msg.get("value")
    return (
        code if isinstance(code, str) else None,
        msg if isinstance(msg, str) else None,
    )
