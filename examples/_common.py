"""Shared plumbing of the examples: where to connect, and a table name that is safe to use.

Every example runs against an embedded :class:`azt_server_stub.StubServer` by default, or
against any account when a connection string is given (``--connection-string`` or the
``AZT_CONNECTION_STRING`` environment variable; ``UseDevelopmentStorage=true`` works too).
Against a real account the examples create uniquely named tables and delete them again.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol, TypeVar

from azt import TableClient, TableServiceClient
from azt.entity import Entity
from azt.query import Query

ENV_VAR = "AZT_CONNECTION_STRING"
R = TypeVar("R")

Out = Callable[[str], None]


def parse_args(description: str, argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line every example shares (``--connection-string``, ``--keep``)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument(
        "--connection-string",
        default=None,
        help=f"run against this account instead of an embedded stub (default: ${ENV_VAR})",
    )
    p.add_argument(
        "--keep", action="store_true", help="do not delete the tables the example created"
    )
    return p.parse_args(argv)


@asynccontextmanager
async def service_for(connection_string: str | None, out: Out) -> AsyncIterator[TableServiceClient]:
    """A ready service client: on ``connection_string`` (or ``$AZT_CONNECTION_STRING``), else
    on an embedded stub that lives as long as the ``async with`` block."""
    conn = connection_string or os.environ.get(ENV_VAR) or None
    if conn is not None:
        out("using the account from the connection string")
        async with TableServiceClient.from_connection_string(conn) as service:
            yield service
        return
    from azt_server_stub import StubServer

    async with StubServer() as stub:
        out(f"embedded Table service stub on {stub.endpoint}")
        async with TableServiceClient.from_connection_string(stub.connection_string) as service:
            yield service


def table_name(base: str) -> str:
    """``base`` plus a random suffix, so that runs against a shared account never collide."""
    return f"{base}{secrets.token_hex(4)}"


async def fetch_all(query: Query[R], table: TableClient) -> list[R]:
    """Every result of ``query`` on ``table`` (the query builder follows continuations)."""
    return await query.using(table).to_list()


def printer(stream: Any = None) -> Out:
    """A line printer on ``stream`` (stdout by default) that flushes as it goes."""

    def out(line: str) -> None:
        print(line, file=stream or sys.stdout, flush=True)

    return out


def describe(entity: Entity) -> str:
    """``PartitionKey/RowKey`` of an entity, for readable output."""
    return f"{entity.PartitionKey}/{entity.RowKey}"


class Runner(Protocol):
    """The ``run`` function of an example."""

    def __call__(
        self, service: TableServiceClient, out: Out, *, keep: bool = False
    ) -> Awaitable[object]: ...


def run_example(description: str, body: Runner, argv: Sequence[str] | None) -> int:
    """Parse the shared command line and run ``body(service, out)`` on the chosen account
    (an embedded stub by default); returns the exit status."""
    args = parse_args(description, argv)
    out = printer()

    async def go() -> None:
        async with service_for(args.connection_string, out) as service:
            await body(service, out, keep=args.keep)

    asyncio.run(go())
    return 0


@asynccontextmanager
async def scratch_table(
    service: TableServiceClient, base: str, out: Out, *, keep: bool = False
) -> AsyncIterator[str]:
    """A new table named ``base`` + random suffix, deleted afterwards unless ``keep``."""
    name = table_name(base)
    await service.create_table(name)
    out(f"created table {name}")
    try:
        yield name
    finally:
        if not keep:
            await service.delete_table(name)
