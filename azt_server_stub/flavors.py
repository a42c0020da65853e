"""Service flavours: the stub answers as Azure Table storage (default) or as the Azure
Cosmos DB Table API, with every difference between the two kept here.

A :class:`StubFlavor` says what its service lacks (service properties and statistics,
table ACLs, CORS preflight, AtomPub, the ``-secondary`` endpoint), its own limits (RowKey
bytes, reserved property names, batch body size), how it throttles (Storage: ``503
ServerBusy`` without a retry hint; Cosmos: ``429`` "Request rate is large" with
``x-ms-retry-after-ms``) and how its error bodies read. :func:`install` puts the
flavour's request checks on an application (nothing for Storage, whose rules live in the
handlers); the service middleware asks :func:`flavor_of` how to render errors.

Sources and the cases where Cosmos's answer is not documented (the stub's choice is then
named as such) are in ``docs/cosmos.md``.

Example::

    >>> flavor_named("cosmos").throttle_status
    429
    >>> sorted(FLAVORS)
    ['cosmos', 'storage']
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from . import errors
from .addressing import Kind, parse_resource, split_account
from .errors import StubError
from .formats.batch import parse_batch
from .formats.json_form import COSMOS_FORM, STORAGE_FORM, JsonForm
from .formats.negotiation import cosmos_error_format
from .handlers.parsing import split_target, tunnelled_method
from .model import etag_for, new_guid, ticks_from_datetime
from .request_state import REQUEST_ID, SERVICES_KEY, query_of
from .validation import COSMOS_TABLE_NAMES, STORAGE_TABLE_NAMES, TableNaming

__all__ = [
    "COSMOS",
    "FLAVORS",
    "STORAGE",
    "FlavoredError",
    "GatewayError",
    "StubFlavor",
    "flavor_named",
    "flavor_of",
    "install",
]


class FlavoredError(StubError):
    """A :class:`StubError` that carries response headers of its own (a throttled
    request's ``x-ms-retry-after-ms``).

    Example::

        >>> err = COSMOS.throttled("Request rate is large.", 0.25)
        >>> err.status, err.headers["x-ms-retry-after-ms"]
        (429, '250')
    """

    def __init__(self, status: int, code: str, message: str, *, headers: Mapping[str, str]) -> None:
        super().__init__(status, code, message)
        self.headers = dict(headers)


#: What the Cosmos DB Table API's gateway appends, after ``ActivityId: <id>,``, to the
#: errors it raises itself (recorded 2020-09-17: ``PATCH`` refused, ``415``; see
#: ``docs/cosmos.md``).
GATEWAY_AGENT = "documentdb-dotnet-sdk/2.11.0 Host/64-bit MicrosoftWindowsNT/6.2.9200.0"


#: The message of the gateway's ``415 MediaTypeNotSupported`` (recorded, REC 6).
MEDIA_TYPES_REFUSED = "None of the provided media types are supported"


class GatewayError(FlavoredError):
    """An error the Cosmos DB Table API's gateway answers itself: its message carries an
    ``ActivityId`` line (``tail`` after the id) before the ``RequestID`` line and its body
    ends with CRLF, as recorded (``test_table_entity_cosmos.test_merge_entity``,
    interaction 2; ``docs/cosmos.md``).

    Example::

        >>> _, body = COSMOS.error_payload(COSMOS.patch_refused(), "r1", "application/json", None)
        >>> body.endswith(b'\\\\nRequestID:r1\\\\n"}}}\\r\\n')
        True
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        headers: Mapping[str, str] | None = None,
        tail: str = GATEWAY_AGENT,
    ) -> None:
        super().__init__(status, code, message, headers=headers or {})
        self.tail = tail


#: What follows the ActivityId of a throttled request's answer (recorded 2020,
#: ``test_table_cosmos.test_query_tables_with_num_results``, interaction 3; the stub's
#: own names in the Request URI).
_THROTTLE_TAIL = (
    "Request URI: /apps/azt-stub/services/azt-stub/partitions/azt-stub/replicas/1p, "
    "RequestStats: , SDK: Microsoft.Azure.Documents.Common/2.11.0, " + GATEWAY_AGENT
)


#: Operations a flavour may lack, by the name the refusal uses.
OPERATIONS = ("service properties", "service stats", "table ACL", "CORS preflight", "AtomPub")


@dataclass(frozen=True, slots=True)
class StubFlavor:
    """One service flavour's rules (see the module docstring).

    ``unsupported``: operations refused with ``501 NotImplemented``. ``json_only``:
    AtomPub requests are refused with ``415``. ``secondary``: whether ``-secondary``
    addresses answer. ``max_row_key_bytes`` / ``reserved_names`` / ``max_batch_bytes``:
    entity and batch limits on top of the Storage rules every flavour keeps.
    ``throttle_status``: the status of a throttled request. ``error_code_header``:
    whether errors carry ``x-ms-error-code``. ``table_naming``: valid table names and
    whether they are case-sensitive. ``key_order``: whether query results come in
    PartitionKey/RowKey order (the backend takes both). ``sorted_updates``: whether a
    replace or merge stores the properties in name order (Storage, recorded; the backend
    takes it too). ``refuses_patch_in_batch``: a
    change set with a ``PATCH`` part is refused whole, before any part is looked at
    (top-level ``400 InvalidInput``). ``numbers_batch_parts``: every change-set answer
    part carries ``Content-ID`` numbered from 1 (else a Content-ID sent as an inner
    header is echoed). ``patch_merges``: whether the ``PATCH`` verb merges (Cosmos
    refuses it). ``json_form``: how JSON bodies are written (DateTime fractions, the single
    entity's ``odata.metadata``, member order; :class:`~.formats.json_form.JsonForm`).
    ``select_in_metadata``: whether a ``$select`` is named in ``odata.metadata``.
    ``no_content_type``: the ``Content-Type`` of ``204`` answers (None: none).
    ``table_etag``: whether Create Table answers with an ETag. ``cosmos_tokens``:
    continuation tokens in the Cosmos DB Table API's shape. ``bare_json_type``: JSON
    answers typed ``application/json;odata=<level>`` alone. ``version_header``: whether
    answers carry ``x-ms-version`` (no recorded Cosmos answer does, refusals included).
    ``string_body_keys``: an entity body's ``PartitionKey``/``RowKey`` members, when present,
    must be JSON strings typed ``Edm.String`` on every write, updates and upserts included
    (Storage reads the keys of those from the URL and ignores the body's).
    ``empty_keys_refused``: an insert whose PartitionKey or RowKey is empty is refused
    (Cosmos's recorded ``400 PropertiesNeedValue``; Storage takes empty keys).
    ``accepted_names``: spellings of ``reserved_names`` (compared case-insensitively)
    taken as ordinary properties, exactly as spelt. ``shadowed_names``: ``(kept, dropped)``
    pairs: a body that carries ``kept`` and, after it, ``dropped`` is taken with
    ``dropped`` (and its annotation) left out, unstored and unechoed (Cosmos: ``etag`` then
    ``Etag``, recorded; :meth:`drop_shadowed`).

    Example::

        >>> STORAGE.secondary, COSMOS.secondary
        (True, False)
    """

    name: str
    service: str
    unsupported: frozenset[str] = frozenset()
    json_only: bool = False
    secondary: bool = True
    max_row_key_bytes: int | None = None
    reserved_names: frozenset[str] = frozenset()
    max_batch_bytes: int | None = None
    throttle_status: int = 503
    error_code_header: bool = True
    table_naming: TableNaming = STORAGE_TABLE_NAMES
    key_order: bool = True
    sorted_updates: bool = True
    refuses_patch_in_batch: bool = False
    numbers_batch_parts: bool = False
    patch_merges: bool = True
    json_form: JsonForm = STORAGE_FORM
    select_in_metadata: bool = True
    no_content_type: str | None = None
    table_etag: bool = False
    cosmos_tokens: bool = False
    bare_json_type: bool = False
    version_header: bool = True
    string_body_keys: bool = False
    empty_keys_refused: bool = False
    accepted_names: frozenset[str] = frozenset()
    shadowed_names: tuple[tuple[str, str], ...] = ()

    @property
    def checks_requests(self) -> bool:
        """Whether the flavour needs its middleware (request checks and answer headers;
        Storage needs none).

        Example::

            >>> STORAGE.checks_requests, COSMOS.checks_requests
            (False, True)
        """
        return bool(
            self.unsupported
            or self.json_only
            or not self.secondary
            or self.max_row_key_bytes is not None
            or self.reserved_names
            or self.string_body_keys
            or self.empty_keys_refused
            or self.max_batch_bytes is not None
            or not self.patch_merges
            or self.no_content_type is not None
            or self.table_etag
        )

    def not_supported(self, operation: str) -> StubError:
        """The refusal of an operation the flavour lacks (``501 NotImplemented``; what
        Cosmos answers is not documented).

        Example::

            >>> COSMOS.not_supported("table ACL").status
            501
        """
        return StubError(
            501,
            "NotImplemented",
            f"The {operation} operation is not supported by {self.service}.",
        )

    def throttled(self, message: str, wait_seconds: float) -> StubError:
        """A throttled request's answer, telling the client when to come back.

        Storage: ``503 ServerBusy`` with the service's text and no retry hint. Cosmos:
        ``429`` with the recorded body (its code is ``"429"``, "Request rate is large",
        the gateway's ActivityId line) and ``x-ms-retry-after-ms``, which Cosmos's
        rate-limiting guidance documents (the one 2020 recording shows none; azt retries
        a ``429`` either way).

        Example::

            >>> STORAGE.throttled("busy", 1.0).code
            'ServerBusy'
            >>> COSMOS.throttled("busy", 0.0104).headers["x-ms-retry-after-ms"]
            '11'
        """
        if self.throttle_status != 429:
            return errors.server_busy(message)
        millis = max(1, math.ceil(wait_seconds * 1000))
        return GatewayError(
            429,
            "429",
            'Message: {"Errors":["Request rate is large. More Request Units may be needed, '
            "so no changes were made. Please retry this request later. Learn more: "
            'http://aka.ms/cosmosdb-error-429"]}',
            headers={"x-ms-retry-after-ms": str(millis)},
            tail=_THROTTLE_TAIL,
        )

    def error_message(self, text: str, request_id: str, time_text: str) -> str:
        """An error body's message: Storage's ``RequestId``/``Time`` lines, or Cosmos's
        ``RequestID`` line (as recorded from the service, with a trailing newline).

        Example::

            >>> COSMOS.error_message("Gone.", "r1", "t")
            'Gone.\\nRequestID:r1\\n'
            >>> STORAGE.error_message("Gone.", "r1", "t")
            'Gone.\\nRequestId:r1\\nTime:t'
        """
        if self.name == "cosmos":
            return f"{text}\nRequestID:{request_id}\n"
        return f"{text}\nRequestId:{request_id}\nTime:{time_text}"

    def error_payload(
        self, err: StubError, request_id: str, accept: str | None, format_param: str | None
    ) -> tuple[str, bytes] | None:
        """``(Content-Type, body)`` of an error as this flavour writes it, or ``None`` for
        Storage's own rendering. Cosmos answers JSON only, at the level
        :func:`~azt_server_stub.formats.negotiation.cosmos_error_format` picks from
        ``Accept``/``$format`` (full metadata unless the client named a level), with
        ``lang`` ``en-us``, the ``RequestID`` line and a CRLF after the JSON, as recorded.

        Example::

            >>> ctype, body = COSMOS.error_payload(errors.table_not_found(), "r1", "*/*", None)
            >>> ctype
            'application/json;odata=fullmetadata'
            >>> body[:52], body[-2:]
            (b'{"odata.error":{"code":"TableNotFound","message":{"l', b'\\r\\n')
        """
        if not self.json_only:
            return None
        fmt = cosmos_error_format(accept, format_param)
        prefix = f"{err.index}:" if err.index else ""
        text = prefix + err.message
        if isinstance(err, GatewayError):
            text += f"\r\nActivityId: {request_id}, {err.tail}"
        message = self.error_message(text, request_id, "")
        inner: dict[str, object] = {
            "code": err.code,
            "message": {"lang": "en-us", "value": message},
        }
        inner.update(err.details)
        ctype = f"application/json;odata={fmt.value}"  # as recorded from Cosmos: no charset
        body = json.dumps({"odata.error": inner}, separators=(",", ":")).encode() + b"\r\n"
        return ctype, body

    def patch_refused(self) -> StubError:
        """The answer to a ``PATCH`` where the flavour does not merge with it: Cosmos's
        ``400 InvalidInput`` "One of the input values is invalid." from its gateway (the
        recorded answer; ``POST`` with ``X-HTTP-Method: MERGE`` is how Cosmos merges).

        Example::

            >>> err = COSMOS.patch_refused()
            >>> err.status, err.code, err.message
            (400, 'InvalidInput', 'One of the input values is invalid.')
        """
        return GatewayError(400, "InvalidInput", "One of the input values is invalid.")

    # -- request checks ------------------------------------------------------------------------

    def check(self, request: web.Request, body: bytes | None) -> Kind | None:
        """Refuse ``request`` if the flavour lacks what it asks for or it breaks the
        flavour's limits (``body``: the request body when it matters, else ``None``);
        return the kind of resource it addresses (None for the service and ACLs).

        Every body that carries an entity is checked, whatever the verb: an insert
        (``POST`` to the table), an update, merge or upsert (``PUT``, ``MERGE``, ``POST``
        with ``X-HTTP-Method``, on the entity's address) and each part of a change set.

        Example::

            COSMOS.check(request, await request.read())
        """
        host, raw_path, _ = split_target(request.raw_path)
        services = request.app.get(SERVICES_KEY)
        product_style = True if services is None else services.product_style_urls
        addr = split_account(host or request.host, raw_path, product_style=product_style)
        if addr.secondary and not self.secondary:
            raise StubError(
                400,
                "InvalidUri",
                f"{self.service} has no secondary endpoint ('-secondary' addresses).",
            )
        if request.method.upper() == "OPTIONS":
            self._require("CORS preflight")
        resource = parse_resource(addr.resource)
        comp = query_of(request).get("comp")
        if resource.kind is Kind.SERVICE:
            self._require("service stats" if comp == "stats" else "service properties")
            return None
        if comp == "acl" and resource.kind is Kind.COLLECTION and resource.bare:
            self._require("table ACL")
            return None
        if not self.patch_merges and _effective_verb(request) == "PATCH":
            raise self.patch_refused()
        if self.json_only and _is_atom(request.headers, query_of(request).get("$format")):
            # the gateway's recorded 415 (docs/cosmos.md, REC 6), for what it cannot read
            raise GatewayError(415, "MediaTypeNotSupported", MEDIA_TYPES_REFUSED)
        if resource.keys is not None:
            self.check_key("RowKey", resource.keys[1])
        if body is None:
            return resource.kind
        if resource.kind is Kind.BATCH:
            self._check_batch(body, request.headers.get("Content-Type"), request.get(REQUEST_ID))
        elif resource.kind is Kind.COLLECTION or resource.kind is Kind.ENTITY:
            self.check_entity_body(body)
            if resource.kind is Kind.COLLECTION and request.method.upper() == "POST":
                self.check_insert_keys(body)
        return resource.kind

    def finish(self, request: web.Request, kind: Kind | None, response: web.StreamResponse) -> None:
        """Give a successful answer the headers the flavour adds: Cosmos's
        ``Content-Type: application/json`` on every ``204``, its JSON content types
        without Storage's ``;streaming=true;charset=utf-8`` and the new table's ETag on
        Create Table (all as recorded; ``docs/cosmos.md``).

        Example::

            COSMOS.finish(request, Kind.TABLES, response)
        """
        status = response.status
        if status == 204 and self.no_content_type is not None:
            response.headers.setdefault("Content-Type", self.no_content_type)
        if self.bare_json_type:
            ctype = response.headers.get("Content-Type", "")
            if ctype.endswith(_JSON_PARAMETERS) and ctype.startswith("application/json;"):
                response.headers["Content-Type"] = ctype[: -len(_JSON_PARAMETERS)]
        if (
            self.table_etag
            and kind is Kind.TABLES
            and status in (201, 204)
            and request.method.upper() == "POST"
        ):
            now = ticks_from_datetime(_dt.datetime.now(_dt.UTC))
            response.headers.setdefault("ETag", etag_for(now))

    def needs_body(self, request: web.Request) -> bool:
        """Whether :meth:`check` must see the body (inserts, updates and batches).

        Example::

            body = await request.read() if COSMOS.needs_body(request) else None
        """
        if not (
            self.max_row_key_bytes is not None
            or self.reserved_names
            or self.string_body_keys
            or self.empty_keys_refused
        ):
            return self.max_batch_bytes is not None and request.method.upper() == "POST"
        return request.method.upper() in ("POST", "PUT", "MERGE", "PATCH") and request.can_read_body

    def _require(self, operation: str) -> None:
        if operation in self.unsupported:
            raise self.not_supported(operation)

    def check_key(self, which: str, value: str) -> None:
        """Refuse a RowKey over the flavour's byte limit (``400 KeyValueTooLarge``; the
        code Cosmos uses is not documented).

        Example::

            >>> COSMOS.check_key("RowKey", "r" * 256)
            Traceback (most recent call last):
            ...
            azt_server_stub.errors.StubError: 400 KeyValueTooLarge: ...
        """
        cap = self.max_row_key_bytes
        if which != "RowKey" or cap is None or len(value) * 4 <= cap:
            return
        if len(value.encode("utf-8", "surrogatepass")) > cap:
            raise StubError(
                400,
                "KeyValueTooLarge",
                f"The RowKey exceeds {cap} bytes, the limit of {self.service}.",
            )

    def check_entity_body(self, body: bytes) -> None:
        """Check a JSON entity body's keys, RowKey and property names (other formats and
        malformed bodies are left to the handlers).

        Example::

            >>> COSMOS.check_entity_body(b'{"PartitionKey": "p", "RowKey": "r", "id": 1}')
            Traceback (most recent call last):
            ...
            azt_server_stub.errors.StubError: 400 PropertyNameInvalid: ...
            >>> COSMOS.check_entity_body(b'{"PartitionKey": "p", "RowKey": "r", "etag": 1}')
            >>> COSMOS.check_entity_body(
            ...     b'{"PartitionKey": "AAE=", "PartitionKey@odata.type": "Edm.Binary"}')
            Traceback (most recent call last):
            ...
            azt_server_stub.errors.StubError: 400 InvalidInput: ...
        """
        try:
            entity = json.loads(body)
        except ValueError:
            return
        if not isinstance(entity, dict):
            return
        if self.string_body_keys:
            _check_string_keys(entity)
        row_key = entity.get("RowKey")
        if isinstance(row_key, str):
            self.check_key("RowKey", row_key)
        reserved = self.reserved_names
        if not reserved:
            return
        accepted = self.accepted_names
        shadowed = self.shadowed(entity) if self.shadowed_names else ()
        for name in entity:
            if not isinstance(name, str):
                continue
            base = name.split("@", 1)[0]
            if base.lower() in reserved and base not in accepted and base not in shadowed:
                raise StubError(
                    400,
                    "PropertyNameInvalid",
                    f"The property name '{name}' is reserved by {self.service}.",
                )

    def shadowed(self, members: dict[str, Any]) -> frozenset[str]:
        """The names of ``shadowed_names`` that ``members`` (a JSON entity's members, in
        body order) carries after the name that shadows them.

        Evidence (Cosmos): ``test_table_entity_cosmos.test_etag_duplicate_field`` (2021, and
        its 2022 and async twins): an insert and a merge carrying ``etag`` then ``Etag``
        answer ``201`` / ``204``; reads return ``etag`` alone. Whether Cosmos drops ``Etag``
        because names compare case-insensitively (the first one winning) or because
        ``Etag`` itself is dropped, no recording tells apart: only the recorded order and
        casings are taken (docs/cosmos.md, REC 16).

        Example::

            >>> sorted(COSMOS.shadowed({"etag": "a", "Etag": "b"}))
            ['Etag']
            >>> sorted(COSMOS.shadowed({"Etag": "b", "etag": "a"}))
            []
        """
        found: set[str] = set()
        for kept, dropped in self.shadowed_names:
            if kept in members and dropped in members:
                names = list(members)
                if names.index(kept) < names.index(dropped):
                    found.add(dropped)
        return frozenset(found)

    def drop_shadowed(self, members: dict[str, Any]) -> dict[str, Any]:
        """``members`` without the names :meth:`shadowed` finds, nor their annotations
        (the same dict when there are none).

        Example::

            >>> COSMOS.drop_shadowed({"etag": "a", "Etag": "b", "Etag@odata.type": "Edm.String"})
            {'etag': 'a'}
            >>> STORAGE.drop_shadowed({"etag": "a", "Etag": "b"})
            {'etag': 'a', 'Etag': 'b'}
        """
        if not self.shadowed_names:
            return members
        gone = self.shadowed(members)
        if not gone:
            return members
        return {k: v for k, v in members.items() if k.split("@", 1)[0] not in gone}

    def check_insert_keys(self, body: bytes) -> None:
        """Refuse an insert body with an empty PartitionKey or RowKey where the flavour
        does: Cosmos's gateway answers ``400 PropertiesNeedValue`` "PartitionKey/RowKey
        cannot be empty" (recorded: ``test_table_entity_cosmos.test_insert_entity_empty_string_pk``,
        interaction 1, 2020); Storage takes empty keys. Malformed bodies are left to the
        handlers.

        Example::

            >>> COSMOS.check_insert_keys(b'{"PartitionKey": "", "RowKey": "rk"}')
            Traceback (most recent call last):
            ...
            azt_server_stub.flavors.GatewayError: 400 PropertiesNeedValue: ...
            >>> STORAGE.check_insert_keys(b'{"PartitionKey": "", "RowKey": ""}')
        """
        if not self.empty_keys_refused:
            return
        try:
            entity = json.loads(body)
        except ValueError:
            return
        if isinstance(entity, dict) and "" in (entity.get("PartitionKey"), entity.get("RowKey")):
            raise GatewayError(400, "PropertiesNeedValue", "PartitionKey/RowKey cannot be empty")

    def invalid_input(self, activity_id: str | None) -> StubError:
        """Cosmos's own ``400 InvalidInput`` (its message names the activity, as recorded).

        Example::

            >>> COSMOS.invalid_input("a1").message.splitlines()[1]
            'ActivityId: a1, documentdb-dotnet-sdk/2.11.0 Host/64-bit MicrosoftWindowsNT/6.2.9200.0'
        """
        return StubError(
            400,
            "InvalidInput",
            "One of the input values is invalid.\r\n"
            f"ActivityId: {activity_id or new_guid()}, documentdb-dotnet-sdk/2.11.0 "
            "Host/64-bit MicrosoftWindowsNT/6.2.9200.0",
        )

    def _check_batch(self, body: bytes, content_type: str | None, request_id: str | None) -> None:
        cap = self.max_batch_bytes
        if cap is not None and len(body) > cap:
            raise StubError(
                413,
                "RequestBodyTooLarge",
                f"The batch is larger than {cap} bytes, the limit of {self.service}.",
            )
        try:
            batch = parse_batch(body, content_type)
        except StubError:
            return  # the batch handler answers a malformed batch
        if self.refuses_patch_in_batch and any(p.method == "PATCH" for p in batch.parts):
            # recorded: the whole batch refused, a top-level JSON error, no multipart
            raise self.invalid_input(request_id)
        for index, part in enumerate(batch.parts):
            try:
                _, path = _split_part_target(part.target)
                resource = parse_resource(unquote(path.rsplit("/", 1)[-1]))
                if resource.keys is not None:
                    self.check_key("RowKey", resource.keys[1])
                if part.body:
                    self.check_entity_body(part.body)
                    if part.method == "POST" and resource.keys is None:
                        self.check_insert_keys(part.body)
            except StubError as err:
                if err.status == 400 and err.code in _PART_REFUSALS:
                    raise err.at(index) from None
                continue  # addressing errors are the batch handler's to answer


#: The refusals of :meth:`StubFlavor.check_entity_body` a change set answers at the part.
_PART_REFUSALS = ("KeyValueTooLarge", "PropertyNameInvalid", "InvalidInput", "PropertiesNeedValue")


def _check_string_keys(entity: dict[str, object]) -> None:
    """Refuse an entity body whose ``PartitionKey`` or ``RowKey`` is given as anything but a
    string typed ``Edm.String`` (``400 InvalidInput``). A ``null`` key is left to the
    handlers (an insert reads it as missing).

    Evidence: azure-data-tables' own live tests against the real Cosmos DB Table API
    (``test_encoder_cosmos.test_encoder_update_entity_complex_keys`` and
    ``test_encoder_upsert_entity_complex_keys``) expect ``InvalidInput`` when an update or
    upsert body carries keys typed ``Edm.DateTime``/``Edm.Guid`` or ``Edm.Binary``, where
    their Storage twins (``test_encoder``) expect the same bodies to succeed.

    Example::

        >>> _check_string_keys({"PartitionKey": "p", "RowKey@odata.type": "Edm.String"})
        >>> _check_string_keys({"RowKey": 5})
        Traceback (most recent call last):
        ...
        azt_server_stub.errors.StubError: 400 InvalidInput: ...
    """
    for name in ("PartitionKey", "RowKey"):
        value = entity.get(name)
        annotation = entity.get(name + "@odata.type")
        if (value is not None and not isinstance(value, str)) or annotation not in (
            None,
            "Edm.String",
        ):
            raise errors.invalid_input()


#: What Azure Table storage adds after a JSON answer's ``odata=<level>`` (Cosmos does not).
_JSON_PARAMETERS = ";streaming=true;charset=utf-8"


def _effective_verb(request: web.Request) -> str:
    """The request's verb after ``X-HTTP-Method`` tunnelling (a malformed tunnel: the
    verb as sent, the dispatcher refuses it)."""
    try:
        return tunnelled_method(request.method.upper(), request.headers)
    except StubError:
        return request.method.upper()


def _split_part_target(target: str) -> tuple[str | None, str]:
    host, path, _ = split_target(target)
    return host, path


def _is_atom(headers: Mapping[str, str], fmt: str | None) -> bool:
    ctype = headers.get("Content-Type", "").lower()
    accept = headers.get("Accept", "").lower()
    if "atom" in ctype or (fmt or "").lower() == "atom":
        return True
    return "atom+xml" in accept and "json" not in accept


STORAGE = StubFlavor("storage", "Azure Table storage")
"""Azure Table storage (and what the stub always was): no extra rules."""

COSMOS = StubFlavor(
    "cosmos",
    "the Azure Cosmos DB Table API",
    unsupported=frozenset(OPERATIONS) - {"AtomPub"},
    json_only=True,
    secondary=False,
    max_row_key_bytes=255,
    reserved_names=frozenset({"id", "rid", "etag", "resourceid"}),
    accepted_names=frozenset({"etag"}),
    shadowed_names=(("etag", "Etag"),),
    max_batch_bytes=2 * 1000 * 1000,
    throttle_status=429,
    error_code_header=False,
    table_naming=COSMOS_TABLE_NAMES,
    key_order=False,
    sorted_updates=False,
    refuses_patch_in_batch=True,
    numbers_batch_parts=True,
    patch_merges=False,
    json_form=COSMOS_FORM,
    select_in_metadata=False,
    no_content_type="application/json",
    table_etag=True,
    cosmos_tokens=True,
    bare_json_type=True,
    version_header=False,
    string_body_keys=True,
    empty_keys_refused=True,
)
"""The Azure Cosmos DB Table API where its documentation says it differs."""

FLAVORS: dict[str, StubFlavor] = {f.name: f for f in (STORAGE, COSMOS)}
"""The flavours by name (``--flavor`` values)."""


def flavor_named(name: str) -> StubFlavor:
    """The flavour called ``name`` (``storage`` or ``cosmos``); ValueError otherwise.

    Example::

        >>> flavor_named("storage") is STORAGE
        True
    """
    try:
        return FLAVORS[name.lower()]
    except KeyError:
        raise ValueError(
            f"unknown flavor {name!r}; choose one of: {', '.join(sorted(FLAVORS))}"
        ) from None


FLAVOR_KEY = web.AppKey("azt.flavor", StubFlavor)


def flavor_of(app: web.Application) -> StubFlavor:
    """The flavour an application serves (Storage when none was installed).

    Example::

        >>> flavor_of(web.Application()) is STORAGE
        True
    """
    last = _LAST_APP
    if last is not None and last[0]() is app:
        return last[1]
    flavor = app.get(FLAVOR_KEY) if isinstance(app, web.Application) else None
    if not isinstance(flavor, StubFlavor):
        return STORAGE
    _remember(app, flavor)
    return flavor


#: The application :func:`flavor_of` answered last (weakly) and its flavour: a server
#: asks for the same application's on every request. :func:`install` forgets it (the
#: only writer of :data:`FLAVOR_KEY`).
_LAST_APP: tuple[weakref.ref[web.Application], StubFlavor] | None = None


def _remember(app: web.Application, flavor: StubFlavor) -> None:
    global _LAST_APP
    _LAST_APP = (weakref.ref(app), flavor)


def _forget() -> None:
    global _LAST_APP
    _LAST_APP = None


def middleware(flavor: StubFlavor) -> Middleware:
    """An aiohttp middleware applying ``flavor``'s request checks before the handler.

    Example::

        app.middlewares.append(middleware(COSMOS))
    """

    @web.middleware
    async def check_flavor(request: web.Request, handler: Handler) -> web.StreamResponse:
        body = await request.read() if flavor.needs_body(request) else None
        kind = flavor.check(request, body)
        response = await handler(request)
        flavor.finish(request, kind, response)
        return response

    return check_flavor


def install(app: web.Application, flavor: StubFlavor) -> None:
    """Serve ``app`` as ``flavor``: remember it (error rendering asks :func:`flavor_of`)
    and add its request checks, if it has any, inside the service middleware.

    Example::

        install(app, COSMOS)
    """
    app[FLAVOR_KEY] = flavor
    _forget()
    if flavor.checks_requests:
        app.middlewares.append(middleware(flavor))
