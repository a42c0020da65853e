"""The least work a Table server in Python does for a single insert and a point read.

``benchmarks/stub_vs_azurite.py`` measures, beside the stub, a server that does no work
(``_replay_server.py``): that bounds what any server reaches with the benchmark's client.
This one bounds what a *Table* server written in Python on asyncio reaches: for the two
requests the ceiling sends, it does only what no Table server can skip, each in the
cheapest way Python offers:

* HTTP/1.1 framing: the head split into lines, the body by ``Content-Length``;
* SharedKey verification: the string to sign (verb, ``Content-MD5``, ``Content-Type``,
  ``x-ms-date``, the canonicalized resource), HMAC-SHA256, a constant-time compare;
* the entity's JSON read and written (``msgspec``), kept in a dict per table;
* a Timestamp and its ETag, a request id, the ``Date`` header, and the answer's headers
  as the stub sends them (so the client does the same work on both answers).

Everything else a faithful server does it skips: validation of names, keys, property
types and sizes, EDM typing, versions and formats, ordered keys, conditional requests,
the service's error catalogue beyond 403/404/409, durability. Requests it does not serve
(queries, updates, transactions, ...) get ``501 NotImplemented``, so a benchmark that
strays fails loudly instead of timing errors.

Usage (the benchmark starts it)::

    python benchmarks/_minimal_server.py LISTEN_PORT
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import sys
import time
import uuid
from datetime import UTC, datetime
from email.utils import formatdate
from typing import Any
from urllib.parse import unquote

import msgspec

ACCOUNT = "devstoreaccount1"
#: the development storage account's well-known key (the stub's and Azurite's default)
KEY = base64.b64decode(
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
_JSON_TYPE = "application/json;odata=minimalmetadata;streaming=true;charset=utf-8"
_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode

Entity = dict[str, Any]


class Tables:
    """The whole store: table name -> {(PartitionKey, RowKey): (entity, etag)}.

    Example::

        tables = Tables()
        tables.rows["t"] = {}
    """

    def __init__(self) -> None:
        self.rows: dict[str, dict[tuple[str, str], tuple[Entity, str]]] = {}


def _date() -> str:
    """The ``Date`` header, made once a second (``formatdate`` is the costly part)."""
    now = int(time.time())
    if _DATE[0] != now:
        _DATE[0] = now
        _DATE[1] = formatdate(now, usegmt=True)
    return str(_DATE[1])


_DATE: list[Any] = [0, ""]


def _answer(status: str, headers: list[tuple[str, str]], body: bytes = b"") -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers)]
    if body or not status.startswith("204"):
        lines.append(f"Content-Length: {len(body)}")
    lines.append(f"Date: {_date()}\r\n\r\n")
    return "\r\n".join(lines).encode("latin-1") + body


def _error(status: str, code: str, message: str, common: list[tuple[str, str]]) -> bytes:
    body = _encode({"odata.error": {"code": code, "message": {"lang": "en-US", "value": message}}})
    headers = [("Content-Type", _JSON_TYPE), ("x-ms-error-code", code), *common]
    return _answer(status, headers, body)


def _signed(method: str, path: str, headers: dict[str, str]) -> bool:
    """Whether the SharedKey signature over the request is the account key's."""
    scheme, _, credential = headers.get("authorization", "").partition(" ")
    account, _, signature = credential.partition(":")
    if scheme != "SharedKey" or account != ACCOUNT:
        return False
    to_sign = "\n".join(
        (
            method,
            headers.get("content-md5", ""),
            headers.get("content-type", ""),
            headers.get("x-ms-date") or headers.get("date", ""),
            f"/{ACCOUNT}{path}",
        )
    )
    digest = hmac.new(KEY, to_sign.encode("utf-8"), hashlib.sha256).digest()
    return hmac.compare_digest(base64.b64encode(digest).decode("ascii"), signature)


def _stamp() -> tuple[str, str]:
    """(Timestamp, ETag) of a write made now."""
    now = datetime.now(UTC)
    timestamp = now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond:06d}0Z"
    return timestamp, "W/\"datetime'" + timestamp.replace(":", "%3A") + "'\""


def _keys(segment: str) -> tuple[str, tuple[str, str]] | None:
    """``table(PartitionKey='a',RowKey='b')`` -> ("table", ("a", "b")); None otherwise."""
    table, paren, rest = segment.partition("(PartitionKey='")
    pk, sep, rest = rest.partition("',RowKey='")
    rk, end, tail = rest.partition("')")
    if not (paren and sep and end) or tail:
        return None
    return table, (unquote(pk).replace("''", "'"), unquote(rk).replace("''", "'"))


def serve(
    tables: Tables, method: str, target: str, headers: dict[str, str], body: bytes, base: str
) -> bytes:
    """The whole answer to one request.

    Example::

        answer = serve(Tables(), "GET", "/devstoreaccount1/t", {}, b"", "http://h")
        assert answer.startswith(b"HTTP/1.1 403")
    """
    common = [("x-ms-request-id", str(uuid.uuid4())), ("x-ms-version", "2019-02-02")]
    if "x-ms-client-request-id" in headers:
        common.append(("x-ms-client-request-id", headers["x-ms-client-request-id"]))
    path = target.partition("?")[0]
    if not _signed(method, path, headers):
        return _error("403 Forbidden", "AuthenticationFailed", "signature mismatch", common)
    account, _, resource = path[1:].partition("/")
    prefer = headers.get("prefer") == "return-no-content"
    if method == "POST" and account == ACCOUNT and resource == "Tables":
        name = _decode(body)["TableName"]
        if name in tables.rows:
            return _error("409 Conflict", "TableAlreadyExists", "table exists", common)
        tables.rows[name] = {}
        return _answer("204 No Content", [("Preference-Applied", "return-no-content"), *common])
    keys = _keys(resource)
    if method == "POST" and account == ACCOUNT and keys is None and resource in tables.rows:
        entity: Entity = _decode(body)
        key = (entity["PartitionKey"], entity["RowKey"])
        rows = tables.rows[resource]
        if key in rows:
            return _error("409 Conflict", "EntityAlreadyExists", "entity exists", common)
        timestamp, etag = _stamp()
        entity["Timestamp"] = timestamp
        rows[key] = (entity, etag)
        location = f"{base}/{ACCOUNT}/{resource}(PartitionKey='{key[0]}',RowKey='{key[1]}')"
        head = [("Cache-Control", "no-cache"), ("DataServiceVersion", "3.0;")]
        head += [("Location", location), ("DataServiceId", location), ("ETag", etag)]
        if prefer:
            head.append(("Preference-Applied", "return-no-content"))
            return _answer("204 No Content", head + common)
        head.append(("Content-Type", _JSON_TYPE))
        out = {"odata.metadata": f"{base}/{ACCOUNT}/$metadata#{resource}/@Element", **entity}
        return _answer("201 Created", head + common, _encode(out))
    if method == "GET" and account == ACCOUNT and keys is not None:
        table, key = keys
        found = tables.rows.get(table, {}).get(key)
        if found is None:
            return _error("404 Not Found", "ResourceNotFound", "not found", common)
        entity, etag = found
        out = {
            "odata.metadata": f"{base}/{ACCOUNT}/$metadata#{table}/@Element",
            "odata.etag": etag,
            **entity,
        }
        head = [("Content-Type", _JSON_TYPE), ("DataServiceVersion", "3.0;")]
        head += [("Cache-Control", "no-cache"), ("ETag", etag)]
        return _answer("200 OK", head + common, _encode(out))
    return _error("501 Not Implemented", "NotImplemented", "not served here", common)


class Connection(asyncio.Protocol):
    """One client connection: requests framed by ``Content-Length``, answered in order.

    Example::

        server = await loop.create_server(lambda: Connection(Tables()), "127.0.0.1", 0)
    """

    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.base = ""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        host, port = transport.get_extra_info("sockname")[:2]
        self.base = f"http://{host}:{port}"

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer + data if self.buffer else data
        while True:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                break
            lines = buffer[:end].decode("latin-1").split("\r\n")
            method, target, _version = lines[0].split(" ", 2)
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.lower()] = value.strip()
            total = end + 4 + int(headers.get("content-length", "0"))
            if len(buffer) < total:
                break
            body, buffer = buffer[end + 4 : total], buffer[total:]
            assert self.transport is not None
            self.transport.write(serve(self.tables, method, target, headers, body, self.base))
        self.buffer = buffer


async def main(port: int) -> None:
    """Serve on 127.0.0.1:``port`` until cancelled.

    Example::

        asyncio.run(main(10002))
    """
    tables = Tables()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Connection(tables), "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
