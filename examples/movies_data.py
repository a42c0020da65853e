"""The movie catalogue shared by the demo and the movie example.

``Movie`` follows the seed article: the category is the PartitionKey and the title the
RowKey, so a category is one partition and titles sort alphabetically inside it.

Example::

    >>> m = Movie("Action", "Heat", rating=4.5, year=1995)
    >>> (m.PartitionKey, m.RowKey, m.rating)
    ('Action', 'Heat', 4.5)
"""

from __future__ import annotations

from azt.entity import Entity, Int64, Prop, prop


class Movie(Entity):
    """A movie: PartitionKey = category, RowKey = title.

    Example::

        >>> Movie("SciFi", "Alien", rating=4.8, year=1979).year
        1979
    """

    rating: Prop[float] = prop(name="Rating", default=0.0)
    year: Prop[int] = prop(name="ReleaseYear", default=2000)
    favorite: Prop[bool] = prop(name="IsFavorite", default=False)
    views: Prop[Int64] = prop(name="Views", default=0)
    language: Prop[str | None] = prop(name="Language", default=None)


#: (category, title, rating, year) of the sample catalogue.
CATALOGUE: tuple[tuple[str, str, float, int], ...] = (
    ("Action", "Alien Raid", 3.9, 2011),
    ("Action", "Cop Out", 2.8, 2010),
    ("Action", "Heat", 4.6, 1995),
    ("Action", "Law Abiding Citizen", 3.7, 2009),
    ("Action", "Shaft", 3.4, 1971),
    ("Action", "Sherlock Holmes", 4.0, 2009),
    ("Action", "Shooter", 3.6, 2007),
    ("Action", "Speed", 3.9, 1994),
    ("Action", "Terminator", 4.7, 1984),
    ("Action", "White Water Rapids Survival", 2.1, 2008),
    ("Comedy", "Airplane!", 4.4, 1980),
    ("Comedy", "Groundhog Day", 4.6, 1993),
    ("Comedy", "Hot Fuzz", 4.3, 2007),
    ("Comedy", "Some Like It Hot", 4.5, 1959),
    ("Comedy", "Tootsie", 4.1, 1982),
    ("Drama", "Casablanca", 4.9, 1942),
    ("Drama", "Moonlight", 4.4, 2016),
    ("Drama", "Rocky", 4.2, 1976),
    ("Drama", "The Shawshank Redemption", 4.9, 1994),
    ("SciFi", "Alien", 4.8, 1979),
    ("SciFi", "Blade Runner", 4.7, 1982),
    ("SciFi", "Gattaca", 4.1, 1997),
    ("SciFi", "Sphere", 2.9, 1998),
    ("SciFi", "Star Wars", 4.8, 1977),
    ("SciFi", "The Matrix", 4.7, 1999),
    ("Thriller", "Memento", 4.5, 2000),
    ("Thriller", "Psycho", 4.6, 1960),
    ("Thriller", "Se7en", 4.6, 1995),
    ("War", "Das Boot", 4.7, 1981),
    ("War", "Dunkirk", 4.0, 2017),
)


def catalogue() -> list[Movie]:
    """Fresh :class:`Movie` objects for :data:`CATALOGUE` (favourites: rating >= 4.7).

    Example::

        >>> len(catalogue()) == len(CATALOGUE)
        True
    """
    return [
        Movie(cat, title, rating=rating, year=year, favorite=rating >= 4.7)
        for cat, title, rating, year in CATALOGUE
    ]
