"""The answer to an entity group transaction: :func:`batch_results` turns the service's
multipart answer into one :class:`~azt.WriteResult` per operation, or raises the failing
operation's :class:`azt.TransactionError` (or :class:`azt.AmbiguousOutcomeError` where a
resend may have applied the transaction before); :func:`failed_index` reads which operation
an error part names. Building and encoding the transaction is :mod:`azt._core.batch`."""

from __future__ import annotations

from typing import NoReturn

from azt._core.base import ClientCore
from azt._core.batch import BatchOperation
from azt._core.config import AmbiguousOutcomePolicy
from azt._core.pipeline import Pipeline
from azt._core.results import WriteResult
from azt._core.transport import HttpResponse
from azt._core.wire import batch as wire_batch
from azt._core.wire.batch_outcome import change_set_outcome
from azt._errors import (
    AmbiguousOutcomeError,
    EntityAlreadyExistsError,
    EntityNotFoundError,
    PreconditionFailedError,
    TransactionError,
)

__all__ = ["batch_results", "failed_index"]


def batch_results(
    core: ClientCore, table_name: str, resp: HttpResponse, operations: list[BatchOperation]
) -> list[WriteResult]:
    """One result per operation from the service's multipart answer, or the failing
    operation's :class:`azt.TransactionError` (or ``AmbiguousOutcomeError``)."""
    request_id = resp.headers.get("x-ms-request-id")
    content_type = resp.headers.get("Content-Type", "")
    outcome = change_set_outcome(content_type, resp.body)
    if outcome is not None and len(outcome) == len(operations):
        # every operation succeeded, in the usual form: statuses and ETags are all it takes
        # (positional: attrs' __init__ binds them faster than keywords, 100 times a batch)
        return [WriteResult(etag, request_id, status) for status, etag in outcome]
    parts = wire_batch.decode_batch_response(content_type, resp.body)
    for position, part in enumerate(parts):
        if part.status >= 300:
            inner = Pipeline.error_for(
                HttpResponse(part.status, part.headers, part.body or b"", part.reason or ""),
                "entity",
            )
            if inner.request_id is None:
                inner.request_id = request_id
            index = failed_index(inner.message, len(operations), position, len(parts))
            operation = operations[index] if index is not None else None
            error = TransactionError.from_error(inner, index=index, operation=operation)
            error.attempts = resp.attempts
            error.earlier_attempt_may_have_applied = resp.earlier_attempt_may_have_applied
            _raise_batch(core, table_name, error)
    if len(parts) != len(operations):
        raise TransactionError(
            f"the service answered {len(parts)} parts for {len(operations)} operations",
            status=resp.status,
            request_id=request_id,
            headers=resp.headers,
        )
    return [
        WriteResult(etag=part.headers.get("ETag"), request_id=request_id, status=part.status)
        for part in parts
    ]


def _raise_batch(core: ClientCore, table_name: str, error: TransactionError) -> NoReturn:
    inner = error.error
    if (
        error.earlier_attempt_may_have_applied
        and inner is not None
        and isinstance(
            inner, EntityAlreadyExistsError | EntityNotFoundError | PreconditionFailedError
        )
        and core.ambiguous_outcome is not AmbiguousOutcomePolicy.REPORT_ERROR
    ):
        # A transaction cannot be verified cheaply: report it as ambiguous.
        raise AmbiguousOutcomeError(
            f"submit_transaction({table_name!r})",
            error,
            attempts=error.attempts,
        ) from error
    raise error


def failed_index(message: str, n_ops: int, position: int, n_parts: int) -> int | None:
    """The failed operation of a change-set answer's error part.

    The ``<index>:`` prefix of the message names it; the service writes none for the
    first operation (recorded 2017 and 2021), so a lone error part without one is
    operation 0.

    Example::

        >>> failed_index("2:The specified entity already exists.", 3, 0, 1)
        2
        >>> failed_index("The specified resource does not exist.", 3, 0, 1)
        0
    """
    head = message.split(":", 1)[0].strip() if message else ""
    if head.isdigit():
        index = int(head)
        if 0 <= index < n_ops:
            return index
    if n_parts == n_ops:
        return position
    if n_parts == 1 and n_ops > 0:
        return 0
    return None
