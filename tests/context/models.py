"""Entity classes shared by the context tests (module level, so annotations resolve)."""

from __future__ import annotations

from azt.entity import Entity, Int64, Prop, prop


class Movie(Entity):
    """The seed article's Movie."""

    release_year: Prop[int] = prop(name="ReleaseYear", default=2000)
    rating: Prop[float] = prop(name="Rating", default=0.0)
    language: Prop[str | None] = prop(name="Language", default=None)
    favorite: Prop[bool] = prop(name="Favorite", default=False)
    views: Prop[Int64] = prop(name="Views", default=0)


class Counter(Entity):
    """A counter incremented under optimistic concurrency."""

    count: Prop[int] = prop(name="Count", default=0)
