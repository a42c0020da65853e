"""What a bulk load takes and gives: :class:`BulkOptions` (limits, window, attempts),
:class:`TableWrite` (an item routed to a table), and what comes back:
:class:`BulkFailure` per operation not applied, :class:`BulkProgress` snapshots for a
progress callback, :class:`BulkResult` at the end (:class:`BulkError` when asked to raise).

Example::

    >>> BulkOptions().partition_rate, BulkOptions().account_rate
    (2000.0, 20000.0)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from azt._core.batch import BatchOperation
from azt._core.config import AmbiguousOutcomePolicy
from azt._errors import AztError, ValidationError

__all__ = [
    "BulkError",
    "BulkFailure",
    "BulkOptions",
    "BulkProgress",
    "BulkResult",
    "TableWrite",
    "WriteKind",
]

WriteKind = Literal["insert", "upsert-merge", "upsert-replace", "merge", "replace", "delete"]
"""What a bulk load does with a plain entity (a mapping or an entity object)."""

WRITE_KINDS: tuple[WriteKind, ...] = (
    "insert",
    "upsert-merge",
    "upsert-replace",
    "merge",
    "replace",
    "delete",
)


def _positive(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValidationError(f"{attribute.name} must be a number > 0, got {value!r}")


def _positive_int(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(f"{attribute.name} must be an int >= 1, got {value!r}")


def _concurrency(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None:
        _positive_int(_, attribute, value)


@attrs.frozen
class BulkOptions:
    """How a bulk load runs.

    ``partition_rate`` / ``account_rate``: the most entities per second sent to one
    partition and to the account (defaults: Azure's published targets, 2,000 and 20,000);
    the load adapts below them when the service pushes back. ``concurrency``: transactions
    in flight at once, ``None`` (default) for adaptive between 1 and ``max_concurrency``
    (starting at ``initial_concurrency``). ``window`` / ``window_bytes``: how many input
    operations (and encoded bytes) may be read but not yet finished: the input is never
    read further ahead. ``linger``: a partition's partial transaction waits at most this
    long for more operations. ``max_attempts``: attempts per transaction before its
    operations are reported failed (throttling included). ``ambiguous_outcome``: what to
    do when a transaction's answer is lost: ``ASSUME_SUCCEEDED`` (default) reads its
    entities back and completes what is already applied, resending the rest; ``RAISE``
    and ``REPORT_ERROR`` report its operations as failed (with the error) instead.
    ``decrease`` is the multiplicative cut on throttling or rising latency (``latency_factor``
    times the moving baseline); ``checkpoint_interval`` / ``progress_interval`` how often
    (seconds) the checkpoint is saved and the progress callback called.

    Example::

        >>> opts = BulkOptions(partition_rate=100, account_rate=1000, concurrency=8)
        >>> opts.concurrency
        8
    """

    partition_rate: float = attrs.field(default=2000.0, converter=float, validator=_positive)
    account_rate: float = attrs.field(default=20000.0, converter=float, validator=_positive)
    concurrency: int | None = attrs.field(default=None, validator=_concurrency)
    initial_concurrency: int = attrs.field(default=8, validator=_positive_int)
    max_concurrency: int = attrs.field(default=128, validator=_positive_int)
    window: int = attrs.field(default=20_000, validator=_positive_int)
    window_bytes: int = attrs.field(default=64 * 1024 * 1024, validator=_positive_int)
    linger: float = attrs.field(default=0.25, validator=_positive)
    max_attempts: int = attrs.field(default=30, validator=_positive_int)
    ambiguous_outcome: AmbiguousOutcomePolicy = attrs.field(
        default=AmbiguousOutcomePolicy.ASSUME_SUCCEEDED,
        validator=attrs.validators.instance_of(AmbiguousOutcomePolicy),
    )
    decrease: float = attrs.field(default=0.85, validator=_positive)
    latency_factor: float = attrs.field(default=4.0, validator=_positive)
    checkpoint_interval: float = attrs.field(default=1.0, validator=_positive)
    progress_interval: float = attrs.field(default=0.5, validator=_positive)

    def __attrs_post_init__(self) -> None:
        if not self.decrease < 1:
            raise ValidationError(f"decrease must be between 0 and 1, got {self.decrease}")


@attrs.frozen
class TableWrite:
    """An input item routed to a table: ``item`` is an entity (a mapping or an entity
    object, written as the load's ``kind``) or a :class:`azt.BatchOperation`.

    Example::

        >>> TableWrite("movies", {"PartitionKey": "p", "RowKey": "r"}).table
        'movies'
    """

    table: str
    item: Any


@attrs.frozen
class BulkFailure:
    """An input operation that was not applied: ``index`` (its 0-based position in the
    input), its table, keys and kind, the service's ``status`` and ``code`` (``None`` when
    refused before sending, e.g. invalid input), ``message`` and the ``error`` itself.
    ``ambiguous``: an earlier attempt of it got no answer, so it may have been applied
    after all (a ``412``/``404``/``409`` on the resend can be the consequence of our own
    write, or of a change made after it).

    Example::

        for failure in result.failures:
            print(failure.index, failure.row_key, failure.status, failure.code)
    """

    index: int
    table: str
    partition_key: str | None
    row_key: str | None
    kind: str
    status: int | None
    code: str | None
    message: str
    error: BaseException | None = attrs.field(eq=False, repr=False)
    ambiguous: bool = False


def describe_item(item: Any, table: str | None) -> tuple[str, str | None, str | None, str]:
    """``(table, PartitionKey, RowKey, kind)`` of an input item, as a :class:`BulkFailure`
    names it when the item is refused before it becomes an operation (keys that are not
    strings: None; ``table``: the load's default table unless a :class:`TableWrite`
    names one).

    Example::

        >>> describe_item({"PartitionKey": "p", "RowKey": 7}, "movies")
        ('movies', 'p', None, 'entity')
    """
    if isinstance(item, TableWrite):
        table, item = item.table, item.item
    kind = item.kind if isinstance(item, BatchOperation) else "entity"
    data = item.entity if isinstance(item, BatchOperation) else item
    pk = rk = None
    if isinstance(data, Mapping):
        pk = data.get("PartitionKey")
        rk = data.get("RowKey")
    return (
        table or "",
        pk if isinstance(pk, str) else None,
        rk if isinstance(rk, str) else None,
        kind,
    )


@attrs.frozen
class BulkProgress:
    """A snapshot of a running load, given to the ``progress`` callback.

    ``read``: input positions read; ``written``: operations acknowledged (applied);
    ``failed``; ``skipped``: positions done by an earlier run (checkpoint); ``pending``:
    read but not finished; ``requests`` / ``retries`` / ``throttled``: transactions sent,
    of them resent, and answered with throttling (503, 429, OperationTimedOut);
    ``resolved``: operations whose lost answer was resolved by reading back;
    ``rate``: entities per second over the last two seconds; ``concurrency``: the current
    limit of transactions in flight; ``account_rate``: the current pace (entities/s);
    ``elapsed`` seconds; ``done``: the load has finished.

    Example::

        def show(p: BulkProgress) -> None:
            print(f"{p.written} written, {p.rate:.0f}/s, concurrency {p.concurrency}")
    """

    read: int
    written: int
    failed: int
    skipped: int
    pending: int
    requests: int
    retries: int
    throttled: int
    resolved: int
    rate: float
    concurrency: int
    account_rate: float
    elapsed: float
    done: bool = False


@attrs.define
class BulkResult:
    """The outcome of a bulk load: counts, every :class:`BulkFailure` (in input order),
    and the request statistics: ``requests`` transactions sent (``retries`` of them
    resent, ``throttled`` answered with throttling), ``resolved`` operations found applied
    by reading back, ``reads`` queries of a transaction's keys after a conflict (which
    found the transaction's other conflicts at once).

    Example::

        result = await azt.bulk.load(table, rows)
        print(result.written, "written,", len(result.failures), "failed")
        result.raise_for_failures()
    """

    read: int = 0
    written: int = 0
    skipped: int = 0
    failures: list[BulkFailure] = attrs.field(factory=list)
    requests: int = 0
    retries: int = 0
    throttled: int = 0
    resolved: int = 0
    elapsed: float = 0.0
    reads: int = 0

    @property
    def ok(self) -> bool:
        """Whether every operation read was applied (or done before, by the checkpoint).

        Example::

            if not result.ok:
                print(len(result.failures), "failed")
        """
        return not self.failures

    @property
    def throttled_share(self) -> float:
        """The share of transaction requests answered with throttling.

        Example::

            print(f"{result.throttled_share:.1%} throttled")
        """
        return self.throttled / self.requests if self.requests else 0.0

    def raise_for_failures(self) -> None:
        """Raise :class:`BulkError` when an operation was not applied.

        Example::

            (await azt.bulk.load(table, rows)).raise_for_failures()
        """
        if self.failures:
            raise BulkError(self)


class BulkError(AztError):
    """Operations of a bulk load were not applied; ``result`` is the :class:`BulkResult`
    (``result.failures`` names each by input index, keys and the service's error).

    Example::

        try:
            (await azt.bulk.load(table, rows)).raise_for_failures()
        except BulkError as exc:
            for f in exc.result.failures:
                print(f.index, f.code, f.message)
    """

    def __init__(self, result: BulkResult) -> None:
        self.result = result
        failures = result.failures
        lines = [
            f"input {f.index} ({f.kind} {f.table} PartitionKey={f.partition_key!r}, "
            f"RowKey={f.row_key!r}): {f.status or ''} {f.code or ''} {f.message}".replace("  ", " ")
            for f in failures[:10]
        ]
        if len(failures) > 10:
            lines.append(f"... and {len(failures) - 10} more (see .result.failures)")
        super().__init__(
            f"{len(failures)} of {result.read} operations were not applied:\n  "
            + "\n  ".join(lines)
        )
