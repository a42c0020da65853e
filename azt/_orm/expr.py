"""The condition tree of queries: ``Condition`` and its nodes (``Comparison``, ``And``,
``Or``, ``Not``), combined with ``&``, ``|``, ``~`` and compiled to ``$filter`` text.

A property is compared with a literal of its own type (two properties, ``None``,
NaN/infinity or a value of the wrong type are refused); ``startswith`` becomes a range the
service can evaluate. Conditions have no truth value.

Example::

    >>> str((Movie.rating > 4.0) & ~(Movie.language == "en"))
    "rating gt 4.0 and not (language eq 'en')"
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeAlias

import attrs

from azt._edm.types import EdmType, format_literal
from azt._errors import ValidationError
from azt._orm.values import Column, refuse_lone_surrogate, storage_value

__all__ = [
    "And",
    "Comparison",
    "Condition",
    "Conditional",
    "Not",
    "Or",
    "as_condition",
    "prefix_condition",
    "prefix_upper_bound",
    "utf16_successor",
]

#: what where(), &, | and ~ take: a condition, or a Boolean column on its own
Conditional: TypeAlias = "Condition | Column[bool] | Column[bool | None]"


class Condition:
    """A filter condition (immutable). Combine with ``&``, ``|``, ``~``; ``str()`` compiles.

    Example::

        >>> c = (Movie.rating > 4.0) & ~(Movie.language == "en")
        >>> str(c)
        "rating gt 4.0 and not (language eq 'en')"
    """

    __slots__ = ()

    def __and__(self, other: Conditional) -> Condition:
        return And.of(self, as_condition(other))

    def __rand__(self, other: Conditional) -> Condition:
        return And.of(as_condition(other), self)

    def __or__(self, other: Conditional) -> Condition:
        return Or.of(self, as_condition(other))

    def __ror__(self, other: Conditional) -> Condition:
        return Or.of(as_condition(other), self)

    def __invert__(self) -> Condition:
        if isinstance(self, Not):
            return self.item
        return Not(self)

    def __bool__(self) -> bool:
        raise TypeError(
            f"a query condition ({self}) has no truth value: use & | ~ instead of and/or/not, "
            "avoid chained comparisons (a < X < b), and pass conditions to Query.where()"
        )

    def __str__(self) -> str:
        return self.to_odata()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.to_odata()}>"

    def to_odata(self) -> str:
        """The ``$filter`` text of this condition.

        Example::

            >>> (Movie.PartitionKey == "O'Neil").to_odata()
            "PartitionKey eq 'O''Neil'"
        """
        raise NotImplementedError

    def comparisons(self) -> int:
        """How many comparisons the service counts in this condition (limit: 15).

        Example::

            >>> Movie.RowKey.startswith("Sh").comparisons()
            2
        """
        raise NotImplementedError


def as_condition(x: Conditional) -> Condition:
    """A condition from a condition or a bare Boolean column (``Movie.favorite``).

    Example::

        >>> str(as_condition(Movie.favorite))
        'favorite eq true'
    """
    if isinstance(x, Condition):
        return x
    if isinstance(x, Column):
        if x.edm is not EdmType.BOOLEAN or x.converter is not None:
            raise TypeError(
                f"{x.label()} is {x.edm}, not a Boolean; "
                "only Boolean properties can be used as conditions on their own"
            )
        return Comparison.build(x, "eq", True)
    if isinstance(x, bool):  # type: ignore[unreachable]
        raise TypeError(
            "got a bool where a condition was expected: was a column compared with a value of "
            "the wrong type (e.g. Movie.rating == 'x'), or 'and'/'or' used instead of & and |?"
        )
    raise TypeError(f"expected a query condition, got {type(x).__name__}")


_OPS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})


@attrs.frozen(eq=False, repr=False)
class Comparison(Condition):
    """``property op literal``; build it with the column operators (``Movie.rating > 4``).
    ``value`` is the Python value (normalised for the property's type), ``literal`` its
    OData spelling.

    Example::

        >>> cmp = Movie.rating >= 4
        >>> cmp.prop.wire, cmp.op, cmp.value, cmp.literal
        ('rating', 'ge', 4.0, '4.0')
    """

    prop: Column[Any]
    op: str
    value: Any
    literal: str

    @staticmethod
    def build(prop: Column[Any], op: str, value: Any) -> Comparison:
        """Check and build a comparison (the column operators call this).

        Example::

            >>> Comparison.build(Movie.rating, "gt", 4).literal
            '4.0'
        """
        label = prop.label()
        if op not in _OPS:
            raise ValueError(f"unknown comparison operator {op!r}")
        if isinstance(value, Column):
            raise ValidationError(
                f"{label} {op} {value.label()}: the Table service cannot compare two "
                "properties; filter on one and compare in Python"
            )
        if isinstance(value, Condition):
            raise ValidationError(f"{label} {op} <condition>: compare with a literal value")
        if value is None:
            raise ValidationError(
                f"{label} {op} None: null is not a $filter literal (the service never stores "
                "nulls; a missing property makes every comparison false)"
            )
        if prop.attr == "ETag":
            raise ValidationError("ETag cannot be filtered: it is not a stored property")
        wire_value = _literal_value(prop, value)
        if prop.converter is None:
            value = wire_value  # normalised (int -> float for Double, aware -> UTC ...)
        return Comparison(prop, op, value, format_literal(wire_value, prop.edm))

    def to_odata(self) -> str:
        """``wire-name op literal``.

        Example::

            >>> (Movie.release_year >= 1979).to_odata()
            'ReleaseYear ge 1979'
        """
        return f"{self.prop.wire} {self.op} {self.literal}"

    def comparisons(self) -> int:
        """One comparison.

        Example::

            >>> (Movie.rating > 4.0).comparisons()
            1
        """
        return 1


def _literal_value(prop: Column[Any], value: Any) -> Any:
    """The storage value of a literal compared with ``prop`` (type checked, not key-checked)."""
    try:
        return storage_value(prop, value, key_rules=False)
    except ValidationError as exc:
        raise ValidationError(f"in a comparison: {exc}") from None


@attrs.frozen(eq=False, repr=False)
class _Junction(Condition):
    """``And`` / ``Or``: several conditions joined by one word, flattened."""

    items: tuple[Condition, ...]
    _word: ClassVar[str] = ""

    @classmethod
    def of(cls, *items: Condition) -> Condition:
        """Join ``items`` (nested joins of the same kind are flattened); one item is
        returned as is.

        Example::

            >>> isinstance(And.of(Movie.favorite == True), Comparison)
            True
            >>> len(Or.of(Or.of(Movie.rating < 1.0, Movie.rating > 4.0), Movie.favorite).items)
            3
        """
        flat: list[Condition] = []
        for it in items:
            if isinstance(it, cls):
                flat.extend(it.items)
            else:
                flat.append(as_condition(it))
        if not flat:
            raise ValueError(f"{cls.__name__}.of() needs at least one condition")
        return flat[0] if len(flat) == 1 else cls(tuple(flat))

    def to_odata(self) -> str:
        """The items joined by the word; a nested join (the other kind: same kinds are
        flattened) is parenthesised.

        Example::

            >>> ((Movie.rating < 1.0) | (Movie.rating > 4.0)) & Movie.favorite
            <And (rating lt 1.0 or rating gt 4.0) and favorite eq true>
        """
        return f" {self._word} ".join(
            f"({c.to_odata()})" if isinstance(c, _Junction) else c.to_odata() for c in self.items
        )

    def comparisons(self) -> int:
        """The comparisons of all items.

        Example::

            >>> Movie.rating.between(1.0, 2.0).comparisons()
            2
        """
        return sum(c.comparisons() for c in self.items)


@attrs.frozen(eq=False, repr=False)
class And(_Junction):
    """All of several conditions (``And.of(a, b)``, or ``a & b``).

    Example::

        >>> str(And.of(Movie.rating > 1.0, Movie.rating < 2.0))
        'rating gt 1.0 and rating lt 2.0'
    """

    _word: ClassVar[str] = "and"


@attrs.frozen(eq=False, repr=False)
class Or(_Junction):
    """Any of several conditions (``Or.of(a, b)``, or ``a | b``).

    Example::

        >>> str(Or.of(Movie.PartitionKey == "A", Movie.PartitionKey == "B"))
        "PartitionKey eq 'A' or PartitionKey eq 'B'"
    """

    _word: ClassVar[str] = "or"


@attrs.frozen(eq=False, repr=False)
class Not(Condition):
    """Negation. Note the service's rule: a comparison on a missing property is false, so
    ``~(Movie.language == "en")`` also matches rows without ``language`` (unlike ``!=``).

    Example::

        >>> str(~(Movie.language == "en"))
        "not (language eq 'en')"
    """

    item: Condition

    def to_odata(self) -> str:
        """``not (item)``.

        Example::

            >>> (~Movie.favorite).to_odata()
            'not (favorite eq true)'
        """
        return f"not ({self.item.to_odata()})"

    def comparisons(self) -> int:
        """The comparisons of the negated condition.

        Example::

            >>> (~Movie.rating.between(1.0, 2.0)).comparisons()
            2
        """
        return self.item.comparisons()


def utf16_successor(c: str) -> str | None:
    """The character right after ``c`` in the service's order (UTF-16 code units), or
    ``None`` after U+FFFF, the last one. That order runs U+0000..U+D7FF, then the astral
    characters U+10000..U+10FFFF (their surrogate pairs start at 0xD800), then
    U+E000..U+FFFF; so U+D7FF is followed by U+10000 and U+10FFFF by U+E000.

    Example::

        >>> utf16_successor("a")
        'b'
        >>> utf16_successor("\\ud7ff") == "\\U00010000", utf16_successor("\\U0010ffff") == "\\ue000"
        (True, True)
        >>> utf16_successor("\\uffff") is None
        True
    """
    o = ord(c)
    if o == 0xFFFF:
        return None
    if o == 0xD7FF:
        return "\U00010000"
    if o == 0x10FFFF:
        return "\ue000"
    if 0xD800 <= o <= 0xDFFF:
        raise ValidationError(f"{c!r} is a lone surrogate, which no key or string can hold")
    return chr(o + 1)


def prefix_upper_bound(prefix: str) -> str | None:
    """The smallest string greater than every string starting with ``prefix`` in the
    service's order (UTF-16 code units), ``None`` if there is none; ``"Sh"`` -> ``"Si"``,
    the seeds' ``"Sports;"`` -> ``"Sports<"``.

    Trailing U+FFFF characters (the last character in that order) are dropped and the
    character before them is replaced by its successor (:func:`utf16_successor`): the
    bound of ``"a\\uffff"`` is ``"b"``, not ``"a\\U00010000"``, which sorts *below*
    ``"a\\uffff"`` because its surrogate pair starts with 0xD800. Where the next code unit
    would be half a surrogate pair (after U+D7FF, or after U+10FFFF's pair) the bound is
    the next whole character, which is exact: no stored string holds a lone surrogate.
    A lone surrogate in ``prefix`` raises :class:`azt.ValidationError`.

    Example::

        >>> prefix_upper_bound("Sh"), prefix_upper_bound(""), prefix_upper_bound("a\\uffff")
        ('Si', None, 'b')
        >>> prefix_upper_bound("\\uffff\\uffff") is None
        True
    """
    if not prefix.isascii():
        refuse_lone_surrogate("a prefix", prefix)
    s = prefix.rstrip("\uffff")
    if not s:
        return None
    nxt = utf16_successor(s[-1])
    assert nxt is not None  # s does not end in U+FFFF
    return s[:-1] + nxt


def prefix_condition(prop: Column[Any], prefix: str) -> Condition:
    """``prop`` starts with ``prefix``, as the range the service can evaluate.

    Example::

        >>> str(prefix_condition(Movie.RowKey, "Sports;"))
        "RowKey ge 'Sports;' and RowKey lt 'Sports<'"
    """
    if prop.edm is not EdmType.STRING or prop.converter is not None:
        raise ValidationError(
            f"{prop.label()}.startswith(): only Edm.String properties have prefixes"
        )
    if not isinstance(prefix, str):
        raise ValidationError(f"{prop.label()}.startswith() needs a str prefix")
    lower = Comparison.build(prop, "ge", prefix)
    upper = prefix_upper_bound(prefix)
    if upper is None:
        return lower
    return And.of(lower, Comparison.build(prop, "lt", upper))
