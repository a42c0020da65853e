"""Fixtures for the stub's HTTP tests: running servers and a small raw, signing client.

The raw client signs requests itself (SharedKey / SharedKeyLite with the Table
string-to-sign) so that tests can send what no SDK sends, byte for byte.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
from multidict import CIMultiDictProxy
from yarl import URL

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubConfig, StubServer, ThreadedStubServer

REPO = Path(__file__).resolve().parents[2]
JSON_MINIMAL = "application/json;odata=minimalmetadata"
JSON_NONE = "application/json;odata=nometadata"
JSON_FULL = "application/json;odata=fullmetadata"
ATOM_VERSION = "2013-08-15"  # the last version that speaks both Atom and JSON


def http_date() -> str:
    """Now as an RFC 1123 date."""
    return formatdate(usegmt=True)


def sign(key: str, string_to_sign: str) -> str:
    """Base64 HMAC-SHA256 with a base64 key."""
    digest = hmac.new(base64.b64decode(key), string_to_sign.encode("utf-8"), hashlib.sha256)
    return base64.b64encode(digest.digest()).decode("ascii")


def canonical_resource(account: str, raw_path: str, query: Mapping[str, str]) -> str:
    """``/account/raw-path[?comp=..]`` (Table service flavour)."""
    resource = f"/{account}{raw_path}"
    if "comp" in query:
        resource += f"?comp={query['comp']}"
    return resource


@dataclass
class RawResponse:
    """What a raw request got back."""

    status: int
    headers: CIMultiDictProxy[str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def code(self) -> str | None:
        return self.headers.get("x-ms-error-code")


class RawClient:
    """Sends hand-built requests to a stub and signs them the way the service expects."""

    def __init__(self, session: aiohttp.ClientSession, base: str, account: str, key: str):
        self.session = session
        self.base = base  # http://127.0.0.1:port
        self.account = account
        self.key = key

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        body: bytes | str | None = None,
        auth: str = "SharedKey",
        account_segment: str | None = None,
        host: str | None = None,
        version: str | None = "2019-02-02",
        allow_internal_error: bool = False,
        raw_query: str | None = None,
    ) -> RawResponse:
        """``path`` is the raw (already percent-encoded) resource path after the account.

        ``account_segment``: the first path segment (default: the account; ``""``: none,
        for host-style requests). ``auth``: SharedKey, SharedKeyLite or none.
        """
        segment = self.account if account_segment is None else account_segment
        raw_path = (f"/{segment}" if segment else "") + path
        q = dict(query or {})
        hdrs: dict[str, str] = {}
        date = http_date()
        hdrs["x-ms-date"] = date
        if version is not None:
            hdrs["x-ms-version"] = version
        if headers:
            hdrs.update(headers)
        data = body.encode("utf-8") if isinstance(body, str) else body
        if auth in ("SharedKey", "SharedKeyLite"):
            resource = canonical_resource(self.account, raw_path, q)
            if auth == "SharedKey":
                sts = "\n".join(
                    [
                        method,
                        hdrs.get("Content-MD5", ""),
                        hdrs.get("Content-Type", ""),
                        date,
                        resource,
                    ]
                )
            else:
                sts = f"{date}\n{resource}"
            hdrs["Authorization"] = f"{auth} {self.account}:{sign(self.key, sts)}"
        if host is not None:
            hdrs["Host"] = host
        query_text = "&".join(f"{_q(k, '$')}={_q(v)}" for k, v in q.items())
        if raw_query is not None:  # sent exactly as given (already encoded)
            query_text = "&".join(t for t in (query_text, raw_query) if t)
        url = URL(self.base + raw_path + (f"?{query_text}" if query_text else ""), encoded=True)
        payload: bytes | io.BytesIO | None = data
        if data is not None and len(data) > 1024 * 1024:
            payload = io.BytesIO(data)  # aiohttp warns about large raw bytes bodies
        async with self.session.request(
            method, url, headers=hdrs, data=payload, skip_auto_headers=("Content-Type",)
        ) as resp:
            content = await resp.read()
            # A 500 InternalError is a stub bug, whatever the request was.
            if not allow_internal_error:
                assert resp.headers.get("x-ms-error-code") != "InternalError", content
            return RawResponse(resp.status, resp.headers, content)


async def row_keys(raw: RawClient, table: str = "mytable") -> list[str]:
    """The RowKeys of every entity in ``table``, in order (one unfiltered query)."""
    r = await raw.request("GET", f"/{table}()", headers={"Accept": JSON_MINIMAL})
    assert r.status == 200, r.body
    return [e["RowKey"] for e in r.json()["value"]]


#: Headers of a query whose rows are compared by key (no metadata needed).
QUERY_HEADERS = {"Accept": JSON_NONE, "DataServiceVersion": "3.0"}


async def matching_row_keys(raw: RawClient, table: str, filter_text: str) -> list[str]:
    """The RowKeys of the entities of ``table`` that ``filter_text`` matches, in order."""
    r = await raw.request(
        "GET", f"/{table}()", query={"$filter": filter_text}, headers=QUERY_HEADERS
    )
    assert r.status == 200, r.body
    return [row["RowKey"] for row in r.json()["value"]]


def _q(text: str, safe: str = "") -> str:
    return quote(text, safe=safe)


@pytest.fixture
async def stub() -> AsyncIterator[StubServer]:
    """An in-process stub on a free port (development account plus ``second``)."""
    config = StubConfig(
        accounts={DEV_ACCOUNT: [DEV_KEY], "second": [base64.b64encode(b"second-key").decode()]}
    )
    async with StubServer(config) as server:
        yield server


async def make_table(raw: RawClient, name: str = "mytable") -> None:
    """Create table ``name`` through ``raw`` (201 expected)."""
    r = await raw.request(
        "POST",
        "/Tables",
        headers={"Accept": JSON_MINIMAL, "Content-Type": "application/json"},
        body=json.dumps({"TableName": name}),
    )
    assert r.status == 201, r.body


async def raw_for(flavor: str) -> AsyncIterator[RawClient]:
    """A raw client of a fresh stub answering as ``flavor``, with table ``mytable``."""
    async with StubServer(flavor=flavor) as stub, aiohttp.ClientSession() as session:
        raw = RawClient(session, stub.endpoint, DEV_ACCOUNT, DEV_KEY)
        await make_table(raw)
        yield raw


@pytest.fixture
async def cosmos() -> AsyncIterator[RawClient]:
    """A raw client of a Cosmos-flavoured stub holding table ``mytable``."""
    async for raw in raw_for("cosmos"):
        yield raw


@pytest.fixture
async def storage() -> AsyncIterator[RawClient]:
    """A raw client of a Storage-flavoured stub holding table ``mytable``."""
    async for raw in raw_for("storage"):
        yield raw


@pytest.fixture
async def raw(stub: StubServer) -> AsyncIterator[RawClient]:
    """A raw client for the development account of ``stub``."""
    async with aiohttp.ClientSession() as session:
        yield RawClient(session, stub.endpoint, DEV_ACCOUNT, DEV_KEY)


@pytest.fixture
def sync_stub() -> Iterator[ThreadedStubServer]:
    """A stub on a background thread, for the synchronous SDK."""
    with ThreadedStubServer() as server:
        yield server


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class StubProcess:
    """``python -m azt_server_stub`` as a subprocess; stops it on exit."""

    def __init__(self, *args: str) -> None:
        self.args = args
        self.proc: subprocess.Popen[str] | None = None
        self.lines: list[str] = []
        self.endpoint = ""

    def start(self, timeout: float = 30.0) -> StubProcess:
        env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "azt_server_stub", *self.args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=str(REPO),
        )
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line.rstrip("\n"))
            m = re.match(r"azt-stub listening on (\S+)", line)
            if m:
                self.endpoint = m.group(1)
            if line.startswith("connection string:"):
                return self
        self.stop()
        raise RuntimeError("stub did not start:\n" + "\n".join(self.lines))

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> int | None:
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
        if proc.stdout is not None:
            rest = proc.stdout.read()
            self.lines.extend(rest.splitlines())
            proc.stdout.close()
        return proc.returncode

    def __enter__(self) -> StubProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
