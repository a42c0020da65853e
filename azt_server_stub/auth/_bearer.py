"""Opt-in bearer-token (Entra ID) checks, as Azurite's basic OAuth mode.

The token is parsed as a JWT (``base64url(header).base64url(payload).signature``)
and its ``aud``, ``exp`` and ``nbf`` claims are checked. The signature is NOT
verified: the mode exists so that token flows can be tested without an identity
provider, never to protect anything.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import json
from collections.abc import Iterable
from typing import Any

from ..errors import StubError, authentication_failed

#: Azure Storage's application id, accepted as an audience by Azure and Azurite.
STORAGE_APP_ID = "e406a681-f3d4-42a8-90b6-c2b029497af1"
#: DNS suffixes of the public and sovereign clouds (for ``https://{account}.table.{suffix}``).
ENDPOINT_SUFFIXES = (
    "core.windows.net",
    "core.chinacloudapi.cn",
    "core.usgovcloudapi.net",
    "core.cloudapi.de",
)
#: ``WWW-Authenticate`` value the service sends with 401 responses.
BEARER_CHALLENGE = (
    "Bearer authorization_uri=https://login.microsoftonline.com/common/oauth2/authorize "
    "resource_id=https://storage.azure.com"
)


def invalid_token(detail: str) -> StubError:
    """``401 InvalidAuthenticationInfo``: the service's refusal of a bearer token."""
    return StubError(
        401,
        "InvalidAuthenticationInfo",
        "Server failed to authenticate the request. Please refer to the information in the "
        "www-authenticate header.",
        details={"AuthenticationErrorDetail": detail},
    )


def _b64url(segment: str) -> bytes:
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def parse_jwt(token: str) -> dict[str, Any]:
    """The payload claims of a compact JWT; ``401 InvalidAuthenticationInfo`` if malformed."""
    parts = token.split(".")
    if len(parts) != 3 or not parts[0] or not parts[1]:
        raise invalid_token("The token is malformed: a JWT has three base64url segments.")
    try:
        header = json.loads(_b64url(parts[0]))
        payload = json.loads(_b64url(parts[1]))
    except (binascii.Error, ValueError):
        raise invalid_token("The token is malformed: header or payload is not JSON.") from None
    if not isinstance(header, dict) or not isinstance(payload, dict):
        raise invalid_token("The token is malformed: header and payload must be JSON objects.")
    return payload


def allowed_audiences(
    configured: Iterable[str], account: str, scheme: str, host: str | None
) -> frozenset[str]:
    """Every audience accepted for ``account`` (compared without a trailing slash).

    ``configured`` (default ``https://storage.azure.com``), the storage app id,
    ``https://{account}.table.{suffix}`` for each cloud suffix, and the stub's own
    endpoint as the client addresses it: ``{scheme}://{host}`` and
    ``{scheme}://{host}/{account}``.
    """
    result = {a.rstrip("/") for a in configured}
    result.add(STORAGE_APP_ID)
    for suffix in ENDPOINT_SUFFIXES:
        result.add(f"https://{account}.table.{suffix}")
    if host:
        result.add(f"{scheme}://{host}")
        result.add(f"{scheme}://{host}/{account}")
    return frozenset(result)


def _numeric(claims: dict[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid_token(f"Lifetime validation failed. The '{name}' claim is not a number.")
    return float(value)


def verify_bearer(
    token: str,
    *,
    audiences: frozenset[str],
    now: _dt.datetime,
    leeway_seconds: float,
) -> dict[str, Any]:
    """Check a token's audience and lifetime; return its claims."""
    claims = parse_jwt(token)
    aud = claims.get("aud")
    values = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    if not any(isinstance(v, str) and v.rstrip("/") in audiences for v in values):
        raise invalid_token("Audience validation failed. Audience did not match.")
    stamp = now.timestamp()
    exp = _numeric(claims, "exp")
    if exp is None:
        raise invalid_token("Lifetime validation failed. The token is missing an Expiration Time.")
    if stamp > exp + leeway_seconds:
        raise invalid_token("Lifetime validation failed. The token is expired.")
    nbf = _numeric(claims, "nbf")
    if nbf is not None and stamp < nbf - leeway_seconds:
        raise invalid_token("Lifetime validation failed. The token is not yet valid.")
    return claims


def bearer_over_http() -> StubError:
    """``403 AuthenticationFailed``: the service refuses bearer tokens over plain HTTP."""
    return authentication_failed("Authentication scheme Bearer is not allowed with HTTP.")


def bearer_version_too_old() -> StubError:
    """``403 AuthenticationFailed``: bearer tokens need a newer ``x-ms-version``."""
    return authentication_failed("Authentication scheme Bearer is not supported in this version.")
