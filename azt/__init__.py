"""azt: an async, fully typed client for Azure Table storage.

The client core (``TableServiceClient``, ``TableClient``, credentials, SAS, retries,
errors), the EDM values, declarative entities and queries (``Entity``, ``Query``) and the
unit of work (``TableContext``). ``azt.keys`` (key helpers), ``azt.legacy`` (the .NET-shaped
drop-in) and ``azt.testing`` (pytest fixtures) are submodules.

Example::

    import azt

    async with azt.TableServiceClient.from_connection_string(conn_str) as service:
        table = await service.create_table_if_not_exists("movies")
        await table.insert_entity({"PartitionKey": "Action", "RowKey": "Heat", "Rating": 4.5})
"""

from azt._core.auth import (
    AsyncTokenCredential,
    BearerTokenCredential,
    SasCredential,
    SharedKeyCredential,
    SharedKeyLiteCredential,
)
from azt._core.batch import BatchOperation, TableBatch
from azt._core.batch_writer import BatchWriteError, BatchWriteOutcome, BatchWriter
from azt._core.config import (
    DEFAULT_API_VERSION,
    AmbiguousOutcomePolicy,
    Flavor,
    LocationMode,
    PoolLimits,
    RetryPolicy,
    Timeouts,
    WireFormat,
)
from azt._core.connection_string import (
    ConnectionSettings,
    Endpoint,
    is_cosmos_endpoint,
    parse_connection_string,
)
from azt._core.hooks import EventHooks, RequestHook, RequestInfo, ResponseHook, ResponseInfo
from azt._core.pagination import AsyncPager, ContinuationToken, Page
from azt._core.queries import format_filter
from azt._core.results import (
    AccessPolicies,
    ResponseMetadata,
    TableItem,
    UpdateMode,
    WriteResult,
)
from azt._core.sas import (
    AccountSasPermissions,
    AccountSasResourceTypes,
    TableSasPermissions,
    generate_account_sas,
    generate_table_sas,
)
from azt._core.service_client import TableServiceClient
from azt._core.table_client import TableClient
from azt._core.tracing import TracingOptions
from azt._core.transport import (
    AiohttpTransport,
    HttpRequest,
    HttpResponse,
    MockTransport,
    Transport,
)
from azt._core.wire import WireDecodeError
from azt._core.wire.xml import (
    AccessPolicy,
    CorsRule,
    GeoReplication,
    Logging,
    Metrics,
    RetentionPolicy,
    ServiceProperties,
    ServiceStats,
)
from azt._edm.datetime import EdmDateTime
from azt._edm.entity import EntityMetadata, TableEntity
from azt._edm.types import EdmType, Typed
from azt._errors import (
    AmbiguousOutcomeError,
    AuthenticationError,
    AuthorizationError,
    AztError,
    BadRequestError,
    BatchValidationError,
    ClientClosedError,
    ConflictError,
    ConnectionStringError,
    EntityAlreadyExistsError,
    EntityNotFoundError,
    InternalServerError,
    InvalidInputError,
    InvalidResourceNameError,
    MethodNotAllowedError,
    OperationTimedOutError,
    PreconditionFailedError,
    PropertiesError,
    PropertyLossError,
    RequestTooLargeError,
    ResourceNotFoundError,
    ServerBusyError,
    ServerError,
    ServiceConnectionError,
    ServiceError,
    ServiceNotImplementedError,
    ServiceTimeoutError,
    TableAlreadyExistsError,
    TableBeingDeletedError,
    TableNotFoundError,
    TooManyRequestsError,
    TransactionError,
    TransportError,
    UnsupportedMediaTypeError,
    UnsupportedOperationError,
    ValidationError,
    register_error_code,
)
from azt._orm.columns import Int64, Prop, entity_info, partition_key, prop, row_key
from azt._orm.dynamic import DynamicEntity, Resolver
from azt._orm.entity import Entity, EntityBase
from azt._orm.entity_table import EntityTable
from azt._orm.pages import QueryPage
from azt._orm.planner import FanOut, PlanKind, QueryPlan
from azt._orm.query import MultipleResultsError, Query, QueryDeleteError
from azt._orm.values import Converter, register_converter
from azt._uow.context import TableContext
from azt._uow.types import (
    ContextBusyError,
    EntityState,
    IdentityConflictError,
    MergeOption,
    OperationResult,
    SaveChangesError,
    SaveChangesOptions,
    SaveChangesResult,
    TrackingError,
)

#: The installed version of azt, e.g. ``"0.1.0"``. Written only here: the build
#: (hatchling's ``[tool.hatch.version]``) reads the package metadata's version from this line.
__version__ = "0.1.0"

__all__ = [
    "DEFAULT_API_VERSION",
    "AccessPolicies",
    "AccessPolicy",
    "AccountSasPermissions",
    "AccountSasResourceTypes",
    "AiohttpTransport",
    "AmbiguousOutcomeError",
    "AmbiguousOutcomePolicy",
    "AsyncPager",
    "AsyncTokenCredential",
    "AuthenticationError",
    "AuthorizationError",
    "AztError",
    "BadRequestError",
    "BatchOperation",
    "BatchValidationError",
    "BatchWriteError",
    "BatchWriteOutcome",
    "BatchWriter",
    "BearerTokenCredential",
    "ClientClosedError",
    "ConflictError",
    "ConnectionSettings",
    "ConnectionStringError",
    "ContextBusyError",
    "ContinuationToken",
    "Converter",
    "CorsRule",
    "DynamicEntity",
    "EdmDateTime",
    "EdmType",
    "Endpoint",
    "Entity",
    "EntityAlreadyExistsError",
    "EntityBase",
    "EntityMetadata",
    "EntityNotFoundError",
    "EntityState",
    "EntityTable",
    "EventHooks",
    "FanOut",
    "Flavor",
    "GeoReplication",
    "HttpRequest",
    "HttpResponse",
    "IdentityConflictError",
    "Int64",
    "InternalServerError",
    "InvalidInputError",
    "InvalidResourceNameError",
    "LocationMode",
    "Logging",
    "MergeOption",
    "MethodNotAllowedError",
    "Metrics",
    "MockTransport",
    "MultipleResultsError",
    "OperationResult",
    "OperationTimedOutError",
    "Page",
    "PlanKind",
    "PoolLimits",
    "PreconditionFailedError",
    "Prop",
    "PropertiesError",
    "PropertyLossError",
    "Query",
    "QueryDeleteError",
    "QueryPage",
    "QueryPlan",
    "RequestHook",
    "RequestInfo",
    "RequestTooLargeError",
    "Resolver",
    "ResourceNotFoundError",
    "ResponseHook",
    "ResponseInfo",
    "ResponseMetadata",
    "RetentionPolicy",
    "RetryPolicy",
    "SasCredential",
    "SaveChangesError",
    "SaveChangesOptions",
    "SaveChangesResult",
    "ServerBusyError",
    "ServerError",
    "ServiceConnectionError",
    "ServiceError",
    "ServiceNotImplementedError",
    "ServiceProperties",
    "ServiceStats",
    "ServiceTimeoutError",
    "SharedKeyCredential",
    "SharedKeyLiteCredential",
    "TableAlreadyExistsError",
    "TableBatch",
    "TableBeingDeletedError",
    "TableClient",
    "TableContext",
    "TableEntity",
    "TableItem",
    "TableNotFoundError",
    "TableSasPermissions",
    "TableServiceClient",
    "Timeouts",
    "TooManyRequestsError",
    "TracingOptions",
    "TrackingError",
    "TransactionError",
    "Transport",
    "TransportError",
    "Typed",
    "UnsupportedMediaTypeError",
    "UnsupportedOperationError",
    "UpdateMode",
    "ValidationError",
    "WireDecodeError",
    "WireFormat",
    "WriteResult",
    "entity_info",
    "format_filter",
    "generate_account_sas",
    "generate_table_sas",
    "is_cosmos_endpoint",
    "parse_connection_string",
    "partition_key",
    "prop",
    "register_converter",
    "register_error_code",
    "row_key",
]
