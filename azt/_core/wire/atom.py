"""AtomPub entity, table and error payloads with lxml (PROTOCOL.md 6.5, 11.1): the format of
service versions before 2015-12-11 and of WCF Data Services clients.

Example::

    >>> body = encode_entity({"PartitionKey": "p", "RowKey": "r", "Age": 23},
    ...                      updated=EdmDateTime(2013, 9, 18))
    >>> decode_entry(body)["Age"]
    23
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from lxml import etree

from azt._core.wire import WireDecodeError, decode_base64, decode_guid
from azt._edm.datetime import EdmDateTime
from azt._edm.entity import TableEntity
from azt._edm.types import EdmType, coerce_value, resolved_type
from azt._errors import ValidationError

__all__ = [
    "ATOM_NS",
    "DATA_NS",
    "META_NS",
    "decode_entry",
    "decode_error",
    "decode_feed",
    "decode_table",
    "decode_tables",
    "encode_entity",
    "encode_table",
]

ATOM_NS: Final = "http://www.w3.org/2005/Atom"
DATA_NS: Final = "http://schemas.microsoft.com/ado/2007/08/dataservices"
META_NS: Final = "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"
_NSMAP: Final = {None: ATOM_NS, "d": DATA_NS, "m": META_NS}

_A = "{" + ATOM_NS + "}"
_D = "{" + DATA_NS + "}"
_M = "{" + META_NS + "}"
_ENTRY: Final = _A + "entry"
_FEED: Final = _A + "feed"
_CONTENT: Final = _A + "content"
_PROPERTIES: Final = _M + "properties"
_M_TYPE: Final = _M + "type"
_M_NULL: Final = _M + "null"
_M_ETAG: Final = _M + "etag"
_D_LEN: Final = len(_D)

_PARSER: Final = etree.XMLParser(
    resolve_entities=False, no_network=True, remove_comments=True, huge_tree=True
)


# --------------------------------------------------------------------------- encode


def _lex_double(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "INF" if v > 0 else "-INF"
    return repr(v)


_LEXICAL: Final[dict[EdmType, Callable[[Any], str]]] = {
    EdmType.STRING: lambda v: v,
    EdmType.INT32: str,
    EdmType.INT64: str,
    EdmType.DOUBLE: _lex_double,
    EdmType.BOOLEAN: lambda v: "true" if v else "false",
    EdmType.DATETIME: EdmDateTime.to_wire,
    EdmType.GUID: str,
    EdmType.BINARY: lambda v: base64.b64encode(v).decode("ascii"),
}


def _entry_skeleton(updated: datetime | None) -> tuple[etree._Element, etree._Element]:
    root = etree.Element(_ENTRY, nsmap=_NSMAP)  # type: ignore[arg-type]
    etree.SubElement(root, _A + "title")
    up = etree.SubElement(root, _A + "updated")
    up.text = EdmDateTime.from_datetime(updated or datetime.now(UTC)).to_wire()
    author = etree.SubElement(root, _A + "author")
    etree.SubElement(author, _A + "name")
    etree.SubElement(root, _A + "id")
    content = etree.SubElement(root, _CONTENT, type="application/xml")
    props = etree.SubElement(content, _PROPERTIES)
    return root, props


def _serialize(root: etree._Element) -> bytes:
    return etree.tostring(root, xml_declaration=True, encoding="utf-8", standalone=True)


# m:type is written on every non-string property (Int32, Double and Boolean included, as
# Azure itself does); None values and Timestamp are omitted.
def encode_entity(
    entity: Mapping[str, Any],
    *,
    types: Mapping[str, EdmType] | None = None,
    updated: datetime | None = None,
) -> bytes:
    """Encode an entity as an AtomPub ``<entry>`` request body.

    Types are resolved as in :func:`azt._core.wire.json.encode_entity` (``types``, then
    ``entity.edm_types``, then :class:`~azt.edm.Typed`, then inference). ``updated`` is
    the Atom ``<updated>`` stamp (default: now; the service ignores it).

    Example::

        >>> from azt.edm import Typed
        >>> body = encode_entity({"PartitionKey": "p", "N": Typed(1, EdmType.INT64)})
        >>> body[body.index(b"<m:properties>") : body.index(b"</m:properties>")]
        b'<m:properties><d:PartitionKey>p</d:PartitionKey><d:N m:type="Edm.Int64">1</d:N>'
    """
    tmap: Mapping[str, EdmType] | None = getattr(entity, "_types", None) or None
    if types:
        tmap = {**tmap, **types} if tmap else types
    root, props = _entry_skeleton(updated)
    sub = etree.SubElement
    for name, value in entity.items():
        if value is None or name == "Timestamp":
            continue
        t, value = resolved_type(name, value, tmap.get(name) if tmap else None)
        v = coerce_value(value, t, name)
        if (name == "PartitionKey" or name == "RowKey") and t is not EdmType.STRING:
            raise ValidationError(f"{name} must be a str, got {value!r}")
        try:
            el = sub(props, _D + name)
        except ValueError:
            raise ValidationError(f"property name {name!r} is not a valid XML name") from None
        if t is not EdmType.STRING:
            el.set(_M_TYPE, t.value)
        try:
            el.text = _LEXICAL[t](v)
        except ValueError:
            raise ValidationError(
                f"property {name!r}: the string contains characters XML cannot carry "
                "(control characters other than tab, LF, CR, or lone surrogates)"
            ) from None
    return _serialize(root)


def encode_table(name: str, *, updated: datetime | None = None) -> bytes:
    """The Create Table body as an Atom entry with ``<d:TableName>``.

    Example::

        >>> b"<d:TableName>mytable</d:TableName>" in encode_table("mytable")
        True
    """
    root, props = _entry_skeleton(updated)
    etree.SubElement(props, _D + "TableName").text = name
    return _serialize(root)


# --------------------------------------------------------------------------- decode


def _dec_double(text: str) -> float:
    if text == "INF":
        return math.inf
    if text == "-INF":
        return -math.inf
    return float(text)


def _dec_bool(text: str) -> bool:
    t = text.strip()
    if t in ("true", "1"):
        return True
    if t in ("false", "0"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def _dec_binary(text: str) -> bytes:
    return decode_base64(text.strip())


_DECODERS: Final[dict[str, tuple[Callable[[str], Any], EdmType]]] = {
    "Edm.String": (str, EdmType.STRING),
    "Edm.Int32": (int, EdmType.INT32),
    "Edm.Int64": (int, EdmType.INT64),
    "Edm.Double": (_dec_double, EdmType.DOUBLE),
    "Edm.Boolean": (_dec_bool, EdmType.BOOLEAN),
    "Edm.DateTime": (EdmDateTime.parse, EdmType.DATETIME),
    "Edm.Guid": (decode_guid, EdmType.GUID),
    "Edm.Binary": (_dec_binary, EdmType.BINARY),
}


def _parse(body: bytes | str, tag: str | None = None) -> etree._Element:
    """The root element of ``body``; with ``tag`` (``_ENTRY``/``_FEED``) it must be that."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    try:
        root = etree.fromstring(body, _PARSER)
    except etree.XMLSyntaxError as exc:
        raise WireDecodeError(f"response body is not well-formed XML: {exc}") from None
    if tag is not None and root.tag != tag:
        name = tag[len(_A) :]
        raise WireDecodeError(f"expected an Atom <{name}>, got <{root.tag}>")
    return root


def _properties(entry: etree._Element) -> Iterable[etree._Element]:
    content = entry.find(_CONTENT)
    if content is None:
        return ()
    props = content.find(_PROPERTIES)
    return () if props is None else props


# Decoding mirrors wire.json: typed values become Python values, every m:type is
# recorded in entity.edm_types, the m:etag attribute becomes metadata.etag and Timestamp
# becomes metadata.timestamp. m:null="true" marks a null (only seen for $select of a
# missing property).
def _decode_entry_element(entry: etree._Element) -> TableEntity:
    ent = TableEntity()
    types: dict[str, EdmType] = {}
    for el in _properties(entry):
        tag = el.tag
        if not isinstance(tag, str) or not tag.startswith(_D):
            continue
        name = tag[_D_LEN:]
        t = el.get(_M_TYPE)
        text = el.text
        if text is None:
            if el.get(_M_NULL) == "true":
                if name != "Timestamp":
                    ent[name] = None
                continue
            text = ""
        if name == "Timestamp":
            ent._ts = text
            continue
        if t is None:
            ent[name] = text
            continue
        dec = _DECODERS.get(t)
        if dec is None:
            ent[name] = text  # unknown type: keep the text
            continue
        try:
            ent[name] = dec[0](text)
        except (ValueError, binascii.Error, ValidationError) as exc:
            raise WireDecodeError(f"property {name!r}: invalid {t} value {text!r}: {exc}") from None
        if dec[1] is not EdmType.STRING:
            types[name] = dec[1]
    if types:
        ent._types = types
    etag = entry.get(_M_ETAG)
    if etag is not None:
        ent._etag = etag
    return ent


def decode_entry(body: bytes | str, *, etag: str | None = None) -> TableEntity:
    """Decode a single ``<entry>`` response (point query, insert echo).

    ``etag`` (e.g. from the ``ETag`` header) is used when the entry has no ``m:etag``.

    Example::

        >>> decode_entry(
        ...     b'<entry xmlns="http://www.w3.org/2005/Atom" '
        ...     b'xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices" '
        ...     b'xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">'
        ...     b'<content type="application/xml"><m:properties><d:PartitionKey>p</d:PartitionKey>'
        ...     b'<d:N m:type="Edm.Int64">5</d:N></m:properties></content></entry>')
        TableEntity({'PartitionKey': 'p', 'N': 5})
    """
    root = _parse(body, _ENTRY)
    ent = _decode_entry_element(root)
    if etag is not None and getattr(ent, "_etag", None) is None:
        ent._etag = etag
    return ent


def decode_feed(body: bytes | str) -> list[TableEntity]:
    """Decode a query response ``<feed>`` (an empty feed gives ``[]``).

    Example::

        >>> decode_feed(b'<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title></feed>')
        []
    """
    root = _parse(body, _FEED)
    return [_decode_entry_element(e) for e in root.iterchildren(_ENTRY)]


def _table_name(entry: etree._Element) -> str:
    for el in _properties(entry):
        if el.tag == _D + "TableName":
            return el.text or ""
    raise WireDecodeError("table entry without d:TableName")


def decode_tables(body: bytes | str) -> list[str]:
    """Table names from a Query Tables ``<feed>``.

    Example::

        >>> decode_tables(b'<feed xmlns="http://www.w3.org/2005/Atom"/>')
        []
    """
    root = _parse(body, _FEED)
    return [_table_name(e) for e in root.iterchildren(_ENTRY)]


def decode_table(body: bytes | str) -> str:
    """The table name from a Create Table echo ``<entry>``.

    Example::

        >>> decode_table(encode_table("mytable"))
        'mytable'
    """
    root = _parse(body, _ENTRY)
    return _table_name(root)


def _local(tag: object) -> str:
    if not isinstance(tag, str):
        return ""
    return tag.rpartition("}")[2]


# Matched on local names, so both the default-namespace <error xmlns="...metadata"> and
# the prefixed <m:error> forms are read.
def decode_error(body: bytes | str) -> tuple[str | None, str | None]:
    """``(code, message)`` from an OData XML ``<error>`` (either namespace form).

    Returns ``(None, None)`` when the body is not such an error.

    Example::

        >>> decode_error(b'<m:error xmlns:m="http://schemas.microsoft.com/ado/2007/08/'
        ...              b'dataservices/metadata"><m:code>X</m:code><m:message xml:lang="en-US">'
        ...              b'Bad</m:message></m:error>')
        ('X', 'Bad')
    """
    try:
        root = _parse(body)
    except WireDecodeError:
        return None, None
    if _local(root.tag) != "error":
        return None, None
    code = message = None
    for el in root:
        local = _local(el.tag)
        if local == "code":
            code = el.text or ""
        elif local == "message":
            message = el.text or ""
    return code, message
