"""Request addressing (PROTOCOL.md 1.1, 1.2, 2, 2.2): account, endpoint and resource.

* :func:`split_account` applies Azurite's host rule: an IPv4/IPv6 literal,
  ``host.docker.internal`` or a dot-less host name means path-style (account =
  first path segment); otherwise the first DNS label is the account.
* :func:`parse_resource` turns the decoded resource path into a
  :class:`Resource` (``Tables``, ``Tables('t')``, ``t()``,
  ``t(PartitionKey='..',RowKey='..')``, ``$batch``, the service root),
  with a quote-aware key-predicate scanner.

Example::

    >>> a = split_account("127.0.0.1:10002", "/devstoreaccount1/Tables")
    >>> (a.account, a.secondary, a.resource)
    ('devstoreaccount1', False, 'Tables')
    >>> parse_resource("t(PartitionKey='O''Brien',RowKey='')").keys
    ("O'Brien", '')
"""

from __future__ import annotations

import enum
import functools
import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import unquote

from . import errors
from .errors import StubError

SECONDARY_SUFFIX = "-secondary"


@dataclass(frozen=True, slots=True)
class AccountAddress:
    """The account part of a request.

    ``prefix`` is the raw path prefix that precedes the resource (``/devstoreaccount1``
    for path-style, ``""`` for host-style); ``resource`` is the percent-decoded rest
    without its leading ``/``.

    Example::

        >>> AccountAddress("a", False, True, "/a", "Tables").prefix
        '/a'
    """

    account: str
    secondary: bool
    path_style: bool
    prefix: str
    resource: str


@functools.lru_cache(maxsize=256)
def _is_path_style_host(host: str) -> bool:
    name = host.strip()
    if name.startswith("["):  # IPv6 literal with port
        return True
    if name.count(":") == 1:
        name = name.rsplit(":", 1)[0]
    if not name:
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    lowered = name.lower()
    return lowered == "host.docker.internal" or "." not in lowered


def _decode(raw: str) -> str:
    try:
        return unquote(raw, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        raise invalid_uri() from None


def invalid_uri() -> StubError:
    """``400 InvalidUri``: the URI does not name a resource of the service.

    Example::

        >>> invalid_uri().code
        'InvalidUri'
    """
    return StubError(
        400, "InvalidUri", "The requested URI does not represent any resource on the server."
    )


@functools.lru_cache(maxsize=4096)
def split_account(host: str | None, raw_path: str, *, product_style: bool = True) -> AccountAddress:
    """Find the account and the resource path of a request (``raw_path`` without query).

    Cached (the answer is immutable; a refusal is raised afresh each time): clients
    address the same tables and entities over and over.

    Example::

        >>> split_account("acct.table.localhost", "/t()").account
        'acct'
        >>> split_account("localhost:10002", "/acct-secondary/t").secondary
        True
    """
    if not raw_path.startswith("/"):
        raise invalid_uri()
    if host and product_style and not _is_path_style_host(host):
        label = host.split(".", 1)[0].lower()
        account, prefix, rest = label, "", raw_path[1:]
        path_style = False
    else:
        segment, _, rest = raw_path[1:].partition("/")
        account = _decode(segment)
        prefix = "/" + segment
        path_style = True
        if not account:
            raise StubError(
                400,
                "InvalidUri",
                "The requested URI does not represent any resource on the server.",
            )
    secondary = account.endswith(SECONDARY_SUFFIX)
    if secondary:
        account = account[: -len(SECONDARY_SUFFIX)]
    return AccountAddress(account, secondary, path_style, prefix, _decode(rest))


class Kind(enum.Enum):
    """What a resource path names.

    Example::

        >>> Kind("entity") is Kind.ENTITY
        True
    """

    SERVICE = "service"
    TABLES = "tables"
    TABLE_NAMED = "table-named"  # Tables('name')
    COLLECTION = "collection"  # t or t()
    ENTITY = "entity"  # t(PartitionKey='..',RowKey='..')
    BATCH = "batch"
    METADATA = "metadata"


@dataclass(frozen=True, slots=True)
class Resource:
    """A parsed resource path: its kind, table name (URL form) and keys.

    Example::

        >>> Resource(Kind.ENTITY, "t", ("p", "r")).keys
        ('p', 'r')
    """

    kind: Kind
    table: str | None = None
    keys: tuple[str, str] | None = None
    bare: bool = False  # COLLECTION written without "()" (ACL requests use this form)


_NAME_RE = re.compile(r"^[^()/']+$")
# The form nearly every client sends: named keys, in order, without quotes inside values
# or spaces. Anything else goes through the general scanner.
_PLAIN_ENTITY_RE = re.compile(r"([^()/']+)\(PartitionKey='([^']*)',RowKey='([^']*)'\)")
_WRONG_KEYS = (
    "The number of keys specified in the URI does not match number of key properties for "
    "the resource."
)


def _scan_predicate(text: str) -> list[tuple[str | None, str]]:
    """Parse ``name='v',name='v'`` (or a lone ``'v'``) with doubled quotes inside values."""
    items: list[tuple[str | None, str]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] == " ":
            i += 1
        if i >= n:
            break
        name: str | None = None
        if text[i] != "'":
            j = text.find("=", i)
            if j < 0:
                raise errors.invalid_input()
            name = text[i:j].strip()
            i = j + 1
            while i < n and text[i] == " ":
                i += 1
        if i >= n or text[i] != "'":
            raise errors.invalid_input()
        i += 1
        chars: list[str] = []
        while True:
            j = text.find("'", i)
            if j < 0:
                raise errors.invalid_input()
            chars.append(text[i:j])
            if j + 1 < n and text[j + 1] == "'":
                chars.append("'")
                i = j + 2
                continue
            i = j + 1
            break
        items.append((name, "".join(chars)))
        while i < n and text[i] == " ":
            i += 1
        if i >= n:
            break
        if text[i] != ",":
            raise errors.invalid_input()
        i += 1
    return items


@functools.lru_cache(maxsize=4096)
def parse_resource(resource: str) -> Resource:
    """Parse the decoded resource path (after the account) into a :class:`Resource`.

    Cached like :func:`split_account`.

    Example::

        >>> parse_resource("Tables('t')")
        Resource(kind=<Kind.TABLE_NAMED: 'table-named'>, table='t', keys=None, bare=False)
        >>> parse_resource("t('x')")
        Traceback (most recent call last):
        ...
        azt_server_stub.errors.StubError: 400 InvalidInput: The number of keys specified ...
    """
    if resource in ("", "/"):
        return Resource(Kind.SERVICE)
    if resource.endswith("/"):
        resource = resource[:-1]
    if "/" in resource:
        raise invalid_uri()
    if resource == "$batch":
        return Resource(Kind.BATCH)
    if resource == "$metadata":
        return Resource(Kind.METADATA)
    plain = _PLAIN_ENTITY_RE.fullmatch(resource)
    if plain is not None and plain.group(1) != "Tables":
        return Resource(Kind.ENTITY, plain.group(1), (plain.group(2), plain.group(3)))
    open_at = resource.find("(")
    if open_at < 0:
        if resource == "Tables":
            return Resource(Kind.TABLES)
        if not _NAME_RE.match(resource):
            raise invalid_uri()
        return Resource(Kind.COLLECTION, resource, bare=True)
    if not resource.endswith(")"):
        raise invalid_uri()
    name = resource[:open_at]
    inner = resource[open_at + 1 : -1]
    if not name or not _NAME_RE.match(name):
        raise invalid_uri()
    if name == "Tables":
        if not inner.strip():
            return Resource(Kind.TABLES)
        items = _scan_predicate(inner)
        if len(items) != 1 or items[0][0] not in (None, "TableName"):
            raise errors.invalid_input(_WRONG_KEYS)
        return Resource(Kind.TABLE_NAMED, items[0][1])
    if not inner.strip():
        return Resource(Kind.COLLECTION, name)
    items = _scan_predicate(inner)
    if len(items) != 2:
        raise errors.invalid_input(_WRONG_KEYS)
    named = {k: v for k, v in items if k is not None}
    if set(named) == {"PartitionKey", "RowKey"}:
        return Resource(Kind.ENTITY, name, (named["PartitionKey"], named["RowKey"]))
    if all(k is None for k, _ in items):
        return Resource(Kind.ENTITY, name, (items[0][1], items[1][1]))
    raise errors.invalid_input()
