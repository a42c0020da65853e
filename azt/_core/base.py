"""What both clients share: :class:`ClientCore` (pipelines, OData headers, where reads go,
the ambiguous-outcome policy), :class:`ClientBase` (``async with``, ``with_options`` and the
common properties), table creation and deletion, and the checks of caller arguments."""

from __future__ import annotations

import copy
import enum
import functools
import logging
import random
import re
from collections.abc import Awaitable, Callable, Mapping
from types import ModuleType
from typing import Any, Literal, Protocol, Self, TypeAlias, TypeVar, cast

from azt._core.auth import (
    SasCredential,
    SharedKeyCredential,
    SharedKeyLiteCredential,
    resolve_credential,
)
from azt._core.config import (
    ATOM_API_VERSION,
    AmbiguousOutcomePolicy,
    Flavor,
    LocationMode,
    PoolLimits,
    RetryPolicy,
    Timeouts,
    WireFormat,
    validate_server_timeout,
)
from azt._core.connection_string import Endpoint, is_cosmos_endpoint, parse_connection_string
from azt._core.hooks import EventHooks, EventHooksArg
from azt._core.pipeline import Pipeline
from azt._core.results import WriteResult, resolved, timestamp_from_etag, written
from azt._core.retry import Sleep, is_retryable
from azt._core.tracing import Tracing, TracingOptions
from azt._core.transport import AiohttpTransport, HttpResponse, Transport
from azt._core.wire import atom as wire_atom
from azt._core.wire import json as wire_json
from azt._core.wire import urls
from azt._core.wire.writers import encode_valid
from azt._edm.datetime import EdmDateTime
from azt._edm.entity import TableEntity
from azt._edm.types import Typed
from azt._edm.validation import STORAGE_LIMITS, ServiceLimits, validate_entity
from azt._errors import (
    AmbiguousOutcomeError,
    ClientClosedError,
    ResourceKind,
    ServiceError,
    TableAlreadyExistsError,
    TableNotFoundError,
    TransportError,
    ValidationError,
)

logger = logging.getLogger("azt")

_TABLE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]{2,62}$")
# The Cosmos DB Table API's rule (as azure-data-tables checks it): 1-255 characters, none
# of / \ # ?, and no trailing space.
_COSMOS_TABLE_NAME = re.compile(r"^[^/\\#?]{0,254}[^ /\\#?]$")
_API_VERSION = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_JSON_CONTENT_TYPE = "application/json"
_ATOM_CONTENT_TYPE = "application/atom+xml"
XML_CONTENT_TYPE = "application/xml"


# --- argument checks ----------------------------------------------------------------------


def validate_table_name(name: str, flavor: Flavor = Flavor.STORAGE) -> str:
    """Check a table name (3-63 letters/digits, starting with a letter; not ``Tables``).

    With ``Flavor.COSMOS`` the Cosmos DB Table API's rule applies instead: 1-255
    characters, none of ``/ \\ # ?``, no trailing space.

    Example::

        >>> validate_table_name("movies")
        'movies'
        >>> validate_table_name("1abc")
        Traceback (most recent call last):
        ...
        azt._errors.ValidationError: invalid table name '1abc': ...
    """
    if not isinstance(name, str):
        raise ValidationError(f"a table name must be a str, got {type(name).__name__}")
    if flavor is Flavor.COSMOS:
        if not _COSMOS_TABLE_NAME.match(name):
            raise ValidationError(
                f"invalid Cosmos DB table name {name!r}: 1-255 characters, none of "
                "'/', '\\', '#', '?', and no trailing space"
            )
        if name.lower() == "tables":
            raise ValidationError("'tables' is a reserved table name")
        return name
    if not _TABLE_NAME.match(name):
        raise ValidationError(
            f"invalid table name {name!r}: 3-63 letters and digits, starting with a letter"
        )
    if name.lower() == "tables":
        raise ValidationError("'tables' is a reserved table name")
    return name


# --- entity objects -----------------------------------------------------------------------

E_co = TypeVar("E_co", covariant=True)


class EntityObject(Protocol):
    """An object the clients take wherever they take an entity mapping: declarative
    entities (``azt.Entity``) and ``azt.DynamicEntity`` implement it. The client core
    asks it for the entity to send and hands it the outcome of a successful write; it
    never needs to know the object's class (the ORM sits above the client core). A class
    may also have ``__azt_encoded__``: the entity, its body and more in one call (see
    :func:`encoded_source`).

    Example::

        result = await table.insert_entity(Movie("Action", "Heat"))   # an EntityObject
    """

    def __azt_entity__(self) -> tuple[Mapping[str, Any], str | None]:
        """The entity to send (a mapping with ``PartitionKey`` and ``RowKey``, values typed
        as the object declares them) and the ETag the object carries (``None``: unknown).

        Example::

            entity, etag = movie.__azt_entity__()
        """
        ...

    def __azt_written__(self, etag: str | None, timestamp: EdmDateTime | None) -> None:
        """Take the new ETag and ``Timestamp`` after a successful write (``None`` when
        the answer carried none: an ambiguous write judged done).

        Example::

            movie.__azt_written__('W/"datetime\'2026-01-02T03%3A04%3A05Z\'"', None)
        """
        ...


class EntityFactory(Protocol[E_co]):
    """A class whose instances ``get_entity(..., entity_class=...)`` returns: declarative
    entity classes and ``azt.DynamicEntity``.

    Example::

        movie = await table.get_entity("Action", "Heat", entity_class=Movie)
    """

    def __azt_decode__(self, entity: TableEntity, select: frozenset[str] | None, /) -> E_co:
        """An instance built from a read entity (``select``: the projection read, by wire
        name, or ``None`` for everything).

        Example::

            movie = Movie.__azt_decode__(table_entity, None)
        """
        ...


#: What the write methods take: an entity mapping or an :class:`EntityObject`.
EntityArg: TypeAlias = "Mapping[str, Any] | EntityObject"


def entity_source(entity: object) -> tuple[Any, EntityObject | None, str | None]:
    """``(what to send, the object to write the outcome back to, the object's ETag)``: an
    :class:`EntityObject` gives its entity; anything else is passed on as is (and checked
    by :func:`check_entity`)."""
    hook = getattr(type(entity), "__azt_entity__", None)
    if hook is None:
        return entity, None, None
    data, etag = hook(entity)
    return data, cast(EntityObject, entity), etag


#: What :func:`encoded_source` gives: the entity to send, the object to write the outcome
#: back to, its ETag, the entity's JSON body checked against Azure Table storage's limits
#: (``None``: check and encode it as usual), and whether companions may come with it.
EncodedSource: TypeAlias = "tuple[Any, EntityObject | None, str | None, bytes | None, bool]"


def encoded_source(entity: object) -> EncodedSource:
    """What :func:`entity_source` gives, plus the entity's body as a JSON client of Azure
    Table storage sends it, checked against the service's limits and encoded in one pass
    (``None``: not sure; check and encode it as usual, which raises the precise error),
    and whether a write of it may carry companion operations (``False`` for a mapping, and
    for an object whose class says that its writes carry none). An entity object whose
    class has the optional hook ``__azt_encoded__`` gives all five in one call (or
    ``None``: then ``__azt_entity__`` is asked); a plain ``dict`` (or the ``TableEntity``
    an object gives) goes through the per-shape writers (:func:`encode_valid`).

    Example::

        >>> data, obj, etag, body, more = encoded_source({"PartitionKey": "p", "RowKey": "r"})
        >>> body, more
        (b'{"PartitionKey":"p","RowKey":"r"}', False)
    """
    te = type(entity)
    if te is not dict and te is not TableEntity:
        # (type's own lookup: an entity class's metaclass has a slower one of its own)
        try:
            hook = type.__getattribute__(te, "__azt_encoded__")
        except AttributeError:
            pass
        else:
            found: EncodedSource | None = hook(entity)
            if found is not None:
                return found
    data, obj, etag = entity_source(entity)
    return data, obj, etag, encode_valid(data), obj is not None


def write_back(obj: EntityObject | None, etag: str | None) -> None:
    """Hand a successful write's ETag (and the Timestamp it carries) to ``obj``."""
    if obj is not None:
        obj.__azt_written__(etag, timestamp_from_etag(etag))


def check_entity(
    entity: Mapping[str, Any], limits: ServiceLimits = STORAGE_LIMITS
) -> tuple[str, str]:
    """Check ``entity`` against the service limits (and ``limits``, the flavour's own);
    return its (valid) PartitionKey and RowKey, so callers need not check the keys again."""
    if not isinstance(entity, Mapping):
        raise ValidationError(
            "an entity must be a mapping or an entity object (azt.Entity, "
            f"azt.DynamicEntity), got {type(entity).__name__}"
        )
    validate_entity(entity, limits=limits)
    return plain_value(entity["PartitionKey"]), plain_value(entity["RowKey"])


def check_etag(etag: str) -> str:
    """Check an ``If-Match`` value: ``"*"`` or an ETag string."""
    if not isinstance(etag, str) or not etag:
        raise ValidationError(f"etag must be '*' or an ETag string, got {etag!r}")
    return etag


def plain_value(value: Any) -> Any:
    """The Python value inside a :class:`~azt.edm.Typed` (any other value as is)."""
    return value.value if isinstance(value, Typed) else value


# --- shared client state ------------------------------------------------------------------


class ClientCore:
    """What a service client and its table clients share: pipeline, format, policies.
    Built from the clients' constructor arguments (see :class:`TableServiceClient`)."""

    def __init__(
        self,
        endpoint: str,
        credential: object,
        *,
        secondary_endpoint: str | None,
        wire_format: WireFormat,
        api_version: str,
        retry: RetryPolicy | None,
        timeouts: Timeouts | None,
        limits: PoolLimits | None,
        ambiguous_outcome: AmbiguousOutcomePolicy,
        transport: Transport | None,
        sleep: Sleep | None,
        uniform: Callable[[float, float], float] | None,
        user_agent: str | None,
        server_timeout: int | None,
        location_mode: LocationMode,
        event_hooks: EventHooksArg = None,
        tracing: TracingOptions | None = None,
        flavor: Flavor | None = None,
    ) -> None:
        if not isinstance(endpoint, str):
            raise ValidationError(f"endpoint must be a str URL, got {type(endpoint).__name__}")
        url, _, sas = endpoint.partition("?")
        if credential is None:
            if not sas:
                raise ValidationError(
                    "no credential: pass credential= (key, SAS or token credential) or use "
                    "from_connection_string()"
                )
            credential = sas
        elif sas:
            raise ValidationError(
                "the endpoint carries a SAS token and a credential was also given"
            )
        if flavor is None:
            flavor = Flavor.COSMOS if is_cosmos_endpoint(url) else Flavor.STORAGE
        elif not isinstance(flavor, Flavor):
            raise ValidationError(f"flavor must be a Flavor, got {flavor!r}")
        # A token's scope follows the flavour (the endpoint's, or the one given).
        resolved = resolve_credential(credential, url, cosmos=flavor is Flavor.COSMOS)
        self.endpoint = Endpoint.parse(url)
        self.tracing = Tracing(tracing, url=self.endpoint.url, account=self.endpoint.account_name)
        self.flavor = flavor
        self.limits = flavor.limits
        if wire_format is WireFormat.ATOM:
            flavor.require("WireFormat.ATOM")
        if secondary_endpoint and flavor is Flavor.COSMOS:
            flavor.require("secondary endpoint")
        self.secondary = Endpoint.parse(secondary_endpoint) if secondary_endpoint else None
        self.owns_transport = transport is None
        if transport is None:
            transport = AiohttpTransport(timeouts=timeouts, limits=limits)
        retry = retry or RetryPolicy()
        if not isinstance(wire_format, WireFormat):
            raise ValidationError(f"wire_format must be a WireFormat, got {wire_format!r}")
        if not isinstance(api_version, str) or not _API_VERSION.match(api_version):
            raise ValidationError(f"api_version must look like 2019-02-02, got {api_version!r}")
        if wire_format.is_json and api_version < "2013-08-15":
            raise ValidationError(
                f"JSON payloads need x-ms-version 2013-08-15 or later (got {api_version}); "
                "use WireFormat.ATOM for older versions"
            )
        if not isinstance(ambiguous_outcome, AmbiguousOutcomePolicy):
            raise ValidationError(
                f"ambiguous_outcome must be an AmbiguousOutcomePolicy, got {ambiguous_outcome!r}"
            )
        self.server_timeout = validate_server_timeout(server_timeout)
        self.location_mode = self.check_location_mode(location_mode)
        self.credential = resolved
        self.transport = transport
        self.wire_format = wire_format
        self.ambiguous_outcome = ambiguous_outcome
        # One recipe for both pipelines: the secondary's is built on first use.
        self._new_pipeline = functools.partial(
            Pipeline,
            credential=resolved,
            transport=transport,
            retry=retry,
            api_version=api_version,
            sleep=sleep,
            uniform=uniform or random.uniform,
            user_agent=user_agent,
            event_hooks=EventHooks.coerce(event_hooks),
        )
        self.pipeline = self._new_pipeline(self.endpoint)
        self._secondary_pipeline: Pipeline | None = None
        # Static OData headers, computed once.
        self.is_atom = wire_format is WireFormat.ATOM
        if self.is_atom:
            self.codec: ModuleType = wire_atom
            self.body_type = _ATOM_CONTENT_TYPE
            version = api_version if api_version < "2015-12-11" else ATOM_API_VERSION
        else:
            self.codec = wire_json
            self.body_type = _JSON_CONTENT_TYPE
            version = api_version
        self.odata_read = {
            "Accept": wire_format.accept,
            "DataServiceVersion": "3.0",
            "MaxDataServiceVersion": "3.0;NetFx",
            "x-ms-version": version,
        }
        self.odata_write = dict(self.odata_read)
        self.odata_write["Content-Type"] = self.body_type
        # A minimal-metadata JSON read, used to verify ambiguous writes with full types.
        self.typed_read = dict(self.odata_read)
        if wire_format is WireFormat.JSON_NONE:
            self.typed_read["Accept"] = WireFormat.JSON_MINIMAL.accept
        self.closed = False

    def secondary_pipeline(self) -> Pipeline:
        if self._secondary_pipeline is None:
            secondary = self.secondary or self.endpoint.secondary()
            if secondary is None:
                raise ValidationError(
                    "the secondary endpoint is unknown; pass secondary_endpoint= to the client"
                )
            self._secondary_pipeline = self._new_pipeline(secondary)
        return self._secondary_pipeline

    def write_verb(self, merge: bool, headers: dict[str, str]) -> str:
        """The verb of an entity update or upsert (``merge``: a merge, else a replace),
        adding ``X-HTTP-Method: MERGE`` to ``headers`` where the flavour tunnels merges
        (:attr:`Flavor.tunnels_merge`)."""
        if not merge:
            return "PUT"
        if self.flavor.tunnels_merge:
            headers["X-HTTP-Method"] = "MERGE"
            return "POST"
        return "MERGE"

    def check_open(self) -> None:
        if self.closed or self.transport.closed:
            raise ClientClosedError("the client has been closed; create a new one")

    async def send(
        self,
        method: str,
        path: str,
        *,
        query: str = "",
        headers: Mapping[str, str] | None = None,
        body: bytes | None = None,
        comp: str | None = None,
        resource: ResourceKind | None = None,
        location: Literal["primary", "read", "secondary"] = "primary",
    ) -> HttpResponse:
        """Send through the primary pipeline (``location="primary"``), the secondary one
        (``"secondary"``), or where the location mode sends reads (``"read"``; a 404 on
        the secondary is retried against the primary). Adds ``timeout=`` when set."""
        if self.closed:
            raise ClientClosedError("the client has been closed; create a new one")
        if self.server_timeout is not None:
            extra = f"timeout={self.server_timeout}"
            query = f"{query}&{extra}" if query else extra

        def via(pipeline: Pipeline) -> Awaitable[HttpResponse]:
            return pipeline.send(
                method, path, query=query, headers=headers, body=body, comp=comp, resource=resource
            )

        mode = self.location_mode
        if location == "primary" or (location == "read" and mode is LocationMode.PRIMARY):
            return await via(self.pipeline)
        if location == "secondary":
            return await via(self.secondary_pipeline())
        if mode is LocationMode.PRIMARY_THEN_SECONDARY:
            try:
                return await via(self.pipeline)
            except (ServiceError, TransportError) as exc:
                if not is_retryable(exc):
                    raise
                logger.warning(
                    "%s %s: the primary failed (%s); reading from the secondary",
                    method,
                    path,
                    exc,
                )
            return await via(self.secondary_pipeline())
        try:  # LocationMode.SECONDARY: a 404 there may be data not yet replicated
            return await via(self.secondary_pipeline())
        except ServiceError as exc:
            if exc.status != 404:
                raise
            logger.info(
                "%s %s: 404 %s on the secondary; retrying against the primary",
                method,
                path,
                exc.code,
            )
        return await via(self.pipeline)

    def check_location_mode(self, location_mode: object) -> LocationMode:
        if not isinstance(location_mode, LocationMode):
            raise ValidationError(f"location_mode must be a LocationMode, got {location_mode!r}")
        if location_mode is not LocationMode.PRIMARY:
            self.flavor.require("secondary endpoint")
        if (
            location_mode is not LocationMode.PRIMARY
            and (self.secondary or self.endpoint.secondary()) is None
        ):
            raise ValidationError(
                f"{location_mode} needs a secondary endpoint; pass secondary_endpoint="
            )
        return location_mode

    def view(self) -> ClientCore:
        """A copy sharing pipeline and connections, with its own closed flag and options;
        closing it never closes the borrowed connections."""
        view = copy.copy(self)
        view.owns_transport = False
        view.closed = False
        return view

    async def aclose(self) -> None:
        self.closed = True
        if self.owns_transport:
            await self.transport.aclose()

    # -- ambiguity handling ---------------------------------------------------------------

    def ambiguous(self, operation: str, exc: ServiceError) -> bool:
        """Whether ``exc`` (a conflict-type answer) may stem from our own earlier attempt,
        raising ``AmbiguousOutcomeError`` under the RAISE policy."""
        if not exc.earlier_attempt_may_have_applied:
            return False
        policy = self.ambiguous_outcome
        if policy is AmbiguousOutcomePolicy.RAISE:
            raise AmbiguousOutcomeError(operation, exc, attempts=exc.attempts) from exc
        if policy is AmbiguousOutcomePolicy.REPORT_ERROR:
            return False
        logger.warning(
            "%s: attempt %d met %s %s after an earlier attempt got no answer; "
            "resolving it as the ambiguous-outcome policy says (%s)",
            operation,
            exc.attempts,
            exc.status,
            exc.code,
            policy.value,
        )
        return True


def endpoint_and_credential(
    connection_string: str, use_lite: bool, kwargs: dict[str, Any]
) -> tuple[str, SharedKeyCredential | SasCredential]:
    """The endpoint and credential a connection string names; its secondary endpoint goes
    into ``kwargs`` unless the caller gave one (or asked for the Cosmos DB flavour, which
    has no secondary: the one a path-style string implies is then not used)."""
    settings = parse_connection_string(connection_string)
    if kwargs.get("flavor") is not Flavor.COSMOS:
        kwargs.setdefault("secondary_endpoint", settings.secondary_endpoint)
    if settings.account_key is not None and settings.account_name is not None:
        cls = SharedKeyLiteCredential if use_lite else SharedKeyCredential
        return settings.endpoint, cls(settings.account_name, settings.account_key)
    assert settings.sas_token is not None
    return settings.endpoint, SasCredential(settings.sas_token)


class _Keep(enum.Enum):
    """The default of ``with_options`` arguments: keep the current value (``None`` is a value)."""

    KEEP = "keep"


_KEEP = _Keep.KEEP


class ClientBase:
    """What both clients offer on top of their :class:`ClientCore`: ``async with``,
    :meth:`with_options` and the read-only properties."""

    _core: ClientCore

    async def __aenter__(self) -> Self:
        self._core.check_open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._core.aclose()

    def with_options(
        self,
        *,
        server_timeout: int | _Keep | None = _KEEP,
        location_mode: LocationMode | _Keep = _KEEP,
    ) -> Self:
        """A copy of this client with other per-request options, sharing its connections.

        ``server_timeout`` (seconds, or ``None`` for none) is sent as the ``timeout=``
        query parameter: the service gives up on the request after that long (it allows
        at most 30 s in all) and answers ``500 OperationTimedOut``, which is retried.
        ``location_mode`` chooses where reads go (:class:`azt.LocationMode`). Options not
        given are kept. Closing the copy leaves the original (and its connections) open.

        Example::

            quick = table.with_options(server_timeout=5)
            movie = await quick.get_entity("Action", "Heat")   # GET ...?timeout=5
            replica = table.with_options(location_mode=LocationMode.SECONDARY)
        """
        core = self._core.view()
        if server_timeout is not _KEEP:
            core.server_timeout = validate_server_timeout(server_timeout)
        if location_mode is not _KEEP:
            core.location_mode = core.check_location_mode(location_mode)
        clone = copy.copy(self)
        clone._core = core
        return clone

    @property
    def server_timeout(self) -> int | None:
        """The ``timeout=`` (seconds) sent with every request, or ``None``.

        Example::

            table.with_options(server_timeout=5).server_timeout  # 5
        """
        return self._core.server_timeout

    @property
    def location_mode(self) -> LocationMode:
        """Where this client sends its reads.

        Example::

            table.location_mode  # LocationMode.PRIMARY
        """
        return self._core.location_mode

    @property
    def endpoint(self) -> str:
        """The primary table endpoint URL (no trailing slash).

        Example::

            service.endpoint  # 'http://127.0.0.1:10002/devstoreaccount1'
        """
        return self._core.endpoint.url

    @property
    def account_name(self) -> str | None:
        """The storage account name (from the credential, else the URL).

        Example::

            service.account_name  # 'devstoreaccount1'
        """
        cred = self._core.credential
        if isinstance(cred, SharedKeyCredential):
            return cred.account_name
        return self._core.endpoint.account_name

    @property
    def flavor(self) -> Flavor:
        """The account's service flavour (from the endpoint, or ``flavor=``).

        Example::

            service.flavor  # Flavor.STORAGE; Flavor.COSMOS for *.table.cosmos.azure.com
        """
        return self._core.flavor

    @property
    def wire_format(self) -> WireFormat:
        """The payload format this client speaks.

        Example::

            table.wire_format  # WireFormat.JSON_MINIMAL
        """
        return self._core.wire_format

    @property
    def closed(self) -> bool:
        """True after ``aclose()`` (or after the owning service client was closed).

        Example::

            await table.aclose()
            assert table.closed
        """
        return self._core.closed or self._core.transport.closed


# --- table operations shared by both clients ----------------------------------------------


async def send_create_table(
    core: ClientCore, name: str, *, if_not_exists: bool
) -> WriteResult | None:
    """Create a table: its result, or ``None`` when it existed and ``if_not_exists``."""
    validate_table_name(name, core.flavor)
    headers = dict(core.odata_write)
    headers["Prefer"] = "return-no-content"
    try:
        resp = await core.send(
            "POST",
            "/" + urls.TABLES_PATH,
            headers=headers,
            body=core.codec.encode_table(name),
            resource="table",
        )
    except TableAlreadyExistsError as exc:
        if if_not_exists:
            return None
        if core.ambiguous(f"create_table({name!r})", exc):
            return resolved(exc)
        raise
    return written(resp)


async def send_delete_table(core: ClientCore, name: str, *, if_exists: bool) -> WriteResult | None:
    """Delete a table: its result, or ``None`` when it was missing and ``if_exists``."""
    validate_table_name(name, core.flavor)
    try:
        resp = await core.send(
            "DELETE",
            "/" + urls.table_entity_path(name),
            headers=core.odata_read,
            resource="table",
        )
    except TableNotFoundError as exc:
        if if_exists:
            return None
        if core.ambiguous(f"delete_table({name!r})", exc):
            return resolved(exc, status=204)
        raise
    return written(resp)
