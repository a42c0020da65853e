"""OpenTelemetry tracing: one span per public operation, a child span per HTTP attempt,
W3C ``traceparent`` on every request; nothing at all when tracing is off.

``opentelemetry-api`` is optional (``pip install "azt-tables[otel]"``). Without it, or while no
tracer provider is configured (the API's default proxy / no-op provider), an operation
costs one cheap check (:meth:`Tracing.tracer` returns ``None``) and no span object is made.

Span tree of one operation (kinds per the OpenTelemetry conventions, as the Azure SDKs do):

* the **operation** span (INTERNAL), named ``"{db.operation.name} {table}"``: database
  client attributes (``db.system.name``, ``az.namespace``, ``db.operation.name``,
  ``db.collection.name``, ``db.namespace`` (the account), ``server.address``/``port``,
  ``db.response.status_code``), ``azt.entity_count`` (on success only), ``azt.retry_count``, and
  ``azt.partition_key`` only with ``TracingOptions(trace_partition_key=True)``;
* one **attempt** span (CLIENT) per HTTP attempt, named after the method: HTTP client
  attributes (``http.request.method``, ``url.full`` (redacted), ``server.address``/``port``,
  ``http.response.status_code``, ``http.request.resend_count``, ``error.type``); its context
  travels in the request's ``traceparent`` header (the global text-map propagator).

Errors are recorded on the span (``record_exception``, status ERROR, ``error.type``).

Example::

    >>> TracingOptions().trace_partition_key
    False
    >>> trace_url("http://h/a/t(PartitionKey='alice',RowKey='1')?$filter=Name%20eq%20%27b%27",
    ...           keep_keys=False)
    "http://h/a/t(PartitionKey='REDACTED',RowKey='REDACTED')?$filter=REDACTED"
"""

from __future__ import annotations

import functools
import os
import re
import urllib.parse
from collections.abc import Callable, Coroutine, Mapping
from contextvars import ContextVar, Token
from types import TracebackType
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar, cast

import attrs

from azt._core.logs import REDACTED, redact_url
from azt._core.transport import HttpRequest, HttpResponse
from azt._errors import AztError, ServiceError, ValidationError

try:
    from opentelemetry import context as otel_context
    from opentelemetry import propagate as otel_propagate
    from opentelemetry import trace as otel_trace

    HAVE_OTEL = True
    _NoOp = otel_trace.NoOpTracerProvider
except ImportError:  # the optional extra is not installed
    HAVE_OTEL = False

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

__all__ = [
    "DB_SYSTEM",
    "HAVE_OTEL",
    "Operation",
    "Tracing",
    "TracingOptions",
    "current_operation",
    "trace_url",
    "traced",
    "traced_attempt",
]

TRACER_NAME = "azt"

_ENV_PROVIDER = "OTEL_PYTHON_TRACER_PROVIDER"
_UNKNOWN = object()

DB_SYSTEM = "azure.tables"
"""``db.system.name`` (and the older ``db.system``): the conventions register no value for
Azure Table storage, so azt names it like the registered ``azure.cosmosdb``; the Azure
SDKs' own marker, ``az.namespace = "Microsoft.Tables"``, is set as well."""

AZ_NAMESPACE = "Microsoft.Tables"

# HTTP methods the conventions know; any other (MERGE) is "_OTHER" plus the original.
_KNOWN_METHODS = frozenset(
    {"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"}
)
_KEY_IN_PATH = re.compile(r"((?:PartitionKey|RowKey)=')[^']*(')")
_KEY_IN_QUERY = re.compile(r"(?i)([?&](?:\$filter|%24filter|NextPartitionKey|NextRowKey)=)[^&#]*")


@attrs.frozen
class TracingOptions:
    """How a client traces (OpenTelemetry; needs ``pip install "azt-tables[otel]"``).

    * ``tracer_provider``: an OpenTelemetry ``TracerProvider`` to use; ``None`` (default)
      uses the global one (``opentelemetry.trace.set_tracer_provider``), and while none
      is configured nothing is traced.
    * ``trace_partition_key``: put the PartitionKey on operation spans
      (``azt.partition_key``) and keep key values and ``$filter`` in ``url.full``. Off by
      default: keys can be personal data.
    * ``enabled``: ``False`` turns tracing off for this client whatever the provider.

    Example::

        from opentelemetry.sdk.trace import TracerProvider
        service = TableServiceClient.from_connection_string(
            conn_str, tracing=TracingOptions(tracer_provider=TracerProvider(),
                                             trace_partition_key=True))
    """

    tracer_provider: Any = None
    trace_partition_key: bool = False
    enabled: bool = True

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.trace_partition_key, bool):
            raise ValidationError(
                f"trace_partition_key must be a bool, got {self.trace_partition_key!r}"
            )
        if not isinstance(self.enabled, bool):
            raise ValidationError(f"enabled must be a bool, got {self.enabled!r}")
        provider = self.tracer_provider
        if provider is not None and not callable(getattr(provider, "get_tracer", None)):
            raise ValidationError(
                f"tracer_provider must be an OpenTelemetry TracerProvider, got {provider!r}"
            )


def trace_url(url: str, *, keep_keys: bool) -> str:
    """``url`` as a span shows it: secrets redacted (:func:`azt._core.logs.redact_url`)
    and, unless ``keep_keys``, the key values of an entity path and the ``$filter`` and
    continuation keys of a query too.

    Example::

        >>> trace_url("http://h/a/t()?$top=2&NextPartitionKey=1!8!YQ--", keep_keys=False)
        'http://h/a/t()?$top=2&NextPartitionKey=REDACTED'
    """
    # Guards first: most request URLs need none of the substitutions.
    if "?" in url or "@" in url or ";" in url:
        url = redact_url(url)
    if keep_keys:
        return url
    if "Key='" in url:
        url = _KEY_IN_PATH.sub(_redact_key, url)
    if "?" in url:
        url = _KEY_IN_QUERY.sub(_redact_param, url)
    return url


def _redact_key(match: re.Match[str]) -> str:
    return match.group(1) + REDACTED + match.group(2)


def _redact_param(match: re.Match[str]) -> str:
    return match.group(1) + REDACTED


def server_attributes(url: str) -> dict[str, str | int]:
    """``server.address`` and ``server.port`` (the scheme's default when not given) of
    ``url``.

    Example::

        >>> server_attributes("https://acct.table.core.windows.net/t()")
        {'server.address': 'acct.table.core.windows.net', 'server.port': 443}
    """
    parts = urllib.parse.urlsplit(url)
    return {
        "server.address": parts.hostname or "",
        "server.port": parts.port or (443 if parts.scheme == "https" else 80),
    }


def error_type(exc: BaseException) -> str:
    """``error.type`` of an exception: its class, by its public name for azt's own.

    Example::

        >>> from azt._errors import EntityNotFoundError
        >>> error_type(EntityNotFoundError("gone")), error_type(KeyError("k"))
        ('azt.EntityNotFoundError', 'builtins.KeyError')
    """
    cls = type(exc)
    if isinstance(exc, AztError):
        return "azt." + cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


class Tracing:
    """A client's tracing state: its options and the tracer, decided per operation.

    ``tracer()`` is the one check every operation makes: ``None`` (trace nothing) when
    OpenTelemetry is absent, tracing is disabled, or the global provider is still the
    API's default; otherwise the tracer (cached while the global provider stays the same).
    """

    __slots__ = (
        "_explicit",
        "_hint_unset",
        "_off",
        "_provider",
        "_tracer",
        "attributes",
        "keep_keys",
    )

    def __init__(
        self,
        options: TracingOptions | None,
        *,
        url: str | None = None,
        account: str | None = None,
    ) -> None:
        options = options or TracingOptions()
        if not isinstance(options, TracingOptions):
            raise ValidationError(f"tracing must be a TracingOptions, got {options!r}")
        self.keep_keys = options.trace_partition_key
        self._off = not (HAVE_OTEL and options.enabled)
        # get_tracer_provider() costs over a microsecond while none is set (it looks the
        # environment up each time); the API's module global says "none set" in tens of
        # nanoseconds. It is only a hint: a provider named by the environment is loaded by
        # the first get_tracer_provider(), and should the global ever move, the public
        # call decides.
        self._hint_unset = _ENV_PROVIDER not in os.environ
        self._provider: object = None
        self._tracer: Tracer | None = None
        self._explicit: Tracer | None = None
        if not self._off and options.tracer_provider is not None:
            self._explicit = options.tracer_provider.get_tracer(TRACER_NAME)
            self._off = isinstance(self._explicit, otel_trace.NoOpTracer)
        attributes: dict[str, str | int] = {
            "db.system.name": DB_SYSTEM,
            "db.system": DB_SYSTEM,
            "az.namespace": AZ_NAMESPACE,
        }
        if account:
            attributes["db.namespace"] = account
        if url:
            attributes.update(server_attributes(url))
        self.attributes: Mapping[str, str | int] = attributes

    def tracer(self) -> Tracer | None:
        """The tracer for one operation, or ``None`` when nothing is to be traced."""
        if self._off:
            return None
        if self._explicit is not None:
            return self._explicit
        if self._hint_unset and getattr(otel_trace, "_TRACER_PROVIDER", _UNKNOWN) is None:
            return None
        provider = otel_trace.get_tracer_provider()
        if provider is not self._provider:
            self._provider = provider
            unset = isinstance(provider, otel_trace.ProxyTracerProvider | _NoOp)
            self._tracer = None if unset else provider.get_tracer(TRACER_NAME)
        return self._tracer


_CURRENT: ContextVar[Operation | None] = ContextVar("azt_trace_operation", default=None)

current_operation = _CURRENT.get
"""The traced operation running in this context, or ``None`` (the pipeline's one check)."""


class Operation:
    """One operation span, as a context manager: current (for OpenTelemetry and for the
    pipeline's attempts) between enter and exit; errors leaving it are recorded."""

    __slots__ = (
        "_ctx_token",
        "_var_token",
        "entities",
        "keep_keys",
        "resends",
        "span",
        "status",
        "tracer",
    )

    def __init__(
        self,
        tracing: Tracing,
        tracer: Tracer,
        name: str,
        table: str | None,
        *,
        partition_key: str | None = None,
        entities: int | None = None,
    ) -> None:
        attributes = dict(tracing.attributes)
        attributes["db.operation.name"] = name
        if table:
            attributes["db.collection.name"] = table
        if partition_key is not None and tracing.keep_keys:
            attributes["azt.partition_key"] = partition_key
        self.tracer = tracer
        self.keep_keys = tracing.keep_keys
        self.span: Span = tracer.start_span(
            f"{name} {table}" if table else name,
            kind=otel_trace.SpanKind.INTERNAL,
            attributes=attributes,
        )
        self.entities = entities
        self.status: int | None = None
        self.resends = 0
        self._ctx_token: object = None
        self._var_token: Token[Operation | None] | None = None

    def __enter__(self) -> Operation:
        self._ctx_token = otel_context.attach(otel_trace.set_span_in_context(self.span))
        self._var_token = _CURRENT.set(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        span = self.span
        try:
            if span.is_recording():
                status = self.status
                if isinstance(exc, ServiceError):
                    status = exc.status
                    if exc.code:
                        span.set_attribute("azt.error_code", exc.code)
                if status is not None:
                    span.set_attribute("db.response.status_code", str(status))
                # The count of entities written or read: only an operation that succeeded
                # wrote or read them (a failed get_entity read none, a refused insert wrote
                # none), whether the count was known up front or came from the result.
                if self.entities is not None and exc is None:
                    span.set_attribute("azt.entity_count", self.entities)
                span.set_attribute("azt.retry_count", self.resends)
                if exc is not None:
                    fail(span, exc)
        finally:
            span.end()
            if self._var_token is not None:
                _CURRENT.reset(self._var_token)
            otel_context.detach(self._ctx_token)  # type: ignore[arg-type]


def fail(span: Span, exc: BaseException) -> None:
    """Record ``exc`` on ``span``: the exception event, ``error.type`` and status ERROR."""
    span.record_exception(exc)
    span.set_attribute("error.type", error_type(exc))
    span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, f"{type(exc).__name__}"))


def partition_key_of(value: object) -> str | None:
    """The PartitionKey an operation's first argument names: a key string, an entity
    mapping or object, or a batch; ``None`` when it names none."""
    if isinstance(value, str):
        return value
    to_entity = getattr(value, "__azt_entity__", None)
    if to_entity is not None:
        value = to_entity()[0]
    if isinstance(value, Mapping):
        pk = value.get("PartitionKey")
        pk = getattr(pk, "value", pk)  # a Typed value
        return pk if isinstance(pk, str) else None
    operations = getattr(value, "operations", None)
    if operations:
        pk = getattr(operations[0], "partition_key", None)
        return pk if isinstance(pk, str) else None
    return None


# --- the operation decorator ---------------------------------------------------------------


class _HasTracing(Protocol):
    @property
    def tracing(self) -> Tracing: ...


class _Client(Protocol):
    @property
    def _core(self) -> _HasTracing: ...


P = ParamSpec("P")
R = TypeVar("R")
Method = Callable[P, Coroutine[Any, Any, R]]


def traced(
    name: str,
    *,
    table_arg: str | None = None,
    key_arg: str | None = None,
    entities: int | Callable[[Any], int | None] | None = None,
) -> Callable[[Method[P, R]], Method[P, R]]:
    """Wrap a client's public async method in an operation span named ``name``.

    The table is ``self.table_name``, or the argument ``table_arg`` names (passed first or
    by keyword); the argument ``key_arg`` names gives the PartitionKey
    (:func:`partition_key_of`, only read with ``trace_partition_key``); ``entities`` is
    the entity count, or a function of the result giving it. With tracing off the
    wrapper only asks :meth:`Tracing.tracer` and calls the method.
    """

    def decorate(method: Method[P, R]) -> Method[P, R]:
        @functools.wraps(method)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            client = cast(_Client, args[0])
            tracing = client._core.tracing
            tracer = tracing.tracer()
            if tracer is None:
                return await method(*args, **kwargs)
            table = (
                _argument(args, kwargs, table_arg)
                if table_arg
                else getattr(client, "table_name", None)
            )
            pk = (
                partition_key_of(_argument(args, kwargs, key_arg))
                if key_arg and tracing.keep_keys
                else None
            )
            count = entities if isinstance(entities, int) else None
            with Operation(
                tracing,
                tracer,
                name,
                table if isinstance(table, str) else None,
                partition_key=pk,
                entities=count,
            ) as op:
                result = await method(*args, **kwargs)
                if callable(entities):
                    op.entities = entities(result)
                return result

        return wrapper

    return decorate


def _argument(args: tuple[Any, ...], kwargs: Mapping[str, Any], name: str) -> Any:
    """The method's first argument after ``self``, passed by position or as ``name``."""
    return args[1] if len(args) > 1 else kwargs.get(name)


async def run_traced(
    tracing: Tracing,
    name: str,
    table: str | None,
    call: Callable[[], Coroutine[Any, Any, R]],
    *,
    entities: Callable[[R], int | None] | None = None,
) -> R:
    """``await call()`` inside an operation span (or just that, with tracing off)."""
    tracer = tracing.tracer()
    if tracer is None:
        return await call()
    with Operation(tracing, tracer, name, table) as op:
        result = await call()
        if entities is not None:
            op.entities = entities(result)
        return result


# --- the attempt span ----------------------------------------------------------------------


async def traced_attempt(
    op: Operation,
    request: HttpRequest,
    plain_url: str,
    attempt: int,
    send: Callable[[HttpRequest], Coroutine[Any, Any, HttpResponse]],
) -> HttpResponse:
    """Send one HTTP attempt of ``op`` inside a CLIENT span whose context goes out in the
    request's ``traceparent`` (added after signing: no Table signature covers it)."""
    method = request.method
    attributes = server_attributes(plain_url)
    attributes["url.full"] = trace_url(plain_url, keep_keys=op.keep_keys)
    attributes["az.client_request_id"] = request.headers.get("x-ms-client-request-id", "")
    if method in _KNOWN_METHODS:
        attributes["http.request.method"] = method
    else:
        attributes["http.request.method"] = "_OTHER"
        attributes["http.request.method_original"] = method
    if attempt > 1:
        attributes["http.request.resend_count"] = attempt - 1
        op.resends += 1
    span = op.tracer.start_span(method, kind=otel_trace.SpanKind.CLIENT, attributes=attributes)
    ctx = otel_trace.set_span_in_context(span)
    token = otel_context.attach(ctx)
    try:
        otel_propagate.inject(request.headers, context=ctx)
        try:
            response = await send(request)
        except BaseException as exc:
            if span.is_recording():
                fail(span, exc)
            raise
        status = response.status
        op.status = status
        if span.is_recording():
            span.set_attribute("http.response.status_code", status)
            service_id = response.headers.get("x-ms-request-id")
            if service_id:
                span.set_attribute("az.service_request_id", service_id)
            if status >= 400:
                span.set_attribute("error.type", str(status))
                span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR))
        return response
    finally:
        span.end()
        otel_context.detach(token)
