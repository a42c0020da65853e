"""Entity group transactions as ``multipart/mixed`` bodies, sans-I/O (PROTOCOL.md 9):
:func:`encode_batch` and :func:`encode_query_batch` write them; :func:`decode_batch_response`
and :func:`decode_part_error` read the service's answer.

Example::

    >>> ct, body = encode_batch(
    ...     [BatchPart("DELETE", "https://a.table.core.windows.net/t(PartitionKey='p',RowKey='r')",
    ...                {"If-Match": "*"})],
    ...     batch_boundary="batch_1", changeset_boundary="changeset_2")
    >>> ct
    'multipart/mixed; boundary=batch_1'
    >>> print(body.decode().replace("\\r\\n", "|\\n"))  # doctest: +NORMALIZE_WHITESPACE
    --batch_1|
    Content-Type: multipart/mixed; boundary=changeset_2|
    |
    --changeset_2|
    Content-Type: application/http|
    Content-Transfer-Encoding: binary|
    Content-ID: 1|
    |
    DELETE https://a.table.core.windows.net/t(PartitionKey='p',RowKey='r') HTTP/1.1|
    If-Match: *|
    |
    |
    --changeset_2--|
    --batch_1--|
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Final, TypeVar, overload

import attrs

from azt._core.wire import WireDecodeError
from azt._core.wire import atom as _atom
from azt._core.wire import json as _json
from azt._errors import BatchValidationError, ValidationError

__all__ = [
    "MAX_BATCH_BYTES",
    "MAX_BATCH_OPERATIONS",
    "BatchPart",
    "BatchResponsePart",
    "Changeset",
    "Headers",
    "decode_batch_response",
    "decode_part_error",
    "describe_bytes",
    "encode_batch",
    "encode_query_batch",
    "encode_request",
    "parse_error_index",
    "request_heads",
]

MAX_BATCH_OPERATIONS: Final = 100
MAX_BATCH_BYTES: Final = 4 * 1024 * 1024
"""Azure Table storage's largest transaction body (the Cosmos DB Table API's is 2 MB:
``Changeset(max_bytes=...)``)."""


def describe_bytes(n: int) -> str:
    """``n`` bytes in the unit a service documents its limit in (MiB, MB, else bytes).

    Example::

        >>> describe_bytes(MAX_BATCH_BYTES), describe_bytes(2_000_000), describe_bytes(10)
        ('4 MiB', '2 MB', '10 bytes')
    """
    if n and n % (1024 * 1024) == 0:
        return f"{n // (1024 * 1024)} MiB"
    if n and n % 1_000_000 == 0:
        return f"{n // 1_000_000} MB"
    return f"{n} bytes"


_T = TypeVar("_T")

_CRLF: Final = b"\r\n"
_WRITE_METHODS: Final = frozenset({"POST", "PUT", "MERGE", "PATCH", "DELETE"})


class Headers(Mapping[str, str]):
    """A read-only, case-insensitive header mapping (repeated headers joined by ``, ``).

    Example::

        >>> h = Headers([("ETag", 'W/"1"'), ("content-type", "application/json")])
        >>> h["etag"], h["Content-Type"], "ETAG" in h
        ('W/"1"', 'application/json', True)
    """

    __slots__ = ("_items",)

    def __init__(self, items: Iterator[tuple[str, str]] | Sequence[tuple[str, str]] = ()) -> None:
        store: dict[str, tuple[str, str]] = {}
        for name, value in items:
            key = name.lower()
            if key in store:
                value = f"{store[key][1]}, {value}"
                name = store[key][0]
            store[key] = (name, value)
        self._items = store

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()][1]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items

    @overload
    def get(self, name: str, /) -> str | None: ...

    @overload
    def get(self, name: str, default: str | _T, /) -> str | _T: ...

    def get(self, name: str, default: object = None, /) -> object:
        """The header's value, or ``default`` (without raising inside, unlike the mixin).

        Example::

            >>> Headers([("ETag", 'W/"1"')]).get("etag"), Headers().get("ETag", "-")
            ('W/"1"', '-')
        """
        item = self._items.get(name.lower())
        return default if item is None else item[1]

    def __iter__(self) -> Iterator[str]:
        return (orig for orig, _ in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Headers({list(self._items.values())!r})"


@attrs.frozen(slots=True)
class BatchPart:
    """One operation of a batch request.

    ``url`` is the absolute request URL (``https://acct.table.core.windows.net/t(...)``);
    ``headers`` are the inner HTTP headers (``Content-Type``, ``Accept``, ``If-Match``,
    ``Prefer``, ``DataServiceVersion``, …); ``body`` the encoded entity, if any.

    Example::

        >>> BatchPart("POST", "https://a.table.core.windows.net/t",
        ...           {"Content-Type": "application/json"}, b"{}").method
        'POST'
    """

    method: str
    url: str
    headers: Mapping[str, str] = attrs.field(factory=dict)
    body: bytes | None = None


@attrs.frozen(slots=True)
class BatchResponsePart:
    """One part of a batch response: status line, headers (case-insensitive) and body.

    ``content_id`` is the part's ``Content-ID`` when the service echoed one.

    Example::

        >>> p = BatchResponsePart(204, "No Content", Headers([("ETag", 'W/"1"')]), b"")
        >>> p.ok, p.headers["etag"]
        (True, 'W/"1"')
    """

    status: int
    reason: str
    headers: Headers
    body: bytes
    content_id: str | None = None

    @property
    def ok(self) -> bool:
        """True for a 2xx status.

        Example::

            >>> BatchResponsePart(409, "Conflict", Headers(), b"").ok
            False
        """
        return 200 <= self.status < 300


# --------------------------------------------------------------------------- encode


def _check_header_text(what: str, text: str) -> None:
    if "\r" in text or "\n" in text:
        raise ValidationError(f"batch {what} {text!r} contains a line break")


def encode_request(part: BatchPart) -> bytes:
    """The ``application/http`` content of one batch part: request line, headers (with
    ``Content-Length`` added for a body), blank line, body and the closing CRLF. These
    bytes are what a change set carries for the operation, unchanged.

    Example::

        >>> for line in encode_request(BatchPart("POST", "https://a/t", {"Prefer": "x"},
        ...                                      b"{}")).split(b"\\r\\n"):
        ...     print(line)
        b'POST https://a/t HTTP/1.1'
        b'Prefer: x'
        b'Content-Length: 2'
        b''
        b'{}'
        b''
    """
    method = part.method.upper()
    _check_header_text("URL", part.url)
    if " " in part.url or "\t" in part.url:
        raise ValidationError(f"batch URL {part.url!r} contains whitespace; percent-encode it")
    lines = [f"{method} {part.url} HTTP/1.1"]
    has_length = False
    for name, value in part.headers.items():
        _check_header_text("header", f"{name}: {value}")
        if name.lower() == "content-length":
            has_length = True
        lines.append(f"{name}: {value}")
    body = part.body or b""
    if part.body is not None and not has_length:
        lines.append(f"Content-Length: {len(body)}")
    head = "\r\n".join(lines).encode("utf-8")
    return head + b"\r\n\r\n" + body + _CRLF


def request_heads(
    table_url: str, base_url: str, accept: str, body_type: str
) -> tuple[bytes, bytes, bytes, bytes] | None:
    """The fixed parts of the change set requests of one client (``accept`` and
    ``body_type`` its inner ``Accept`` and ``Content-Type``): a create's head up to its
    ``Content-Length`` value, and what follows the entity URL (``base_url`` + its path) of a
    delete and an update (up to the ``If-Match`` value) and of an upsert (up to the
    ``Content-Length`` value), exactly as :func:`encode_request` writes them.
    ``None`` when any holds a line break or a URL whitespace (that :func:`encode_request`
    refuses).

    Example::

        >>> request_heads("https://a/t", "https://a", "application/json", "application/json")[1]
        b' HTTP/1.1\\r\\nAccept: application/json\\r\\nDataServiceVersion: 3.0\\r\\nIf-Match: '
    """
    texts = (accept, body_type, table_url, base_url)
    if any(c in text for text in texts for c in "\r\n") or any(
        c in text for text in (table_url, base_url) for c in " \t"
    ):
        return None
    common = f"Accept: {accept}\r\nDataServiceVersion: 3.0\r\n"
    with_body = f"{common}Content-Type: {body_type}\r\n"
    create = f"POST {table_url} HTTP/1.1\r\n{with_body}Prefer: return-no-content\r\n"
    return (
        f"{create}Content-Length: ".encode(),
        f" HTTP/1.1\r\n{common}If-Match: ".encode(),
        f" HTTP/1.1\r\n{with_body}If-Match: ".encode(),
        f" HTTP/1.1\r\n{with_body}Content-Length: ".encode(),
    )


# The MIME header of change set part number ``n`` (1-based) is
# ``--<changeset>CRLF Content-Type: application/http CRLF Content-Transfer-Encoding: binary
# CRLF Content-ID: <n> CRLF CRLF``: a constant, the boundary, and the digits of n.
_PART_HEAD_FIXED: Final = len(
    b"--\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n"
    b"Content-ID: \r\n\r\n"
)


def _part_head(changeset: str, content_id: int) -> bytes:
    return (
        f"--{changeset}\r\nContent-Type: application/http\r\n"
        f"Content-Transfer-Encoding: binary\r\nContent-ID: {content_id}\r\n\r\n"
    ).encode()


def _opening(batch: str, changeset: str) -> bytes:
    return f"--{batch}\r\nContent-Type: multipart/mixed; boundary={changeset}\r\n\r\n".encode()


def _closing(batch: str, changeset: str) -> bytes:
    return f"--{changeset}--\r\n--{batch}--\r\n".encode()


class Changeset:
    """The encoded operations of one change set, with the exact size of the request body
    they make, kept as each one is added.

    Each operation is encoded once (:func:`encode_request`) and its bytes are what
    :meth:`encode` sends. :attr:`size` is the exact length of the body :meth:`encode`
    would return now: the batch and change set boundaries, each part's MIME header (its
    ``Content-ID`` digits included) and the parts. :meth:`fits` answers whether one more
    request stays within 100 operations and ``max_bytes`` (default 4 MiB, Azure Table
    storage's limit; the Cosmos DB Table API takes 2 MB), so builders cut transactions on
    exact sizes. Boundaries are chosen when the change set is created (``batch_<uuid>``
    and ``changeset_<uuid>`` unless given).

    Example::

        >>> cs = Changeset(batch_boundary="batch_1", changeset_boundary="changeset_2")
        >>> cs.append(encode_request(BatchPart("DELETE", "https://a/t(PartitionKey='p',RowKey='r')",
        ...                                    {"If-Match": "*"})))
        >>> ct, body = cs.encode()
        >>> cs.size == len(body), len(cs)
        (True, 1)
    """

    __slots__ = ("_requests", "batch_boundary", "changeset_boundary", "max_bytes", "size")

    def __init__(
        self,
        *,
        batch_boundary: str | None = None,
        changeset_boundary: str | None = None,
        max_bytes: int = MAX_BATCH_BYTES,
    ) -> None:
        if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 1:
            raise ValidationError(f"max_bytes must be an int >= 1, got {max_bytes!r}")
        #: the largest body :meth:`encode` accepts (the service flavour's limit)
        self.max_bytes = max_bytes
        self.batch_boundary = batch_boundary or f"batch_{uuid.uuid4()}"
        self.changeset_boundary = changeset_boundary or f"changeset_{uuid.uuid4()}"
        for boundary in (self.batch_boundary, self.changeset_boundary):
            _check_header_text("boundary", boundary)
        self._requests: list[bytes] = []
        #: the exact byte length of the body as it stands (the envelope alone when empty)
        self.size = len(_opening(self.batch_boundary, self.changeset_boundary)) + len(
            _closing(self.batch_boundary, self.changeset_boundary)
        )

    def __len__(self) -> int:
        return len(self._requests)

    def cost(self, request: bytes | int) -> int:
        """How many bytes the body grows by when ``request`` (its bytes, or their number)
        is appended next: its MIME part header (boundary, ``Content-ID`` digits) and itself.

        Example::

            >>> cs = Changeset(batch_boundary="b", changeset_boundary="c")
            >>> cs.cost(b"x" * 10) == len(b"--c\\r\\nContent-Type: application/http\\r\\n"
            ...     b"Content-Transfer-Encoding: binary\\r\\nContent-ID: 1\\r\\n\\r\\n") + 10
            True
        """
        n = request if isinstance(request, int) else len(request)
        content_id = len(self._requests) + 1
        return _PART_HEAD_FIXED + len(self.changeset_boundary) + len(str(content_id)) + n

    def fits(self, request: bytes | int) -> bool:
        """Whether appending ``request`` keeps the change set within 100 operations and a
        body of :attr:`max_bytes` (4 MiB unless given).

        Example::

            >>> cs = Changeset()
            >>> cs.fits(1000), cs.fits(MAX_BATCH_BYTES)
            (True, False)
        """
        return (
            len(self._requests) < MAX_BATCH_OPERATIONS
            and self.size + self.cost(request) <= self.max_bytes
        )

    def append(self, request: bytes) -> None:
        """Add an encoded request (:func:`encode_request`) as the next part. The limits are
        checked by :meth:`encode`, so a builder may hold an oversized change set and
        refuse it when it is sent.

        Example::

            >>> cs = Changeset()
            >>> cs.append(encode_request(BatchPart("DELETE", "https://a/t")))
            >>> len(cs)
            1
        """
        requests = self._requests
        n = len(requests)
        self.size += (
            _PART_HEAD_FIXED
            + len(self.changeset_boundary)
            + (1 if n < 9 else 2 if n < 99 else len(str(n + 1)))  # the Content-ID's digits
            + len(request)
        )  # self.cost(request), inline
        requests.append(request)

    def encode(self) -> tuple[str, bytes]:
        """The request body (and its ``Content-Type``); refuses (``BatchValidationError``)
        an empty change set, more than 100 operations or a body over :attr:`max_bytes`
        (4 MiB unless given).

        Example::

            >>> cs = Changeset(batch_boundary="batch_1")
            >>> cs.append(encode_request(BatchPart("DELETE", "https://a/t")))
            >>> cs.encode()[0]
            'multipart/mixed; boundary=batch_1'
        """
        n = len(self._requests)
        if not n:
            raise BatchValidationError("a batch needs at least one operation")
        if n > MAX_BATCH_OPERATIONS:
            raise BatchValidationError(
                f"a batch holds at most {MAX_BATCH_OPERATIONS} operations, got {n}"
            )
        if self.size > self.max_bytes:
            raise BatchValidationError(
                f"the batch body is {self.size} bytes; the service takes at most "
                f"{self.max_bytes} ({describe_bytes(self.max_bytes)})"
            )
        batch, changeset = self.batch_boundary, self.changeset_boundary
        out = [_opening(batch, changeset)]
        for i, request in enumerate(self._requests):
            out.append(_part_head(changeset, i + 1))
            out.append(request)
        out.append(_closing(batch, changeset))
        body = b"".join(out)
        assert len(body) == self.size, "Changeset.size must be the exact body length"
        return f"multipart/mixed; boundary={batch}", body


# Both encoders write CRLF line endings, batch_<uuid> / changeset_<uuid> boundaries, a
# 1-based Content-ID in each MIME part header, absolute request URLs and the caller's inner
# headers (Content-Length is added for bodies).
def encode_batch(
    parts: Sequence[BatchPart],
    *,
    batch_boundary: str | None = None,
    changeset_boundary: str | None = None,
) -> tuple[str, bytes]:
    """Encode write operations as one change set; returns ``(content_type, body)``.

    Refuses (``ValidationError``) an empty batch, more than 100 operations, a ``GET``
    (queries go alone through :func:`encode_query_batch`), line breaks in URLs or
    headers, and bodies over 4 MiB in total.

    Example::

        >>> ct, body = encode_batch([BatchPart("POST", "https://a/t", {}, b"{}")])
        >>> ct.startswith("multipart/mixed; boundary=batch_")
        True
    """
    if not parts:
        raise BatchValidationError("a batch needs at least one operation")
    if len(parts) > MAX_BATCH_OPERATIONS:
        raise BatchValidationError(
            f"a batch holds at most {MAX_BATCH_OPERATIONS} operations, got {len(parts)}"
        )
    changeset = Changeset(batch_boundary=batch_boundary, changeset_boundary=changeset_boundary)
    for i, part in enumerate(parts):
        if part.method.upper() not in _WRITE_METHODS:
            raise ValidationError(
                f"operation {i}: {part.method} cannot be part of a change set (allowed: "
                "POST, PUT, MERGE, PATCH, DELETE); send a query alone with encode_query_batch"
            )
        changeset.append(encode_request(part))
    return changeset.encode()


def encode_query_batch(part: BatchPart, *, batch_boundary: str | None = None) -> tuple[str, bytes]:
    """Encode a point query (``GET``) as the sole, non-change-set part of a batch.

    Example::

        >>> ct, body = encode_query_batch(
        ...     BatchPart("GET", "https://a/t(PartitionKey='p',RowKey='r')",
        ...               {"Accept": "application/json;odata=minimalmetadata"}),
        ...     batch_boundary="batch_1")
        >>> body.splitlines()[4]
        b"GET https://a/t(PartitionKey='p',RowKey='r') HTTP/1.1"
    """
    if part.method.upper() != "GET":
        raise ValidationError(f"a query batch holds one GET, not {part.method}")
    batch = batch_boundary or f"batch_{uuid.uuid4()}"
    body = (
        f"--{batch}\r\nContent-Type: application/http\r\n"
        f"Content-Transfer-Encoding: binary\r\n\r\n".encode()
        + encode_request(part)
        + f"--{batch}--\r\n".encode()
    )
    return f"multipart/mixed; boundary={batch}", body


# --------------------------------------------------------------------------- decode

_PARAM_RE: Final = re.compile(r';\s*([^=;\s]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)')
_BLANK_LINE_RE: Final = re.compile(rb"\r?\n\r?\n")


def _boundary(content_type: str) -> str:
    for name, value in _PARAM_RE.findall(content_type):
        if name.lower() == "boundary":
            value = value.strip()
            if value.startswith('"') and value.endswith('"') and len(value) >= 2:
                value = value[1:-1].replace('\\"', '"')
            if value:
                return str(value)
    raise WireDecodeError(f"no multipart boundary in Content-Type {content_type!r}")


def _split_multipart(body: bytes, boundary: str) -> list[bytes]:
    """The parts between ``--boundary`` delimiter lines (RFC 2046: at the start of the body
    or of a line, optionally ``--`` for the close delimiter, then optional blanks and the
    line end). Scans with ``bytes.find`` for the delimiter text; a regex starting with an
    alternation of anchors would be tried at every byte of a 4 MiB body."""
    marker = b"--" + boundary.encode("latin-1")
    mlen = len(marker)
    n = len(body)
    parts: list[bytes] = []
    start: int | None = None
    pos = 0
    prev_end = 0  # a line break consumed by the previous delimiter cannot start another
    while True:
        i = body.find(marker, pos)
        if i < 0:
            break
        pos = i + 1
        if i == 0:
            line_start = 0
        elif i > prev_end and body[i - 1] == 0x0A:  # "\n", possibly after "\r"
            line_start = i - 2 if i - 2 >= prev_end and body[i - 2] == 0x0D else i - 1
        else:
            continue
        k = i + mlen
        close = body.startswith(b"--", k)
        if close:
            k += 2
        while k < n and body[k] in (0x20, 0x09):
            k += 1
        if k == n:
            end = k
        elif body[k] == 0x0A:
            end = k + 1
        elif body[k] == 0x0D and k + 1 < n and body[k + 1] == 0x0A:
            end = k + 2
        else:
            continue
        if start is not None:
            parts.append(body[start:line_start])
        if close:
            return parts
        start = pos = prev_end = end
    if start is None:
        raise WireDecodeError(f"multipart body has no part delimited by --{boundary}")
    raise WireDecodeError(f"multipart body is missing its closing --{boundary}--")


def _split_head(data: bytes) -> tuple[bytes, bytes]:
    """Split ``head CRLF CRLF rest`` (LF tolerated); no blank line means no body."""
    if data.startswith(b"\r\n"):
        return b"", data[2:]
    if data.startswith(b"\n"):
        return b"", data[1:]
    i = data.find(b"\r\n\r\n")
    if i >= 0 and data.find(b"\n\n", 0, i + 2) < 0 and data.find(b"\n\r\n", 0, i + 2) < 0:
        return data[:i], data[i + 4 :]  # the usual CRLF head, no earlier (LF) blank line
    m = _BLANK_LINE_RE.search(data)
    if m is None:
        return data.rstrip(b"\r\n"), b""
    return data[: m.start()], data[m.end() :]


def _head_lines(head: bytes) -> list[str]:
    """The lines of a part head, decoded once (UTF-8, invalid bytes replaced)."""
    return head.decode("utf-8", "replace").replace("\r\n", "\n").split("\n")


def _parse_headers(lines: Sequence[str]) -> Headers:
    """Header lines (folded continuations joined, repeats joined by ``, ``) as
    :class:`Headers`, built in one pass."""
    store: dict[str, tuple[str, str]] = {}
    last: str | None = None
    for line in lines:
        if not line or line.isspace():
            continue
        if line[0] in " \t" and last is not None:  # folded continuation
            name, value = store[last]
            store[last] = (name, f"{value} {line.strip()}")
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise WireDecodeError(f"malformed header line in batch response: {line!r}")
        name = name.strip()
        value = value.strip()
        key = name.lower()
        prev = store.get(key)
        if prev is not None:
            name, value = prev[0], f"{prev[1]}, {value}"
        store[key] = (name, value)
        last = key
    headers = Headers.__new__(Headers)
    headers._items = store
    return headers


def _decode_http_part(mime: Headers, data: bytes) -> BatchResponsePart:
    head, rest = _split_head(data)
    lines = _head_lines(head)
    status_line = lines[0].strip()
    fields = status_line.split(" ", 2)
    if len(fields) < 2 or not fields[0].startswith("HTTP/") or not fields[1].isdigit():
        raise WireDecodeError(f"malformed status line in batch response: {status_line!r}")
    headers = _parse_headers(lines[1:])
    body = rest
    length = headers.get("Content-Length")
    if length is not None and length.isdigit() and int(length) <= len(body):
        body = body[: int(length)]
    content_id = mime.get("Content-ID") or headers.get("Content-ID")
    return BatchResponsePart(
        status=int(fields[1]),
        reason=fields[2] if len(fields) > 2 else "",
        headers=headers,
        body=body,
        content_id=content_id,
    )


def _decode_multipart(content_type: str, body: bytes, depth: int) -> list[BatchResponsePart]:
    out: list[BatchResponsePart] = []
    for raw in _split_multipart(body, _boundary(content_type)):
        head, rest = _split_head(raw)
        mime = _parse_headers(_head_lines(head))
        ctype = mime.get("Content-Type", "")
        if ctype.lower().startswith("multipart/"):
            if depth >= 1:
                raise WireDecodeError("change sets nested more than one level deep")
            out.extend(_decode_multipart(ctype, rest, depth + 1))
        else:
            out.append(_decode_http_part(mime, rest))
    return out


# Read leniently: bare LF, change-set responses nested or placed directly in the batch,
# quoted boundaries, Content-ID in either header block, no inner Content-Length.
def decode_batch_response(content_type: str, body: bytes) -> list[BatchResponsePart]:
    """Decode a ``202`` batch response into its parts, in order.

    ``content_type`` is the outer ``Content-Type`` (its ``boundary`` is used). A
    successful change set gives one part per operation; a failed one gives a single
    part with the failing status (see :func:`decode_part_error`).

    Example::

        >>> body = (b"--batchresponse_1\\r\\nContent-Type: multipart/mixed; "
        ...         b"boundary=changesetresponse_2\\r\\n\\r\\n--changesetresponse_2\\r\\n"
        ...         b"Content-Type: application/http\\r\\nContent-Transfer-Encoding: binary"
        ...         b"\\r\\n\\r\\nHTTP/1.1 204 No Content\\r\\nETag: W/\\"1\\"\\r\\n\\r\\n\\r\\n"
        ...         b"--changesetresponse_2--\\r\\n--batchresponse_1--\\r\\n")
        >>> [(p.status, p.headers["ETag"]) for p in decode_batch_response(
        ...     "multipart/mixed; boundary=batchresponse_1", body)]
        [(204, 'W/"1"')]
    """
    return _decode_multipart(content_type, body, 0)


_INDEX_RE: Final = re.compile(r"\s*(\d+):")


# On failure the service answers one part with the failing operation's status and an
# error message that starts with the operation's 0-based index ("1:The specified entity
# already exists.").
def parse_error_index(message: str | None) -> int | None:
    """The 0-based operation index at the start of a batch error message, if any.

    Example::

        >>> parse_error_index("1:The specified entity already exists.")
        1
        >>> parse_error_index("The specified entity already exists.") is None
        True
    """
    if not message:
        return None
    m = _INDEX_RE.match(message)
    return int(m.group(1)) if m else None


def decode_part_error(part: BatchResponsePart) -> tuple[str | None, str | None, int | None]:
    """``(code, message, index)`` of a failed batch part (JSON or OData XML error body).

    ``message`` keeps the service text without the ``"<index>:"`` prefix; ``index`` is
    the failing operation's 0-based position (``None`` if the message has none).

    Example::

        >>> p = BatchResponsePart(409, "Conflict", Headers(), b'{"odata.error":{"code":'
        ...     b'"EntityAlreadyExists","message":{"lang":"en-US","value":"1:Exists."}}}')
        >>> decode_part_error(p)
        ('EntityAlreadyExists', 'Exists.', 1)
    """
    body = part.body.lstrip()
    if body.startswith(b"<"):
        code, message = _atom.decode_error(body)
    else:
        code, message = _json.decode_error(body)
    index = parse_error_index(message)
    if index is not None and message is not None:
        message = message.split(":", 1)[1]
    return code, message, index
