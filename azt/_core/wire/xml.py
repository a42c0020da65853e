"""Storage XML bodies: table ACLs, service properties and stats, ``<Error>`` (PROTOCOL.md 4.4-4.8).

Plain ``application/xml``, never OData; the values are typed attrs classes
(:class:`AccessPolicy`, :class:`ServiceProperties` and its parts, :class:`ServiceStats`).

Example::

    >>> from datetime import UTC, datetime
    >>> body = encode_signed_identifiers(
    ...     {"testid": AccessPolicy("r", expiry=datetime(2030, 1, 1, tzinfo=UTC))})
    >>> decode_signed_identifiers(body)["testid"].permission
    'r'
"""

from __future__ import annotations

import email.utils
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Final

import attrs
from lxml import etree

from azt._core.wire import WireDecodeError
from azt._edm.datetime import EdmDateTime
from azt._errors import ValidationError

__all__ = [
    "AccessPolicy",
    "CorsRule",
    "GeoReplication",
    "Logging",
    "Metrics",
    "RetentionPolicy",
    "ServiceProperties",
    "ServiceStats",
    "decode_service_properties",
    "decode_service_stats",
    "decode_signed_identifiers",
    "decode_storage_error",
    "encode_service_properties",
    "encode_signed_identifiers",
]

MAX_POLICIES: Final = 5
MAX_POLICY_ID: Final = 64
MAX_CORS_RULES: Final = 5
_PERMISSION_ORDER: Final = "raud"
_CORS_METHODS: Final = frozenset(
    {"DELETE", "GET", "HEAD", "MERGE", "POST", "OPTIONS", "PUT", "PATCH"}
)
_PARSER: Final = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True)


# --------------------------------------------------------------------------- helpers


# Values are checked where the service would refuse them (more than five policies, ids
# over 64 characters, permissions outside raud, more than five CORS rules, retention days
# outside 1..365: ValidationError). Decoding tolerates a UTF-8 BOM, missing optional
# elements and the pre-2013 single <Metrics> element.
def _parse(body: bytes | str) -> etree._Element | None:
    if isinstance(body, str):
        body = body.encode("utf-8")
    if body.startswith(b"\xef\xbb\xbf"):
        body = body[3:]
    if not body.strip():
        return None
    try:
        return etree.fromstring(body, _PARSER)
    except etree.XMLSyntaxError as exc:
        raise WireDecodeError(f"response body is not well-formed XML: {exc}") from None


def _text(parent: etree._Element, tag: str) -> str | None:
    el = parent.find(tag)
    if el is None:
        return None
    return (el.text or "").strip()


def _bool(parent: etree._Element, tag: str, default: bool = False) -> bool:
    text = _text(parent, tag)
    if text is None or text == "":
        return default
    low = text.lower()
    if low not in ("true", "false"):
        raise WireDecodeError(f"<{tag}> must be true or false, got {text!r}")
    return low == "true"


def _int(parent: etree._Element, tag: str) -> int | None:
    text = _text(parent, tag)
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise WireDecodeError(f"<{tag}> must be an integer, got {text!r}") from None


def _sub(parent: etree._Element, tag: str, text: str | None = None) -> etree._Element:
    el = etree.SubElement(parent, tag)
    if text is not None:
        el.text = text
    return el


def _tf(value: bool) -> str:
    return "true" if value else "false"


def _serialize(root: etree._Element) -> bytes:
    return etree.tostring(root, xml_declaration=True, encoding="utf-8")


def _csv(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    return tuple(part.strip() for part in text.split(",") if part.strip())


# --------------------------------------------------------------------------- ACL


def _normalise_permission(value: str | None) -> str | None:
    if value is None:
        return None
    bad = set(value) - set(_PERMISSION_ORDER)
    if bad:
        raise ValidationError(
            f"table access policy permissions are letters of 'raud' (read, add, update, "
            f"delete); got {value!r}"
        )
    return "".join(c for c in _PERMISSION_ORDER if c in value)


def _aware(value: datetime | None) -> EdmDateTime | None:
    return None if value is None else EdmDateTime.from_datetime(value)


@attrs.frozen
class AccessPolicy:
    """A stored access policy of a table (each field optional).

    ``permission`` is a string of ``r`` (query), ``a`` (add), ``u`` (update), ``d``
    (delete), normalised to that order; ``start``/``expiry`` are aware datetimes
    (naive ones are refused).

    Example::

        >>> AccessPolicy("dr").permission
        'rd'
    """

    permission: str | None = attrs.field(default=None, converter=_normalise_permission)
    start: EdmDateTime | None = attrs.field(default=None, converter=_aware)
    expiry: EdmDateTime | None = attrs.field(default=None, converter=_aware)


def encode_signed_identifiers(policies: Mapping[str, AccessPolicy | None]) -> bytes:
    """The Set Table ACL body. ``{}`` gives an empty ``<SignedIdentifiers />`` (clears).

    Example::

        >>> encode_signed_identifiers({"id1": None}).split(b"\\n")[1]
        b'<SignedIdentifiers><SignedIdentifier><Id>id1</Id></SignedIdentifier></SignedIdentifiers>'

    """
    if len(policies) > MAX_POLICIES:
        raise ValidationError(
            f"a table has at most {MAX_POLICIES} stored access policies, got {len(policies)}"
        )
    root = etree.Element("SignedIdentifiers")
    for pid, policy in policies.items():
        if not isinstance(pid, str) or not 1 <= len(pid) <= MAX_POLICY_ID:
            raise ValidationError(
                f"a stored access policy id has 1-{MAX_POLICY_ID} characters, got {pid!r}"
            )
        ident = _sub(root, "SignedIdentifier")
        _sub(ident, "Id", pid)
        if policy is None:
            continue
        if not isinstance(policy, AccessPolicy):
            raise ValidationError(f"policy {pid!r} must be an AccessPolicy or None")
        ap = _sub(ident, "AccessPolicy")
        if policy.start is not None:
            _sub(ap, "Start", policy.start.to_wire())
        if policy.expiry is not None:
            _sub(ap, "Expiry", policy.expiry.to_wire())
        if policy.permission is not None:
            _sub(ap, "Permission", policy.permission)
    return _serialize(root)


def decode_signed_identifiers(body: bytes | str) -> dict[str, AccessPolicy | None]:
    """``{id: AccessPolicy or None}`` from a Get Table ACL body (empty body gives ``{}``).

    Example::

        >>> decode_signed_identifiers(b"\\xef\\xbb\\xbf<SignedIdentifiers />")
        {}
    """
    root = _parse(body)
    if root is None:
        return {}
    if root.tag != "SignedIdentifiers":
        raise WireDecodeError(f"expected <SignedIdentifiers>, got <{root.tag}>")
    out: dict[str, AccessPolicy | None] = {}
    for ident in root.iterchildren("SignedIdentifier"):
        pid = _text(ident, "Id")
        if not pid:
            raise WireDecodeError("<SignedIdentifier> without <Id>")
        ap = ident.find("AccessPolicy")
        if ap is None:
            out[pid] = None
            continue
        try:
            start = _text(ap, "Start")
            expiry = _text(ap, "Expiry")
            out[pid] = AccessPolicy(
                permission=_text(ap, "Permission") or None,
                start=EdmDateTime.parse(start) if start else None,
                expiry=EdmDateTime.parse(expiry) if expiry else None,
            )
        except ValidationError as exc:
            raise WireDecodeError(f"access policy {pid!r}: {exc}") from None
    return out


# --------------------------------------------------------------------------- properties


def _check_days(days: int | None) -> int | None:
    if days is not None and not 1 <= days <= 365:
        raise ValidationError(f"retention days must be 1..365, got {days}")
    return days


@attrs.frozen
class RetentionPolicy:
    """How long logs or metrics are kept (``days`` 1..365 when enabled).

    Example::

        >>> RetentionPolicy(enabled=True, days=7).days
        7
    """

    enabled: bool = False
    days: int | None = attrs.field(default=None, converter=_check_days)

    def __attrs_post_init__(self) -> None:
        if self.enabled and self.days is None:
            raise ValidationError("an enabled retention policy needs days (1..365)")


@attrs.frozen
class Logging:
    """Storage Analytics logging settings for the table service.

    Example::

        >>> Logging(read=True).write
        False
    """

    version: str = "1.0"
    delete: bool = False
    read: bool = False
    write: bool = False
    retention_policy: RetentionPolicy = attrs.field(factory=RetentionPolicy)


@attrs.frozen
class Metrics:
    """Hour or minute metrics settings (``include_apis`` only when enabled).

    Example::

        >>> Metrics(enabled=True, include_apis=True).include_apis
        True
    """

    version: str = "1.0"
    enabled: bool = False
    include_apis: bool | None = None
    retention_policy: RetentionPolicy = attrs.field(factory=RetentionPolicy)


def _check_methods(methods: Iterable[str]) -> tuple[str, ...]:
    out = tuple(m.strip().upper() for m in methods)
    bad = [m for m in out if m not in _CORS_METHODS]
    if bad:
        raise ValidationError(
            f"CORS allowed methods must be among {sorted(_CORS_METHODS)}, got {bad}"
        )
    return out


def _tuple(items: Iterable[str]) -> tuple[str, ...]:
    if isinstance(items, str):
        return _csv(items)
    return tuple(items)


@attrs.frozen
class CorsRule:
    """One CORS rule (lists are sent comma-separated).

    Example::

        >>> rule = CorsRule(["https://example.com"], ["get", "PUT"], max_age_in_seconds=500)
        >>> rule.allowed_methods
        ('GET', 'PUT')
    """

    allowed_origins: tuple[str, ...] = attrs.field(converter=_tuple)
    allowed_methods: tuple[str, ...] = attrs.field(converter=_check_methods)
    max_age_in_seconds: int = 0
    exposed_headers: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    allowed_headers: tuple[str, ...] = attrs.field(default=(), converter=_tuple)


def _cors(rules: Iterable[CorsRule] | None) -> tuple[CorsRule, ...] | None:
    if rules is None:
        return None
    out = tuple(rules)
    if len(out) > MAX_CORS_RULES:
        raise ValidationError(f"at most {MAX_CORS_RULES} CORS rules, got {len(out)}")
    return out


@attrs.frozen
class ServiceProperties:
    """Table service properties. ``None`` parts are not sent (the service keeps them).

    ``cors=()`` sends an empty ``<Cors />``, which removes every rule.

    Example::

        >>> ServiceProperties(logging=Logging(read=True)).cors is None
        True
    """

    logging: Logging | None = None
    hour_metrics: Metrics | None = None
    minute_metrics: Metrics | None = None
    cors: tuple[CorsRule, ...] | None = attrs.field(default=None, converter=_cors)
    #: The ``x-ms-request-id`` of the response it was read from (not compared, not sent).
    request_id: str | None = attrs.field(default=None, eq=False, kw_only=True)


def _encode_retention(parent: etree._Element, policy: RetentionPolicy) -> None:
    rp = _sub(parent, "RetentionPolicy")
    _sub(rp, "Enabled", _tf(policy.enabled))
    if policy.enabled and policy.days is not None:
        _sub(rp, "Days", str(policy.days))


def _encode_metrics(root: etree._Element, tag: str, m: Metrics) -> None:
    el = _sub(root, tag)
    _sub(el, "Version", m.version)
    _sub(el, "Enabled", _tf(m.enabled))
    if m.enabled:
        _sub(el, "IncludeAPIs", _tf(bool(m.include_apis)))
    _encode_retention(el, m.retention_policy)


def encode_service_properties(properties: ServiceProperties) -> bytes:
    """The Set Table Service Properties body.

    Example::

        >>> body = encode_service_properties(ServiceProperties(cors=()))
        >>> body.endswith(b"<StorageServiceProperties><Cors/></StorageServiceProperties>")
        True
    """
    root = etree.Element("StorageServiceProperties")
    if properties.logging is not None:
        lg = properties.logging
        el = _sub(root, "Logging")
        _sub(el, "Version", lg.version)
        _sub(el, "Delete", _tf(lg.delete))
        _sub(el, "Read", _tf(lg.read))
        _sub(el, "Write", _tf(lg.write))
        _encode_retention(el, lg.retention_policy)
    if properties.hour_metrics is not None:
        _encode_metrics(root, "HourMetrics", properties.hour_metrics)
    if properties.minute_metrics is not None:
        _encode_metrics(root, "MinuteMetrics", properties.minute_metrics)
    if properties.cors is not None:
        cors = _sub(root, "Cors")
        for rule in properties.cors:
            r = _sub(cors, "CorsRule")
            _sub(r, "AllowedOrigins", ",".join(rule.allowed_origins))
            _sub(r, "AllowedMethods", ",".join(rule.allowed_methods))
            _sub(r, "MaxAgeInSeconds", str(rule.max_age_in_seconds))
            _sub(r, "ExposedHeaders", ",".join(rule.exposed_headers))
            _sub(r, "AllowedHeaders", ",".join(rule.allowed_headers))
    return _serialize(root)


def _decode_retention(parent: etree._Element) -> RetentionPolicy:
    rp = parent.find("RetentionPolicy")
    if rp is None:
        return RetentionPolicy()
    enabled = _bool(rp, "Enabled")
    days = _int(rp, "Days")
    try:
        return RetentionPolicy(enabled=enabled, days=days)
    except ValidationError as exc:
        raise WireDecodeError(f"<RetentionPolicy>: {exc}") from None


def _decode_metrics(el: etree._Element | None) -> Metrics | None:
    if el is None:
        return None
    enabled = _bool(el, "Enabled")
    include = _text(el, "IncludeAPIs")
    return Metrics(
        version=_text(el, "Version") or "1.0",
        enabled=enabled,
        include_apis=_bool(el, "IncludeAPIs") if include else None,
        retention_policy=_decode_retention(el),
    )


def decode_service_properties(body: bytes | str) -> ServiceProperties:
    """Parse a Get Table Service Properties body.

    Example::

        >>> p = decode_service_properties(b"<StorageServiceProperties><Logging><Version>1.0"
        ...     b"</Version><Read>true</Read></Logging><Cors /></StorageServiceProperties>")
        >>> p.logging.read, p.cors, p.hour_metrics
        (True, (), None)
    """
    root = _parse(body)
    if root is None or root.tag != "StorageServiceProperties":
        raise WireDecodeError("expected a <StorageServiceProperties> body")
    logging = None
    lg = root.find("Logging")
    if lg is not None:
        logging = Logging(
            version=_text(lg, "Version") or "1.0",
            delete=_bool(lg, "Delete"),
            read=_bool(lg, "Read"),
            write=_bool(lg, "Write"),
            retention_policy=_decode_retention(lg),
        )
    hour = root.find("HourMetrics")
    if hour is None:
        hour = root.find("Metrics")  # versions <= 2012-02-12
    cors: tuple[CorsRule, ...] | None = None
    cors_el = root.find("Cors")
    if cors_el is not None:
        rules = []
        for r in cors_el.iterchildren("CorsRule"):
            try:
                rules.append(
                    CorsRule(
                        allowed_origins=_csv(_text(r, "AllowedOrigins")),
                        allowed_methods=_csv(_text(r, "AllowedMethods")),
                        max_age_in_seconds=_int(r, "MaxAgeInSeconds") or 0,
                        exposed_headers=_csv(_text(r, "ExposedHeaders")),
                        allowed_headers=_csv(_text(r, "AllowedHeaders")),
                    )
                )
            except ValidationError as exc:
                raise WireDecodeError(f"<CorsRule>: {exc}") from None
        cors = tuple(rules)
    return ServiceProperties(
        logging=logging,
        hour_metrics=_decode_metrics(hour),
        minute_metrics=_decode_metrics(root.find("MinuteMetrics")),
        cors=cors,
    )


# --------------------------------------------------------------------------- stats


@attrs.frozen
class GeoReplication:
    """Secondary replication state: ``live``, ``bootstrap`` or ``unavailable``.

    ``last_sync_time`` is ``None`` when the service gives none (e.g. unavailable).

    Example::

        >>> GeoReplication("live", None).status
        'live'
    """

    status: str
    last_sync_time: datetime | None


@attrs.frozen
class ServiceStats:
    """Get Table Service Stats result.

    Example::

        >>> ServiceStats(GeoReplication("bootstrap", None)).geo_replication.status
        'bootstrap'
    """

    geo_replication: GeoReplication
    #: The ``x-ms-request-id`` of the response it was read from (not compared).
    request_id: str | None = attrs.field(default=None, eq=False, kw_only=True)


def decode_service_stats(body: bytes | str) -> ServiceStats:
    """Parse a Get Table Service Stats body (``LastSyncTime`` is RFC 1123).

    Example::

        >>> s = decode_service_stats(b"<StorageServiceStats><GeoReplication><Status>live"
        ...     b"</Status><LastSyncTime>Wed, 19 Jan 2021 22:28:43 GMT</LastSyncTime>"
        ...     b"</GeoReplication></StorageServiceStats>")
        >>> s.geo_replication.last_sync_time.isoformat()
        '2021-01-19T22:28:43+00:00'
    """
    root = _parse(body)
    if root is None or root.tag != "StorageServiceStats":
        raise WireDecodeError("expected a <StorageServiceStats> body")
    geo = root.find("GeoReplication")
    if geo is None:
        raise WireDecodeError("<StorageServiceStats> without <GeoReplication>")
    status = _text(geo, "Status") or ""
    sync_text = _text(geo, "LastSyncTime")
    sync: datetime | None = None
    if sync_text:
        try:
            sync = email.utils.parsedate_to_datetime(sync_text)
        except (TypeError, ValueError):
            raise WireDecodeError(
                f"<LastSyncTime> is not an RFC 1123 date: {sync_text!r}"
            ) from None
        sync = sync.replace(tzinfo=UTC) if sync.tzinfo is None else sync.astimezone(UTC)
    return ServiceStats(GeoReplication(status, sync))


# --------------------------------------------------------------------------- errors


def decode_storage_error(body: bytes | str) -> tuple[str | None, str | None, dict[str, str]]:
    """``(code, message, details)`` from a storage ``<Error>`` body.

    ``details`` holds any other child elements (e.g. ``AuthenticationErrorDetail``).
    A body that is not such an error gives ``(None, None, {})``.

    Example::

        >>> decode_storage_error(b'<?xml version="1.0" encoding="utf-8"?><Error><Code>'
        ...     b"AuthenticationFailed</Code><Message>Server failed.</Message>"
        ...     b"<AuthenticationErrorDetail>bad sig</AuthenticationErrorDetail></Error>")
        ('AuthenticationFailed', 'Server failed.', {'AuthenticationErrorDetail': 'bad sig'})
    """
    try:
        root = _parse(body)
    except WireDecodeError:
        return None, None, {}
    if root is None or root.tag != "Error":
        return None, None, {}
    code = message = None
    details: dict[str, str] = {}
    for el in root.iterchildren("*"):
        if el.tag == "Code":
            code = (el.text or "").strip()
        elif el.tag == "Message":
            message = el.text or ""
        else:
            details[el.tag] = el.text or ""
    return code, message, details
