"""Schema evolution and migrations: entity classes change, stored rows do not.

* **Evolution on the class** (``Meta.evolution``): earlier names of a property
  (:func:`renamed`), conversions on read (:func:`widened`, :func:`parsed`,
  :func:`converted`), defaults for rows written before a property existed
  (:func:`defaulted`) and a shape marker, so the application reads both shapes, typed,
  while a migration runs; queries built from the class see old rows where the service
  can, and ``explain()`` says where it cannot.
* **Migrations as code**: a :class:`Migration` is an ordered list of named steps
  (:func:`rename`, :func:`retype`, :func:`backfill`, :func:`drop`, :func:`rekey`,
  :func:`upgrade`), run online by :func:`run_migrations` (partition-parallel, resumable,
  exactly once per row, conditional on each row's ETag), checked by
  :func:`verify_migrations`, recorded in the ``AztMigrations`` table. See
  ``docs/migrations.md`` and ``azt migrate``.

Example::

    from azt.migrate import Evolution, Migration, renamed, run_migrations, upgrade

    class Customer(Entity, table="customers"):
        full_name: Prop[str] = prop(name="FullName", default="")

        class Meta:
            evolution = Evolution(renamed("full_name", "Name"))

    await run_migrations(service, [Migration("0002_full_name", "customers", [upgrade(Customer)])])
"""

from azt._orm.evolution import (
    Change,
    Evolution,
    converted,
    defaulted,
    dropped,
    parsed,
    renamed,
    widened,
)
from azt._orm.migration_runner import (
    MIGRATIONS_TABLE,
    MigrationProgress,
    MigrationReport,
    MigrationStatus,
    migration_status,
    run_migrations,
    verify_migrations,
)
from azt._orm.migrations import (
    Migration,
    RowPlan,
    Step,
    backfill,
    drop,
    rekey,
    rename,
    retype,
    upgrade,
)

__all__ = [
    "MIGRATIONS_TABLE",
    "Change",
    "Evolution",
    "Migration",
    "MigrationProgress",
    "MigrationReport",
    "MigrationStatus",
    "RowPlan",
    "Step",
    "backfill",
    "converted",
    "defaulted",
    "drop",
    "dropped",
    "migration_status",
    "parsed",
    "rekey",
    "rename",
    "renamed",
    "retype",
    "run_migrations",
    "upgrade",
    "verify_migrations",
    "widened",
]
