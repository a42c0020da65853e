"""``TableContext``: the unit of work over a :class:`azt.TableServiceClient`.

A context tracks entity objects (declarative :class:`azt.entity.Entity` instances,
:class:`azt.dynamic.DynamicEntity` objects or dict-shaped entities), finds what changed,
and sends the changes on :meth:`TableContext.save_changes`, the way the legacy .NET
``TableServiceContext`` does (seed article "How to get most out of Windows Azure
Tables")::

    ctx = TableContext(service)
    ctx.add("movies", Movie("Action", "White Water Rapids Survival"))
    await ctx.save_changes()

    async for movie in ctx.query(Movie, "movies").where(
        (Movie.PartitionKey == "Action") & (Movie.rating > 4.0)
    ):
        movie.favorite = True             # found by diff: no update() call needed
    await ctx.save_changes(SaveChangesOptions.BATCH)

Rules, in short (details on each method):

* Entities are tracked by ``(table, PartitionKey, RowKey)``; one object per key.
* Queries through the context track their results with their ETags and merge them with
  tracked entities per :class:`MergeOption` (default ``PRESERVE_CHANGES``).
* Updates are conditional on the tracked ETag (``If-Match``); attach with ``"*"`` for
  unconditional writes, or with ``None`` so that saving upserts.
* A MERGE sends only the changed properties; ``REPLACE_ON_UPDATE`` sends the whole entity
  with PUT, so properties removed locally disappear on the server.
* What a save completed moves to Unchanged with its new ETag at once; what failed (or was
  not sent) stays pending. Saving again resends only what is still pending.
* A context serves one logical operation at a time: a second save (or a query, or
  add/attach/update/delete/detach) while a save runs raises :class:`ContextBusyError`.
"""

from azt._uow.context import TableContext
from azt._uow.query import ContextQuery
from azt._uow.types import (
    ContextBusyError,
    EntityState,
    IdentityConflictError,
    MergeOption,
    OperationResult,
    SaveChangesError,
    SaveChangesOptions,
    SaveChangesResult,
    TrackingError,
)

__all__ = [
    "ContextBusyError",
    "ContextQuery",
    "EntityState",
    "IdentityConflictError",
    "MergeOption",
    "OperationResult",
    "SaveChangesError",
    "SaveChangesOptions",
    "SaveChangesResult",
    "TableContext",
    "TrackingError",
]
