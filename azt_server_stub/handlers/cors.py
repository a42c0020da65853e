"""CORS: ``OPTIONS`` preflights and the headers of an actual cross-origin request.

Both read the account's stored CORS rules (service properties).

Example::

    headers = cors_response_headers(backend, "devstoreaccount1", origin, "GET")
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from aiohttp import web

from .. import errors
from ..addressing import AccountAddress
from ..backend import Backend
from ..errors import StubError
from ..formats import xml as xml_fmt
from ..request_state import Services


def _cors_rules(backend: Backend, account: str) -> tuple[xml_fmt.CorsRule, ...]:
    doc = backend.get_service_properties(account)
    return _parsed_cors_rules(doc) if doc else ()


@functools.lru_cache(maxsize=64)
def _parsed_cors_rules(doc: bytes) -> tuple[xml_fmt.CorsRule, ...]:
    """The CORS rules of a stored service-properties document (read-only; cached by the
    document: every request with an ``Origin`` header consults them)."""
    try:
        return tuple(xml_fmt.parse_service_properties(doc).cors)
    except StubError:
        return ()


def _header_allowed(header: str, allowed: Sequence[str]) -> bool:
    h = header.strip().lower()
    for pattern in allowed:
        p = pattern.lower()
        if p == "*" or p == h or (p.endswith("*") and h.startswith(p[:-1])):
            return True
    return False


def _origin_allowed(origin: str, rule: xml_fmt.CorsRule) -> bool:
    return "*" in rule.allowed_origins or any(
        o.lower() == origin.lower() for o in rule.allowed_origins
    )


def preflight(request: web.Request, services: Services, addr: AccountAddress) -> web.Response:
    """``OPTIONS`` preflight against the stored CORS rules (403 CorsPreflightFailure).

    Example::

        response = preflight(request, services, addr)
    """
    origin = request.headers.get("Origin")
    method = request.headers.get("Access-Control-Request-Method")
    if not origin or not method:
        raise errors.missing_required_header()
    wanted = [
        h for h in request.headers.get("Access-Control-Request-Headers", "").split(",") if h.strip()
    ]
    for rule in _cors_rules(services.backend, addr.account):
        if not _origin_allowed(origin, rule):
            continue
        if method.upper() not in rule.allowed_methods:
            continue
        if not all(_header_allowed(h, rule.allowed_headers) for h in wanted):
            continue
        headers = {
            "Access-Control-Allow-Origin": "*" if rule.allowed_origins == ["*"] else origin,
            "Access-Control-Allow-Methods": ",".join(rule.allowed_methods),
            "Access-Control-Max-Age": str(rule.max_age),
            "Vary": "Origin",
        }
        if wanted:
            headers["Access-Control-Allow-Headers"] = ",".join(h.strip() for h in wanted)
        return web.Response(status=200, headers=headers)
    raise StubError(
        403,
        "CorsPreflightFailure",
        "CORS not enabled or no matching rule found for this request.",
    )


def cors_response_headers(
    backend: Backend, account: str, origin: str, method: str
) -> dict[str, str]:
    """Headers an actual request from an allowed origin gets (empty when none match).

    Example::

        >>> rule = xml_fmt.CorsRule(["https://app.example"], ["GET"], 60, ["x-ms-request-id"], [])
        >>> backend = Backend()
        >>> backend.set_service_properties("acct", xml_fmt.ServiceProperties(cors=[rule]).to_xml())
        >>> headers = cors_response_headers(backend, "acct", "https://app.example", "get")
        >>> headers["Access-Control-Allow-Origin"], headers["Access-Control-Expose-Headers"]
        ('https://app.example', 'x-ms-request-id')
        >>> cors_response_headers(backend, "acct", "https://other.example", "GET")
        {}
    """
    for rule in _cors_rules(backend, account):
        if _origin_allowed(origin, rule) and method.upper() in rule.allowed_methods:
            headers = {
                "Access-Control-Allow-Origin": "*" if rule.allowed_origins == ["*"] else origin,
                "Vary": "Origin",
            }
            if rule.exposed_headers:
                headers["Access-Control-Expose-Headers"] = ",".join(rule.exposed_headers)
            return headers
    return {}
