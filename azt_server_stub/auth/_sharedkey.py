"""Shared Key and Shared Key Lite verification, Table-service flavour (PROTOCOL.md 10.2-10.6)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping

from multidict import CIMultiDictProxy

from ..errors import authentication_failed
from ._common import SECONDARY_SUFFIX, Signer, http_date, parse_http_date


def request_date(headers: Mapping[str, str]) -> str | None:
    """The Date line: ``x-ms-date`` when sent (and not empty), else ``Date``, else None."""
    value = headers.get("x-ms-date")
    if value:
        return value
    value = headers.get("Date")
    return value or None


def canonicalized_resources(primary: str, raw_path: str, comp: str | None) -> list[str]:
    """The CanonicalizedResource forms a request may have been signed with.

    The first is the service's form: the primary account name, then the raw path,
    with a path-style ``/{account}-secondary`` segment replaced by ``/{account}``.
    For a path-style secondary URL the path as sent is accepted too (newer SDKs sign
    it that way). ``comp`` is the only query parameter that takes part.
    """
    suffix = "" if comp is None else "?comp=" + comp
    sent = "/" + primary + raw_path + suffix
    segment = "/" + primary + SECONDARY_SUFFIX
    if raw_path == segment or raw_path.startswith(segment + "/"):
        dropped = "/" + primary + "/" + primary + raw_path[len(segment) :] + suffix
        return [dropped, sent]
    return [sent]


def string_to_sign(
    method: str, headers: Mapping[str, str], date: str, resource: str, *, lite: bool
) -> str:
    """The Table-service string-to-sign for Shared Key (or Shared Key Lite when ``lite``)."""
    if lite:
        return date + "\n" + resource
    return (
        method
        + "\n"
        + headers.get("Content-MD5", "")
        + "\n"
        + headers.get("Content-Type", "")
        + "\n"
        + date
        + "\n"
        + resource
    )


def verify(
    *,
    method: str,
    raw_path: str,
    comp: str | None,
    headers: CIMultiDictProxy[str],
    primary: str,
    signature: str,
    signer: Signer,
    lite: bool,
    now: _dt.datetime,
    check_skew: bool,
    max_skew_seconds: int,
) -> None:
    """Verify a Shared Key (Lite) signature and the request date; raise ``403`` on failure."""
    date = request_date(headers)
    if date is None:
        raise authentication_failed(
            "Request date header not specified. Send x-ms-date or Date with Shared Key "
            "authorization."
        )
    resources = canonicalized_resources(primary, raw_path, comp)
    first = string_to_sign(method, headers, date, resources[0], lite=lite)
    if not signer.matches(first, signature) and not any(
        signer.matches(string_to_sign(method, headers, date, resource, lite=lite), signature)
        for resource in resources[1:]
    ):
        raise authentication_failed(
            f"The MAC signature found in the HTTP request '{signature}' is not the same as any "
            f"computed signature. Server used following string to sign: '{first}'."
        )
    if not check_skew:
        return
    moment = parse_http_date(date)
    if moment is None:
        raise authentication_failed(
            f"The request date header '{date}' is not a valid RFC 1123 date."
        )
    skew = (now - moment).total_seconds()
    if skew > max_skew_seconds:
        raise authentication_failed(f"Request date header too old: '{date}'")
    if -skew > max_skew_seconds:
        raise authentication_failed(
            f"Request date header too far in the future: '{date}' (server time '{http_date(now)}')"
        )
