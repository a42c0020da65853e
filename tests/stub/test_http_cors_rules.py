"""CORS response headers follow the stored rules as they change (the parsed rules are cached).

A GET from an origin no rule allows gets exactly ``Vary: Origin`` and no Access-Control
headers (Azure's CORS page, "Understanding how the Vary header is set": rules exist, none
matches; changed from ``{}`` to follow that table, issue 18).
"""

from __future__ import annotations

from azt_server_stub.backend import Backend
from azt_server_stub.formats.xml import CorsRule, ServiceProperties
from azt_server_stub.handlers.cors import cors_response_headers

NO_MATCH = {"Vary": "Origin"}


def _set_rules(backend: Backend, *origins: str) -> None:
    rules = [CorsRule([origin], ["GET"], 60, ["x-ms-request-id"], []) for origin in origins]
    backend.set_service_properties("acct", ServiceProperties(cors=rules).to_xml())


def test_new_rules_apply_to_the_next_request() -> None:
    backend = Backend()
    _set_rules(backend, "https://a.example")
    assert cors_response_headers(backend, "acct", "https://a.example", "GET")
    assert cors_response_headers(backend, "acct", "https://b.example", "GET") == NO_MATCH

    _set_rules(backend, "https://b.example")
    assert cors_response_headers(backend, "acct", "https://a.example", "GET") == NO_MATCH
    allowed = cors_response_headers(backend, "acct", "https://b.example", "GET")
    assert allowed["Access-Control-Allow-Origin"] == "https://b.example"

    _set_rules(backend, "https://a.example")  # the first document again
    assert cors_response_headers(backend, "acct", "https://a.example", "GET")
    assert cors_response_headers(backend, "acct", "https://b.example", "GET") == NO_MATCH


def test_accounts_keep_their_own_rules() -> None:
    backend = Backend()
    _set_rules(backend, "https://a.example")
    assert cors_response_headers(backend, "other", "https://a.example", "GET") == {}
