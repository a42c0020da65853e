"""AtomPub bodies (PROTOCOL.md 6.5): entry readers, entry/feed writers, OData XML errors.

Used for clients on service versions before 2015-12-11 (WCF Data Services). Readers
parse lexical forms only; ranges and limits are :mod:`azt_server_stub.validation`'s.

Example::

    >>> body = ENTRY_SAMPLE
    >>> pk, rk, props = parse_entity(body)
    >>> (pk, rk, props["Age"])
    ('p', 'r', ('Edm.Int32', 23))
"""

from __future__ import annotations

import base64
import datetime as _dt
import math
import re
from collections.abc import Sequence

from lxml import etree

from .. import errors
from ..model import (
    Edm,
    EdmName,
    Entity,
    TypedValue,
    edm_type,
    etag_for,
    format_datetime,
    format_datetime_7,
)
from .json import (
    DOUBLE_RE,
    parse_base64,
    parse_datetime_value,
    parse_guid,
)
from .json_feed import entity_path, key_literal

ATOM_NS = "http://www.w3.org/2005/Atom"
D_NS = "http://schemas.microsoft.com/ado/2007/08/dataservices"
M_NS = "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"
SCHEME = "http://schemas.microsoft.com/ado/2007/08/dataservices/scheme"
_NSMAP = {None: ATOM_NS, "d": D_NS, "m": M_NS}

_A = f"{{{ATOM_NS}}}"
_D = f"{{{D_NS}}}"
_M = f"{{{M_NS}}}"

ENTRY_SAMPLE = (
    b'<?xml version="1.0" encoding="utf-8" standalone="yes"?>'
    b'<entry xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices" '
    b'xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata" '
    b'xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><m:properties>'
    b"<d:PartitionKey>p</d:PartitionKey><d:RowKey>r</d:RowKey>"
    b'<d:Age m:type="Edm.Int32">23</d:Age></m:properties></content></entry>'
)

_PARSER = etree.XMLParser(
    resolve_entities=False, no_network=True, remove_blank_text=False, huge_tree=False
)
_INT_RE = re.compile(r"[+-]?[0-9]{1,20}\Z")  # longer is out of any range (and slow to parse)


def _parse_xml(body: bytes) -> etree._Element:
    try:
        root = etree.fromstring(body, _PARSER)
    except etree.XMLSyntaxError:
        raise errors.invalid_input() from None
    if root is None:
        raise errors.invalid_input()
    return root


def _properties(root: etree._Element) -> list[etree._Element]:
    if root.tag != _A + "entry":
        raise errors.invalid_input()
    props = root.find(f"{_A}content/{_M}properties")
    if props is None:
        # Media-link entries carry m:properties directly under the entry.
        props = root.find(f"{_M}properties")
    if props is None:
        return []
    return [child for child in props if isinstance(child.tag, str)]


def convert_text(edm_name: str | None, text: str) -> TypedValue:
    """An XML-Schema lexical value with its ``m:type`` as a typed value (400 InvalidInput).

    Example::

        >>> convert_text("Edm.Double", "INF")
        ('Edm.Double', inf)
    """
    if edm_name is None:
        return (Edm.STRING, text)
    try:
        edm = edm_type(edm_name)
    except ValueError:
        raise errors.invalid_input() from None
    stripped = text.strip()
    if edm is Edm.STRING:
        return (edm, text)
    if edm is Edm.INT32 or edm is Edm.INT64:
        if not _INT_RE.match(stripped):
            raise errors.invalid_input()
        return (edm, int(stripped))
    if edm is Edm.DOUBLE:
        special = {"NaN": math.nan, "INF": math.inf, "-INF": -math.inf}.get(stripped)
        if special is not None:
            return (edm, special)
        if not DOUBLE_RE.match(stripped):
            raise errors.invalid_input()
        return (edm, float(stripped))
    if edm is Edm.BOOLEAN:
        if stripped in ("true", "1"):
            return (edm, True)
        if stripped in ("false", "0"):
            return (edm, False)
        raise errors.invalid_input()
    if edm is Edm.DATETIME:
        return (edm, parse_datetime_value(stripped))
    if edm is Edm.GUID:
        return (edm, parse_guid(stripped))
    return (edm, parse_base64(stripped))


def _members(root: etree._Element) -> list[tuple[str, str | None, str, bool]]:
    out: list[tuple[str, str | None, str, bool]] = []
    seen: set[str] = set()
    for el in _properties(root):
        qname = etree.QName(el)
        if qname.namespace != D_NS:
            continue
        name = qname.localname
        if name in seen:
            raise errors.duplicate_properties_specified()
        seen.add(name)
        is_null = el.get(_M + "null") == "true"
        out.append((name, el.get(_M + "type"), el.text or "", is_null))
    return out


def _entity(
    body: bytes, *, keys_required: bool
) -> tuple[str | None, str | None, dict[str, TypedValue]]:
    pk: str | None = None
    rk: str | None = None
    props: dict[str, TypedValue] = {}
    for name, edm_name, text, is_null in _members(_parse_xml(body)):
        if name in ("PartitionKey", "RowKey"):
            if not keys_required or is_null:
                continue
            if edm_name not in (None, "Edm.String"):
                raise errors.invalid_input()
            if name == "PartitionKey":
                pk = text
            else:
                rk = text
            continue
        if name == "Timestamp":
            continue
        if is_null:
            continue
        props[name] = convert_text(edm_name, text)
    if keys_required and (pk is None or rk is None):
        raise errors.properties_need_value()
    return pk, rk, props


def parse_entity(body: bytes) -> tuple[str, str, dict[str, TypedValue]]:
    """Parse and validate an Atom insert entry (keys required).

    Example::

        >>> parse_entity(ENTRY_SAMPLE)[0]
        'p'
    """
    pk, rk, props = _entity(body, keys_required=True)
    assert pk is not None
    assert rk is not None
    return pk, rk, props


def parse_entity_update(body: bytes, pk: str, rk: str) -> dict[str, TypedValue]:
    """Parse and validate an Atom update/merge entry (keys from the URL).

    Example::

        >>> parse_entity_update(ENTRY_SAMPLE, "p", "r")["Age"]
        ('Edm.Int32', 23)
    """
    if not body.strip():
        props: dict[str, TypedValue] = {}
    else:
        _, _, props = _entity(body, keys_required=False)
    return props


def parse_table_name(body: bytes) -> str:
    """The ``d:TableName`` of an Atom Create Table entry.

    Example::

        >>> parse_table_name(
        ...     b'<entry xmlns="http://www.w3.org/2005/Atom" xmlns:d="%s" xmlns:m="%s">'
        ...     b'<content type="application/xml"><m:properties>'
        ...     b'<d:TableName>mytable</d:TableName></m:properties></content></entry>'
        ...     % (D_NS.encode(), M_NS.encode()))
        'mytable'
    """
    for name, _, text, is_null in _members(_parse_xml(body)):
        if name == "TableName" and not is_null:
            return text
    raise errors.properties_need_value()


# --- writers ------------------------------------------------------------------------


def _now_text() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _serialize(root: etree._Element) -> bytes:
    return etree.tostring(root, xml_declaration=True, encoding="utf-8", standalone=True)


_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def xml_text(text: str) -> str:
    """``text`` made storable in XML 1.0: characters XML cannot carry become U+FFFD.

    JSON clients may store control characters that AtomPub cannot represent at all.

    Example::

        >>> xml_text("a\x01b")
        'a\ufffdb'
    """
    if text.isprintable() or not _XML_INVALID.search(text):
        return text
    return _XML_INVALID.sub("\ufffd", text)


def _lexical(edm: EdmName, value: object) -> str:
    if edm is Edm.STRING:
        assert isinstance(value, str)
        return xml_text(value)
    if edm is Edm.BOOLEAN:
        return "true" if value else "false"
    if edm is Edm.INT32 or edm is Edm.INT64:
        return str(value)
    if edm is Edm.DOUBLE:
        assert isinstance(value, float)
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "INF" if value > 0 else "-INF"
        return repr(value)
    if edm is Edm.DATETIME:
        assert isinstance(value, int)
        return format_datetime(value)
    if edm is Edm.GUID:
        return str(value)
    assert isinstance(value, bytes)
    return base64.b64encode(value).decode("ascii")


def _entry_shell(
    parent: etree._Element | None,
    base: str | None,
    entry_id: str,
    edit_title: str,
    edit_href: str,
    category: str,
    updated: str,
    etag: str | None,
) -> tuple[etree._Element, etree._Element]:
    if parent is None:
        entry = etree.Element(_A + "entry", nsmap=_NSMAP)  # type: ignore[arg-type]
        if base is not None:
            entry.set("{http://www.w3.org/XML/1998/namespace}base", base)
    else:
        entry = etree.SubElement(parent, _A + "entry")
    if etag is not None:
        entry.set(_M + "etag", etag)
    etree.SubElement(entry, _A + "id").text = entry_id
    etree.SubElement(entry, _A + "title", type="text")
    etree.SubElement(entry, _A + "updated").text = updated
    author = etree.SubElement(entry, _A + "author")
    etree.SubElement(author, _A + "name")
    etree.SubElement(entry, _A + "link", rel="edit", title=edit_title, href=edit_href)
    etree.SubElement(entry, _A + "category", term=category, scheme=SCHEME)
    content = etree.SubElement(entry, _A + "content", type="application/xml")
    props = etree.SubElement(content, _M + "properties")
    return entry, props


class AtomWriter:
    """Builds Atom entries and feeds for one table and endpoint.

    Example::

        >>> w = AtomWriter("http://h/acct", "acct", "t")
        >>> b"<d:PartitionKey>p</d:PartitionKey>" in w.single(Entity("p", "r", 0, {}))
        True
    """

    def __init__(
        self, endpoint: str, account: str, table: str, select: Sequence[str] | None = None
    ) -> None:
        self._endpoint = endpoint
        self._account = account
        self._table = table
        self._select = list(select) if select else None

    def _fill(self, parent: etree._Element | None, e: Entity, updated: str) -> etree._Element:
        ts = format_datetime_7(e.timestamp)
        path = xml_text(entity_path(self._table, e.pk, e.rk))  # keys may hold U+FFFE...
        entry, props = _entry_shell(
            parent,
            self._endpoint + "/" if parent is None else None,
            f"{self._endpoint}/{path}",
            self._table,
            path,
            f"{self._account}.{self._table}",
            updated,
            etag_for(e.timestamp),
        )
        if self._select is None:
            etree.SubElement(props, _D + "PartitionKey").text = xml_text(e.pk)
            etree.SubElement(props, _D + "RowKey").text = xml_text(e.rk)
            ts_el = etree.SubElement(props, _D + "Timestamp")
            ts_el.set(_M + "type", "Edm.DateTime")
            ts_el.text = ts
            items = list(e.props.items())
            for name, (edm, value) in items:
                el = etree.SubElement(props, _D + name)
                if edm is not Edm.STRING:
                    el.set(_M + "type", edm)
                el.text = _lexical(edm, value)
        else:
            for name in self._select:
                el = etree.SubElement(props, _D + name)
                typed = e.get(name)
                if typed is None:
                    el.set(_M + "null", "true")
                    continue
                edm, value = typed
                if name == "Timestamp":
                    el.set(_M + "type", "Edm.DateTime")
                    el.text = ts
                    continue
                if edm is not Edm.STRING:
                    el.set(_M + "type", edm)
                el.text = _lexical(edm, value)
        return entry

    def single(self, e: Entity) -> bytes:
        """A root ``<entry>`` (insert echo, point GET).

        Example::

            >>> body = AtomWriter("http://h/acct", "acct", "t").single(Entity("p", "r", 0))
            >>> body.startswith(b"<?xml"), b"<entry " in body, b"<d:RowKey>r</d:RowKey>" in body
            (True, True, True)
        """
        return _serialize(self._fill(None, e, _now_text()))

    def feed(self, entities: Sequence[Entity]) -> bytes:
        """A ``<feed>`` of entries (Query Entities).

        Example::

            >>> body = AtomWriter("http://h/acct", "acct", "t").feed(
            ...     [Entity("p", "r1", 0), Entity("p", "r2", 0)])
            >>> b"<feed " in body, body.count(b"<entry")
            (True, 2)
        """
        updated = _now_text()
        feed = _feed_shell(self._endpoint, self._table, updated)
        for e in entities:
            self._fill(feed, e, updated)
        return _serialize(feed)


def _feed_shell(endpoint: str, title: str, updated: str) -> etree._Element:
    feed = etree.Element(_A + "feed", nsmap=_NSMAP)  # type: ignore[arg-type]
    feed.set("{http://www.w3.org/XML/1998/namespace}base", endpoint + "/")
    etree.SubElement(feed, _A + "title", type="text").text = title
    etree.SubElement(feed, _A + "id").text = f"{endpoint}/{title}"
    etree.SubElement(feed, _A + "updated").text = updated
    etree.SubElement(feed, _A + "link", rel="self", title=title, href=title)
    return feed


def _table_entry(
    parent: etree._Element | None, endpoint: str, account: str, name: str
) -> etree._Element:
    """A table entry under ``parent`` (a feed) or as a root (``parent`` None)."""
    href = f"Tables({key_literal(name)})"
    entry, props = _entry_shell(
        parent,
        None if parent is not None else endpoint + "/",
        f"{endpoint}/{href}",
        "Tables",
        href,
        f"{account}.Tables",
        _now_text(),
        None,
    )
    etree.SubElement(props, _D + "TableName").text = name
    return entry


def table_single(endpoint: str, account: str, name: str) -> bytes:
    """A table ``<entry>`` (Create Table echo).

    Example::

        >>> b"<d:TableName>t</d:TableName>" in table_single("http://h/a", "a", "t")
        True
    """
    return _serialize(_table_entry(None, endpoint, account, name))


def table_feed(endpoint: str, account: str, names: Sequence[str]) -> bytes:
    """A Query Tables ``<feed>``.

    Example::

        >>> b"<title type=\\"text\\">Tables</title>" in table_feed("http://h/a", "a", [])
        True
    """
    feed = _feed_shell(endpoint, "Tables", _now_text())
    for name in names:
        _table_entry(feed, endpoint, account, name)
    return _serialize(feed)


def error_body(code: str, message: str) -> bytes:
    """An OData XML error (``<error xmlns="...metadata">``), declared as Storage declares
    it (recorded 2020: double quotes, no ``standalone``, the element on the same line).

    Example::

        >>> error_body("X", "m")[:56]
        b'<?xml version="1.0" encoding="utf-8"?><error xmlns="http'
        >>> b"<code>X</code>" in error_body("X", "m")
        True
    """
    root = etree.Element("error", nsmap={None: M_NS})  # type: ignore[dict-item]
    root.tag = _M + "error"
    etree.SubElement(root, _M + "code").text = code
    msg = etree.SubElement(root, _M + "message")
    msg.set("{http://www.w3.org/XML/1998/namespace}lang", "en-US")
    msg.text = xml_text(message)
    return _ERROR_DECLARATION + etree.tostring(root, encoding="utf-8", xml_declaration=False)


_ERROR_DECLARATION = b'<?xml version="1.0" encoding="utf-8"?>'
