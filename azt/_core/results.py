"""What the clients return and the modes they take: :class:`UpdateMode`,
:class:`WriteResult`, :class:`ResponseMetadata` and :class:`AccessPolicies`."""

from __future__ import annotations

import enum
import functools
import urllib.parse
from collections.abc import Mapping

import attrs

from azt._core.transport import HttpResponse
from azt._core.wire.xml import AccessPolicy
from azt._edm.datetime import EdmDateTime
from azt._edm.entity import EntityMetadata, TableEntity
from azt._errors import ServiceError

__all__ = [
    "AccessPolicies",
    "ResponseMetadata",
    "TableItem",
    "UpdateMode",
    "WriteResult",
    "timestamp_from_etag",
]


class UpdateMode(enum.Enum):
    """How an update or upsert treats properties not in the request.

    ``MERGE`` keeps stored properties the request does not mention (MERGE verb);
    ``REPLACE`` replaces the whole entity (PUT), so absent properties disappear.

    Example::

        >>> UpdateMode("replace") is UpdateMode.REPLACE
        True
    """

    MERGE = "merge"
    REPLACE = "replace"


@attrs.frozen(slots=True)
class ResponseMetadata(EntityMetadata):
    """Entity metadata plus the ``x-ms-request-id`` of the response that returned it
    (set on entities returned by ``get_entity``).

    Example::

        >>> ResponseMetadata(etag='W/"1"', request_id="r1").request_id
        'r1'
    """

    request_id: str | None = None


@attrs.frozen
class WriteResult:
    """The outcome of a write: ``etag`` (``None`` for deletes), the service's
    ``request_id``, the HTTP ``status``, the echoed ``entity`` when asked for, and
    ``ambiguity_resolved``: true when the write was retried after a lost answer, met a
    conflict, and was judged to have succeeded (``AmbiguousOutcomePolicy.ASSUME_SUCCEEDED``).

    Example::

        >>> WriteResult(etag='W/"x"', request_id="r1", status=204).entity is None
        True
    """

    etag: str | None
    request_id: str | None
    status: int
    entity: TableEntity | None = None
    ambiguity_resolved: bool = False

    @property
    def timestamp(self) -> EdmDateTime | None:
        """The entity's new ``Timestamp``, read from the ETag the service answered with
        (``W/"datetime'<Timestamp>'"``); ``None`` when there is no ETag (a delete, an
        ambiguous write judged done) or it is not of that form.

        Example::

            >>> etag = 'W/"datetime' + "'2026-01-02T03%3A04%3A05.1234567Z'" + '"'
            >>> WriteResult(etag=etag, request_id=None, status=204).timestamp.to_wire()
            '2026-01-02T03:04:05.1234567Z'
        """
        return timestamp_from_etag(self.etag)


@functools.lru_cache(maxsize=256)
def timestamp_from_etag(etag: str | None) -> EdmDateTime | None:
    """The ``Timestamp`` an ETag of the service's form ``W/"datetime'<Timestamp,
    percent-encoded>'"`` carries (PROTOCOL.md 8.1), else ``None``.

    Example::

        >>> timestamp_from_etag('W/"datetime' + "'2026-01-02T03%3A04%3A05Z'" + '"').year
        2026
        >>> timestamp_from_etag('"opaque"') is None
        True
    """
    if not etag or not etag.startswith("W/\"datetime'") or not etag.endswith("'\""):
        return None
    try:
        return EdmDateTime.parse(urllib.parse.unquote(etag[len("W/\"datetime'") : -2]))
    except ValueError:
        return None


class AccessPolicies(dict[str, AccessPolicy | None]):
    """A table's stored access policies by id (a plain ``dict``), plus the
    ``request_id`` of the response they were read from.

    Example::

        >>> policies = AccessPolicies({"readers": None}, request_id="r1")
        >>> policies == {"readers": None}, policies.request_id
        (True, 'r1')
    """

    __slots__ = ("request_id",)

    def __init__(
        self,
        policies: Mapping[str, AccessPolicy | None] | None = None,
        *,
        request_id: str | None = None,
    ) -> None:
        super().__init__(policies or {})
        self.request_id = request_id


class TableItem(str):
    """A table's name, as :meth:`TableServiceClient.list_tables` and ``query_tables`` yield
    it: a ``str`` (compare, sort, format and store it as one) whose ``name`` is the same
    string, so code written for ``azure-data-tables`` (whose ``TableItem`` has ``.name``)
    reads it unchanged.

    Example::

        >>> item = TableItem("movies")
        >>> item == "movies", item.name, item.upper()
        (True, 'movies', 'MOVIES')
    """

    __slots__ = ()

    @property
    def name(self) -> str:
        """The table name (a plain ``str``): ``azure-data-tables``' spelling.

        Example::

            >>> type(TableItem("movies").name)
            <class 'str'>
        """
        return str.__str__(self)


def written(resp: HttpResponse, etag: str | None = None) -> WriteResult:
    """The result of a write the service answered with ``resp``."""
    return WriteResult(
        etag=etag, request_id=resp.headers.get("x-ms-request-id"), status=resp.status
    )


def resolved(exc: ServiceError, status: int = 201) -> WriteResult:
    """The result of a write judged done after an ambiguous answer (no ETag)."""
    return WriteResult(etag=None, request_id=exc.request_id, status=status, ambiguity_resolved=True)
