"""Service SAS and account SAS verification (PROTOCOL.md 10.7-10.9).

Authentication-time checks live here, in the order of PROTOCOL.md 10.9: fields
present and well formed (stored access policy merged), signature, time window,
source IP and protocol, account SAS service. What depends on the operation
(resource type, permission, table name, key range) is checked by
``Principal.authorize`` / ``check_key`` in :mod:`azt_server_stub.auth.authenticator`.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from ..errors import (
    StubError,
    authentication_failed,
    authorization_protocol_mismatch,
    authorization_service_mismatch,
    authorization_source_ip_mismatch,
    invalid_query_parameter_value,
)
from ..versions import (
    account_sas_has_encryption_scope,
    resolve_version,
    sas_has_ip_and_protocol,
    sas_resource_has_service_prefix,
    supports_account_sas,
    supports_table_sas,
)
from ._common import Signer, http_date, parse_sas_time

SERVICE_PERMISSIONS = "raud"
ACCOUNT_SERVICES = "bqtf"
ACCOUNT_RESOURCE_TYPES = "sco"
_PROTOCOLS = ("https", "https,http")
_NOT_WELL_FORMED = "Signature fields not well formed."


class PolicyLike(Protocol):
    """What the authenticator reads from a stored access policy (``SignedIdentifier``).

    Example::

        >>> from azt_server_stub.backend import SignedIdentifier
        >>> policy: PolicyLike = SignedIdentifier("readers", permission="r")
        >>> policy.id, policy.permission
        ('readers', 'r')
    """

    @property
    def id(self) -> str:
        """The policy's identifier, the value a SAS names in ``si``.

        Example::

            >>> from azt_server_stub.backend import SignedIdentifier
            >>> SignedIdentifier("readers").id
            'readers'
        """
        ...

    @property
    def start(self) -> str | None:
        """The policy's start time as stored (ISO 8601 text), or None.

        Example::

            >>> from azt_server_stub.backend import SignedIdentifier
            >>> SignedIdentifier("readers", start="2030-01-01T00:00:00Z").start
            '2030-01-01T00:00:00Z'
        """
        ...

    @property
    def expiry(self) -> str | None:
        """The policy's expiry time as stored (ISO 8601 text), or None.

        Example::

            >>> from azt_server_stub.backend import SignedIdentifier
            >>> SignedIdentifier("readers").expiry is None
            True
        """
        ...

    @property
    def permission(self) -> str | None:
        """The permission letters the policy grants (``raud`` subset), or None.

        Example::

            >>> from azt_server_stub.backend import SignedIdentifier
            >>> SignedIdentifier("readers", permission="r").permission
            'r'
        """
        ...


PolicyLookup = Callable[[str, str], Sequence[PolicyLike]]


@dataclass(frozen=True, slots=True)
class KeyRange:
    """A service SAS PartitionKey/RowKey range; every bound inclusive (PROTOCOL.md 10.7).

    Example::

        >>> KeyRange("b", "5", None, None).admits("b", "5")
        True
        >>> KeyRange("b", "5", None, None).admits("b", "4")
        False
    """

    spk: str | None
    srk: str | None
    epk: str | None
    erk: str | None

    def admits(self, pk: str, rk: str) -> bool:
        """Whether ``(pk, rk)`` lies inside the range (bounds included).

        Example::

            >>> window = KeyRange("b", "5", "d", None)
            >>> window.admits("b", "5"), window.admits("d", "zzz"), window.admits("e", "")
            (True, True, False)
        """
        spk = self.spk
        if spk is not None and (pk < spk or (pk == spk and self.srk is not None and rk < self.srk)):
            return False
        epk = self.epk
        return not (
            epk is not None and (pk > epk or (pk == epk and self.erk is not None and rk > self.erk))
        )


@dataclass(frozen=True, slots=True)
class SasGrant:
    """A verified SAS: the effective fields (stored policy merged) and what they allow.

    Example::

        >>> grant = SasGrant("service", "2019-02-02", {"tn": "People", "sp": "ra"},
        ...                  frozenset("ra"), table="People")
        >>> grant.kind, sorted(grant.permissions), grant.key_range is None
        ('service', ['a', 'r'], True)
    """

    kind: Literal["service", "account"]
    version: str  # the version the SAS was verified with (resolved ``sv``)
    params: dict[str, str]
    permissions: frozenset[str]
    table: str | None = None  # service SAS: ``tn`` as given
    resource_types: frozenset[str] = frozenset()
    key_range: KeyRange | None = None


def _malformed(detail: str = _NOT_WELL_FORMED) -> StubError:
    return authentication_failed(detail)


def _mandatory(name: str) -> StubError:
    return authentication_failed(f"{name} is mandatory. Cannot be empty")


def _get(query: Mapping[str, str], name: str) -> str | None:
    value = query.get(name)
    return value if value else None


def _sas_version(sv: str, minimum_ok: Callable[[str], bool]) -> str:
    try:
        version = resolve_version(sv)
    except StubError:
        raise authentication_failed(f"Signed version '{sv}' is not valid.") from None
    if not minimum_ok(version):
        raise authentication_failed(
            f"Signed version '{sv}' does not support this kind of shared access signature."
        )
    return version


def _parse_ip_range(
    value: str,
) -> tuple[ipaddress.IPv4Address, ipaddress.IPv4Address]:
    """``a.b.c.d`` or ``a.b.c.d-e.f.g.h`` (IPv4 only, as Azure); raises ``ValueError``."""
    first, sep, last = value.partition("-")
    lo = ipaddress.IPv4Address(first.strip())
    hi = ipaddress.IPv4Address(last.strip()) if sep else lo
    return lo, hi


def _check_time(st: str | None, se: str, now: _dt.datetime) -> None:
    expiry = parse_sas_time(se)
    start = parse_sas_time(st) if st is not None else None
    if expiry is None or (st is not None and start is None):
        raise _malformed()
    if start is not None and expiry <= start:
        raise authentication_failed(
            f"Signed expiry time [{http_date(expiry)}] must be after signed start time "
            f"[{http_date(start)}]"
        )
    if (start is not None and now < start) or now >= expiry:
        start_text = http_date(start) if start is not None else ""
        raise authentication_failed(
            f"Signature not valid in the specified time frame: Start [{start_text}] - Expiry "
            f"[{http_date(expiry)}] - Current [{http_date(now)}]"
        )


def _check_ip_protocol(sip: str | None, spr: str | None, scheme: str, remote_ip: str) -> None:
    if sip is not None:
        lo, hi = _parse_ip_range(sip)
        try:
            addr = ipaddress.ip_address(remote_ip)
        except ValueError:
            raise authorization_source_ip_mismatch(remote_ip) from None
        if isinstance(addr, ipaddress.IPv6Address):
            mapped = addr.ipv4_mapped
            if mapped is None:
                raise authorization_source_ip_mismatch(remote_ip)
            addr = mapped
        if not lo <= addr <= hi:
            raise authorization_source_ip_mismatch(remote_ip)
    if spr == "https" and scheme.lower() != "https":
        raise authorization_protocol_mismatch()


def _validate_ip_protocol(sip: str | None, spr: str | None) -> None:
    if spr is not None and spr not in _PROTOCOLS:
        raise _malformed()
    if sip is not None:
        try:
            _parse_ip_range(sip)
        except ValueError:
            raise _malformed() from None


def _params(query: Mapping[str, str]) -> dict[str, str]:
    """The query's parameters (first value of each), without the signature."""
    params: dict[str, str] = {}
    for key, value in query.items():
        if key != "sig":
            params.setdefault(key, value)
    return params


#: Every field a table SAS may carry (service and account SAS, PROTOCOL.md 10.7-10.8).
SAS_FIELDS = frozenset(
    {"sv", "ss", "srt", "sp", "st", "se", "sip", "spr", "sig", "tn", "si"}
    | {"spk", "srk", "epk", "erk", "ses"}
)


def reject_repeated_fields(names: Iterable[str]) -> None:
    """``403 AuthenticationFailed`` ("Signature fields not well formed.") when a SAS field
    is given more than once, even with the same value.

    Azure refuses a SAS appended twice that way: Azure/azure-sdk-for-rust#867 (every field
    twice) and PR #1331 (fields re-appended on retries, answered 403 AuthenticationFailed
    with "Signature fields not well formed."), the same bug as Azure/azure-storage-python
    PR #304. Taking the first value, as a plain query look-up does, would accept it.

    Example::

        >>> reject_repeated_fields(["sv", "tn", "sig", "$filter", "$filter"])
        >>> try:
        ...     reject_repeated_fields(["sv", "sig", "sp", "sp"])
        ... except StubError as err:
        ...     print(err.status, err.code, err.details["AuthenticationErrorDetail"])
        403 AuthenticationFailed Signature fields not well formed.
    """
    seen: set[str] = set()
    for name in names:
        if name in SAS_FIELDS:
            if name in seen:
                raise _malformed()
            seen.add(name)


def _mismatch(sts: str) -> StubError:
    return authentication_failed(f"Signature did not match. String to sign used was {sts}")


def verify_service_sas(
    query: Mapping[str, str],
    *,
    primary: str,
    signer: Signer,
    policies: PolicyLookup,
    scheme: str,
    remote_ip: str,
    now: _dt.datetime,
) -> SasGrant:
    """Verify a service (table) SAS carried in ``query`` (decoded values)."""
    sv = _get(query, "sv")
    sig = _get(query, "sig")
    tn = _get(query, "tn")
    if sv is None:
        raise _mandatory("sv")
    if sig is None:
        raise _mandatory("sig")
    if tn is None:
        raise _mandatory("tn")
    version = _sas_version(sv, supports_table_sas)
    signed_sp, signed_st, signed_se = _get(query, "sp"), _get(query, "st"), _get(query, "se")
    si = _get(query, "si")
    sp, st, se = signed_sp, signed_st, signed_se
    if si is not None:
        policy = _find_policy(policies, primary, tn, si)
        sp = _merge("sp", sp, policy.permission)
        st = _merge("st", st, policy.start)
        se = _merge("se", se, policy.expiry)
    if se is None:
        raise _mandatory("se")
    if sp is None:
        raise _mandatory("sp")
    if not sp or any(c not in SERVICE_PERMISSIONS for c in sp):
        raise _malformed()
    spk, srk, epk, erk = (_get(query, n) for n in ("spk", "srk", "epk", "erk"))
    if (srk is not None and spk is None) or (erk is not None and epk is None):
        raise _malformed()
    with_ip = sas_has_ip_and_protocol(version)
    sip = _get(query, "sip") if with_ip else None
    spr = _get(query, "spr") if with_ip else None
    _validate_ip_protocol(sip, spr)

    if sas_resource_has_service_prefix(version):
        resource = f"/table/{primary}/{tn.lower()}"
    else:
        resource = f"/{primary}/{tn.lower()}"
    lines = [signed_sp or "", signed_st or "", signed_se or "", resource, si or ""]
    if with_ip:
        lines += [sip or "", spr or ""]
    lines += [sv, spk or "", srk or "", epk or "", erk or ""]
    sts = "\n".join(lines)
    if not signer.matches(sts, sig):
        raise _mismatch(sts)

    _check_time(st, se, now)
    _check_ip_protocol(sip, spr, scheme, remote_ip)

    params = _params(query)
    params.update({"sp": sp, "se": se})
    if st is not None:
        params["st"] = st
    key_range = None
    if spk is not None or epk is not None:
        key_range = KeyRange(spk, srk, epk, erk)
    return SasGrant(
        kind="service",
        version=version,
        params=params,
        permissions=frozenset(sp),
        table=tn,
        key_range=key_range,
    )


def _find_policy(policies: PolicyLookup, account: str, table: str, si: str) -> PolicyLike:
    try:
        found = policies(account, table)
    except StubError as err:
        if err.status != 404:
            raise
        found = ()
    for policy in found:
        if policy.id == si:
            return policy
    raise authentication_failed(
        f"The specified signed identifier '{si}' does not exist on table '{table}'."
    )


def _merge(name: str, signed: str | None, stored: str | None) -> str | None:
    if stored is not None and stored != "":
        if signed is not None:
            err = invalid_query_parameter_value(
                f"The field '{name}' is specified both in the shared access signature and in "
                "the stored access policy."
            )
            err.details.update({"QueryParameterName": name, "QueryParameterValue": signed})
            raise err
        return stored
    return signed


def verify_account_sas(
    query: Mapping[str, str],
    *,
    primary: str,
    signer: Signer,
    scheme: str,
    remote_ip: str,
    now: _dt.datetime,
) -> SasGrant:
    """Verify an account SAS carried in ``query`` (decoded values)."""
    fields = {name: _get(query, name) for name in ("sv", "sig", "ss", "srt", "sp", "se")}
    for name, value in fields.items():
        if value is None:
            raise _mandatory(name)
    sv, sig, ss, srt, sp, se = (str(fields[n]) for n in ("sv", "sig", "ss", "srt", "sp", "se"))
    version = _sas_version(sv, supports_account_sas)
    if any(c not in ACCOUNT_SERVICES for c in ss) or any(
        c not in ACCOUNT_RESOURCE_TYPES for c in srt
    ):
        raise _malformed()
    if not sp.isalpha() or not sp.islower():
        raise _malformed()
    st, sip, spr = _get(query, "st"), _get(query, "sip"), _get(query, "spr")
    _validate_ip_protocol(sip, spr)

    lines = [primary, sp, ss, srt, st or "", se, sip or "", spr or "", sv]
    if account_sas_has_encryption_scope(version):
        lines.append(_get(query, "ses") or "")
    sts = "\n".join(lines) + "\n"
    if not signer.matches(sts, sig):
        raise _mismatch(sts)

    _check_time(st, se, now)
    _check_ip_protocol(sip, spr, scheme, remote_ip)
    if "t" not in ss:
        raise authorization_service_mismatch()
    params = _params(query)
    return SasGrant(
        kind="account",
        version=version,
        params=params,
        permissions=frozenset(sp),
        resource_types=frozenset(srt),
    )


__all__ = [
    "KeyRange",
    "PolicyLike",
    "PolicyLookup",
    "SasGrant",
    "verify_account_sas",
    "verify_service_sas",
]
