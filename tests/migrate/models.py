"""The classes of the migration tests: version 1 of a customer, as it was stored, and
version 2, which reads both shapes; and the migrations between them (``azt migrate``
loads this module with ``--migrations tests.migrate.models``)."""

from __future__ import annotations

import os
from datetime import datetime

from azt.entity import Entity, Int64, Prop, prop
from azt.indexes import Holds, Index
from azt.migrate import (
    Evolution,
    Migration,
    defaulted,
    drop,
    dropped,
    parsed,
    renamed,
    upgrade,
    widened,
)

#: the table the scenario migrates (the CLI test names it through the environment)
TABLE = os.environ.get("AZT_MIGRATE_TEST_TABLE", "customers")


class CustomerV1(Entity):
    """Version 1: ``Name``, an Int32 ``Visits``, ``Joined`` as ISO text, no tier."""

    Name: Prop[str] = prop(default="")
    Visits: Prop[int] = prop(default=0)
    Joined: Prop[str] = prop(default="")
    City: Prop[str] = prop(default="")
    Legacy: Prop[str | None] = prop(default=None)

    class Meta:
        indexes = (
            Index("by_city", "City"),
            Index("city_copy", "City", holds=Holds.ENTITY),
        )


class Customer(Entity):
    """Version 2: ``FullName``, an Int64 ``Visits``, a DateTime ``Joined``, a ``Tier``;
    rows of version 1 read as version 2."""

    full_name: Prop[str] = prop(name="FullName", default="")
    visits: Prop[Int64] = prop(name="Visits", default=0)
    joined: Prop[datetime | None] = prop(name="Joined", default=None)
    tier: Prop[str] = prop(name="Tier")
    city: Prop[str] = prop(name="City", default="")

    class Meta:
        indexes = (
            Index("by_city", "city"),
            Index("city_copy", "city", holds=Holds.ENTITY),
        )
        evolution = Evolution(
            renamed("full_name", "Name"),
            widened("visits"),
            parsed("joined"),
            defaulted("tier", "basic"),
            dropped("Legacy"),
            marker="Shape",
            version=2,
        )


migrations = [
    Migration("0001_customer_v2", TABLE, [upgrade(Customer)]),
    Migration("0002_drop_legacy", TABLE, [drop("Legacy")], entity=Customer),
]
