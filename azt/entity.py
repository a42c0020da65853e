"""Declarative entity classes over the eight EDM types.

An entity class lists its properties as typed annotations::

    from datetime import datetime
    from azt.entity import Entity, Int64, Prop, prop

    class Movie(Entity):
        rating: Prop[float] = prop(default=0.0)
        release_year: Prop[int] = prop(name="ReleaseYear", default=2000)
        views: Prop[Int64] = prop(default=0)
        language: Prop[str | None] = prop(default=None)
        favorite: Prop[bool] = prop(default=False)

    m = Movie("Action", "Terminator", rating=4.5)
    m.rating            # 4.5  (a float, at native slot speed)
    Movie.rating > 4.0  # a query condition (azt.query.Comparison)

Design, in short:

* The class is an ``attrs`` slotted class built by the metaclass :class:`EntityMeta`, which
  carries ``typing.dataclass_transform`` so mypy and IDEs see the generated ``__init__``
  (``PartitionKey`` and ``RowKey`` positional, every other property keyword-only).
* ``Prop[T]`` is the annotation: on an instance it reads and writes a ``T``; on the class it
  is the column object used to build queries. At run time instance reads go straight to the
  slot (no Python-level descriptor); class-level reads are answered by the metaclass. The
  alternative (a Python descriptor wrapping each slot) was measured in
  ``benchmarks/orm_bench.py`` and is several times slower per read.
* EDM types are inferred from ``T``: ``str`` String, ``int`` Int32, ``Int64`` (an
  ``Annotated[int, EdmType.INT64]`` alias) Int64, ``float`` Double, ``bool`` Boolean,
  ``datetime`` DateTime, ``uuid.UUID`` Guid, ``bytes`` Binary; ``Enum`` subclasses and types
  registered with :func:`register_converter` are stored through a converter.
* Values are checked when constructed and when assigned (:class:`azt.ValidationError`):
  Int32/Int64 ranges, string and binary sizes (64 KiB), key characters and length, and
  DateTime rules. **DateTime rule:** naive datetimes are refused (there is no safe guess of
  their zone); aware datetimes are converted to UTC; the range is 1601-01-01 .. 9999-12-31.
* ``None`` is only accepted for ``Optional`` properties and is never sent (the service does
  not store nulls).
* Typing: ``Movie.rating > 4.0`` is a ``Comparison``; a comparison the builder refuses
  (``Movie.rating == "x"``, ``Movie.language == None``) has the static type ``bool``, which
  ``Query.where()``, ``&``, ``|`` and ``~`` reject, so mypy flags it where it is used. (It
  cannot be flagged at the ``==`` itself: mypy then falls back to ``object.__eq__``.)
  ``<``/``>`` with a value of the wrong type are errors on the spot. ``bool`` is an ``int``
  to type checkers, so ``Movie.year == True`` is only refused at run time.
* System properties keep their wire names, as in .NET code ported from
  ``TableServiceEntity``: ``PartitionKey``, ``RowKey``, ``Timestamp`` (server-set) and
  ``ETag`` (from the response; never sent as a property). ``Timestamp`` and ``ETag`` do not
  take part in ``==``.
* Keys with domain names: derive from :class:`EntityBase` (the base of every entity class,
  without keys) and declare them with :func:`partition_key` / :func:`row_key`
  (``customer_id: Prop[str] = partition_key()``); the column and the value also answer to
  ``PartitionKey`` / ``RowKey``. :class:`EntityTable` binds a class to a table for
  PynamoDB-style class-level calls (``get``, ``query``, ``scan``, ``save``, ``delete``).
"""

from azt._orm.columns import EntityInfo, Int64, Prop, entity_info, partition_key, prop, row_key
from azt._orm.entity import Entity, EntityBase, EntityMeta
from azt._orm.entity_table import EntityTable
from azt._orm.values import Converter, register_converter

__all__ = [
    "Converter",
    "Entity",
    "EntityBase",
    "EntityInfo",
    "EntityMeta",
    "EntityTable",
    "Int64",
    "Prop",
    "entity_info",
    "partition_key",
    "prop",
    "register_converter",
    "row_key",
]
