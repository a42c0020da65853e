"""The examples in the ORM modules' docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

from azt.entity import Entity, EntityBase, Prop, entity_info, prop
from azt.migrate import Evolution, renamed
from azt.query import Query


class Movie(Entity):
    """The class the docstring examples refer to."""

    rating: Prop[float] = prop(default=0.0)
    release_year: Prop[int] = prop(name="ReleaseYear", default=2000)
    language: Prop[str | None] = prop(default=None)
    favorite: Prop[bool] = prop(default=False)


class Rental(Entity):
    """Ditto."""

    movie: Prop[str]


class Evolving(Entity):
    """A class whose property ``name`` was stored as ``Name`` (azt._orm.evolution)."""

    name: Prop[str] = prop(default="")

    class Meta:
        evolution = Evolution(renamed("name", "Name"))


@pytest.mark.parametrize(
    "module",
    [
        "azt._orm.values",
        "azt._orm.expr",
        "azt._orm.columns",
        "azt._orm.entity",
        "azt._orm.codec",
        "azt._orm.codec_hooks",
        "azt._orm.page_decoder",
        "azt._orm.planner",
        "azt._orm.pages",
        "azt._orm.query",
        "azt._orm.keys",
        "azt._orm.dynamic",
        "azt._orm.indexes",
        "azt._orm.index_plans",
        "azt._orm.evolution",
        "azt._orm.migrations",
        "azt._orm.migration_runner",
        "azt._orm.migration_records",
        "azt._orm.migration_journal",
        "azt._orm.migration_units",
        "azt._orm.scan",
        "azt._orm.scan_parts",
        "azt._orm.scan_ranges",
    ],
)
def test_docstring_examples(module: str) -> None:
    mod = importlib.import_module(module)
    result = doctest.testmod(
        mod,
        extraglobs={
            "Movie": Movie,
            "Rental": Rental,
            "Entity": Entity,
            "Query": Query,
            "Prop": Prop,
            "prop": prop,
            "EntityBase": EntityBase,
            "Evolving": Evolving,
            "entity_info": entity_info,
        },
        optionflags=doctest.ELLIPSIS,
    )
    assert result.attempted > 0
    assert result.failed == 0
