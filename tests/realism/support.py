"""Running a stub with realism layers configured, and a small signing raw client.

``realism_stub`` starts a :class:`StubServer` whose :class:`StubConfig` carries the fault
injector, throttle and partition layout given (``create_app`` installs them inside the
service middleware: faults, then throttle). The raw client signs SharedKey requests and
returns whatever the stub sent, 5xx included, so tests can look at injected errors byte
for byte.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any
from urllib.parse import quote

import aiohttp
from multidict import CIMultiDictProxy
from yarl import URL

import azt
from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubConfig, StubServer
from azt_server_stub.realism import fault_middleware, throttle_middleware
from azt_server_stub.realism import faults as faults_mod
from azt_server_stub.realism import partitions as partitions_mod
from azt_server_stub.realism import throttle as throttle_mod

JSON_MINIMAL = "application/json;odata=minimalmetadata"


RunningStub = StubServer


@asynccontextmanager
async def realism_stub(
    *,
    faults: faults_mod.FaultInjector | None = None,
    throttle: throttle_mod.Throttle | None = None,
    partitions: partitions_mod.PartitionLayout | None = None,
) -> AsyncIterator[StubServer]:
    """A stub on a free 127.0.0.1 port configured with the given realism layers."""
    config = StubConfig(faults=faults, throttle=throttle, partitions=partitions)
    async with StubServer(config) as stub:
        app = stub._app
        assert app is not None
        # the stub's own wiring installed exactly what was configured
        assert app.get(fault_middleware.FAULTS_KEY) is faults
        assert app.get(throttle_middleware.THROTTLE_KEY) is throttle
        assert app.get(partitions_mod.PARTITIONS_KEY) is partitions
        yield stub


@dataclass
class Answer:
    """What a raw request got back."""

    status: int
    headers: CIMultiDictProxy[str]
    body: bytes

    @property
    def code(self) -> str | None:
        return self.headers.get("x-ms-error-code")

    def json(self) -> Any:
        return json.loads(self.body)


class Raw:
    """Signs (SharedKey, Table flavour) and sends requests to the development account."""

    def __init__(self, session: aiohttp.ClientSession, endpoint: str) -> None:
        self.session = session
        self.endpoint = endpoint

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        body: bytes | str | None = None,
    ) -> Answer:
        """``path``: the encoded resource path after the account (``/t()``)."""
        raw_path = f"/{DEV_ACCOUNT}{path}"
        date = formatdate(usegmt=True)
        hdrs = {"x-ms-date": date, "x-ms-version": "2019-02-02", "Accept": JSON_MINIMAL}
        if headers:
            hdrs.update(headers)
        q = dict(query or {})
        resource = f"/{DEV_ACCOUNT}{raw_path}"
        if "comp" in q:
            resource += f"?comp={q['comp']}"
        sts = "\n".join([method, "", hdrs.get("Content-Type", ""), date, resource])
        mac = hmac.new(base64.b64decode(DEV_KEY), sts.encode(), hashlib.sha256).digest()
        hdrs["Authorization"] = f"SharedKey {DEV_ACCOUNT}:{base64.b64encode(mac).decode()}"
        text = "&".join(f"{quote(k, safe='$')}={quote(v, safe='')}" for k, v in q.items())
        url = URL(self.endpoint + raw_path + (f"?{text}" if text else ""), encoded=True)
        data = body.encode() if isinstance(body, str) else body
        async with self.session.request(
            method, url, headers=hdrs, data=data, skip_auto_headers=("Content-Type",)
        ) as resp:
            return Answer(resp.status, resp.headers, await resp.read())

    async def create_table(self, name: str) -> None:
        answer = await self.request(
            "POST",
            "/Tables",
            headers={"Content-Type": "application/json"},
            body=json.dumps({"TableName": name}),
        )
        assert answer.status == 201, answer

    async def insert(self, table: str, entity: Mapping[str, Any]) -> Answer:
        return await self.request(
            "POST",
            f"/{table}",
            headers={"Content-Type": "application/json", "Prefer": "return-no-content"},
            body=json.dumps(dict(entity)),
        )

    async def upsert(self, table: str, pk: str, rk: str, props: Mapping[str, Any]) -> Answer:
        return await self.request(
            "PUT",
            f"/{table}({entity_predicate(pk, rk)})",
            headers={"Content-Type": "application/json"},
            body=json.dumps(dict(props)),
        )

    async def get(self, table: str, pk: str, rk: str) -> Answer:
        return await self.request("GET", f"/{table}({entity_predicate(pk, rk)})")


def entity_predicate(pk: str, rk: str) -> str:
    """``PartitionKey='..',RowKey='..'`` percent-encoded for a URL path."""

    def lit(v: str) -> str:
        return quote("'" + v.replace("'", "''") + "'", safe="")

    return f"PartitionKey={lit(pk)},RowKey={lit(rk)}"


def batch_body(
    table_url: str, ops: list[tuple[str, str, str, Mapping[str, Any]]]
) -> tuple[str, bytes]:
    """A ``$batch`` body of (method, pk, rk, props) operations; returns (Content-Type, body).

    ``POST`` inserts (keys go into the body); other methods address the entity URL.
    """
    batch, changeset = "batch_realism", "changeset_realism"
    lines = [f"--{batch}", f"Content-Type: multipart/mixed; boundary={changeset}", ""]
    for method, pk, rk, props in ops:
        lines += [
            f"--{changeset}",
            "Content-Type: application/http",
            "Content-Transfer-Encoding: binary",
            "",
        ]
        if method == "POST":
            payload = json.dumps({"PartitionKey": pk, "RowKey": rk, **props})
            lines += [f"POST {table_url} HTTP/1.1"]
        else:
            payload = json.dumps(dict(props))
            lines += [f"{method} {table_url}({entity_predicate(pk, rk)}) HTTP/1.1"]
        lines += ["Content-Type: application/json", "Accept: application/json;odata=nometadata"]
        if method in ("DELETE",):
            lines += ["If-Match: *", "", ""]
        else:
            lines += ["", payload]
    lines += [f"--{changeset}--", f"--{batch}--", ""]
    return f"multipart/mixed; boundary={batch}", "\r\n".join(lines).encode()


@asynccontextmanager
async def raw_client(stub: RunningStub) -> AsyncIterator[Raw]:
    """A :class:`Raw` client with its own session (closed on exit)."""
    async with aiohttp.ClientSession() as session:
        yield Raw(session, stub.endpoint)


def fast_retry(attempts: int = 25) -> azt.RetryPolicy:
    """A retry policy with millisecond back-off, so fault-heavy tests run in seconds."""
    return azt.RetryPolicy(max_attempts=attempts, base=0.001, minimum=0.0, maximum=0.005)


def table_client(
    stub: RunningStub,
    table: str,
    *,
    policy: azt.AmbiguousOutcomePolicy = azt.AmbiguousOutcomePolicy.RAISE,
    retry: azt.RetryPolicy | None = None,
    sleep: Callable[[float], Awaitable[None]] | None = None,
) -> azt.TableClient:
    """An azt table client for the stub's development account with fast retries."""
    return azt.TableClient.from_connection_string(
        stub.connection_string,
        table,
        retry=retry or fast_retry(),
        ambiguous_outcome=policy,
        sleep=sleep,
        uniform=lambda lo, hi: (lo + hi) / 2,
    )
