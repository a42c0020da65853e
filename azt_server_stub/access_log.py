"""The stub's access log, like a real server's: one INFO record per request on
``azt_server_stub.access`` with the method, the path and query (SAS signature redacted),
the status, the duration and the request ids.

Example::

    >>> redact_query("/devstoreaccount1/t()?sv=2019-02-02&sig=c2ln%3D&$top=1")
    '/devstoreaccount1/t()?sv=2019-02-02&sig=REDACTED&$top=1'
"""

from __future__ import annotations

import logging
import re

from aiohttp.abc import AbstractAccessLogger
from aiohttp.web import BaseRequest, StreamResponse

__all__ = ["AccessLogger", "redact_query"]

_SIG = re.compile(r"(?i)([?&]sig=)[^&#]*")


def redact_query(path_qs: str) -> str:
    """``path_qs`` with the value of any ``sig`` query parameter replaced by ``REDACTED``.

    Example::

        >>> redact_query("/a/Tables?sig=x")
        '/a/Tables?sig=REDACTED'
    """
    return _SIG.sub(r"\1REDACTED", path_qs) if "sig=" in path_qs.lower() else path_qs


class AccessLogger(AbstractAccessLogger):
    """aiohttp access logger: ``METHOD path?query STATUS duration ms request-id``.

    The record's ``extra`` carries ``method``, ``path``, ``status``, ``duration`` (seconds),
    ``request_id`` (``x-ms-request-id`` answered) and ``client_request_id``.

    Example::

        runner = web.AppRunner(app, access_log=logging.getLogger("azt_server_stub.access"),
                               access_log_class=AccessLogger)
    """

    def log(self, request: BaseRequest, response: StreamResponse, time: float) -> None:
        """Emit one record for a finished request.

        Example::

            access_logger.log(request, response, 0.0012)
        """
        path = redact_query(request.path_qs)
        request_id = response.headers.get("x-ms-request-id")
        client_request_id = request.headers.get("x-ms-client-request-id")
        self.logger.info(
            "%s %s %d %.1f ms request-id %s client-request-id %s",
            request.method,
            path,
            response.status,
            time * 1000.0,
            request_id or "-",
            client_request_id or "-",
            extra={
                "method": request.method,
                "path": path,
                "status": response.status,
                "duration": time,
                "request_id": request_id,
                "client_request_id": client_request_id,
            },
        )

    @property
    def enabled(self) -> bool:
        """Whether the logger would emit an INFO record.

        Example::

            access_logger.enabled  # False while azt_server_stub.access is above INFO
        """
        return self.logger.isEnabledFor(logging.INFO)
