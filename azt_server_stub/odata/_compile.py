"""Compile a ``$filter`` tree into one Python function (the evaluator).

The tree is translated once into the source of a single function of the
entity and compiled with :func:`compile`; evaluating it is one call with no
nested calls. Property names and literal values enter the source only as
``repr()`` of str/int/bytes/finite float (which cannot inject code) or as
closure variables.

Typing rules (PROTOCOL.md 7.3), per comparison ``Prop OP literal``:

* the property must exist; a missing property makes the comparison false for
  every operator, ``ne`` included (``not`` then negates the false);
* the stored type must equal the literal's type, except that an ``Edm.Int32``
  literal (no ``L``) also compares numerically with ``Edm.Int64`` and
  ``Edm.Double`` properties. Literals are never narrowed, and an ``Edm.Int64``
  literal does not match ``Edm.Double`` properties (both observed on Azure);
* any other type pairing is false for every operator;
* strings compare ordinally by UTF-16 code units (as the service and the
  backend's key order do; see :mod:`._utf16`), DateTimes by ticks, Guids by their
  128-bit value (the order of their canonical hex text), Binary byte-wise,
  Booleans with false < true, Doubles by IEEE rules (NaN equals nothing).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..model import Edm, EdmName, Entity
from ._ast import PY_OPS, And, BoolProp, Compare, Const, Node, Not, Or
from ._utf16 import to_units

#: Stored types a literal of each type compares with.
ACCEPTS: dict[EdmName, tuple[EdmName, ...]] = {
    Edm.STRING: (Edm.STRING,),
    Edm.INT32: (Edm.INT32, Edm.INT64, Edm.DOUBLE),
    Edm.INT64: (Edm.INT64,),
    Edm.DOUBLE: (Edm.DOUBLE,),
    Edm.BOOLEAN: (Edm.BOOLEAN,),
    Edm.DATETIME: (Edm.DATETIME,),
    Edm.GUID: (Edm.GUID,),
    Edm.BINARY: (Edm.BINARY,),
}

_SYSTEM = {"PartitionKey": ("e.pk", Edm.STRING), "RowKey": ("e.rk", Edm.STRING)}


class _Gen:
    """Source generator: collects constants and produces one expression per node.

    Strings, integers, bytes and finite floats are written into the source as
    literals (loaded as code constants, the fastest access); other values (EDM
    type tuples, NaN and infinities, helper functions) become closure variables.
    """

    def __init__(self) -> None:
        self.consts: dict[str, Any] = {}
        self._n = 0

    def const(self, value: Any) -> str:
        kind = type(value)
        if kind is str or kind is int or kind is bytes or kind is bool:
            return repr(value)
        if kind is float and math.isfinite(value):
            return f"({value!r})"
        return self.bound(value)

    def edm(self, edm: EdmName) -> str:
        """The name of a closure variable holding the type ``edm`` itself: types are
        compared by identity, and a string literal in the source would be another object."""
        return self.bound(edm)

    def bound(self, value: Any) -> str:
        """The name of a closure variable holding ``value`` (never inlined)."""
        name = f"c{len(self.consts)}"
        self.consts[name] = value
        return name

    def function(self, param: str, body: str) -> Callable[[Any], bool]:
        """Compile ``def matches(param): return body`` with the collected closure variables."""
        names = ", ".join(self.consts)
        source = (
            f"def make({names}):\n"
            f"    def matches({param}):\n"
            f"        return {body}\n"
            f"    return matches\n"
        )
        namespace: dict[str, Any] = {}
        exec(compile(source, "<$filter>", "exec"), namespace)
        fn: Callable[[Any], bool] = namespace["make"](**self.consts)
        return fn

    def temp(self) -> str:
        self._n += 1
        return f"t{self._n}"

    def node(self, node: Node, leaf: Callable[[_Gen, Compare | BoolProp], str]) -> str:
        if isinstance(node, Compare | BoolProp):
            return leaf(self, node)
        if isinstance(node, Const):
            return "True" if node.value else "False"
        if isinstance(node, Not):
            return f"(not {self.node(node.operand, leaf)})"
        joiner = " and " if isinstance(node, And) else " or "
        assert isinstance(node, And | Or)
        return "(" + joiner.join(self.node(item, leaf) for item in node.items) + ")"


def _needs_units(value: str) -> bool:
    # Code-point and UTF-16 order agree against a literal without surrogates, astral or
    # U+E000..U+FFFF characters (see _utf16); only such literals need the rewrite.
    return not value.isascii() and any(ord(ch) >= 0xD800 for ch in value)


def _value_expr(gen: _Gen, op: str, edm: EdmName, value: Any, var: str) -> tuple[str, str]:
    """The (stored value expression, literal constant) pair to compare for one type.

    ``var`` must be a plain name or a subscript (it may be evaluated twice).
    """
    if edm is Edm.GUID:
        return f"{var}.int", gen.const(value.int)
    if edm is Edm.STRING and op not in ("eq", "ne") and _needs_units(value):
        units = gen.const(to_units)
        return f"({var} if {var}.isascii() else {units}({var}))", gen.const(to_units(value))
    return var, gen.const(value)


def _entity_leaf(gen: _Gen, node: Compare | BoolProp) -> str:
    if isinstance(node, BoolProp):
        if node.prop in _SYSTEM or node.prop == "Timestamp":
            return "False"  # keys are strings and Timestamp a DateTime, never Boolean
        t = gen.temp()
        name = gen.const(node.prop)
        boolean = gen.edm(Edm.BOOLEAN)
        return (
            f"(({t} := e.props.get({name})) is not None and {t}[0] is {boolean} and {t}[1] is True)"
        )
    lit = node.lit
    op = PY_OPS[node.op]
    system = _SYSTEM.get(node.prop)
    if system is not None:
        if lit.edm is not Edm.STRING:
            return "False"
        stored, literal = _value_expr(gen, node.op, lit.edm, lit.value, system[0])
        return f"({stored} {op} {literal})"
    if node.prop == "Timestamp":
        if lit.edm is not Edm.DATETIME:
            return "False"
        return f"(e.timestamp {op} {gen.const(lit.value)})"
    t = gen.temp()
    name = gen.const(node.prop)
    accepts = ACCEPTS[lit.edm]
    if len(accepts) == 1:
        type_test = f"{t}[0] is {gen.edm(accepts[0])}"
    else:
        type_test = f"{t}[0] in {gen.const(accepts)}"
    stored, literal = _value_expr(gen, node.op, lit.edm, lit.value, f"{t}[1]")
    return f"(({t} := e.props.get({name})) is not None and {type_test} and {stored} {op} {literal})"


def compile_entity_matcher(root: Node) -> Callable[[Entity], bool]:
    """Compile a tree into ``matches(entity) -> bool``.

    Example::

        >>> from ._parser import parse_filter
        >>> m = compile_entity_matcher(parse_filter("Age ge 21 and PartitionKey eq 'p'"))
        >>> m(Entity("p", "r", 0, {"Age": (Edm.INT64, 30)}))
        True
    """
    gen = _Gen()
    return gen.function("e", gen.node(root, _entity_leaf))


def _table_leaf(gen: _Gen, node: Compare | BoolProp) -> str:
    if isinstance(node, BoolProp) or node.prop != "TableName" or node.lit.edm is not Edm.STRING:
        return "False"  # tables have only the string property TableName
    return f"(n {PY_OPS[node.op]} {gen.const(node.lit.value)})"


def compile_table_matcher(root: Node) -> Callable[[str], bool]:
    """Compile a tree into a predicate over table names (as created, case preserved).

    Example::

        >>> from ._parser import parse_filter
        >>> compile_table_matcher(parse_filter("TableName ge 'b'"))("books")
        True
    """
    gen = _Gen()
    return gen.function("n", gen.node(root, _table_leaf))
