"""What the explorer shows of the running stub: recent requests and the realism settings.

:class:`RecentRequests` keeps the last requests the stub answered (its access log, in
memory; :class:`RecordingAccessLogger` feeds it and still writes the
``azt_server_stub.access`` log when that logger is on). :class:`Realism` shows and changes
the stub's fault rules, throttle limits and range-partition layout where the stub has them:
a switch the stub was started without (no ``--fault``/``--throttle``/partition flags) is
shown as off and cannot be turned on from the page, because the layer is not in the request
path at all (which keeps a stub without it as fast as before).

Example::

    >>> recent = RecentRequests(size=2)
    >>> for n in range(3):
    ...     recent.add((0.0, "GET", f"/{n}", 200, 0.0, None, None))
    >>> [e["path"] for e in recent.since(0)], recent.last
    (['/1', '/2'], 3)
"""

from __future__ import annotations

import collections
import logging
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.web import BaseRequest, StreamResponse
from multidict import istr

from ..access_log import AccessLogger, redact_query
from ..lined import LinedResponse
from ..realism.faults import FaultInjector, parse_fault
from ..realism.partitions import PartitionLayout, RangeLayout
from ..realism.throttle import Throttle, ThrottleLimits

__all__ = ["RECENT_KEY", "Realism", "RecentRequests", "RecordingAccessLogger"]

#: Where the explorer's path starts (requests under it are not listed as recent).
PREFIX = "/_explorer"


#: One recorded request: wall-clock time, method, raw target, status, seconds taken,
#: the error code and the request id answered.
Recorded = tuple[float, str, str, int, float, str | None, str | None]


class RecentRequests:
    """The last ``size`` requests the stub answered, numbered from 1.

    Recording is cheap (a tuple appended to a bounded deque, on every request while the
    explorer is on); the entries are formatted only when the page asks (:meth:`since`),
    with SAS signatures redacted as in the access log.

    Example::

        >>> r = RecentRequests(); r.add((0.0, "GET", "/a?sig=x", 200, 0.001, None, None))
        >>> r.since(0)[0]["path"], r.since(1)
        ('/a?sig=REDACTED', [])
    """

    def __init__(self, size: int = 500) -> None:
        #: (number, *recorded): one flat tuple per request
        self._entries: collections.deque[tuple[Any, ...]] = collections.deque(maxlen=size)
        self.last = 0

    def add(self, entry: Recorded) -> None:
        """Record one request (numbered from 1).

        Example::

            >>> r = RecentRequests(); r.add((0.0, "GET", "/", 200, 0.0, None, None)); r.last
            1
        """
        self.last += 1
        self._entries.append((self.last, *entry))

    def since(self, seq: int) -> list[dict[str, Any]]:
        """The entries numbered above ``seq``, oldest first, as JSON-ready dicts.

        Example::

            >>> r = RecentRequests()
            >>> r.add((0.0, "GET", "/a", 200, 0.0, None, None))
            >>> r.add((0.0, "PUT", "/b", 412, 0.0, "UpdateConditionNotSatisfied", "id"))
            >>> [(e["seq"], e["method"], e["error"]) for e in r.since(1)]
            [(2, 'PUT', 'UpdateConditionNotSatisfied')]
        """
        return [
            {
                "seq": number,
                "time": when,
                "method": method,
                "path": redact_query(target),
                "status": status,
                "ms": round(taken * 1000.0, 2),
                "error": error or "",
                "request_id": request_id or "",
            }
            for number, when, method, target, status, taken, error, request_id in list(
                self._entries
            )
            if number > seq
        ]


RECENT_KEY = web.AppKey("azt.explorer.recent", RecentRequests)

_ERROR_CODE = istr("x-ms-error-code")
_REQUEST_ID = istr("x-ms-request-id")


class RecordingAccessLogger(AccessLogger):
    """The stub's access logger that also records each API request for the explorer.

    Always enabled (the explorer's list is filled even when the log is quiet); the log
    record itself is written only when ``azt_server_stub.access`` is on at INFO, and for
    the explorer's own requests (the page polls while a live view is open) at DEBUG.

    Example::

        runner = FrontAppRunner(app, access_log=logging.getLogger("azt_server_stub.access"),
                                access_log_class=RecordingAccessLogger)
    """

    _recent: RecentRequests | None = None

    def log(self, request: BaseRequest, response: StreamResponse, time_taken: float) -> None:
        """Record the request (unless it is the explorer's own), then log it if on.

        Example::

            access_logger.log(request, response, 0.0012)
        """
        recent = self._recent
        if recent is None:
            recent = self._recent = _recent_of(request)
        message = request._message  # (raw_path and method without their property calls)
        target = message.path
        if target.startswith(PREFIX):
            # the page's own calls (it polls while a live view is open): in the log at DEBUG
            if self.logger.isEnabledFor(logging.DEBUG):
                super().log(request, response, time_taken)
            return
        if recent is not None:
            status = response._status  # (.status, without its property call)
            if type(response) is LinedResponse and response.lines is not None:
                request_id = response.request_id  # (its headers stay text: lined.py)
                error = None  # (a lined answer is a success: no error code)
            else:
                headers = response.headers
                request_id = headers.get(_REQUEST_ID)
                error = headers.get(_ERROR_CODE) if status >= 400 else None
            # (RecentRequests.add, inline: this runs for every request)
            recent.last += 1
            recent._entries.append(
                (
                    recent.last,
                    time.time(),
                    message.method,
                    target,
                    status,
                    time_taken,
                    error,
                    request_id,
                )
            )
        if self.logger.isEnabledFor(logging.INFO):
            super().log(request, response, time_taken)

    #: Always True: the explorer records every request (a class attribute: the front end
    #: reads it on every request, a property would be a call).
    enabled = True


def _recent_of(request: BaseRequest) -> RecentRequests | None:
    match_info = getattr(request, "_match_info", None)
    if match_info is None:  # a request the parser refused: no application
        return None
    try:
        recent = match_info.current_app.get(RECENT_KEY)
    except (AttributeError, RuntimeError):
        return None
    return recent if isinstance(recent, RecentRequests) else None


@dataclass(slots=True)
class Realism:
    """The stub's realism layers (each None when the stub runs without it).

    Example::

        >>> Realism(None, None, None).state()["faults"]["configured"]
        False
    """

    faults: FaultInjector | None
    throttle: Throttle | None
    partitions: PartitionLayout | None

    def state(self) -> dict[str, Any]:
        """Everything the page shows, as JSON-ready dicts.

        Example::

            >>> Realism(FaultInjector(), None, None).state()["faults"]["rules"]
            []
        """
        return {
            "faults": self._faults_state(),
            "throttle": self._throttle_state(),
            "partitions": self._partitions_state(),
        }

    def _faults_state(self) -> dict[str, Any]:
        inj = self.faults
        if inj is None:
            return {"configured": False}
        return {
            "configured": True,
            "enabled": inj.enabled,
            "rules": [
                {"index": i, "spec": r.describe(), "seen": r.seen, "injected": r.injected}
                for i, r in enumerate(inj.rules)
            ],
            "counters": {str(kind.value): n for kind, n in inj.counters.items()},
        }

    def _throttle_state(self) -> dict[str, Any]:
        t = self.throttle
        if t is None:
            return {"configured": False}
        limits = t.limits
        return {
            "configured": True,
            "enabled": t.enabled,
            "spec": _limits_spec(limits),
            "admitted": t.stats.admitted,
            "throttled": dict(t.stats.throttled),
            "timeouts": t.stats.timeouts,
        }

    def _partitions_state(self) -> dict[str, Any]:
        p = self.partitions
        if p is None:
            return {"configured": False}
        layout = p.default
        return {
            "configured": True,
            "boundaries": list(layout.boundaries),
            "scan_budget": layout.scan_budget,
            "partition_pages": layout.partition_pages,
        }

    def change(self, document: dict[str, Any]) -> None:
        """Apply one change the page asks for; ``ValueError`` for a bad one (nothing changed).

        ``{"faults": {"add": SPEC}}``, ``{"faults": {"remove": INDEX}}``,
        ``{"faults": {"clear": true}}``, ``{"faults": {"enabled": BOOL}}``,
        ``{"throttle": {"spec": SPEC}}``, ``{"throttle": {"enabled": BOOL}}``,
        ``{"partitions": {"boundaries": [...], "scan_budget": N|null,
        "partition_pages": BOOL}}``.

        Example::

            >>> realism = Realism(FaultInjector(), None, None)
            >>> realism.change({"faults": {"add": "busy:next=1"}})
            >>> realism.state()["faults"]["rules"][0]["spec"]
            'busy:next=1'
        """
        if "faults" in document:
            self._change_faults(_object(document["faults"]))
        elif "throttle" in document:
            self._change_throttle(_object(document["throttle"]))
        elif "partitions" in document:
            self._change_partitions(_object(document["partitions"]))
        else:
            raise ValueError("nothing to change")

    def _change_faults(self, change: dict[str, Any]) -> None:
        inj = self.faults
        if inj is None:
            raise ValueError("the stub runs without fault injection (start it with --fault)")
        if "add" in change:
            inj.add(parse_fault(str(change["add"])))
        elif "remove" in change:
            index = change["remove"]
            rules = inj.rules
            if not isinstance(index, int) or not 0 <= index < len(rules):
                raise ValueError("no such rule")
            inj.remove(rules[index])
        elif change.get("clear") is True:
            inj.clear()
        elif isinstance(change.get("enabled"), bool):
            inj.enabled = change["enabled"]
        else:
            raise ValueError("unknown fault change")

    def _change_throttle(self, change: dict[str, Any]) -> None:
        t = self.throttle
        if t is None:
            raise ValueError("the stub runs without throttling (start it with --throttle)")
        if "spec" in change:
            limits = ThrottleLimits.parse(str(change["spec"]))
            if limits.burst <= 0 or not 0 <= limits.timeout_share <= 1:
                raise ValueError("burst must be above 0 and timeouts a share from 0 to 1")
            for rate in (limits.partition_rate, limits.account_rate):
                if rate is not None and rate <= 0:
                    raise ValueError("a rate must be above 0 (or off)")
            t.set_limits(limits)
        elif isinstance(change.get("enabled"), bool):
            t.enabled = change["enabled"]
        else:
            raise ValueError("unknown throttle change")

    def _change_partitions(self, change: dict[str, Any]) -> None:
        p = self.partitions
        if p is None:
            raise ValueError(
                "the stub runs without a partition layout (start it with --range-boundary, "
                "--scan-budget or --partition-pages)"
            )
        bounds = change.get("boundaries", [])
        budget = change.get("scan_budget")
        pages = change.get("partition_pages", False)
        if not isinstance(bounds, list) or not all(isinstance(b, str) and b for b in bounds):
            raise ValueError("boundaries: a list of non-empty PartitionKeys")
        if budget is not None and (not isinstance(budget, int) or budget < 1):
            raise ValueError("scan budget: a whole number of at least 1, or none")
        if not isinstance(pages, bool):
            raise ValueError("partition pages: true or false")
        p.set_default(
            RangeLayout(boundaries=tuple(bounds), scan_budget=budget, partition_pages=pages)
        )


def _object(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("expected an object")
    return value


def _limits_spec(limits: ThrottleLimits) -> str:
    def rate(value: float | None) -> str:
        return "off" if value is None else f"{value:g}"

    return (
        f"partition={rate(limits.partition_rate)},account={rate(limits.account_rate)},"
        f"burst={limits.burst:g},timeouts={limits.timeout_share:g}"
    )
