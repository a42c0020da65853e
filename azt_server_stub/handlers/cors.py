"""CORS: ``OPTIONS`` preflights and the headers of an actual cross-origin request.

Both read the account's stored CORS rules (service properties) and follow the response
table of Azure's "Cross-Origin Resource Sharing (CORS) Support for the Azure Storage
Services" page (sections "Understanding CORS rule evaluation logic" and "Understanding
how the Vary header is set") and the "Preflight Table Request" page; PROTOCOL.md 4.

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

#: Methods whose responses user agents cache: only these get ``Vary: Origin`` ("for
#: requests using methods other than GET/HEAD, the storage services will not set the Vary
#: header"; a real account's recording, azure-sdk-for-python
#: tests/recordings/test_table_aad.pyTestTableAADtest_aad_service_properties.json, has
#: ``Vary: Origin`` on every GET of the service properties and none on the PUTs).
_CACHEABLE = frozenset({"GET", "HEAD"})
_VARY = {"Vary": "Origin"}


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


def _allows_all_origins(rule: xml_fmt.CorsRule) -> bool:
    return "*" in rule.allowed_origins


def _origin_allowed(origin: str, rule: xml_fmt.CorsRule) -> bool:
    # "The origin must be an exact case-sensitive match with the origin that the user
    # agent sends to the service" (AllowedOrigins, Azure's CORS page). Azurite compares
    # case-insensitively; the stub follows the documentation.
    return _allows_all_origins(rule) or origin in rule.allowed_origins


def _select_rule(
    rules: Sequence[xml_fmt.CorsRule], origin: str, method: str
) -> xml_fmt.CorsRule | None:
    """The first rule allowing ``origin`` and ``method``: it is final ("the first matching
    rule is selected and no further rules are evaluated", Azure's CORS page)."""
    for rule in rules:
        if _origin_allowed(origin, rule) and method in rule.allowed_methods:
            return rule
    return None


def preflight(request: web.Request, services: Services, addr: AccountAddress) -> web.Response:
    """``OPTIONS`` preflight against the stored CORS rules (403 CorsPreflightFailure).

    Anonymous (credentials are ignored). Missing ``Origin`` or
    ``Access-Control-Request-Method``: 400. The first rule allowing the origin and the
    method decides: when its AllowedHeaders refuse a requested header the preflight fails
    (403), even if a later rule would allow it (the third row of the CORS page's
    evaluation example). A match answers 200 with the headers of the "Preflight Table
    Request" page's response table: ``Access-Control-Allow-Origin`` (``*`` for a rule
    allowing all origins, as the page's sample response shows, else the request's
    origin), ``-Allow-Methods`` / ``-Allow-Headers`` echoing the requested method and
    headers, ``-Max-Age`` and ``-Allow-Credentials: true`` ("always set to true"). No
    ``Vary``: only actual GET/HEAD responses carry it.

    Example::

        response = preflight(request, services, addr)
    """
    origin = request.headers.get("Origin")
    method = request.headers.get("Access-Control-Request-Method")
    if not origin or not method:
        raise errors.missing_required_header()
    wanted = [
        h.strip()
        for h in request.headers.get("Access-Control-Request-Headers", "").split(",")
        if h.strip()
    ]
    rule = _select_rule(_cors_rules(services.backend, addr.account), origin, method.upper())
    if rule is not None and all(_header_allowed(h, rule.allowed_headers) for h in wanted):
        headers = {
            "Access-Control-Allow-Origin": "*" if _allows_all_origins(rule) else origin,
            "Access-Control-Allow-Methods": method,
            "Access-Control-Max-Age": str(rule.max_age),
            "Access-Control-Allow-Credentials": "true",
        }
        if wanted:
            headers["Access-Control-Allow-Headers"] = ",".join(wanted)
        return web.Response(status=200, headers=headers)
    raise StubError(
        403,
        "CorsPreflightFailure",
        "CORS not enabled or no matching rule found for this request.",
    )


def cors_response_headers(
    backend: Backend, account: str, origin: str | None, method: str
) -> dict[str, str]:
    """The CORS headers of an actual (non-``OPTIONS``) response, error responses included.

    ``origin`` is the request's ``Origin`` header (None: absent). The CORS page's table
    for GET/HEAD, row by row: no rules -> nothing; rules but no matching rule (also
    without ``Origin``) -> ``Vary: Origin`` only; a matching rule allowing all origins
    (also without ``Origin``) -> ``Access-Control-Allow-Origin: *`` and
    ``-Expose-Headers``, no ``Vary``; a rule naming the origin -> the origin,
    ``-Expose-Headers``, ``-Allow-Credentials: true`` and ``Vary: Origin``. Other methods
    get the same Access-Control headers for a matching ``Origin`` and never ``Vary``.

    Example::

        >>> rule = xml_fmt.CorsRule(["https://app.example"], ["GET"], 60, ["x-ms-request-id"], [])
        >>> backend = Backend()
        >>> backend.set_service_properties("acct", xml_fmt.ServiceProperties(cors=[rule]).to_xml())
        >>> headers = cors_response_headers(backend, "acct", "https://app.example", "get")
        >>> headers["Access-Control-Allow-Origin"], headers["Vary"]
        ('https://app.example', 'Origin')
        >>> cors_response_headers(backend, "acct", "https://other.example", "GET")
        {'Vary': 'Origin'}
        >>> cors_response_headers(backend, "acct", "https://app.example", "PUT")
        {}
    """
    method = method.upper()
    cacheable = method in _CACHEABLE
    if origin is None and not cacheable:
        return {}
    rules = _cors_rules(backend, account)
    if not rules:
        return {}
    if origin is None:
        # Doc rows 2 and 3: a GET/HEAD without Origin from an account with rules.
        rule = next(
            (r for r in rules if _allows_all_origins(r) and method in r.allowed_methods), None
        )
        if rule is None:
            return dict(_VARY)
        return _allowed_headers(rule, "*")
    rule = _select_rule(rules, origin, method)
    if rule is None:
        return dict(_VARY) if cacheable else {}
    if _allows_all_origins(rule):
        return _allowed_headers(rule, "*")
    headers = _allowed_headers(rule, origin)
    headers["Access-Control-Allow-Credentials"] = "true"
    if cacheable:
        headers.update(_VARY)
    return headers


def _allowed_headers(rule: xml_fmt.CorsRule, allow_origin: str) -> dict[str, str]:
    headers = {"Access-Control-Allow-Origin": allow_origin}
    if rule.exposed_headers:
        headers["Access-Control-Expose-Headers"] = ",".join(rule.exposed_headers)
    return headers
