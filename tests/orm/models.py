"""Entity classes shared by the ORM tests (module level, so annotations resolve)."""

from __future__ import annotations

import enum
import uuid
from datetime import datetime
from decimal import Decimal

from azt.edm import EdmType
from azt.entity import Converter, Entity, Int64, Prop, prop, register_converter


class Genre(enum.Enum):
    ACTION = "Action"
    COMEDY = "Comedy"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


register_converter(Decimal, Converter(EdmType.STRING, to_wire=str, from_wire=Decimal))


class Movie(Entity):
    """The seeds' Movie, plus a property of each EDM type."""

    release_year: Prop[int] = prop(name="ReleaseYear", default=2000)
    rating: Prop[float] = prop(name="Rating", default=0.0)
    language: Prop[str | None] = prop(name="Language", default=None)
    favorite: Prop[bool] = prop(name="Favorite", default=False)


class AllTypes(Entity):
    """Twelve user properties covering the eight EDM types and converters."""

    s: Prop[str] = prop(default="")
    i32: Prop[int] = prop(default=0)
    i64: Prop[Int64] = prop(default=0)
    d: Prop[float] = prop(default=0.0)
    b: Prop[bool] = prop(default=False)
    dt: Prop[datetime | None] = prop(default=None)
    g: Prop[uuid.UUID | None] = prop(default=None)
    bin: Prop[bytes | None] = prop(default=None)
    genre: Prop[Genre] = prop(default=Genre.ACTION)
    level: Prop[Level] = prop(default=Level.LOW)
    price: Prop[Decimal | None] = prop(default=None)
    opt: Prop[str | None] = prop(default=None)


class Required(Entity):
    """A class with a property that has no default."""

    title: Prop[str]
    count: Prop[Int64] = prop(edm=EdmType.INT64, default=0)


class Member(Entity):
    """The seed's member row: RowKey "Member", PartitionKey = member id."""

    name: Prop[str] = prop(name="Name", default="")
    rental_count: Prop[int] = prop(name="RentalCount", default=0)


class Rental(Entity):
    """The seed's rental rows: RowKey "Rental_<Movie Name>"."""

    movie: Prop[str] = prop(name="Movie", default="")
    due: Prop[datetime | None] = prop(name="Due", default=None)


class Kinded(Entity):
    """A row chosen by a discriminator property."""

    kind: Prop[str] = prop(name="Kind", default="kinded")
    n: Prop[int] = prop(default=0)
