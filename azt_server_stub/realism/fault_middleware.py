"""Fault injection over HTTP: the aiohttp middleware, the control endpoint, ``install``.

Install it inside the service middleware, which renders injected errors as the service
would (``create_app`` does).

Example::

    injector = install(app, FaultInjector(seed=7))
    injector.fail_next(FaultKind.DROP_AFTER, 1, methods={"POST"})
"""

from __future__ import annotations

import contextlib
import logging

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from .. import errors
from ..errors import StubError
from .faults import FaultInjector, FaultKind, FaultRule, parse_fault
from .inspection import describe_request, prepare_refusal

# The logger keeps its name from before the realism package: log settings select it.
log = logging.getLogger("azt_server_stub.faults")


_Handler = Handler


def _drop(request: web.Request) -> web.Response:
    """Abort the connection; the returned response is never sent."""
    transport = request.transport
    if transport is not None:
        transport.abort()
    return web.Response(status=204)


def _error_for(rule: FaultRule) -> StubError:
    kind = rule.kind
    if kind is FaultKind.BUSY:
        return errors.server_busy(rule.message) if rule.message else errors.server_busy()
    if kind is FaultKind.INTERNAL_ERROR:
        err = errors.internal_error()
    else:
        err = errors.operation_timed_out()
    if rule.message:
        err.message = rule.message
    return err


def middleware(injector: FaultInjector) -> Middleware:
    """An aiohttp middleware applying ``injector`` to every request.

    Place it inside the stub's service middleware (``create_app`` puts that first), so that
    injected errors get the service's error body, ``x-ms-error-code`` and request id.

    Example::

        app.middlewares.append(middleware(FaultInjector(seed=1)))
    """

    @web.middleware
    async def fault_middleware(request: web.Request, handler: _Handler) -> web.StreamResponse:
        if injector.control and request.path.startswith(CONTROL_PATH):
            return await _control(request, injector)
        if not injector.enabled or not injector._rules:
            return await handler(request)
        info = await describe_request(request, inspect_body=injector.needs_body)
        decision = injector.decide(info)
        if decision.delay > 0:
            await injector.sleep(decision.delay)
        rule = decision.outcome
        if rule is None:
            return await handler(request)
        kind = rule.kind
        log.debug("injecting %s into %s %s", kind.value, info.method, info.raw_path)
        if kind is FaultKind.DROP_BEFORE:
            return _drop(request)
        if kind is FaultKind.DROP_AFTER:
            with contextlib.suppress(StubError, web.HTTPException):
                await handler(request)
            return _drop(request)
        if kind is FaultKind.TIMEOUT_AFTER:
            with contextlib.suppress(StubError, web.HTTPException):
                await handler(request)
        else:
            prepare_refusal(request)
        raise _error_for(rule)

    return fault_middleware


FAULTS_KEY = web.AppKey("azt.faults", FaultInjector)
"""Where :func:`install` keeps the injector: ``app[FAULTS_KEY]`` (e.g. for a test fixture)."""


CONTROL_PATH = "/$stub/faults"
"""The control endpoint of an injector created with ``control=True`` (``--fault-control``).

No account or signature is needed (it is a test tool; never enable it on a shared host):

* ``GET``: JSON ``{"enabled", "rules": [{"spec", "seen", "injected"}], "counters",
  "total_delay"}``.
* ``POST``: add rules, one ``--fault`` spec per line of the body (``201`` with the state);
  a malformed spec is ``400`` and adds nothing.
* ``DELETE``: remove every rule; with ``?counters=1`` also zero the counters (``204``).
* ``PUT /$stub/faults/enabled`` with body ``true`` or ``false``: switch injection on or off.
"""


def _state(injector: FaultInjector) -> dict[str, object]:
    return {
        "enabled": injector.enabled,
        "rules": [
            {"spec": r.describe(), "seen": r.seen, "injected": r.injected} for r in injector.rules
        ],
        "counters": {k.value: v for k, v in sorted(injector.counters.items())},
        "total_delay": injector.total_delay,
    }


def _json(status: int, payload: object) -> web.Response:
    return web.json_response(payload, status=status)


async def _control(request: web.Request, injector: FaultInjector) -> web.StreamResponse:
    """Serve the control endpoint (see :data:`CONTROL_PATH`)."""
    sub = request.path[len(CONTROL_PATH) :]
    method = request.method.upper()
    if sub in ("", "/"):
        if method == "GET":
            return _json(200, _state(injector))
        if method == "POST":
            text = (await request.read()).decode("utf-8", "replace")
            try:
                rules = [parse_fault(line) for line in text.splitlines() if line.strip()]
            except ValueError as exc:
                return _json(400, {"error": str(exc)})
            for rule in rules:
                injector.add(rule)
            return _json(201, _state(injector))
        if method == "DELETE":
            injector.clear()
            if request.query.get("counters") in ("1", "true"):
                injector.reset_counters()
            return web.Response(status=204)
    elif sub == "/enabled" and method == "PUT":
        value = (await request.read()).decode("utf-8", "replace").strip().lower()
        if value not in ("true", "false"):
            return _json(400, {"error": "send true or false"})
        injector.enabled = value == "true"
        return _json(200, _state(injector))
    else:
        return _json(404, {"error": f"no control resource {request.path!r}"})
    return _json(405, {"error": f"{method} is not supported on {request.path!r}"})


def install(app: web.Application, injector: FaultInjector | None) -> FaultInjector | None:
    """Store ``injector`` on ``app`` (``app[FAULTS_KEY]``) and append its middleware.

    A no-op for ``None``. Call it before the application starts, after the service
    middleware is in place (``create_app`` does both in that order).

    Example::

        injector = install(app, FaultInjector(seed=42))
    """
    if injector is None:
        return None
    app[FAULTS_KEY] = injector
    app.middlewares.append(middleware(injector))
    return injector
