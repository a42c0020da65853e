"""The ``$filter`` syntax tree: the parser's output, the compiler's and planner's input.

Boolean nodes (:data:`Node`) are ``Compare``, ``BoolProp``, ``Const``, ``Not``,
``And`` and ``Or``. ``Prop`` and ``Lit`` are operands; they appear in a finished
tree only inside a ``Compare`` (as its ``prop`` name and ``lit``), because the
parser turns a bare property into ``BoolProp`` and a bare ``true``/``false``
into ``Const``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from ..model import EdmName, Value

#: Comparison operators, and the operator each becomes when its operands swap sides.
FLIPPED = {"eq": "eq", "ne": "ne", "gt": "lt", "ge": "le", "lt": "gt", "le": "ge"}
#: The operator meaning ``not (a OP b)`` for totally ordered values.
NEGATED = {"eq": "ne", "ne": "eq", "gt": "le", "ge": "lt", "lt": "ge", "le": "gt"}
#: Python spelling of each comparison operator.
PY_OPS = {"eq": "==", "ne": "!=", "gt": ">", "ge": ">=", "lt": "<", "le": "<="}


@dataclass(frozen=True, slots=True)
class Prop:
    """A property reference (operand)."""

    name: str
    pos: int


@dataclass(frozen=True, slots=True)
class Lit:
    """A typed literal (operand); ``text`` is its source spelling."""

    edm: EdmName
    value: Value
    text: str
    pos: int


@dataclass(frozen=True, slots=True)
class Compare:
    """``prop OP lit``, normalised so that the property is on the left."""

    op: str
    prop: str
    lit: Lit


@dataclass(frozen=True, slots=True)
class BoolProp:
    """A bare property used as a condition: true iff it is an ``Edm.Boolean`` holding true."""

    prop: str


@dataclass(frozen=True, slots=True)
class Const:
    """A bare ``true`` or ``false``."""

    value: bool


@dataclass(frozen=True, slots=True)
class Not:
    """Negation (two-valued: a comparison on a missing property is false, its ``not`` true)."""

    operand: Node


@dataclass(frozen=True, slots=True)
class And:
    """Conjunction of two or more conditions (flattened)."""

    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or:
    """Disjunction of two or more conditions (flattened)."""

    items: tuple[Node, ...]


Node: TypeAlias = Compare | BoolProp | Const | Not | And | Or
Operand: TypeAlias = Prop | Lit


def count_comparisons(node: Node) -> int:
    """Comparisons in a tree; a bare Boolean property counts as one (``Flag`` = ``Flag eq true``).

    Example::

        >>> count_comparisons(And((BoolProp("A"), BoolProp("B"))))
        2
    """
    if isinstance(node, Compare | BoolProp):
        return 1
    if isinstance(node, Const):
        return 0
    if isinstance(node, Not):
        return count_comparisons(node.operand)
    return sum(count_comparisons(item) for item in node.items)
