"""What the client logs and how secrets stay out of it: the ``azt`` logger tree, the one
place that redacts (URLs, headers, free text), and the per-attempt DEBUG record.

Loggers (all children of ``azt``, standard :mod:`logging`):

* ``azt.http``: one DEBUG record per HTTP attempt (retries and token refreshes included),
  INFO when a bearer token is refused and fetched anew;
* ``azt.retry``: one WARNING per retry (why, and the wait before the next attempt);
* ``azt`` itself: client-level decisions (secondary-read fallbacks, ambiguous outcomes).

Every value that reaches a record went through :func:`redact_url`, :func:`redact_headers`
or :func:`redact_text`: SAS signatures, account keys, bearer tokens, ``Authorization``
values and URL user info never do.

Example::

    >>> redact_url("https://u:pw@acct.table.core.windows.net/t()?sv=1&sig=abc%3D")
    'https://REDACTED@acct.table.core.windows.net/t()?sv=1&sig=REDACTED'
    >>> redact_text("AccountName=a;AccountKey=c2VjcmV0;EndpointSuffix=x")
    'AccountName=a;AccountKey=REDACTED;EndpointSuffix=x'
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

__all__ = [
    "HTTP_LOGGER",
    "REDACTED",
    "RETRY_LOGGER",
    "log_attempt",
    "redact_headers",
    "redact_text",
    "redact_url",
]

REDACTED = "REDACTED"
"""What a secret is replaced with."""

HTTP_LOGGER = logging.getLogger("azt.http")
"""One DEBUG record per HTTP attempt; see :func:`log_attempt`."""

RETRY_LOGGER = logging.getLogger("azt.retry")
"""One WARNING record per retry."""

#: Query parameters whose values are secrets (compared case-insensitively): the SAS
#: signature, and the names OAuth and connection-string keys travel under.
SECRET_QUERY_PARAMS = frozenset(
    {"sig", "signature", "sharedaccesssignature", "accountkey", "access_token", "token"}
)

_SECRET_PARAM = re.compile(
    r"(?i)([?&;](?:" + "|".join(sorted(SECRET_QUERY_PARAMS)) + r")=)[^&#\s'\"]*"
)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s'\"]+@")
# Free text: connection-string secrets, SAS signatures, Authorization schemes with their
# credentials, and URLs with user info.
_TEXT_SECRETS = (
    (
        re.compile(
            r"(?i)\b((?:AccountKey|SharedAccessSignature|AccessKey|Password)\s*=\s*)[^;\s'\"]+"
        ),
        r"\1" + REDACTED,
    ),
    (re.compile(r"(?i)(\bsig=)[^&#\s;'\"]+"), r"\1" + REDACTED),
    (re.compile(r"(?i)\b(Bearer\s+)[^\s,;'\"]+"), r"\1" + REDACTED),
    (re.compile(r"(?i)\b(SharedKey(?:Lite)?\s+[^\s:'\"]+:)[^\s,;'\"]+"), r"\1" + REDACTED),
    (_USERINFO, r"\1" + REDACTED + "@"),
)

#: Header names whose values are secrets (lower case); any name containing one of
#: ``_SECRET_HEADER_PARTS`` is treated the same.
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
_SECRET_HEADER_PARTS = ("authorization", "signature", "token", "secret", "key", "password")


def redact_url(url: str) -> str:
    """``url`` with every secret query value (SAS ``sig``, tokens, keys) and any user info
    replaced by ``REDACTED``; everything else (host, path, the rest of the query) kept.

    Example::

        >>> redact_url("http://h/t?sv=1&sig=abc%3D&se=x")
        'http://h/t?sv=1&sig=REDACTED&se=x'
        >>> redact_url("http://h/Tables?$top=5")
        'http://h/Tables?$top=5'
    """
    if "=" in url:
        url = _SECRET_PARAM.sub(r"\1" + REDACTED, url)
    if "@" in url:
        url = _USERINFO.sub(r"\1" + REDACTED + "@", url)
    return url


def is_secret_header(name: str) -> bool:
    """Whether a header's value must never be shown (``Authorization``, ``x-ms-*`` keys and
    tokens, cookies).

    Example::

        >>> is_secret_header("Authorization"), is_secret_header("x-ms-encryption-key")
        (True, True)
        >>> is_secret_header("x-ms-client-request-id")
        False
    """
    lowered = name.lower()
    if lowered in SECRET_HEADERS:
        return True
    return any(part in lowered for part in _SECRET_HEADER_PARTS)


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``headers`` with every secret value replaced by ``REDACTED`` (see
    :func:`is_secret_header`); other values go through :func:`redact_text`.

    Example::

        >>> redact_headers({"Authorization": "SharedKey a:c2ln", "x-ms-version": "2019-02-02"})
        {'Authorization': 'REDACTED', 'x-ms-version': '2019-02-02'}
    """
    return {
        name: REDACTED if is_secret_header(name) else redact_text(value)
        for name, value in headers.items()
    }


def redact_text(text: str) -> str:
    """``text`` (an error message, an exception's text) with connection-string keys, SAS
    signatures, ``Bearer``/``SharedKey`` credentials and URL user info replaced.

    Example::

        >>> redact_text("401 for Authorization: Bearer eyJ0eXAi.x.y")
        '401 for Authorization: Bearer REDACTED'
        >>> redact_text("GET https://h/t?sv=1&sig=c2ln%3D failed")
        'GET https://h/t?sv=1&sig=REDACTED failed'
    """
    for pattern, replacement in _TEXT_SECRETS:
        text = pattern.sub(replacement, text)
    return text


def log_attempt(
    method: str,
    url: str,
    *,
    attempt: int,
    status: int | None,
    duration: float,
    request_id: str | None,
    client_request_id: str,
    request_size: int,
    response_size: int | None,
    error: str | None = None,
) -> None:
    """Emit the DEBUG record of one HTTP attempt on ``azt.http`` (``url`` already redacted).

    The same values ride in the record's ``extra`` for structured handlers: ``method``,
    ``url``, ``status`` (``None`` when no answer came), ``duration`` (seconds),
    ``request_id`` (``x-ms-request-id``), ``client_request_id``, ``attempt`` (1 for the
    first; every send counts, a resend after a refused bearer token too),
    ``request_size`` and ``response_size`` (body bytes) and ``error`` (why no answer
    came, or ``None``).

    Example::

        >>> import logging
        >>> records = []
        >>> class Keep(logging.Handler):
        ...     def emit(self, record): records.append(record)
        >>> HTTP_LOGGER.addHandler(keep := Keep()); HTTP_LOGGER.setLevel(logging.DEBUG)
        >>> log_attempt("GET", "http://h/t()", attempt=1, status=200, duration=0.0123,
        ...             request_id="r", client_request_id="c", request_size=0,
        ...             response_size=42)
        >>> HTTP_LOGGER.removeHandler(keep); HTTP_LOGGER.setLevel(logging.NOTSET)
        >>> records[0].getMessage().split(" (")[0]
        'GET http://h/t() -> 200 in 12.3 ms'
        >>> records[0].status, records[0].response_size
        (200, 42)
    """
    outcome = str(status) if status is not None else f"no answer ({error})"
    received = f"{response_size} B" if response_size is not None else "nothing"
    HTTP_LOGGER.debug(
        "%s %s -> %s in %.1f ms (attempt %d, request id %s, client request id %s, "
        "sent %d B, received %s)",
        method,
        url,
        outcome,
        duration * 1000.0,
        attempt,
        request_id or "-",
        client_request_id,
        request_size,
        received,
        extra={
            "method": method,
            "url": url,
            "status": status,
            "duration": duration,
            "request_id": request_id,
            "client_request_id": client_request_id,
            "attempt": attempt,
            "request_size": request_size,
            "response_size": response_size,
            "error": error,
        },
    )
