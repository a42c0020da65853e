"""The blocking API: the same clients, queries and context as :mod:`azt`, without ``await``.

``azt.sync.TableServiceClient``, ``TableClient``, ``Query``, ``TableContext``,
``ContextQuery`` and ``EntityTable`` take the same arguments and return the same results
(entities, write results, pages) as their async twins, and raise the same :mod:`azt`
errors; pagers
(:class:`Pager`) and queries are iterated with ``for``, clients closed with ``with`` or
``close()``. Everything else (entities, conditions, EDM values, options, errors) is used
from :mod:`azt` as it is.

Each client runs the async implementation on a private event loop, driven by the calling
thread (no thread hop); it works in a program that already runs an event loop (a Jupyter
notebook), from several threads at once (one client may be shared: its calls take turns;
one client per thread runs them in parallel) and in a child after ``os.fork()``.

Example::

    import azt
    from azt.sync import TableServiceClient, Query

    class Movie(azt.Entity):
        rating: azt.Prop[float] = azt.prop(default=0.0)

    with TableServiceClient.from_connection_string(conn_str) as service:
        table = service.create_table_if_not_exists("movies")
        table.upsert_entity({"PartitionKey": "Action", "RowKey": "Heat", "rating": 4.5})
        for movie in Query(Movie, table).where(Movie.rating >= 4):
            print(movie.RowKey)
"""

from azt.sync._generated import (
    BatchWriter,
    ContextQuery,
    EntityTable,
    Pager,
    Query,
    TableClient,
    TableContext,
    TableServiceClient,
)

__all__ = [
    "BatchWriter",
    "ContextQuery",
    "EntityTable",
    "Pager",
    "Query",
    "TableClient",
    "TableContext",
    "TableServiceClient",
]
