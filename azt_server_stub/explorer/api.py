"""The explorer's HTTP side: its JSON API over the stub's backend, its page, its gate.

Everything lives under :data:`PREFIX` (``/_explorer/``). :func:`install` puts one
middleware in front of the stub's own (so an explorer request meets no fault, throttle or
service header, and the Table API's chain is unchanged): for any other path it hands the
request straight to the next handler, without a coroutine of its own.

The API (JSON; every value as text, see :mod:`.values`):

==========================================  =================================================
``POST api/signin`` ``{account, key}``      a session cookie and ``{account, csrf}``
``GET api/session`` / ``POST api/signout``  the session / end it
``GET|POST api/tables``                     tables with entity counts / create ``{name}``
``DELETE api/tables/NAME``                  delete a table
``GET api/tables/NAME/entities``            a page: ``filter``, ``top``, ``npk``/``nrk``
                                            (continuation tokens), answers ``next``
``POST api/tables/NAME/entities``           insert an entity
``GET|PUT|DELETE api/tables/NAME/entity``   ``pk``/``rk`` in the query; PUT and DELETE need
                                            ``If-Match`` (the ETag read): ``412`` when the
                                            entity changed meanwhile
``GET api/tables/NAME/export``              ``format=jsonl|csv``, ``filter``, ``select``
``GET|POST api/realism``                    the realism layers / change one
``GET api/requests?since=N``                the stub's recent requests
==========================================  =================================================

Example::

    install(app, Explorer(backend, {"devstoreaccount1": [key]}, Realism(None, None, None)))
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from aiohttp import web

from ..backend import Backend, WriteOp
from ..errors import StubError
from ..model import Entity
from ..odata import compile_entity_filter, decode_continuation, encode_continuation, parse_select
from .live import PREFIX, RECENT_KEY, Realism, RecentRequests
from .sessions import Refused, Session, Sessions, check_same_origin, is_loopback_host
from .values import (
    columns_of,
    csv_header,
    csv_row,
    entity_json,
    entity_line,
    props_from_json,
)

__all__ = ["PREFIX", "Explorer", "install"]

log = logging.getLogger("azt_server_stub.explorer")

#: Most entities counted per table in the table list (beyond: shown as "N+").
COUNT_LIMIT = 100_000

_STATIC = {
    "": ("index.html", "text/html"),
    "explorer.js": ("explorer.js", "text/javascript"),
    "explorer.css": ("explorer.css", "text/css"),
}

_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

#: The system properties every export carries anyway.
_SYSTEM = frozenset({"PartitionKey", "RowKey", "Timestamp"})

_Api = Callable[[web.Request, Session, list[str]], Awaitable[web.StreamResponse]]


def _static_files() -> dict[str, tuple[bytes, str]]:
    folder = resources.files(__package__ or "azt_server_stub.explorer") / "static"
    return {
        name: ((folder / filename).read_bytes(), ctype)
        for name, (filename, ctype) in _STATIC.items()
    }


def _json(payload: object, status: int = 200) -> web.Response:
    return web.Response(
        status=status,
        body=json.dumps(payload, ensure_ascii=False).encode(),
        content_type="application/json",
    )


def _error(status: int, code: str, message: str) -> web.Response:
    return _json({"code": code, "message": message}, status)


async def _body(request: web.Request) -> Any:
    try:
        return json.loads(await request.read())
    except ValueError:
        raise StubError(400, "InvalidInput", "The request body is not JSON.") from None


@dataclass(slots=True)
class Explorer:
    """One stub's explorer: its backend, accounts (name -> decoded keys), realism layers.

    ``allow_remote``: accept any ``Host`` (the stub listens beyond loopback on purpose).

    Example::

        >>> from azt_server_stub.backend import Backend
        >>> Explorer(Backend(), {"a": [b"k"]}, Realism(None, None, None)).allow_remote
        False
    """

    backend: Backend
    accounts: dict[str, list[bytes]]
    realism: Realism
    allow_remote: bool = False
    recent: RecentRequests = field(default_factory=RecentRequests)
    sessions: Sessions = field(init=False)
    _static: dict[str, tuple[bytes, str]] = field(init=False)

    def __post_init__(self) -> None:
        self.sessions = Sessions(self.accounts)
        self._static = _static_files()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Serve one request under :data:`PREFIX` (errors as JSON, never a 500 page).

        Example::

            response = await explorer.handle(request)
        """
        try:
            response = await self._route(request)
        except Refused as exc:
            response = _error(exc.status, exc.code, exc.message)
        except StubError as exc:
            response = _error(exc.status, exc.code, exc.message)
        except Exception:
            log.exception("explorer bug while serving %s %s", request.method, request.path)
            response = _error(500, "InternalError", "The explorer failed; see the stub's log.")
        if not response.prepared:
            for name, value in _SECURITY_HEADERS.items():
                response.headers.setdefault(name, value)
        return response

    async def _route(self, request: web.Request) -> web.StreamResponse:
        if not self.allow_remote and not is_loopback_host(request.host):
            raise Refused(403, "HostRefused", "The explorer answers only loopback host names.")
        path = request.path
        if path == PREFIX:
            return web.Response(status=302, headers={"Location": PREFIX + "/"})
        rest = path[len(PREFIX) + 1 :]
        if request.method not in ("GET", "HEAD"):
            check_same_origin(request)
        if not rest.startswith("api/"):
            found = self._static.get(rest)
            if found is None or request.method not in ("GET", "HEAD"):
                raise Refused(404, "NotFound", "No such page.")
            body, ctype = found
            return web.Response(body=body, content_type=ctype, charset="utf-8")
        parts = rest[4:].split("/")
        if parts == ["signin"] and request.method == "POST":
            return await self._sign_in(request)
        session = self.sessions.require(request)
        handler = self._handler(request.method, parts)
        if handler is None:
            raise Refused(404, "NotFound", "No such API call.")
        return await handler(request, session, parts)

    def _handler(self, method: str, parts: list[str]) -> _Api | None:
        """The API call ``parts`` name: ``[call]``, ``["tables", NAME]`` or
        ``["tables", NAME, call]`` (NAME not empty)."""
        if len(parts) == 1:
            account_calls: dict[tuple[str, str], _Api] = {
                ("GET", "session"): self._session,
                ("POST", "signout"): self._sign_out,
                ("GET", "tables"): self._list_tables,
                ("POST", "tables"): self._create_table,
                ("GET", "realism"): self._realism,
                ("POST", "realism"): self._change_realism,
                ("GET", "requests"): self._requests,
            }
            return account_calls.get((method, parts[0]))
        if parts[0] != "tables" or not parts[1]:
            return None
        if len(parts) == 2:
            return self._delete_table if method == "DELETE" else None
        table_calls: dict[tuple[str, str], _Api] = {
            ("GET", "entities"): self._entities,
            ("POST", "entities"): self._insert,
            ("GET", "entity"): self._get_entity,
            ("PUT", "entity"): self._replace,
            ("DELETE", "entity"): self._delete_entity,
            ("GET", "export"): self._export,
        }
        return table_calls.get((method, parts[2])) if len(parts) == 3 else None

    # -- sessions ----------------------------------------------------------------------
    async def _sign_in(self, request: web.Request) -> web.StreamResponse:
        document = await _body(request)
        if not isinstance(document, dict):
            raise Refused(400, "InvalidInput", "Send {account, key}.")
        session = self.sessions.sign_in(document.get("account"), document.get("key"))
        response = _json({"account": session.account, "csrf": session.csrf})
        response.set_cookie(
            self.sessions.cookie,
            session.token,
            path=PREFIX + "/",
            httponly=True,
            samesite="Strict",
            secure=request.secure,
        )
        return response

    async def _session(self, request: web.Request, session: Session, _: list[str]) -> web.Response:
        return _json({"account": session.account, "csrf": session.csrf})

    async def _sign_out(
        self, request: web.Request, session: Session, _: list[str]
    ) -> web.StreamResponse:
        self.sessions.sign_out(session.token)
        response = _json({"signed_out": True})
        response.del_cookie(self.sessions.cookie, path=PREFIX + "/")
        return response

    # -- tables ------------------------------------------------------------------------
    def _count(self, account: str, table: str) -> tuple[int, bool]:
        count, after = 0, None
        while True:
            page = self.backend.query_entities(account, table, None, 1000, after)
            count += len(page.entities)
            if page.next_key is None:
                return count, False
            if count >= COUNT_LIMIT:
                return count, True
            after = page.next_key

    async def _list_tables(
        self, request: web.Request, session: Session, _: list[str]
    ) -> web.Response:
        names: list[str] = []
        after: str | None = None
        while True:
            page = self.backend.query_tables(session.account, None, 1000, after)
            names += page.names
            if page.next_name is None:
                break
            after = page.next_name
        tables = []
        for name in names:
            try:
                count, more = self._count(session.account, name)
            except StubError:  # deleted meanwhile
                continue
            tables.append({"name": name, "count": count, "more": more})
        return _json({"tables": tables})

    async def _create_table(
        self, request: web.Request, session: Session, _: list[str]
    ) -> web.Response:
        document = await _body(request)
        name = document.get("name") if isinstance(document, dict) else None
        if not isinstance(name, str):
            raise StubError(400, "InvalidInput", "Send {name}.")
        created = self.backend.create_table(session.account, name)
        return _json({"name": created}, 201)

    async def _delete_table(
        self, request: web.Request, session: Session, parts: list[str]
    ) -> web.Response:
        self.backend.delete_table(session.account, parts[1])
        return _json({"deleted": parts[1]})

    # -- entities ----------------------------------------------------------------------
    async def _entities(
        self, request: web.Request, session: Session, parts: list[str]
    ) -> web.Response:
        query = request.rel_url.query
        table = parts[1]
        flt = compile_entity_filter(query.get("filter", ""))
        top = _top(query.get("top"))
        npk, nrk = query.get("npk"), query.get("nrk")
        after = None
        if npk is not None:
            after = (decode_continuation(npk), decode_continuation(nrk) if nrk else "")
        page = self.backend.query_entities(session.account, table, flt, top, after)
        types: dict[str, list[str]] = {}
        for entity in page.entities:
            for name, (edm, _value) in entity.props.items():
                seen = types.setdefault(name, [])
                if edm not in seen:
                    seen.append(edm)
        nxt = None
        if page.next_key is not None:
            nxt = {
                "npk": encode_continuation(page.next_key[0]),
                "nrk": encode_continuation(page.next_key[1]),
            }
        return _json(
            {
                "table": self.backend.table_name(session.account, table) or table,
                "entities": [entity_json(e) for e in page.entities],
                "columns": [{"name": n, "types": t} for n, t in types.items()],
                "next": nxt,
            }
        )

    def _keys(self, request: web.Request) -> tuple[str, str]:
        query = request.rel_url.query
        pk, rk = query.get("pk"), query.get("rk")
        if pk is None or rk is None:
            raise StubError(400, "InvalidInput", "pk and rk are required.")
        return pk, rk

    async def _get_entity(
        self, request: web.Request, session: Session, parts: list[str]
    ) -> web.Response:
        pk, rk = self._keys(request)
        return _json(entity_json(self.backend.get_entity(session.account, parts[1], pk, rk)))

    async def _insert(
        self, request: web.Request, session: Session, parts: list[str]
    ) -> web.Response:
        pk, rk, props = props_from_json(await _body(request))
        result = self.backend.write(session.account, parts[1], WriteOp("insert", pk, rk, props))
        assert result.entity is not None
        return _json(entity_json(result.entity), 201)

    async def _replace(
        self, request: web.Request, session: Session, parts: list[str]
    ) -> web.Response:
        pk, rk = self._keys(request)
        etag = _if_match(request)
        document = await _body(request)
        if isinstance(document, dict):
            document.setdefault("PartitionKey", pk)
            document.setdefault("RowKey", rk)
        bpk, brk, props = props_from_json(document)
        if (bpk, brk) != (pk, rk):
            raise StubError(400, "InvalidInput", "The keys of an entity cannot be changed.")
        op = WriteOp("replace", pk, rk, props, if_match=etag)
        result = self.backend.write(session.account, parts[1], op)
        assert result.entity is not None
        return _json(entity_json(result.entity))

    async def _delete_entity(
        self, request: web.Request, session: Session, parts: list[str]
    ) -> web.Response:
        pk, rk = self._keys(request)
        op = WriteOp("delete", pk, rk, if_match=_if_match(request))
        self.backend.write(session.account, parts[1], op)
        return _json({"deleted": True})

    # -- export ------------------------------------------------------------------------
    def _pages(self, account: str, table: str, filter_text: str) -> Any:
        flt = compile_entity_filter(filter_text)
        after = None
        while True:
            page = self.backend.query_entities(account, table, flt, 1000, after)
            yield page.entities
            if page.next_key is None:
                return
            after = page.next_key

    async def _export(
        self, request: web.Request, session: Session, parts: list[str]
    ) -> web.StreamResponse:
        query = request.rel_url.query
        table = parts[1]
        fmt = query.get("format", "jsonl")
        if fmt not in ("jsonl", "csv"):
            raise StubError(400, "InvalidInput", "format is jsonl or csv.")
        filter_text = query.get("filter", "")
        raw_select = query.get("select")
        select = None  # every property; else those named (the keys and Timestamp always)
        if raw_select is not None:
            select = [n for n in parse_select(raw_select) if n not in _SYSTEM]
        pages = self._pages(session.account, table, filter_text)
        first = next(pages)  # errors (a bad filter, a missing table) before the answer starts
        name = self.backend.table_name(session.account, table) or table
        response = web.StreamResponse(
            headers={
                "Content-Type": "application/x-ndjson; charset=utf-8"
                if fmt == "jsonl"
                else "text/csv; charset=utf-8",
                "Content-Disposition": f'attachment; filename="{name}.{fmt}"',
                **_SECURITY_HEADERS,
            }
        )
        response.enable_chunked_encoding()
        await response.prepare(request)
        if fmt == "jsonl":
            for entities in _chain(first, pages):
                await response.write("".join(entity_line(e, select) for e in entities).encode())
        else:
            columns = (
                select
                if select is not None
                else self._csv_columns(session.account, table, filter_text)
            )
            known = set(columns)
            await response.write(csv_header(columns).encode())
            for entities in self._pages(session.account, table, filter_text):
                lines = []
                for entity in entities:
                    extra = [n for n in entity.props if n not in known] if select is None else []
                    if extra:
                        lines.append(
                            f"# export incomplete: property {extra[0]!r} appeared during the "
                            "export; export again\r\n"
                        )
                        await response.write("".join(lines).encode())
                        await response.write_eof()
                        return response
                    lines.append(csv_row(entity, columns))
                await response.write("".join(lines).encode())
        await response.write_eof()
        return response

    def _csv_columns(self, account: str, table: str, filter_text: str) -> list[str]:
        seen: dict[str, None] = {}
        for entities in self._pages(account, table, filter_text):
            seen = dict.fromkeys(columns_of(entities, seen))
        return list(seen)

    # -- the stub ----------------------------------------------------------------------
    async def _realism(self, request: web.Request, session: Session, _: list[str]) -> web.Response:
        return _json(self.realism.state())

    async def _change_realism(
        self, request: web.Request, session: Session, _: list[str]
    ) -> web.Response:
        document = await _body(request)
        if not isinstance(document, dict):
            raise StubError(400, "InvalidInput", "Send an object.")
        try:
            self.realism.change(document)
        except ValueError as exc:
            raise StubError(400, "InvalidInput", str(exc)) from None
        return _json(self.realism.state())

    async def _requests(self, request: web.Request, session: Session, _: list[str]) -> web.Response:
        try:
            since = int(request.rel_url.query.get("since", "0"))
        except ValueError:
            raise StubError(400, "InvalidInput", "since is a whole number.") from None
        return _json({"requests": self.recent.since(since), "last": self.recent.last})


def _chain(first: list[Entity], rest: Any) -> Any:
    yield first
    yield from rest


def _top(text: str | None) -> int:
    if text is None:
        return 50
    try:
        top = int(text)
    except ValueError:
        raise StubError(400, "InvalidInput", "top is a whole number.") from None
    if not 1 <= top <= 1000:
        raise StubError(400, "InvalidInput", "top is from 1 to 1000.")
    return top


def _if_match(request: web.Request) -> str:
    etag = request.headers.get("If-Match")
    if not etag:
        raise StubError(400, "InvalidInput", "If-Match (the ETag read) is required.")
    return etag


def install(app: web.Application, explorer: Explorer) -> None:
    """Serve ``explorer`` under :data:`PREFIX` in front of the stub's middlewares.

    The gate is a plain function: a Table API request costs one prefix test and a call.

    Example::

        install(app, Explorer(backend, accounts, Realism(None, None, None)))
    """
    app[RECENT_KEY] = explorer.recent
    handle = explorer.handle
    prefix = PREFIX

    @web.middleware
    def explorer_gate(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> Awaitable[web.StreamResponse]:
        if request.raw_path.startswith(prefix):
            return handle(request)
        return handler(request)

    app.middlewares.insert(0, explorer_gate)
