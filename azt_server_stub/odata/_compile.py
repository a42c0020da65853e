"""Compile a ``$filter`` tree into one Python function (the evaluator).

The tree is translated once into the source of a single function of the
entity and compiled with :func:`compile`; evaluating it is one call with no
nested closures. Literal values and property names are bound as constants in
the function's namespace, never spliced into the source.

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

from collections.abc import Callable
from typing import Any

from ..model import Edm, Entity
from ._ast import PY_OPS, And, BoolProp, Compare, Const, Node, Not, Or
from ._utf16 import to_units

#: Stored types a literal of each type compares with.
ACCEPTS: dict[Edm, tuple[Edm, ...]] = {
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
    """Source generator: collects constants and produces one expression per node."""

    def __init__(self) -> None:
        self.consts: dict[str, Any] = {}
        self.uses_props = False
        self._n = 0

    def const(self, value: Any) -> str:
        name = f"c{len(self.consts)}"
        self.consts[name] = value
        return name

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


def _value_expr(gen: _Gen, op: str, edm: Edm, value: Any, var: str) -> tuple[str, str]:
    """The (stored value expression, literal constant) pair to compare for one type.

    ``var`` must be a plain name or a subscript (it may be evaluated twice).
    """
    if edm is Edm.GUID:
        return f"{var}.int", gen.const(value.int)
    if edm is Edm.STRING and op not in ("eq", "ne") and _needs_units(value):
        return f"({var} if {var}.isascii() else U({var}))", gen.const(to_units(value))
    return var, gen.const(value)


def _entity_leaf(gen: _Gen, node: Compare | BoolProp) -> str:
    if isinstance(node, BoolProp):
        if node.prop in _SYSTEM or node.prop == "Timestamp":
            return "False"  # keys are strings and Timestamp a DateTime, never Boolean
        gen.uses_props = True
        t = gen.temp()
        name = gen.const(node.prop)
        return f"(({t} := g({name})) is not None and {t}[0] is BOOL and {t}[1] is True)"
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
    gen.uses_props = True
    t = gen.temp()
    name = gen.const(node.prop)
    accepts = ACCEPTS[lit.edm]
    if len(accepts) == 1:
        type_test = f"{t}[0] is {gen.const(accepts[0])}"
    else:
        type_test = f"{t}[0] in {gen.const(accepts)}"
    stored, literal = _value_expr(gen, node.op, lit.edm, lit.value, f"{t}[1]")
    return f"(({t} := g({name})) is not None and {type_test} and {stored} {op} {literal})"


def compile_entity_matcher(root: Node) -> Callable[[Entity], bool]:
    """Compile a tree into ``matches(entity) -> bool``.

    Example::

        >>> from ._parser import parse_filter
        >>> m = compile_entity_matcher(parse_filter("Age ge 21 and PartitionKey eq 'p'"))
        >>> m(Entity("p", "r", 0, {"Age": (Edm.INT64, 30)}))
        True
    """
    gen = _Gen()
    body = gen.node(root, _entity_leaf)
    prologue = "    g = e.props.get\n" if gen.uses_props else ""
    source = f"def matches(e):\n{prologue}    return {body}\n"
    namespace: dict[str, Any] = {"BOOL": Edm.BOOLEAN, "U": to_units, **gen.consts}
    exec(compile(source, "<$filter>", "exec"), namespace)
    fn: Callable[[Entity], bool] = namespace["matches"]
    return fn


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
    body = gen.node(root, _table_leaf)
    namespace: dict[str, Any] = dict(gen.consts)
    exec(compile(f"def matches(n):\n    return {body}\n", "<$filter>", "exec"), namespace)
    fn: Callable[[str], bool] = namespace["matches"]
    return fn
