"""OData v3 JSON ("JSON light") bodies: entity and table readers, writers, errors.

Readers implement PROTOCOL.md 6.1 (annotations before or after values, ``odata.*``
ignored, duplicate members refused, typed values parsed by their lexical rules);
writers implement 6.2-6.4 for the three metadata levels with Azure's member order.
Ranges and limits (Int32/Int64/DateTime ranges, sizes, names, keys) are checked in
one place, :mod:`azt_server_stub.validation`, by the backend on every write.

Example::

    >>> pk, rk, props = parse_entity(b'{"PartitionKey":"p","RowKey":"r","n":5}')
    >>> props["n"]
    ('Edm.Int32', 5)
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from json.encoder import encode_basestring_ascii
from typing import Any

import msgspec

from .. import errors
from ..model import (
    INT32_MAX,
    INT32_MIN,
    SECONDS_TEXT,
    Edm,
    Entity,
    TypedValue,
    parse_datetime,
    placed_items,
    seconds_text,
)
from .json_feed import (
    EntityLayout,
    entity_path,
    layout_for,
    write_entity,
    write_feed,
)
from .json_form import STORAGE_FORM, JsonForm
from .negotiation import Fmt

ODATA_TYPE = "@odata.type"

# [0-9] and \Z, not \d and $: \d also matches non-ASCII digits and $ a trailing newline.
_INT64_RE = re.compile(r"[+-]?[0-9]{1,20}\Z")
_INT32_TEXT_RE = re.compile(r"[+-]?[0-9]{1,11}\Z")
_BOOLEAN_TEXT = {"true": True, "false": False}
_GUID_RE = re.compile(
    r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z"
)
#: The lexical form of a finite Double (JSON strings, Atom text).
DOUBLE_RE = re.compile(r"[+-]?([0-9]+\.?[0-9]*([eE][+-]?[0-9]+)?|\.[0-9]+([eE][+-]?[0-9]+)?)\Z")
_SPECIAL_IN = {
    "NaN": math.nan,
    "Infinity": math.inf,
    "-Infinity": -math.inf,
    "INF": math.inf,
    "-INF": -math.inf,
}


class _Duplicate(Exception):
    pass


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _Duplicate
    return result


def _no_constants(name: str) -> Any:
    raise ValueError(f"bare {name} is not JSON")


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs_hook, parse_constant=_no_constants)
#: The decoder's scanner: one JSON value from an index -> (value, end index).
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]


#: msgspec's decoder of a flat object: about four times as fast as the standard library's
#: scanner on an entity body (its strings, integers and floats come out the same), but it
#: keeps the last of two members of one name and refuses some bodies the standard library
#: reads. Any other value (an object, an array) or body fails to decode (a
#: ``ValidationError``), so no pass over the values is needed to find them.
_FLAT_DECODE: Callable[[bytes], dict[str, Any]] = msgspec.json.Decoder(
    dict[str, str | int | float | bool | None]
).decode


def _fast_object(body: bytes) -> dict[str, Any] | None:
    """The object ``body`` holds, when msgspec's reading of it is certainly the standard
    library's; None leaves the body to the standard reading (:func:`_standard_object`).

    Certain: a body without a backslash (no escapes: every ``"`` delimits a string, and
    each string's text is its bytes) holding a flat object (no object or array values).
    Its strings are then its member names and its string values, so its ``"`` count is
    twice their number; a repeated member name adds a name (and perhaps a string value)
    that msgspec's dict no longer holds, so the count tells duplicates apart exactly.
    """
    if 92 in body:  # a backslash (an int needle: one memchr, where a bytes one costs 6x)
        return None
    try:
        value = _FLAT_DECODE(body)
    except (msgspec.MsgspecError, ValueError, RecursionError):
        # not a flat object, or not JSON to msgspec: the standard reading decides (1e400,
        # BOM...); before msgspec 0.19 its errors are not ValueErrors
        return None
    if body.count(b'"') != 2 * (len(value) + list(map(type, value.values())).count(str)):
        return None  # a repeated member name
    return value


def loads_object(body: bytes) -> dict[str, Any]:
    """Decode a JSON object body, refusing duplicate members and bare NaN/Infinity.

    Raises ``400 DuplicatePropertiesSpecified`` or ``400 InvalidInput``.

    Example::

        >>> loads_object(b'{"a":1}')
        {'a': 1}
    """
    fast = _fast_object(body)
    if fast is not None:
        return fast
    return _standard_object(body)


def _standard_object(body: bytes) -> dict[str, Any]:
    """:func:`loads_object` by the standard library's scanner (any body)."""
    try:
        if body[:1] == b"{" and body[1:2] != b"\x00":
            # An object in UTF-8 (what json.detect_encoding says of a body starting with
            # "{" and a non-NUL byte), scanned from its first byte as JSONDecoder.decode
            # does after skipping no whitespace; then only whitespace may follow.
            text = body.decode("utf-8", "surrogatepass")
            try:
                value, end = _SCAN(text, 0)
            except StopIteration:
                raise errors.invalid_input() from None
            if end != len(text) and text[end:].strip(" \t\n\r"):
                raise errors.invalid_input()
        else:
            # What json.loads does with these options, without building a new decoder (and
            # its scanner) on every call: bytes decoded by their detected UTF encoding.
            value = _DECODER.decode(body.decode(json.detect_encoding(body), "surrogatepass"))
    except _Duplicate:
        raise errors.duplicate_properties_specified() from None
    except (ValueError, RecursionError):
        raise errors.invalid_input() from None
    if not isinstance(value, dict):
        raise errors.invalid_input()
    return value


def _number_as_double(raw: int | float) -> float:
    """A JSON number as a Double; ``400 InvalidInput`` when it is beyond the Double range.

    Bare ``Infinity`` is refused when decoding, so an infinite float here is a literal
    that overflowed (``1e400``); an integer of 309 or more digits cannot be converted.
    Either would be stored as something other than what was sent.
    """
    try:
        value = float(raw)
    except OverflowError:
        raise errors.invalid_input() from None
    if math.isinf(value):
        raise errors.invalid_input()
    return value


def convert_value(name: str, edm_name: str | None, raw: Any) -> TypedValue | None:
    """Turn a JSON member (with its optional ``@odata.type``) into a typed value.

    ``None`` for JSON null (the service never stores nulls). Raises ``400`` errors.
    With an annotation, Boolean, Int32, Int64 and Double also take their string forms
    (``"TRUE"``, ``"23"``, ``"255"``, ``"NaN"``); one parser for inserts, updates and
    batch parts (PROTOCOL.md 5).

    Example::

        >>> convert_value("n", "Edm.Int64", "255")
        ('Edm.Int64', 255)
        >>> convert_value("b", "Edm.Boolean", "FALSE"), convert_value("i", "Edm.Int32", "-7")
        (('Edm.Boolean', False), ('Edm.Int32', -7))
    """
    if raw is None:
        return None
    if edm_name is None:
        return _unannotated(raw)
    convert = _CONVERTERS.get(edm_name)
    if convert is None:
        raise errors.invalid_input()
    return convert(raw)


def _unannotated(raw: Any) -> TypedValue:
    """A JSON value without ``@odata.type`` (not null): its type follows the JSON type."""
    if isinstance(raw, str):
        return (Edm.STRING, raw)
    if isinstance(raw, bool):
        return (Edm.BOOLEAN, raw)
    if isinstance(raw, int):
        if INT32_MIN <= raw <= INT32_MAX:
            return (Edm.INT32, raw)
        return (Edm.DOUBLE, _number_as_double(raw))
    if isinstance(raw, float):
        return (Edm.DOUBLE, _number_as_double(raw))
    raise errors.invalid_input()


def _to_string(raw: Any) -> TypedValue:
    if not isinstance(raw, str):
        raise errors.invalid_input()
    return (Edm.STRING, raw)


def _to_int32(raw: Any) -> TypedValue:
    # Annotated strings of digits are Int32 values on Azure (the service's OData reader
    # converts an annotated JSON string with the .NET parser of the declared type; Storage
    # Explorer sends such bodies: microsoft/AzureStorageExplorer#5299, Azure/Azurite#1259).
    if isinstance(raw, str) and _INT32_TEXT_RE.match(raw):
        number = int(raw)
        if not INT32_MIN <= number <= INT32_MAX:
            raise errors.invalid_input()
        return (Edm.INT32, number)
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise errors.invalid_input()
    return (Edm.INT32, raw)


def _to_int64(raw: Any) -> TypedValue:
    if isinstance(raw, str) and _INT64_RE.match(raw):
        number = int(raw)
    elif isinstance(raw, int) and not isinstance(raw, bool):
        number = raw
    else:
        raise errors.invalid_input()
    return (Edm.INT64, number)


def _to_double(raw: Any) -> TypedValue:
    if isinstance(raw, bool):
        raise errors.invalid_input()
    if isinstance(raw, int | float):
        return (Edm.DOUBLE, _number_as_double(raw))
    if isinstance(raw, str):
        if raw in _SPECIAL_IN:
            return (Edm.DOUBLE, _SPECIAL_IN[raw])
        if DOUBLE_RE.match(raw):
            value = float(raw)
            if value - value == 0.0:  # "1e400" is out of range, not Infinity
                return (Edm.DOUBLE, value)
    raise errors.invalid_input()


def _to_boolean(raw: Any) -> TypedValue:
    if isinstance(raw, bool):
        return (Edm.BOOLEAN, raw)
    # "true"/"false" in any case: a real account took "false" with Edm.Boolean and
    # refused "not a bool" with 400 InvalidInput (azure-sdk-for-python recording
    # test_table_entity.pyTestTableEntitytest_entity_with_edmtypes.json); "TRUE"/"FALSE"
    # are accepted by Azure per the Storage Explorer maintainer (Azure/Azurite#1947).
    if isinstance(raw, str):
        word = _BOOLEAN_TEXT.get(raw.lower())
        if word is not None:
            return (Edm.BOOLEAN, word)
    raise errors.invalid_input()


def _to_datetime(raw: Any) -> TypedValue:
    if not isinstance(raw, str):
        raise errors.invalid_input()
    return (Edm.DATETIME, parse_datetime_value(raw))


def _to_guid(raw: Any) -> TypedValue:
    if not isinstance(raw, str):
        raise errors.invalid_input()
    return (Edm.GUID, parse_guid(raw))


def _to_binary(raw: Any) -> TypedValue:
    if not isinstance(raw, str):
        raise errors.invalid_input()
    return (Edm.BINARY, parse_base64(raw))


#: ``odata.type`` text -> the converter of a (non-null) value annotated with it.
_CONVERTERS: dict[str, Callable[[Any], TypedValue]] = {
    Edm.STRING: _to_string,
    Edm.INT32: _to_int32,
    Edm.INT64: _to_int64,
    Edm.DOUBLE: _to_double,
    Edm.BOOLEAN: _to_boolean,
    Edm.DATETIME: _to_datetime,
    Edm.GUID: _to_guid,
    Edm.BINARY: _to_binary,
}


def parse_datetime_value(text: str) -> int:
    """A DateTime property value in ticks (lexical form only; 400 InvalidInput).

    The range (1601-01-01 and later) is ``validation``'s, checked on every write.

    Example::

        >>> parse_datetime_value("0001-01-01T00:00:00.5Z")
        5000000
        >>> parse_datetime_value("yesterday")
        Traceback (most recent call last):
        ...
        azt_server_stub.errors.StubError: 400 InvalidInput: One of the request inputs is not valid.
    """
    try:
        return parse_datetime(text)
    except (ValueError, OverflowError):
        raise errors.invalid_input() from None


def parse_guid(text: str) -> uuid.UUID:
    """A Guid in its 8-4-4-4-12 hex form (either case); 400 InvalidInput otherwise.

    Example::

        >>> parse_guid("C9DA6455-213D-42C9-9A79-3E9149A57833").hex[:8]
        'c9da6455'
    """
    if not _GUID_RE.match(text):
        raise errors.invalid_input()
    return uuid.UUID(text)


def parse_base64(text: str) -> bytes:
    """Standard base64 with padding; 400 InvalidInput otherwise.

    Example::

        >>> parse_base64("AAE=")
        b'\\x00\\x01'
    """
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise errors.invalid_input() from None


#: What a member name is in an entity body: skipped (annotations, ``odata.*``, Timestamp),
#: a key, or a custom property; with the name of its annotation member.
_SKIP, _KEY, _PROPERTY = 0, 1, 2
_MEMBERS: dict[str, tuple[int, str]] = {}


def _member(name: str) -> tuple[int, str]:
    """How :func:`entity_from_members` treats a member name (cached, bounded)."""
    info = _MEMBERS.get(name)
    if info is None:
        if "@" in name or name.startswith("odata.") or name == "Timestamp":
            kind = _SKIP
        elif name == "PartitionKey" or name == "RowKey":
            kind = _KEY
        else:
            kind = _PROPERTY
        info = (kind, name + ODATA_TYPE)
        if len(_MEMBERS) < 4096:
            _MEMBERS[name] = info
    return info


def entity_from_members(
    members: dict[str, Any], *, keys_required: bool
) -> tuple[str | None, str | None, dict[str, TypedValue]]:
    """Split a decoded JSON entity into keys and typed custom properties.

    ``keys_required``: an insert needs both keys as strings (400 PropertiesNeedValue /
    InvalidInput); for update/merge the keys come from the URL and body keys are ignored.

    Example::

        >>> entity_from_members({"PartitionKey": "p", "RowKey": "r"}, keys_required=True)
        ('p', 'r', {})
    """
    props: dict[str, TypedValue] = {}
    pk: str | None = None
    rk: str | None = None
    known = _MEMBERS
    for name, raw in members.items():
        kind, annotation_key = known.get(name) or _member(name)
        if kind == _PROPERTY:
            annotation = members.get(annotation_key)
            if annotation is None:
                # The plain JSON types first (what _unannotated does, without the calls).
                t = type(raw)
                if t is str:
                    props[name] = (_STRING, raw)
                elif t is int and INT32_MIN <= raw <= INT32_MAX:
                    props[name] = (_INT32, raw)
                elif t is bool:
                    props[name] = (_BOOLEAN, raw)
                elif t is float and raw - raw == 0.0:
                    props[name] = (_DOUBLE, raw)
                elif raw is not None:
                    props[name] = _unannotated(raw)
                continue
            if not isinstance(annotation, str):
                raise errors.invalid_input()
            if raw is None:
                continue
            convert = _CONVERTERS.get(annotation)
            if convert is None:
                raise errors.invalid_input()
            props[name] = convert(raw)
        elif kind == _KEY and keys_required:
            annotation = members.get(annotation_key)
            if not isinstance(raw, str) or annotation not in (None, "Edm.String"):
                if raw is None:
                    continue
                raise errors.invalid_input()
            if name == "PartitionKey":
                pk = raw
            else:
                rk = raw
    if keys_required and (pk is None or rk is None):
        raise errors.properties_need_value()
    return pk, rk, props


def parse_entity(body: bytes) -> tuple[str, str, dict[str, TypedValue]]:
    """Parse an insert body (keys required); the backend validates limits.

    Example::

        >>> parse_entity(b'{"PartitionKey":"p","RowKey":"r","x@odata.type":"Edm.Guid",'
        ...              b'"x":"c9da6455-213d-42c9-9a79-3e9149a57833"}')[2]["x"][0]
        'Edm.Guid'
    """
    pk, rk, props = entity_from_members(loads_object(body), keys_required=True)
    assert pk is not None
    assert rk is not None
    return pk, rk, props


def parse_entity_update(body: bytes, pk: str, rk: str) -> dict[str, TypedValue]:
    """Parse an update/merge body whose keys come from the URL.

    An empty body is an entity without properties (legacy merge clients send it).

    Example::

        >>> parse_entity_update(b'{"a":true}', "p", "r")
        {'a': ('Edm.Boolean', True)}
    """
    if not body.strip():
        props: dict[str, TypedValue] = {}
    else:
        _, _, props = entity_from_members(loads_object(body), keys_required=False)
    return props


def parse_table_name(body: bytes) -> str:
    """The ``TableName`` of a Create Table body.

    Example::

        >>> parse_table_name(b'{"TableName":"mytable"}')
        'mytable'
    """
    members = loads_object(body)
    name = members.get("TableName")
    if name is None:
        raise errors.properties_need_value()
    if not isinstance(name, str):
        raise errors.invalid_input()
    return name


# --- writers ------------------------------------------------------------------------

_ANNOTATION_KEYS: dict[str, str] = {}
_STRING, _INT32, _INT64, _DOUBLE = Edm.STRING, Edm.INT32, Edm.INT64, Edm.DOUBLE
_BOOLEAN, _DATETIME, _GUID = Edm.BOOLEAN, Edm.DATETIME, Edm.GUID


def _ann(name: str) -> str:
    key = _ANNOTATION_KEYS.get(name)
    if key is None:
        key = name + ODATA_TYPE
        if len(_ANNOTATION_KEYS) < 4096:
            _ANNOTATION_KEYS[name] = key
    return key


def _special(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


class EntityWriter:
    """Builds JSON entity dicts for one table, endpoint and metadata level.

    ``select``: the ``$select`` projection (names not present come back as null).
    ``form``: the flavour's written form (:class:`~.json_form.JsonForm`: DateTime
    fractions, the single entity's ``odata.metadata``, member order).

    Example::

        >>> w = EntityWriter(Fmt.NOMETADATA, "http://h/acct", "acct", "t")
        >>> w.entity(Entity("p", "r", 0, {}))["PartitionKey"]
        'p'
    """

    __slots__ = ("_endpoint", "_fixed", "_fmt", "_form", "_select", "_table", "_type_name")

    def __init__(
        self,
        fmt: Fmt,
        endpoint: str,
        account: str,
        table: str,
        select: Sequence[str] | None = None,
        *,
        form: JsonForm = STORAGE_FORM,
    ) -> None:
        self._fmt = fmt
        self._endpoint = endpoint
        self._table = table
        self._type_name = f"{account}.{table}"
        self._select = list(select) if select else None
        self._form = form
        self._fixed = form.fixed_fraction

    def metadata_url(self, *, element: bool, select_text: str | None = None) -> str:
        """``odata.metadata`` for a feed or a single entity of this table; ``select_text``
        (the request's ``$select``) is appended after ``/@Element`` too, as Azure Table
        storage writes it (recorded: ``...#t/@Element&$select=age,sex,xyz``). A form with
        ``element_path`` names the table's path before ``$metadata`` for a single entity
        (Cosmos, recorded: ``{root}/t/$metadata#t/@Element``).

        Example::

            >>> w = EntityWriter(Fmt.MINIMAL, "http://h/acct", "acct", "t")
            >>> w.metadata_url(element=True)
            'http://h/acct/$metadata#t/@Element'
            >>> w.metadata_url(element=False, select_text="RowKey")
            'http://h/acct/$metadata#t&$select=RowKey'
            >>> w.metadata_url(element=True, select_text="age,sex")
            'http://h/acct/$metadata#t/@Element&$select=age,sex'
            >>> from .json_form import COSMOS_FORM
            >>> EntityWriter(Fmt.MINIMAL, "http://h/acct", "acct", "t", form=COSMOS_FORM
            ...              ).metadata_url(element=True)
            'http://h/acct/t/$metadata#t/@Element'
        """
        if element and self._form.element_path:
            url = f"{self._endpoint}/{self._table}/$metadata#{self._table}/@Element"
        else:
            url = f"{self._endpoint}/$metadata#{self._table}"
            if element:
                url += "/@Element"
        if select_text is not None:
            url += "&$select=" + select_text
        return url

    def entity(self, e: Entity, metadata: str | None = None) -> dict[str, Any]:
        """One entity as a JSON-ready dict in the flavour's member order; ``metadata``: the
        ``odata.metadata`` of a single-entity body (first, or where the Cosmos order puts
        it in full metadata: after ``odata.editLink``).

        Type annotations follow the metadata level; a ``$select`` name the entity lacks
        comes back as ``None``.

        Example::

            >>> e = Entity("p", "r", 0, {"N": (Edm.INT64, 5)})
            >>> EntityWriter(Fmt.MINIMAL, "http://h/acct", "acct", "t").entity(e)["N@odata.type"]
            'Edm.Int64'
            >>> EntityWriter(Fmt.NOMETADATA, "http://h/acct", "acct", "t", ["N", "X"]).entity(e)
            {'N': '5', 'X': None}
        """
        fmt = self._fmt
        seconds, frac = divmod(e.timestamp, 10_000_000)
        ts = f"{SECONDS_TEXT.get(seconds) or seconds_text(seconds)}.{frac:07d}Z"
        d: dict[str, Any] = {}
        meta = fmt is not Fmt.NOMETADATA
        cosmos = self._form.cosmos_order
        if metadata is not None and not (cosmos and fmt is Fmt.FULL):
            d["odata.metadata"] = metadata
        if fmt is Fmt.FULL:
            path = entity_path(self._table, e.pk, e.rk)
            d["odata.type"] = self._type_name
            d["odata.id"] = f"{self._endpoint}/{path}"
            if cosmos:
                d["odata.editLink"] = path
                if metadata is not None:
                    d["odata.metadata"] = metadata
            d["odata.etag"] = "W/\"datetime'" + ts.replace(":", "%3A") + "'\""
            if not cosmos:
                d["odata.editLink"] = path
        elif meta:
            d["odata.etag"] = "W/\"datetime'" + ts.replace(":", "%3A") + "'\""
        select = self._select
        items: Iterable[tuple[str, TypedValue | None]]
        if select is None and e.keys_at and self._form.key_places:
            items = placed_items(e)  # the keys where the client sent them (Cosmos)
        elif select is None:
            d["PartitionKey"] = e.pk
            d["RowKey"] = e.rk
            if not cosmos:
                if fmt is Fmt.FULL:
                    d["Timestamp@odata.type"] = "Edm.DateTime"
                d["Timestamp"] = ts
            items = e.props.items()
        else:
            items = ((name, e.get(name)) for name in self._projection(select))
        annotations = _ANNOTATION_KEYS
        for name, typed in items:
            if typed is None:
                d[name] = None
                continue
            edm, value = typed
            # Most common first; the plain JSON types need no annotation at any level.
            if edm is _STRING or edm is _INT32 or edm is _BOOLEAN:
                d[name] = value
                continue
            if edm is _DOUBLE:
                if value - value == 0.0:  # finite (inf - inf and nan - nan are nan)
                    d[name] = value
                    continue
                text, edm_name = _special(value), "Edm.Double"
            elif edm is _INT64:
                text, edm_name = str(value), "Edm.Int64"
            elif edm is _DATETIME:
                if name == "Timestamp":
                    if fmt is not Fmt.FULL:
                        d[name] = ts
                        continue
                    text = ts
                else:
                    seconds, frac = divmod(value, 10_000_000)
                    head = SECONDS_TEXT.get(seconds) or seconds_text(seconds)
                    if self._fixed:
                        text = f"{head}.{frac:07d}Z"
                    else:
                        text = f"{head}.{frac:07d}".rstrip("0") + "Z" if frac else head + "Z"
                edm_name = "Edm.DateTime"
            elif edm is _GUID:
                text, edm_name = str(value), "Edm.Guid"
            else:
                text, edm_name = base64.b64encode(value).decode("ascii"), "Edm.Binary"
            if meta:
                d[annotations.get(name) or _ann(name)] = edm_name
            d[name] = text
        if cosmos and select is None:
            if fmt is Fmt.FULL:
                d["Timestamp@odata.type"] = "Edm.DateTime"
            d["Timestamp"] = ts
        return d

    def _projection(self, select: list[str]) -> list[str]:
        """The ``$select`` names in the order the form writes them: as listed, or (Storage,
        recorded) the keys and ``Timestamp`` first, then the rest in ordinal name order."""
        if not self._form.select_by_name:
            return select
        system = [n for n in ("PartitionKey", "RowKey", "Timestamp") if n in select]
        return system + sorted(n for n in dict.fromkeys(select) if n not in system)

    def _entity_text(self, e: Entity) -> str:
        """One entity's JSON text by way of :meth:`entity` (what :func:`dumps` writes)."""
        return _ENCODE(self.entity(e))

    def single(self, e: Entity, select_text: str | None = None) -> bytes:
        """A single-entity response body (insert echo, point GET; ``select_text``: the
        ``$select`` the metadata URL names, see :meth:`metadata_url`).

        Example::

            >>> w = EntityWriter(Fmt.MINIMAL, "http://h/acct", "acct", "t")
            >>> w.single(Entity("p", "r", 0))[:54]
            b'{"odata.metadata":"http://h/acct/$metadata#t/@Element"'
        """
        fmt = self._fmt
        if self._select is None and fmt is not Fmt.FULL:
            # the text a page writes for the entity (remembered while it is the stored one)
            meta = fmt is not Fmt.NOMETADATA
            text = write_entity(e, self._layout(), self._entity_text)
            if not meta:
                return text
            url = encode_basestring_ascii(self.metadata_url(element=True, select_text=select_text))
            return b'{"odata.metadata":' + url.encode("ascii") + b"," + text[1:]
        if fmt is Fmt.NOMETADATA:
            return dumps(self.entity(e))
        return dumps(self.entity(e, self.metadata_url(element=True, select_text=select_text)))

    def _layout(self) -> EntityLayout:
        """How :func:`~.json_feed.write_feed` lays out this writer's entities."""
        form = self._form
        fmt = self._fmt
        if self._select is None and fmt is not Fmt.FULL:
            return layout_for(
                meta=fmt is not Fmt.NOMETADATA,
                fixed=self._fixed,
                cosmos_order=form.cosmos_order,
                key_places=form.key_places,
            )
        return EntityLayout(
            meta=fmt is not Fmt.NOMETADATA,
            full=fmt is Fmt.FULL,
            fixed=self._fixed,
            cosmos_order=form.cosmos_order,
            key_places=form.key_places,
            projection=None if self._select is None else self._projection(self._select),
            type_name=self._type_name,
            endpoint=self._endpoint,
            table=self._table,
        )

    def feed(self, entities: Sequence[Entity], select_text: str | None = None) -> bytes:
        """A Query Entities page body.

        Example::

            >>> w = EntityWriter(Fmt.NOMETADATA, "http://h/acct", "acct", "t", ["RowKey"])
            >>> w.feed([Entity("p", "r1", 0), Entity("p", "r2", 0)])
            b'{"value":[{"RowKey":"r1"},{"RowKey":"r2"}]}'
        """
        url = None
        if self._fmt is not Fmt.NOMETADATA:
            url = self.metadata_url(element=False, select_text=select_text)
        return write_feed(entities, self._layout(), self._entity_text, url, self._form.cosmos_order)


#: ``json.dumps(value, separators=(",", ":"))`` without building an encoder per call.
_ENCODE = json.JSONEncoder(separators=(",", ":")).encode


def dumps(value: Any) -> bytes:
    """Compact JSON bytes (ASCII-escaped, so any stored text encodes safely).

    Example::

        >>> dumps({"a": 1})
        b'{"a":1}'
    """
    return _ENCODE(value).encode("ascii")


def error_body(code: str, message: str, details: dict[str, str] | None = None) -> bytes:
    """An ``odata.error`` body; ``message`` already carries RequestId/Time lines.

    Example::

        >>> error_body("X", "m")
        b'{"odata.error":{"code":"X","message":{"lang":"en-US","value":"m"}}}'
    """
    inner: dict[str, Any] = {"code": code, "message": {"lang": "en-US", "value": message}}
    if details:
        inner.update(details)
    return dumps({"odata.error": inner})
