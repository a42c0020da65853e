"""What the clients return and the modes they take: :class:`UpdateMode`,
:class:`WriteResult`, :class:`ResponseMetadata` and :class:`AccessPolicies`."""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

from azt._core.transport import HttpResponse
from azt._core.wire.xml import AccessPolicy
from azt._edm.entity import EntityMetadata, TableEntity
from azt._errors import ServiceError

__all__ = ["AccessPolicies", "ResponseMetadata", "UpdateMode", "WriteResult"]


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


def written(resp: HttpResponse, etag: str | None = None) -> WriteResult:
    """The result of a write the service answered with ``resp``."""
    return WriteResult(
        etag=etag, request_id=resp.headers.get("x-ms-request-id"), status=resp.status
    )


def resolved(exc: ServiceError, status: int = 201) -> WriteResult:
    """The result of a write judged done after an ambiguous answer (no ETag)."""
    return WriteResult(etag=None, request_id=exc.request_id, status=status, ambiguity_resolved=True)
