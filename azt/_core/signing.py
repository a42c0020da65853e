"""Pure string-to-sign construction and HMAC-SHA256 signing (PROTOCOL.md section 10).

Nothing here does I/O or knows about HTTP libraries: the functions take exactly the
values that go on the wire and return strings, so the known-answer tests in PROTOCOL.md
appendix A pin them directly.

Example::

    >>> from azt._core.connection_string import DEV_ACCOUNT_KEY
    >>> sts = shared_key_string_to_sign(
    ...     "GET", "", "", "Mon, 27 Jun 2016 15:25:14 GMT",
    ...     canonicalized_resource("devstoreaccount1", "/devstoreaccount1/Tables"))
    >>> sign(decode_key(DEV_ACCOUNT_KEY), sts)
    '6x3Y/FLgh8/ozJ8YPcIAguM4et4HbaViJozb+kRb6aI='
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from email.utils import formatdate

from azt._errors import ValidationError

_SHA256 = hashlib.sha256


def decode_key(account_key: str | bytes) -> bytes:
    """Decode a base64 account key, raising :class:`ValidationError` if it is not base64.

    Example::

        >>> decode_key("a2V5")
        b'key'
    """
    try:
        key = base64.b64decode(account_key, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValidationError("the account key is not valid base64") from exc
    if not key:
        raise ValidationError("the account key is empty")
    return key


def sign(key: bytes, string_to_sign: str) -> str:
    """``Base64(HMAC-SHA256(key, UTF8(string_to_sign)))``.

    Example::

        >>> sign(b"key", "x")
        'T8O36vNNfllKb1HZUXulQ6v0EGeydYf/2CujWE5NPN0='
    """
    mac = _keyed.get(key)
    if mac is None:
        if len(_keyed) >= 64:  # a bound, for processes that rotate through many keys
            _keyed.clear()
        mac = _keyed[key] = hmac.new(key, digestmod=_SHA256)
    h = mac.copy()  # the keyed state, computed once per key rather than per request
    h.update(string_to_sign.encode("utf-8"))
    return _b2a(h.digest(), newline=False).decode("ascii")


#: account key -> HMAC-SHA256 object holding its keyed state (never updated itself)
_keyed: dict[bytes, hmac.HMAC] = {}
_b2a = binascii.b2a_base64


def canonicalized_resource(account_name: str, encoded_path: str, comp: str | None = None) -> str:
    """``"/" + account + encoded path [+ "?comp=" + comp]`` (PROTOCOL.md 10.5).

    ``encoded_path`` is the URL path exactly as sent (percent-encoding preserved; for
    path-style endpoints it already starts with the account, which then appears twice).
    Only ``comp`` of the query string is included.

    Example::

        >>> canonicalized_resource("devstoreaccount1", "/devstoreaccount1/", "properties")
        '/devstoreaccount1/devstoreaccount1/?comp=properties'
    """
    resource = "/" + account_name + (encoded_path or "/")
    if comp:
        resource += "?comp=" + comp
    return resource


def shared_key_string_to_sign(
    method: str,
    content_md5: str,
    content_type: str,
    date: str,
    canonical_resource: str,
) -> str:
    """The Table service's SharedKey string-to-sign (PROTOCOL.md 10.3).

    ``VERB\\nContent-MD5\\nContent-Type\\nDate\\nCanonicalizedResource``, where Date is the
    ``x-ms-date`` value (never empty for the Table service).

    Example::

        >>> shared_key_string_to_sign("POST", "", "application/json", "D", "/a/a/t")
        'POST\\n\\napplication/json\\nD\\n/a/a/t'
    """
    return f"{method}\n{content_md5}\n{content_type}\n{date}\n{canonical_resource}"


def shared_key_lite_string_to_sign(date: str, canonical_resource: str) -> str:
    """The Table service's SharedKeyLite string-to-sign: ``Date\\nCanonicalizedResource``.

    Example::

        >>> shared_key_lite_string_to_sign("D", "/a/a/Tables")
        'D\\n/a/a/Tables'
    """
    return f"{date}\n{canonical_resource}"


def _version_tuple(version: str) -> tuple[int, int, int]:
    try:
        year, month, day = (int(p) for p in version.split("-"))
    except ValueError as exc:
        raise ValidationError(f"SAS version {version!r} is not of the form YYYY-MM-DD") from exc
    return year, month, day


def table_sas_string_to_sign(
    *,
    account_name: str,
    table_name: str,
    version: str,
    permission: str = "",
    start: str = "",
    expiry: str = "",
    policy_id: str = "",
    ip: str = "",
    protocol: str = "",
    start_pk: str = "",
    start_rk: str = "",
    end_pk: str = "",
    end_rk: str = "",
) -> str:
    """The service (table) SAS string-to-sign for ``version`` (PROTOCOL.md 10.7).

    From 2015-04-05 the ``sip`` and ``spr`` lines are included; the canonicalised resource
    is ``/table/{account}/{table lower-cased}`` from 2015-02-21 and ``/{account}/{table}``
    before. The four key-range lines are always present. Table SAS needs 2012-02-12 or
    later.

    Example::

        >>> table_sas_string_to_sign(account_name="acct", table_name="T", version="2019-02-02",
        ...                          permission="r", expiry="2030-01-01")
        'r\\n\\n2030-01-01\\n/table/acct/t\\n\\n\\n\\n2019-02-02\\n\\n\\n\\n'
    """
    v = _version_tuple(version)
    if v < (2012, 2, 12):
        raise ValidationError(f"table SAS needs sv >= 2012-02-12, got {version}")
    table = table_name.lower()
    if v >= (2015, 2, 21):
        resource = f"/table/{account_name}/{table}"
    else:
        resource = f"/{account_name}/{table}"
    fields = [permission, start, expiry, resource, policy_id]
    if v >= (2015, 4, 5):
        fields += [ip, protocol]
    fields += [version, start_pk, start_rk, end_pk, end_rk]
    return "\n".join(fields)


def account_sas_string_to_sign(
    *,
    account_name: str,
    version: str,
    permission: str,
    services: str,
    resource_types: str,
    expiry: str,
    start: str = "",
    ip: str = "",
    protocol: str = "",
    encryption_scope: str = "",
) -> str:
    """The account SAS string-to-sign for ``version`` (PROTOCOL.md 10.8).

    Ends with a newline; from 2020-12-06 one more field (``ses``) and its newline follow.

    Example::

        >>> account_sas_string_to_sign(account_name="a", version="2019-02-02", permission="r",
        ...                            services="t", resource_types="o", expiry="E")
        'a\\nr\\nt\\no\\n\\nE\\n\\n\\n2019-02-02\\n'
    """
    v = _version_tuple(version)
    if v < (2015, 4, 5):
        raise ValidationError(f"account SAS needs sv >= 2015-04-05, got {version}")
    fields = [
        account_name,
        permission,
        services,
        resource_types,
        start,
        expiry,
        ip,
        protocol,
        version,
    ]
    if v >= (2020, 12, 6):
        fields.append(encryption_scope)
    return "\n".join(fields) + "\n"


class HttpDate:
    """RFC 1123 ``x-ms-date`` values, formatted once per second (the hot path asks often).

    Example::

        >>> HttpDate().at(1467041114.2)
        'Mon, 27 Jun 2016 15:25:14 GMT'
    """

    __slots__ = ("_second", "_text")

    def __init__(self) -> None:
        self._second = -1
        self._text = ""

    def now(self) -> str:
        """The current time, formatted."""
        return self.at(time.time())

    def at(self, timestamp: float) -> str:
        """``timestamp`` (seconds since the epoch), formatted."""
        second = int(timestamp)
        if second != self._second:
            self._text = formatdate(second, usegmt=True)
            self._second = second
        return self._text
