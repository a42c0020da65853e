"""The implementation of :mod:`azt.legacy`: the StorageClient's account, table client,
``TableServiceEntity``, ``TableServiceContext``, queries and retry policies with .NET names,
over the native unit of work. Nothing here has behaviour of its own beyond choosing which
client (with or without retries) a call goes through.

Example::

    >>> RetryPolicies.retry_exponential(3, timedelta(seconds=2)).to_retry_policy().max_attempts
    4
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any, Generic, TypeVar

import attrs

from azt._core.config import RetryPolicy
from azt._core.connection_string import ConnectionSettings, parse_connection_string
from azt._core.service_client import TableServiceClient
from azt._core.transport import AiohttpTransport
from azt._errors import ValidationError
from azt._orm.entity import Entity
from azt._orm.query import Query
from azt._uow.context import TableContext
from azt._uow.query import ContextQuery
from azt._uow.types import EntityState, MergeOption, SaveChangesOptions, SaveChangesResult

__all__ = [
    "CloudStorageAccount",
    "CloudTableClient",
    "CloudTableQuery",
    "DataServiceQuery",
    "ExponentialRetry",
    "MergeOption",
    "NoRetry",
    "ResultSegment",
    "RetryPolicies",
    "SaveChangesOptions",
    "TableServiceContext",
    "TableServiceEntity",
]

R = TypeVar("R")


def _seconds(value: float | timedelta, name: str) -> float:
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValidationError(f"{name} must be seconds >= 0 or a timedelta, got {value!r}")
    return float(value)


# ============================================================================ retry policies


@attrs.frozen
class ExponentialRetry:
    """``RetryPolicies.RetryExponential``: ``retry_count`` retries with randomized
    exponential back-off, as an :class:`azt.RetryPolicy`. As in the StorageClient, retry
    ``n`` (counted from 0) waits ``min_backoff + (2**n − 1) · delta_backoff · U(0.8, 1.2)``,
    at most ``max_backoff``: by default about 3 s, 33 s and 90 s.

    Example::

        >>> policy = RetryPolicies.retry_exponential(3, timedelta(seconds=2))
        >>> policy.to_retry_policy().max_attempts
        4
    """

    retry_count: int = 3
    delta_backoff: float = 30.0
    min_backoff: float = 3.0
    max_backoff: float = 90.0

    def __attrs_post_init__(self) -> None:
        if (
            isinstance(self.retry_count, bool)
            or not isinstance(self.retry_count, int)
            or self.retry_count < 0
        ):
            raise ValidationError(f"retry_count must be an int >= 0, got {self.retry_count!r}")

    def to_retry_policy(self) -> RetryPolicy:
        """The equivalent :class:`azt.RetryPolicy`.

        Example::

            >>> ExponentialRetry(2, 1.0, 0.5, 4.0).to_retry_policy().maximum
            4.0
        """
        return RetryPolicy(
            max_attempts=self.retry_count + 1,
            base=self.delta_backoff,
            minimum=self.min_backoff,
            maximum=self.max_backoff,
        )


@attrs.frozen
class NoRetry:
    """``RetryPolicies.NoRetry``: every request is sent once.

    Example::

        >>> NoRetry().to_retry_policy().max_attempts
        1
    """

    def to_retry_policy(self) -> RetryPolicy:
        """:meth:`azt.RetryPolicy.no_retries`.

        Example::

            >>> NoRetry().to_retry_policy().max_attempts
            1
        """
        return RetryPolicy.no_retries()


class RetryPolicies:
    """Factories named as in .NET's ``RetryPolicies``.

    Example::

        >>> RetryPolicies.retry_exponential().retry_count
        3
    """

    @staticmethod
    def retry_exponential(
        retry_count: int = 3,
        delta_backoff: float | timedelta = 30.0,
        *,
        min_backoff: float | timedelta = 3.0,
        max_backoff: float | timedelta = 90.0,
    ) -> ExponentialRetry:
        """Exponential back-off (the StorageClient default: 3 retries, 30 s delta,
        3 s .. 90 s).

        Example::

            >>> RetryPolicies.retry_exponential(5, timedelta(seconds=1)).delta_backoff
            1.0
        """
        delta = _seconds(delta_backoff, "delta_backoff")
        low = _seconds(min_backoff, "min_backoff")
        high = _seconds(max_backoff, "max_backoff")
        if low > high:
            raise ValidationError(f"min_backoff ({low}) is greater than max_backoff ({high})")
        return ExponentialRetry(retry_count, delta, low, high)

    @staticmethod
    def no_retry() -> NoRetry:
        """No retries.

        Example::

            >>> RetryPolicies.no_retry().to_retry_policy().max_attempts
            1
        """
        return NoRetry()


# ============================================================================ account, client


class CloudStorageAccount:
    """A storage account from a connection string (``CloudStorageAccount.Parse``).

    Example::

        >>> account = CloudStorageAccount.parse("UseDevelopmentStorage=true")
        >>> account.table_endpoint
        'http://127.0.0.1:10002/devstoreaccount1'
    """

    def __init__(self, connection_string: str, settings: ConnectionSettings) -> None:
        self._connection_string = connection_string
        self._settings = settings

    @classmethod
    def parse(cls, connection_string: str) -> CloudStorageAccount:
        """Parse a connection string; :class:`azt.ConnectionStringError` if it is invalid.

        Example::

            >>> CloudStorageAccount.parse("UseDevelopmentStorage=true").account_name
            'devstoreaccount1'
        """
        return cls(connection_string, parse_connection_string(connection_string))

    @classmethod
    def try_parse(cls, connection_string: str) -> CloudStorageAccount | None:
        """``parse``, or ``None`` when the string is invalid (.NET's ``TryParse``).

        Example::

            >>> CloudStorageAccount.try_parse("AccountName=x") is None
            True
        """
        try:
            return cls.parse(connection_string)
        except ValidationError:
            return None

    @classmethod
    def development_storage_account(cls) -> CloudStorageAccount:
        """The emulator account (``UseDevelopmentStorage=true``).

        Example::

            >>> CloudStorageAccount.development_storage_account().account_name
            'devstoreaccount1'
        """
        return cls.parse("UseDevelopmentStorage=true")

    @property
    def account_name(self) -> str | None:
        """The account name.

        Example::

            >>> CloudStorageAccount.parse("UseDevelopmentStorage=true").account_name
            'devstoreaccount1'
        """
        return self._settings.account_name

    @property
    def table_endpoint(self) -> str:
        """The table service endpoint URL.

        Example::

            url = account.table_endpoint
        """
        return self._settings.endpoint

    def create_cloud_table_client(self) -> CloudTableClient:
        """A :class:`CloudTableClient` for this account.

        Example::

            table_client = account.create_cloud_table_client()
        """
        return CloudTableClient(self._connection_string)


def _check_policy(policy: object) -> ExponentialRetry | NoRetry:
    if not isinstance(policy, ExponentialRetry | NoRetry):
        raise ValidationError(f"retry_policy must come from RetryPolicies, got {policy!r}")
    return policy


class CloudTableClient:
    """Tables of one account and the contexts to work with their entities.

    All requests share one connection pool, opened lazily by the first request (so a client
    can be made anywhere, even outside an event loop, and one never used holds nothing
    open). Each retry policy in use gets one :class:`azt.TableServiceClient` on that pool:
    ``save_changes`` goes through one that never retries. Close the pool with
    ``async with`` or :meth:`aclose`; afterwards every call raises
    :class:`azt.ClientClosedError`.

    Example::

        async with account.create_cloud_table_client() as table_client:
            await table_client.create_table_if_not_exist("Movies")
    """

    def __init__(
        self,
        connection_string: str,
        *,
        retry_policy: ExponentialRetry | NoRetry | None = None,
        **client_options: Any,
    ) -> None:
        self._connection_string = connection_string
        self._options = client_options
        self._transport = AiohttpTransport(
            timeouts=client_options.pop("timeouts", None),
            limits=client_options.pop("limits", None),
        )
        self._clients: dict[ExponentialRetry | NoRetry, TableServiceClient] = {}
        self._retry_policy = (
            ExponentialRetry() if retry_policy is None else _check_policy(retry_policy)
        )
        self._client_for(self._retry_policy)  # a bad connection string fails here

    def _client_for(self, policy: ExponentialRetry | NoRetry) -> TableServiceClient:
        """The service client (on the shared pool) whose requests retry per ``policy``."""
        client = self._clients.get(policy)
        if client is None:
            client = self._clients[policy] = TableServiceClient.from_connection_string(
                self._connection_string,
                retry=policy.to_retry_policy(),
                transport=self._transport,
                **self._options,
            )
        return client

    @property
    def retry_policy(self) -> ExponentialRetry | NoRetry:
        """The retry policy of table calls and of the contexts made afterwards (each
        context takes it when it is made and can be given its own).

        Example::

            table_client.retry_policy = RetryPolicies.retry_exponential(5, 1.0)
        """
        return self._retry_policy

    @retry_policy.setter
    def retry_policy(self, policy: ExponentialRetry | NoRetry) -> None:
        self._retry_policy = _check_policy(policy)

    @property
    def service(self) -> TableServiceClient:
        """The :class:`azt.TableServiceClient` underneath (retrying per ``retry_policy``).

        Example::

            raw = table_client.service.get_table_client("Movies")
        """
        return self._client_for(self._retry_policy)

    async def __aenter__(self) -> CloudTableClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool (idempotent).

        Example::

            await table_client.aclose()
        """
        for client in self._clients.values():
            await client.aclose()
        await self._transport.aclose()

    async def create_table_if_not_exist(self, table_name: str) -> bool:
        """Create the table unless it exists; returns whether it was created
        (``CreateTableIfNotExist``).

        Example::

            created = await table_client.create_table_if_not_exist("Movies")
        """
        client = self.service.get_table_client(table_name)
        return await client.create_table_if_not_exists()

    create_table_if_not_exists = create_table_if_not_exist

    async def create_table(self, table_name: str) -> None:
        """Create the table; :class:`azt.TableAlreadyExistsError` if it exists.

        Example::

            await table_client.create_table("Movies")
        """
        await self.service.create_table(table_name)

    async def delete_table(self, table_name: str) -> None:
        """Delete the table; :class:`azt.TableNotFoundError` if it does not exist.

        Example::

            await table_client.delete_table("Movies")
        """
        await self.service.delete_table(table_name)

    async def delete_table_if_exist(self, table_name: str) -> bool:
        """Delete the table if it exists; returns whether it did (``DeleteTableIfExist``).

        Example::

            deleted = await table_client.delete_table_if_exist("Movies")
        """
        return await self.service.delete_table_if_exists(table_name)

    async def does_table_exist(self, table_name: str) -> bool:
        """Whether the table exists, whatever the case of the name (``DoesTableExist``).

        Example::

            if not await table_client.does_table_exist("Movies"): ...
        """
        # Table names are case-insensitive, a $filter is not: every spelling of the name
        # sorts between its upper- and its lower-case form (A-Z < a-z), so one range query
        # finds it whatever its stored case.
        wanted = table_name.lower()
        names = await self.service.query_tables(
            "TableName ge @low and TableName le @high",
            parameters={"low": table_name.upper(), "high": wanted},
        ).to_list()
        return any(name.lower() == wanted for name in names)

    async def list_tables(self) -> list[str]:
        """Every table name (``ListTables``).

        Example::

            names = await table_client.list_tables()
        """
        return [str(name) for name in await self.service.list_tables().to_list()]

    def get_data_service_context(self) -> TableServiceContext:
        """A new :class:`TableServiceContext` (use one per logical operation).

        Example::

            context = table_client.get_data_service_context()
        """
        return TableServiceContext(self)


# ============================================================================ entities, context


class TableServiceEntity(Entity):
    """Base class of ported entity classes: ``PartitionKey``, ``RowKey`` and ``Timestamp``
    (plus ``ETag``), as .NET's ``TableServiceEntity``. Declare properties as for
    :class:`azt.entity.Entity`.

    Example::

        >>> from azt.entity import Prop, prop
        >>> class Movie(TableServiceEntity):
        ...     rating: Prop[float] = prop(name="Rating", default=0.0)
        >>> Movie("Action", "Cop Out").PartitionKey
        'Action'
    """


class TableServiceContext(TableContext):
    """``TableServiceContext``: the unit of work with .NET method names.

    Default merge option ``PRESERVE_CHANGES``, as the legacy context's. All of
    :class:`azt.context.TableContext` is available too.

    Example::

        context = table_client.get_data_service_context()
        context.attach_to("Movies", Movie("Action", "Cop Out"), "*")
        context.delete_object(existing)
        await context.save_changes_with_retries()
    """

    def __init__(self, table_client: CloudTableClient) -> None:
        super().__init__(table_client.service)
        self._table_client = table_client
        self._retry_policy = table_client.retry_policy

    @property
    def retry_policy(self) -> ExponentialRetry | NoRetry:
        """The retry policy of this context's queries and ``save_changes_with_retries``
        (``TableServiceContext.RetryPolicy``): the table client's when the context was
        made, unless set here.

        Example::

            context.retry_policy = RetryPolicies.retry_exponential(5, timedelta(seconds=1))
        """
        return self._retry_policy

    @retry_policy.setter
    def retry_policy(self, policy: ExponentialRetry | NoRetry) -> None:
        self._idle("change the retry policy")
        self._service = self._table_client._client_for(_check_policy(policy))
        self._retry_policy = policy

    def add_object(self, table_name: str, entity: object) -> None:
        """``AddObject``: see :meth:`TableContext.add`.

        Example::

            context.add_object("Movies", Movie("Action", "Heat"))
        """
        self.add(table_name, entity)

    def attach_to(self, table_name: str, entity: object, etag: str | None = None) -> None:
        """``AttachTo``: see :meth:`TableContext.attach` (``"*"``: unconditional).

        Example::

            context.attach_to("Movies", Movie("Action", "Cop Out"), "*")
        """
        self.attach(table_name, entity, etag)

    def update_object(self, entity: object) -> None:
        """``UpdateObject``: see :meth:`TableContext.update`. As in WCF, an entity marked
        for deletion stays so (``update`` refuses it); an untracked one raises.

        Example::

            context.update_object(movie)
        """
        if self.state_of(entity) is not EntityState.DELETED:
            self.update(entity)

    def delete_object(self, entity: object) -> None:
        """``DeleteObject``: see :meth:`TableContext.delete`.

        Example::

            context.delete_object(movie)
        """
        self.delete(entity)

    async def save_changes(
        self,
        options: SaveChangesOptions = SaveChangesOptions.NONE,
        *,
        max_concurrency: int = 1,
        allow_property_loss: bool = False,
    ) -> SaveChangesResult:
        """``SaveChanges``: each request is sent once (no retries); see
        :meth:`TableContext.save_changes` (``ReplaceOnUpdate`` of an object that does not
        hold every stored property raises :class:`azt.PropertyLossError` unless
        ``allow_property_loss``).

        Example::

            await context.save_changes(SaveChangesOptions.CONTINUE_ON_ERROR)
        """
        return await self._save(
            options,
            max_concurrency,
            self._table_client._client_for(NoRetry()),
            allow_property_loss,
        )

    async def save_changes_with_retries(
        self,
        options: SaveChangesOptions = SaveChangesOptions.NONE,
        *,
        max_concurrency: int = 1,
        allow_property_loss: bool = False,
    ) -> SaveChangesResult:
        """``SaveChangesWithRetries``: each request is retried per the retry policy; as
        :meth:`save_changes` for ``allow_property_loss``.

        Example::

            await context.save_changes_with_retries(SaveChangesOptions.BATCH)
        """
        return await self._save(options, max_concurrency, self._service, allow_property_loss)

    def create_query(self, entity_class: type[R], table_name: str) -> DataServiceQuery[R]:
        """``CreateQuery<T>``: a query whose results this context tracks.

        Example::

            q = context.create_query(Movie, "Movies").where(Movie.PartitionKey == "Action")
        """
        return DataServiceQuery(
            self, table_name, Query(entity_class, self._table(self.service, table_name))
        )

    def as_table_service_query(self, query: ContextQuery[R]) -> CloudTableQuery[R]:
        """``query.AsTableServiceQuery()`` written as a context call.

        Example::

            cloud_query = context.as_table_service_query(context.create_query(Movie, "Movies"))
        """
        if not isinstance(query, ContextQuery) or query.context is not self:
            raise ValidationError("the query must come from this context's create_query()")
        return CloudTableQuery(query)

    def execute(self, query: ContextQuery[R]) -> AsyncIterator[R]:
        """Every result of a query of this context, following continuations
        (``CloudTableQuery.Execute``).

        Example::

            async for movie in context.execute(context.create_query(Movie, "Movies")):
                ...
        """
        return self.as_table_service_query(query).execute()

    async def execute_segmented(
        self, query: ContextQuery[R], continuation_token: str | None = None
    ) -> ResultSegment[R]:
        """One segment of a query's results (``ExecuteSegmented``).

        Example::

            segment = await context.execute_segmented(q, token)
        """
        return await self.as_table_service_query(query).execute_segmented(continuation_token)


class DataServiceQuery(ContextQuery[R]):
    """A context query with ``as_table_service_query()``.

    Example::

        cloud_query = context.create_query(Movie, "Movies").as_table_service_query()
    """

    __slots__ = ()

    def as_table_service_query(self) -> CloudTableQuery[R]:
        """``AsTableServiceQuery()``: a query that follows continuation tokens.

        Example::

            async for movie in q.as_table_service_query().execute(): ...
        """
        return CloudTableQuery(self)


@attrs.frozen
class ResultSegment(Generic[R]):
    """One segment of results (``ResultSegment<T>``): ``results``, the
    ``continuation_token`` to resume with, ``has_more_results``.

    Example::

        segment = await cloud_query.execute_segmented()
        while segment.has_more_results:
            segment = await segment.get_next()
    """

    results: list[R]
    continuation_token: str | None
    query: CloudTableQuery[R] = attrs.field(repr=False)

    @property
    def has_more_results(self) -> bool:
        """Whether a continuation token follows.

        Example::

            while segment.has_more_results:
                segment = await segment.get_next()
        """
        return self.continuation_token is not None

    async def get_next(self) -> ResultSegment[R]:
        """The next segment (``GetNext``); :class:`azt.ValidationError` at the end.

        Example::

            segment = await segment.get_next()
        """
        if self.continuation_token is None:
            raise ValidationError("this is the last segment: there is no next one")
        return await self.query.execute_segmented(self.continuation_token)


class CloudTableQuery(Generic[R]):
    """``CloudTableQuery<T>``: executes a context query, following continuation tokens.

    Example::

        async for movie in context.create_query(Movie, "Movies").as_table_service_query()\\
                .execute():
            ...
    """

    def __init__(self, query: ContextQuery[R]) -> None:
        self._query = query

    def execute(self) -> AsyncIterator[R]:
        """Every result (``Execute()``), tracked by the context, following continuations.

        Example::

            movies = [m async for m in cloud_query.execute()]
        """
        return aiter(self._query)

    async def execute_segmented(self, continuation_token: str | None = None) -> ResultSegment[R]:
        """One segment of results (``BeginExecuteSegmented``/``EndExecuteSegmented``): the
        next page after ``continuation_token``, as the service answered it (a page may be
        empty and still carry a continuation). A point query of a missing entity raises
        :class:`azt.EntityNotFoundError` as :meth:`execute` does.

        Example::

            segment = await cloud_query.execute_segmented()
            token = segment.continuation_token   # store it, resume later
        """
        segment = ResultSegment[R]([], None, self)
        async with contextlib.aclosing(self._query.pages(continuation_token)) as pages:
            async for page in pages:
                segment = ResultSegment(page.items, page.continuation, self)
                if page.continuation is not None:
                    break
                # the last page: let the query finish, so its point-query check runs
        return segment
