"""CORS responses against Azure's documented table (issue 18, point 1).

Evidence: Azure's "Cross-Origin Resource Sharing (CORS) Support for the Azure Storage
Services" page (sections "Understanding CORS rule evaluation logic" and "Understanding how
the Vary header is set", whose table is pinned row by row here), the "Preflight Table
Request" page (its "Response headers" table and sample response), and a real account's
recording in azure-sdk-for-python,
``sdk/tables/azure-data-tables/tests/recordings/test_table_aad.pyTestTableAADtest_aad_service_properties.json``
(``Vary: Origin`` on every GET of the service properties, which carry no ``Origin``, of an
account with explicit-origin rules; none on the PUTs).
"""

from __future__ import annotations

from tests.stub.conftest import JSON_NONE, RawClient, RawResponse

APP = "https://app.example"
OTHER = "https://other.example"
PROPS = {"restype": "service", "comp": "properties"}
ACAO = "Access-Control-Allow-Origin"
EXPOSE = "Access-Control-Expose-Headers"
CREDENTIALS = "Access-Control-Allow-Credentials"


def _rule(origins: str, methods: str, *, allowed: str = "", exposed: str = "x-ms-*") -> str:
    return (
        f"<CorsRule><AllowedOrigins>{origins}</AllowedOrigins>"
        f"<AllowedMethods>{methods}</AllowedMethods><MaxAgeInSeconds>60</MaxAgeInSeconds>"
        f"<ExposedHeaders>{exposed}</ExposedHeaders>"
        f"<AllowedHeaders>{allowed}</AllowedHeaders></CorsRule>"
    )


async def _set_rules(raw: RawClient, *rules: str) -> RawResponse:
    doc = f"<StorageServiceProperties><Cors>{''.join(rules)}</Cors></StorageServiceProperties>"
    r = await raw.request(
        "PUT", "/", query=PROPS, body=doc, headers={"Content-Type": "application/xml"}
    )
    assert r.status == 202, r.body
    return r


async def _get(raw: RawClient, origin: str | None, path: str = "/Tables") -> RawResponse:
    headers = {"Accept": JSON_NONE}
    if origin is not None:
        headers["Origin"] = origin
    return await raw.request("GET", path, headers=headers)


def _cors(r: RawResponse) -> dict[str, str]:
    names = ("Vary", ACAO, EXPOSE, CREDENTIALS)
    return {name: r.headers[name] for name in names if name in r.headers}


async def test_no_rules_no_cors_headers(raw: RawClient) -> None:
    """Doc table rows 1 and 4: no rules, with or without Origin -> no Vary, no ACAO."""
    assert _cors(await _get(raw, None)) == {}
    assert _cors(await _get(raw, APP)) == {}


async def test_explicit_origin_rules(raw: RawClient) -> None:
    """Doc table rows 2, 5 and 6 with explicit-origin rules; row 2 (no Origin -> Vary) is
    also what the recorded real account answered (test_aad_service_properties)."""
    put = await _set_rules(raw, _rule(APP, "GET,PUT"))
    assert "Vary" not in put.headers  # the recording's PUT: not GET/HEAD
    # row 2: no Origin, rules exist, no * rule -> Vary only
    assert _cors(await _get(raw, None)) == {"Vary": "Origin"}
    props = await raw.request("GET", "/", query=PROPS)
    assert _cors(props) == {"Vary": "Origin"}  # the recording's GET
    # row 6: an origin no rule allows -> Vary only
    assert _cors(await _get(raw, OTHER)) == {"Vary": "Origin"}
    # row 5: the exact origin -> ACAO = origin, exposed headers, Vary
    assert _cors(await _get(raw, APP)) == {
        "Vary": "Origin",
        ACAO: APP,
        EXPOSE: "x-ms-*",
        CREDENTIALS: "true",
    }
    head = await raw.request("HEAD", "/Tables", headers={"Origin": OTHER})
    assert _cors(head) == {"Vary": "Origin"}


async def test_all_origins_rule_has_no_vary(raw: RawClient) -> None:
    """Doc table rows 3 and 7: a matching * rule -> ACAO *, exposed headers, no Vary
    (with and without Origin)."""
    await _set_rules(raw, _rule("*", "GET"))
    expected = {ACAO: "*", EXPOSE: "x-ms-*"}
    assert _cors(await _get(raw, APP)) == expected
    assert _cors(await _get(raw, None)) == expected


async def test_other_methods_never_get_vary(raw: RawClient) -> None:
    """Doc: "for requests using methods other than GET/HEAD, the storage services will not
    set the Vary header"; the Access-Control headers still follow the matching rule."""
    await _set_rules(raw, _rule(APP, "GET,POST,DELETE"))
    body = '{"TableName":"corstable"}'
    headers = {"Origin": APP, "Content-Type": "application/json", "Accept": JSON_NONE}
    r = await raw.request("POST", "/Tables", body=body, headers=headers)
    assert r.status == 201, r.body
    assert _cors(r) == {ACAO: APP, EXPOSE: "x-ms-*", CREDENTIALS: "true"}
    r = await raw.request("DELETE", "/Tables('corstable')", headers={"Origin": OTHER})
    assert r.status == 204, r.body
    assert _cors(r) == {}  # no match, not GET/HEAD: nothing at all
    r = await raw.request("DELETE", "/Tables('corstable')")
    assert r.status == 404  # no Origin, not GET/HEAD
    assert _cors(r) == {}


async def test_error_responses_carry_the_cors_headers(raw: RawClient) -> None:
    """An actual request is "treated as a normal request" (doc): a 404 from an allowed
    origin still gets the Access-Control headers, or the browser hides the error."""
    await _set_rules(raw, _rule(APP, "GET"))
    r = await _get(raw, APP, "/missing()")
    assert r.status == 404
    assert _cors(r)[ACAO] == APP


async def test_origin_match_is_case_sensitive(raw: RawClient) -> None:
    """AllowedOrigins: "the origin must be an exact case-sensitive match with the origin
    that the user agent sends to the service" (doc, "Enabling CORS for Azure Storage")."""
    await _set_rules(raw, _rule(APP, "GET"))
    assert _cors(await _get(raw, "https://App.example")) == {"Vary": "Origin"}
    r = await _preflight(raw, "https://APP.example", "GET")
    assert (r.status, r.code) == (403, "CorsPreflightFailure")


async def _preflight(
    raw: RawClient, origin: str | None, method: str | None, headers: str | None = None
) -> RawResponse:
    sent: dict[str, str] = {}
    if origin is not None:
        sent["Origin"] = origin
    if method is not None:
        sent["Access-Control-Request-Method"] = method
    if headers is not None:
        sent["Access-Control-Request-Headers"] = headers
    return await raw.request("OPTIONS", "/mytable", auth="none", headers=sent)


async def test_preflight_response_headers(raw: RawClient) -> None:
    """The "Preflight Table Request" page, Response headers: Allow-Methods and Allow-Headers echo
    the requested method and headers, Allow-Credentials "is always set to true"; ACAO is
    the origin for an explicit rule and * for a * rule (the page's sample response).
    No Vary: OPTIONS is not GET/HEAD."""
    await _set_rules(
        raw,
        _rule(APP, "GET,PUT,MERGE", allowed="x-ms-meta-*,content-type"),
        _rule("*", "GET"),
    )
    r = await _preflight(raw, APP, "PUT", "x-ms-meta-a, content-type")
    assert r.status == 200, r.body
    assert r.headers[ACAO] == APP
    assert r.headers["Access-Control-Allow-Methods"] == "PUT"
    assert r.headers["Access-Control-Allow-Headers"] == "x-ms-meta-a,content-type"
    assert r.headers["Access-Control-Max-Age"] == "60"
    assert r.headers[CREDENTIALS] == "true"
    assert "Vary" not in r.headers
    r = await _preflight(raw, OTHER, "GET")
    assert r.status == 200, r.body
    assert r.headers[ACAO] == "*"
    assert r.headers["Access-Control-Allow-Methods"] == "GET"
    assert "Access-Control-Allow-Headers" not in r.headers


async def test_preflight_failures(raw: RawClient) -> None:
    """Doc: no Origin or Access-Control-Request-Method -> 400; CORS not enabled or no
    matching rule -> 403."""
    r = await _preflight(raw, APP, "GET")
    assert (r.status, r.code) == (403, "CorsPreflightFailure")  # no rules at all
    await _set_rules(raw, _rule(APP, "GET"))
    for origin, method in ((None, "GET"), (APP, None)):
        r = await _preflight(raw, origin, method)
        assert r.status == 400
    r = await _preflight(raw, APP, "DELETE")
    assert (r.status, r.code) == (403, "CorsPreflightFailure")


async def test_first_rule_matching_origin_and_method_is_final(raw: RawClient) -> None:
    """The CORS page's evaluation example, third request: the first rule matching origin
    and method is selected and "no further rules are evaluated"; when its AllowedHeaders
    refuse a requested header the request fails although a later rule would allow it."""
    await _set_rules(
        raw,
        _rule(APP, "GET", allowed="x-ms-meta-*"),
        _rule(APP, "GET", allowed="*"),
    )
    r = await _preflight(raw, APP, "GET", "x-ms-client-request-id")
    assert (r.status, r.code) == (403, "CorsPreflightFailure")
    r = await _preflight(raw, APP, "GET", "x-ms-meta-a")
    assert r.status == 200, r.body
