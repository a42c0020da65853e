"""Plain storage XML bodies: table ACLs, service properties and stats, storage errors.

(PROTOCOL.md 4.4-4.9 and 11.1.) Readers validate and raise ``400
InvalidXmlDocument`` / ``InvalidXmlNodeValue``; the service-properties reader
returns a normalised document so that what is stored is always well-formed.

Example::

    >>> acl = parse_acl(b"<SignedIdentifiers><SignedIdentifier><Id>a</Id>"
    ...                 b"<AccessPolicy><Permission>r</Permission></AccessPolicy>"
    ...                 b"</SignedIdentifier></SignedIdentifiers>")
    >>> acl[0].permission
    'r'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from lxml import etree

from .. import errors
from ..backend import SignedIdentifier
from ..model import INT32_MAX, format_datetime_7, parse_datetime
from .atom import xml_text

_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
#: A non-negative decimal integer as the service reads one: ASCII digits only (``str.isdigit``
#: also accepts superscripts and other scripts' digits), at most ten of them.
_UINT_RE = re.compile(r"[0-9]{1,10}")


_ACL_TIME_RE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,7})?)?(Z|[+-][0-9]{2}:[0-9]{2}))?\Z"
)
_PERMISSION_ORDER = "raud"
_DECLARATION = b'<?xml version="1.0" encoding="utf-8"?>'


def _parse(body: bytes) -> etree._Element:
    try:
        root = etree.fromstring(body.lstrip(b"\xef\xbb\xbf").strip(), _PARSER)
    except etree.XMLSyntaxError:
        raise errors.invalid_xml_document() from None
    if root is None:
        raise errors.invalid_xml_document()
    return root


def _text(el: etree._Element | None) -> str | None:
    if el is None:
        return None
    return (el.text or "").strip()


def _to_bytes(root: etree._Element) -> bytes:
    return _DECLARATION + etree.tostring(root, encoding="utf-8")


# --- ACL --------------------------------------------------------------------------------


def _normalise_acl_time(text: str) -> str:
    if not _ACL_TIME_RE.match(text):
        raise errors.invalid_xml_node_value()
    if "T" not in text:
        text += "T00:00:00Z"
    try:
        return format_datetime_7(parse_datetime(text))
    except (ValueError, OverflowError):
        raise errors.invalid_xml_node_value() from None


def parse_acl(body: bytes) -> list[SignedIdentifier]:
    """Read a ``SignedIdentifiers`` document; an empty body is an empty ACL.

    Times are normalised to seven fractional digits; at most five identifiers, ids of
    at most 64 characters, permissions from ``raud``.

    Example::

        >>> parse_acl(b"")
        []
    """
    if not body.strip():
        return []
    root = _parse(body)
    if root.tag != "SignedIdentifiers":
        raise errors.invalid_xml_document()
    result: list[SignedIdentifier] = []
    for si in root.iterchildren("*"):
        if si.tag != "SignedIdentifier":
            raise errors.invalid_xml_document()
        ident = _text(si.find("Id"))
        if not ident or len(ident) > 64:
            raise errors.invalid_xml_document()
        policy = si.find("AccessPolicy")
        start = expiry = permission = None
        if policy is not None:
            start_text = _text(policy.find("Start"))
            expiry_text = _text(policy.find("Expiry"))
            perm_text = _text(policy.find("Permission"))
            if start_text:
                start = _normalise_acl_time(start_text)
            if expiry_text:
                expiry = _normalise_acl_time(expiry_text)
            if perm_text:
                if any(ch not in _PERMISSION_ORDER for ch in perm_text) or len(
                    set(perm_text)
                ) != len(perm_text):
                    raise errors.invalid_xml_document()
                permission = "".join(ch for ch in _PERMISSION_ORDER if ch in perm_text)
        result.append(SignedIdentifier(ident, start, expiry, permission))
    if len(result) > 5:
        raise errors.invalid_xml_document()
    if len({si.id for si in result}) != len(result):
        raise errors.invalid_xml_document()
    return result


def acl_body(acl: Sequence[SignedIdentifier]) -> bytes:
    """Write a ``SignedIdentifiers`` document.

    Example::

        >>> acl_body([]).endswith(b"<SignedIdentifiers/>")
        True
        >>> acl_body([SignedIdentifier("empty")]).endswith(
        ...     b"<SignedIdentifier><Id>empty</Id></SignedIdentifier></SignedIdentifiers>")
        True
    """
    root = etree.Element("SignedIdentifiers")
    for si in acl:
        el = etree.SubElement(root, "SignedIdentifier")
        etree.SubElement(el, "Id").text = si.id
        if si.start is None and si.expiry is None and si.permission is None:
            continue  # an empty policy is not written back (recorded 2017-2021, docs/stub.md)
        policy = etree.SubElement(el, "AccessPolicy")
        if si.start is not None:
            etree.SubElement(policy, "Start").text = si.start
        if si.expiry is not None:
            etree.SubElement(policy, "Expiry").text = si.expiry
        if si.permission is not None:
            etree.SubElement(policy, "Permission").text = si.permission
    return _to_bytes(root)


# --- service properties ---------------------------------------------------------------


@dataclass(slots=True)
class Retention:
    """A ``RetentionPolicy``: enabled with 1-365 days, or disabled.

    Example::

        >>> Retention(True, 7).days
        7
    """

    enabled: bool = False
    days: int | None = None


@dataclass(slots=True)
class Logging:
    """The ``Logging`` section.

    Example::

        >>> Logging().version
        '1.0'
    """

    version: str = "1.0"
    delete: bool = False
    read: bool = False
    write: bool = False
    retention: Retention = field(default_factory=Retention)


@dataclass(slots=True)
class Metrics:
    """An ``HourMetrics`` / ``MinuteMetrics`` section.

    Example::

        >>> Metrics(enabled=True, include_apis=False).enabled
        True
    """

    version: str = "1.0"
    enabled: bool = False
    include_apis: bool | None = None
    retention: Retention = field(default_factory=Retention)


@dataclass(slots=True)
class CorsRule:
    """One CORS rule; the lists are as configured (comma-separated on the wire).

    Example::

        >>> CorsRule(["*"], ["GET"], 60, [], []).max_age
        60
    """

    allowed_origins: list[str]
    allowed_methods: list[str]
    max_age: int
    exposed_headers: list[str]
    allowed_headers: list[str]


@dataclass(slots=True)
class ServiceProperties:
    """A table service's properties, normalised.

    Example::

        >>> ServiceProperties().to_xml().startswith(b'<?xml')
        True
    """

    logging: Logging = field(default_factory=Logging)
    hour_metrics: Metrics = field(default_factory=Metrics)
    minute_metrics: Metrics = field(default_factory=Metrics)
    cors: list[CorsRule] = field(default_factory=list)

    def to_xml(self) -> bytes:
        """The normalised ``StorageServiceProperties`` document.

        Example::

            >>> doc = ServiceProperties().to_xml()
            >>> b"<StorageServiceProperties><Logging><Version>" in doc, b"<Cors/>" in doc
            (True, True)
        """
        root = etree.Element("StorageServiceProperties")
        lg = etree.SubElement(root, "Logging")
        etree.SubElement(lg, "Version").text = self.logging.version
        etree.SubElement(lg, "Delete").text = _b(self.logging.delete)
        etree.SubElement(lg, "Read").text = _b(self.logging.read)
        etree.SubElement(lg, "Write").text = _b(self.logging.write)
        _retention_xml(lg, self.logging.retention)
        for tag, m in (("HourMetrics", self.hour_metrics), ("MinuteMetrics", self.minute_metrics)):
            el = etree.SubElement(root, tag)
            etree.SubElement(el, "Version").text = m.version
            etree.SubElement(el, "Enabled").text = _b(m.enabled)
            if m.enabled and m.include_apis is not None:
                etree.SubElement(el, "IncludeAPIs").text = _b(m.include_apis)
            _retention_xml(el, m.retention)
        cors = etree.SubElement(root, "Cors")
        for rule in self.cors:
            r = etree.SubElement(cors, "CorsRule")
            etree.SubElement(r, "AllowedOrigins").text = ",".join(rule.allowed_origins)
            etree.SubElement(r, "AllowedMethods").text = ",".join(rule.allowed_methods)
            etree.SubElement(r, "MaxAgeInSeconds").text = str(rule.max_age)
            etree.SubElement(r, "ExposedHeaders").text = ",".join(rule.exposed_headers)
            etree.SubElement(r, "AllowedHeaders").text = ",".join(rule.allowed_headers)
        return _to_bytes(root)


def _b(value: bool) -> str:
    return "true" if value else "false"


def _retention_xml(parent: etree._Element, r: Retention) -> None:
    el = etree.SubElement(parent, "RetentionPolicy")
    etree.SubElement(el, "Enabled").text = _b(r.enabled)
    if r.enabled and r.days is not None:
        etree.SubElement(el, "Days").text = str(r.days)


def _bool(el: etree._Element, name: str, default: bool | None = None) -> bool:
    text = _text(el.find(name))
    if text is None:
        if default is None:
            raise errors.invalid_xml_document()
        return default
    # Case-insensitive, as the service reads them: the legacy Python SDK writes ``True``.
    lowered = text.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise errors.invalid_xml_node_value()


def _retention(el: etree._Element, current: Retention) -> Retention:
    rp = el.find("RetentionPolicy")
    if rp is None:
        return current
    enabled = _bool(rp, "Enabled")
    days_text = _text(rp.find("Days"))
    days: int | None = None
    if enabled:
        if days_text is None or not _UINT_RE.fullmatch(days_text):
            raise errors.invalid_xml_node_value()
        days = int(days_text)
        if not 1 <= days <= 365:
            raise errors.invalid_xml_node_value()
    return Retention(enabled, days)


def _metrics(el: etree._Element, current: Metrics) -> Metrics:
    version = _text(el.find("Version")) or current.version
    enabled = _bool(el, "Enabled")
    include: bool | None = None
    if el.find("IncludeAPIs") is not None:
        include = _bool(el, "IncludeAPIs")
    elif enabled:
        include = current.include_apis if current.include_apis is not None else False
    return Metrics(version, enabled, include, _retention(el, current.retention))


def _list(text: str | None) -> list[str]:
    if not text:
        return []
    return [item.strip() for item in text.split(",") if item.strip()]


_CORS_METHODS = {"DELETE", "GET", "HEAD", "MERGE", "POST", "OPTIONS", "PUT", "PATCH"}


def _cors_rule(el: etree._Element) -> CorsRule:
    origins = _list(_text(el.find("AllowedOrigins")))
    methods = _list(_text(el.find("AllowedMethods")))
    max_age_text = _text(el.find("MaxAgeInSeconds"))
    if not origins or not methods or max_age_text is None:
        raise errors.invalid_xml_document()
    if any(m.upper() not in _CORS_METHODS for m in methods):
        raise errors.invalid_xml_node_value()
    if not _UINT_RE.fullmatch(max_age_text) or int(max_age_text) > INT32_MAX:
        raise errors.invalid_xml_node_value()
    return CorsRule(
        origins,
        [m.upper() for m in methods],
        int(max_age_text),
        _list(_text(el.find("ExposedHeaders"))),
        _list(_text(el.find("AllowedHeaders"))),
    )


def parse_service_properties(
    body: bytes, current: ServiceProperties | None = None
) -> ServiceProperties:
    """Read a ``StorageServiceProperties`` document over ``current``.

    Omitted sections keep their current values (Azure's rule); a bad document is
    ``400 InvalidXmlDocument``, a bad value ``400 InvalidXmlNodeValue``.

    Example::

        >>> props = parse_service_properties(
        ...     b"<StorageServiceProperties><Cors><CorsRule><AllowedOrigins>*</AllowedOrigins>"
        ...     b"<AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>5</MaxAgeInSeconds>"
        ...     b"</CorsRule></Cors></StorageServiceProperties>")
        >>> props.cors[0].allowed_methods
        ['GET']
    """
    base = current if current is not None else ServiceProperties()
    root = _parse(body)
    if root.tag != "StorageServiceProperties":
        raise errors.invalid_xml_document()
    result = ServiceProperties(base.logging, base.hour_metrics, base.minute_metrics, base.cors)
    lg = root.find("Logging")
    if lg is not None:
        result.logging = Logging(
            _text(lg.find("Version")) or base.logging.version,
            _bool(lg, "Delete"),
            _bool(lg, "Read"),
            _bool(lg, "Write"),
            _retention(lg, base.logging.retention),
        )
    for tag, attr in (
        ("HourMetrics", "hour_metrics"),
        ("MinuteMetrics", "minute_metrics"),
        ("Metrics", "hour_metrics"),
    ):
        el = root.find(tag)
        if el is not None:
            setattr(result, attr, _metrics(el, getattr(base, attr)))
    cors = root.find("Cors")
    if cors is not None:
        rules = [_cors_rule(r) for r in cors.iterchildren("*")]
        if len(rules) > 5:
            raise errors.invalid_xml_document()
        result.cors = rules
    return result


def service_stats_body(last_sync: str, status: str = "live") -> bytes:
    """A ``StorageServiceStats`` document.

    Example::

        >>> b"<Status>live</Status>" in service_stats_body("Mon, 01 Jan 2024 00:00:00 GMT")
        True
    """
    root = etree.Element("StorageServiceStats")
    geo = etree.SubElement(root, "GeoReplication")
    etree.SubElement(geo, "Status").text = status
    etree.SubElement(geo, "LastSyncTime").text = last_sync
    return _to_bytes(root)


def error_body(code: str, message: str, details: dict[str, str] | None = None) -> bytes:
    """A storage ``<Error>`` document with optional detail elements.

    Example::

        >>> b"<Code>AuthenticationFailed</Code>" in error_body("AuthenticationFailed", "m")
        True
    """
    root = etree.Element("Error")
    etree.SubElement(root, "Code").text = code
    etree.SubElement(root, "Message").text = xml_text(message)
    for name, value in (details or {}).items():
        etree.SubElement(root, name).text = xml_text(value)
    return _to_bytes(root)
