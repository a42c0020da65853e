"""Shared access signatures: generate table (service) SAS and account SAS tokens.

Both functions return the token as a query string without a leading ``?`` (values
percent-encoded, ``sig`` last), ready for :class:`azt.SasCredential`, a connection string's
``SharedAccessSignature`` or a URL. The string-to-sign follows the requested ``version``
(PROTOCOL.md 10.7 and 10.8).

Example::

    >>> from azt import SharedKeyCredential
    >>> from azt._core.connection_string import DEV_ACCOUNT_KEY
    >>> cred = SharedKeyCredential("devstoreaccount1", DEV_ACCOUNT_KEY)
    >>> token = generate_table_sas(cred, "mytable", permission="r",
    ...                            expiry="2030-01-01T00:00:00Z", start_pk="pk1", end_pk="pk1")
    >>> token.split("&sig=")[1]
    'jNFwfE4jeF82B3YtMp%2F%2Ffekzyr9mfeM9SPat%2BAXIPAc%3D'
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from datetime import UTC, date, datetime
from typing import ClassVar, Protocol, Self

import attrs

from azt._core.auth import NamedKeyFollower, SharedKeyCredential
from azt._core.signing import account_sas_string_to_sign, sign, table_sas_string_to_sign
from azt._errors import ValidationError

__all__ = [
    "DEFAULT_SAS_VERSION",
    "AccountSasPermissions",
    "AccountSasResourceTypes",
    "NamedKeySource",
    "TableSasPermissions",
    "generate_account_sas",
    "generate_table_sas",
]

DEFAULT_SAS_VERSION = "2019-02-02"
"""The ``sv`` used unless another is asked for."""


class _Letters:
    """The letter-flag classes below: one ``bool`` field per letter of ``LETTERS``, in
    order, which is also the order the service requires in the token."""

    __slots__ = ()

    LETTERS: ClassVar[str]
    WHAT: ClassVar[str]
    __attrs_attrs__: ClassVar[tuple[attrs.Attribute[bool], ...]]

    def __str__(self) -> str:
        flags = attrs.astuple(self, recurse=False)
        return "".join(letter for letter, on in zip(self.LETTERS, flags, strict=True) if on)

    @classmethod
    def _parse(cls, text: str) -> Self:
        bad = set(text) - set(cls.LETTERS)
        if bad:
            raise ValidationError(
                f"{cls.WHAT} are letters from {cls.LETTERS!r}; got {''.join(sorted(bad))!r}"
            )
        names = [field.name for field in attrs.fields(cls)]
        return cls(**{n: letter in text for n, letter in zip(names, cls.LETTERS, strict=True)})


@attrs.frozen
class TableSasPermissions(_Letters):
    """Table SAS permissions: read (query/get), add (insert), update (update/merge), delete.

    Upserts need both ``add`` and ``update``. ``str()`` gives the letters in the order the
    service requires (``raud``).

    Example::

        >>> str(TableSasPermissions(read=True, delete=True))
        'rd'
        >>> TableSasPermissions.from_string("dar")
        TableSasPermissions(read=True, add=True, update=False, delete=True)
    """

    LETTERS: ClassVar[str] = "raud"
    WHAT: ClassVar[str] = "table SAS permissions"

    read: bool = False
    add: bool = False
    update: bool = False
    delete: bool = False

    @classmethod
    def from_string(cls, text: str) -> TableSasPermissions:
        """Parse letters from ``raud`` (any order); other letters raise ``ValidationError``.

        Example::

            >>> str(TableSasPermissions.from_string("ur"))
            'ru'
        """
        return cls._parse(text)


@attrs.frozen
class AccountSasPermissions(_Letters):
    """Account SAS permissions (``rwdlacup`` order): read, write, delete, list, add,
    create, update, process.

    Example::

        >>> str(AccountSasPermissions(read=True, list=True, create=True))
        'rlc'
    """

    LETTERS: ClassVar[str] = "rwdlacup"
    WHAT: ClassVar[str] = "account SAS permissions"

    read: bool = False
    write: bool = False
    delete: bool = False
    list: bool = False
    add: bool = False
    create: bool = False
    update: bool = False
    process: bool = False

    @classmethod
    def from_string(cls, text: str) -> AccountSasPermissions:
        """Parse letters from ``rwdlacup`` (any order).

        Example::

            >>> str(AccountSasPermissions.from_string("ulr"))
            'rlu'
        """
        return cls._parse(text)


@attrs.frozen
class AccountSasResourceTypes(_Letters):
    """Account SAS resource types: ``service`` (service properties/stats, list tables),
    ``container`` (create/delete tables), ``object`` (entities).

    Example::

        >>> str(AccountSasResourceTypes(service=True, container=True, object=True))
        'sco'
    """

    LETTERS: ClassVar[str] = "sco"
    WHAT: ClassVar[str] = "account SAS resource types"

    service: bool = False
    container: bool = False
    object: bool = False

    @classmethod
    def from_string(cls, text: str) -> AccountSasResourceTypes:
        """Parse letters from ``sco``.

        Example::

            >>> AccountSasResourceTypes.from_string("o").object
            True
        """
        return cls._parse(text)


def _format_time(value: datetime | date | str | None, what: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        if not value:
            raise ValidationError(f"SAS {what} is empty")
        return value  # signed exactly as supplied
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC)
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, date):
        return value.strftime("%Y-%m-%d")
    raise ValidationError(f"SAS {what} must be a datetime, date or str, got {value!r}")


def _check_ip(ip: str | None) -> str:
    if ip is None:
        return ""
    parts = ip.split("-")
    if len(parts) > 2:
        raise ValidationError(f"SAS ip {ip!r} must be an address or 'first-last'")
    try:
        addresses = [ipaddress.IPv4Address(p.strip()) for p in parts]
    except ValueError as exc:
        raise ValidationError(f"SAS ip {ip!r} is not an IPv4 address or range") from exc
    if len(addresses) == 2 and addresses[0] > addresses[1]:
        raise ValidationError(f"SAS ip range {ip!r} ends before it starts")
    return ip


def _check_protocol(protocol: str | None) -> str:
    if protocol is None:
        return ""
    if protocol not in ("https", "https,http"):
        raise ValidationError(f"SAS protocol must be 'https' or 'https,http', got {protocol!r}")
    return protocol


def _encode(pairs: list[tuple[str, str]]) -> str:
    return "&".join(f"{k}={urllib.parse.quote(v, safe='')}" for k, v in pairs if v)


def _version_at_least(version: str, minimum: str) -> bool:
    return version >= minimum  # ISO dates compare correctly as strings


class NamedKeySource(Protocol):
    """What azure-core's ``AzureNamedKeyCredential`` is to the SAS generators: an object
    whose ``named_key`` is an (account name, key) pair. It signs as a
    :class:`SharedKeyCredential` of that pair would.

    Example::

        >>> from azure.core.credentials import AzureNamedKeyCredential
        >>> isinstance(AzureNamedKeyCredential("acct", "a2V5").named_key, tuple)
        True
    """

    @property
    def named_key(self) -> tuple[str, str]: ...


def _signing_key(credential: object) -> SharedKeyCredential:
    """The :class:`SharedKeyCredential` a SAS is signed with: the credential itself, or
    one following an azure-core ``AzureNamedKeyCredential``."""
    if isinstance(credential, SharedKeyCredential):
        return credential
    if getattr(credential, "named_key", None) is not None:
        return NamedKeyFollower(credential)
    raise ValidationError(
        "generating a SAS needs a SharedKeyCredential (account name + key) or an azure-core "
        f"AzureNamedKeyCredential, got {type(credential).__name__}"
    )


def generate_table_sas(
    credential: SharedKeyCredential | NamedKeySource,
    table_name: str,
    *,
    permission: TableSasPermissions | str | None = None,
    expiry: datetime | date | str | None = None,
    start: datetime | date | str | None = None,
    start_pk: str | None = None,
    start_rk: str | None = None,
    end_pk: str | None = None,
    end_rk: str | None = None,
    ip: str | None = None,
    protocol: str | None = None,
    policy_id: str | None = None,
    version: str = DEFAULT_SAS_VERSION,
) -> str:
    """A service SAS for one table.

    ``permission`` and ``expiry`` are required unless ``policy_id`` names a stored access
    policy that supplies them. Times may be aware or naive-UTC datetimes (formatted
    ``YYYY-MM-DDThh:mm:ssZ``), dates, or strings signed exactly as given. Key ranges are
    inclusive (``start_rk`` needs ``start_pk``, ``end_rk`` needs ``end_pk``). ``ip`` is an
    IPv4 address or ``first-last`` range; ``protocol`` is ``"https"`` or ``"https,http"``
    (both need ``version`` >= 2015-04-05).

    Example::

        >>> from azt._core.connection_string import DEV_ACCOUNT_KEY
        >>> cred = SharedKeyCredential("devstoreaccount1", DEV_ACCOUNT_KEY)
        >>> generate_table_sas(cred, "mytable", permission="raud", start="2024-01-01T00:00:00Z",
        ...                    expiry="2030-01-01T00:00:00Z", protocol="https,http")
        ... # doctest: +ELLIPSIS
        'sv=2019-02-02&tn=mytable&sp=raud&st=2024-01-01T00%3A00%3A00Z&...&sig=ld0dyBZVi...'
    """
    credential = _signing_key(credential)
    if not table_name:
        raise ValidationError("table_name is empty")
    if not _version_at_least(version, "2012-02-12"):
        raise ValidationError(f"table SAS needs version >= 2012-02-12, got {version}")
    if isinstance(permission, str):
        permission = TableSasPermissions.from_string(permission)
    sp = str(permission) if permission is not None else ""
    if policy_id is None:
        if not sp:
            raise ValidationError("a SAS without a stored policy needs a permission")
        if expiry is None:
            raise ValidationError("a SAS without a stored policy needs an expiry")
    elif len(policy_id) > 64:
        raise ValidationError("a stored access policy id has at most 64 characters")
    if start_rk is not None and start_pk is None:
        raise ValidationError("start_rk needs start_pk")
    if end_rk is not None and end_pk is None:
        raise ValidationError("end_rk needs end_pk")
    sip = _check_ip(ip)
    spr = _check_protocol(protocol)
    if (sip or spr) and not _version_at_least(version, "2015-04-05"):
        raise ValidationError("ip and protocol restrictions need version >= 2015-04-05")
    st = _format_time(start, "start")
    se = _format_time(expiry, "expiry")
    si = policy_id or ""
    string_to_sign = table_sas_string_to_sign(
        account_name=credential.account_name,
        table_name=table_name,
        version=version,
        permission=sp,
        start=st,
        expiry=se,
        policy_id=si,
        ip=sip,
        protocol=spr,
        start_pk=start_pk or "",
        start_rk=start_rk or "",
        end_pk=end_pk or "",
        end_rk=end_rk or "",
    )
    signature = sign(credential._key, string_to_sign)
    return _encode(
        [
            ("sv", version),
            ("tn", table_name),
            ("sp", sp),
            ("st", st),
            ("se", se),
            ("spk", start_pk or ""),
            ("srk", start_rk or ""),
            ("epk", end_pk or ""),
            ("erk", end_rk or ""),
            ("sip", sip),
            ("spr", spr),
            ("si", si),
            ("sig", signature),
        ]
    )


def generate_account_sas(
    credential: SharedKeyCredential | NamedKeySource,
    *,
    resource_types: AccountSasResourceTypes | str,
    permission: AccountSasPermissions | str,
    expiry: datetime | date | str,
    start: datetime | date | str | None = None,
    ip: str | None = None,
    protocol: str | None = None,
    services: str = "t",
    encryption_scope: str | None = None,
    version: str = DEFAULT_SAS_VERSION,
) -> str:
    """An account SAS (``ss`` defaults to ``t``, the Table service).

    Example::

        >>> from azt._core.connection_string import DEV_ACCOUNT_KEY
        >>> cred = SharedKeyCredential("devstoreaccount1", DEV_ACCOUNT_KEY)
        >>> generate_account_sas(cred, resource_types="sco", permission="rwdlacu",
        ...                      expiry="2030-01-01T00:00:00Z", protocol="https,http")
        ... # doctest: +ELLIPSIS
        'sv=2019-02-02&ss=t&srt=sco&sp=rwdlacu&se=2030-01-01T00%3A00%3A00Z&spr=https%2Chttp&sig=dKEa4zPU...'
    """
    credential = _signing_key(credential)
    if not _version_at_least(version, "2015-04-05"):
        raise ValidationError(f"account SAS needs version >= 2015-04-05, got {version}")
    if isinstance(resource_types, str):
        resource_types = AccountSasResourceTypes.from_string(resource_types)
    if isinstance(permission, str):
        permission = AccountSasPermissions.from_string(permission)
    srt = str(resource_types)
    sp = str(permission)
    if not srt:
        raise ValidationError("an account SAS needs at least one resource type")
    if not sp:
        raise ValidationError("an account SAS needs at least one permission")
    bad_services = set(services) - set("bqtf")
    if not services or bad_services:
        raise ValidationError(f"services must be letters from 'bqtf', got {services!r}")
    if encryption_scope and not _version_at_least(version, "2020-12-06"):
        raise ValidationError("encryption_scope needs version >= 2020-12-06")
    st = _format_time(start, "start")
    se = _format_time(expiry, "expiry")
    sip = _check_ip(ip)
    spr = _check_protocol(protocol)
    string_to_sign = account_sas_string_to_sign(
        account_name=credential.account_name,
        version=version,
        permission=sp,
        services=services,
        resource_types=srt,
        start=st,
        expiry=se,
        ip=sip,
        protocol=spr,
        encryption_scope=encryption_scope or "",
    )
    signature = sign(credential._key, string_to_sign)
    return _encode(
        [
            ("sv", version),
            ("ss", services),
            ("srt", srt),
            ("sp", sp),
            ("st", st),
            ("se", se),
            ("sip", sip),
            ("spr", spr),
            ("ses", encryption_scope or ""),
            ("sig", signature),
        ]
    )
