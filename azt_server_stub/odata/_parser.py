"""Recursive-descent parser for ``$filter`` (PROTOCOL.md 7.2).

Grammar (tokens from :mod:`._lexer`; keywords are case-sensitive)::

    filter   = orExpr EOF
    orExpr   = andExpr { "or" andExpr }
    andExpr  = unary { "and" unary }
    unary    = "not" unary | compare
    compare  = primary [ cmpOp primary ]
    primary  = "(" orExpr ")" | propertyName | literal

``not`` applies to the comparison or group that follows it (``not A eq 1`` is
``not (A eq 1)``). A comparison needs exactly one property and one literal, in
either order; parentheses may enclose an operand (``(Age) gt 3``). A bare
property or ``true``/``false`` where a condition is expected is a Boolean
condition. At most 15 comparisons are allowed.

Refusals: ``400 InvalidInput`` for syntax errors, ``null``, two properties or
two literals in one comparison, non-Boolean conditions, operators of later
OData versions (``in``, ``has``) and more than 15 comparisons; ``501
NotImplemented`` for well-formed OData v3 the service does not implement
(functions such as ``startswith``, arithmetic, navigation/lambda paths).
"""

from __future__ import annotations

from ..errors import StubError, invalid_input
from ..model import Edm
from ._ast import (
    FLIPPED,
    And,
    BoolProp,
    Compare,
    Const,
    Lit,
    Node,
    Not,
    Operand,
    Or,
    Prop,
    count_comparisons,
)
from ._lexer import Tok, Token, syntax_error, tokenize, unsupported

MAX_COMPARISONS = 15
#: Nesting limit for parentheses and ``not`` together (keeps recursion and the
#: generated code shallow; real filters nest a handful of levels).
MAX_DEPTH = 64

_CMP_OPS = frozenset(FLIPPED)
_ARITH_OPS = frozenset({"add", "sub", "mul", "div", "mod"})
_LATER_OPS = frozenset({"in", "has"})
_KEYWORDS = _CMP_OPS | _ARITH_OPS | _LATER_OPS | {"and", "or", "not"}
_BOOL_WORDS = {"true": True, "false": False}


def parse_filter(text: str) -> Node:
    """Parse ``$filter`` text into a Boolean tree (literal operands normalised to the right).

    Example::

        >>> parse_filter("'a' lt PartitionKey")
        Compare(op='gt', prop='PartitionKey', lit=Lit(edm='Edm.String', value='a', \
text="'a'", pos=0))
    """
    return _Parser(text).parse()


_Parsed = Node | Operand


class _Parser:
    __slots__ = ("_depth", "_i", "_text", "_tokens")

    def __init__(self, text: str) -> None:
        self._text = text
        self._tokens = tokenize(text)
        self._i = 0
        self._depth = 0

    def _enter(self, tok: Token) -> None:
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise self._error(
                tok,
                f"the filter nests parentheses and 'not' more than {MAX_DEPTH} levels deep",
            )

    # -- helpers ---------------------------------------------------------------
    def _peek(self) -> Token:
        return self._tokens[self._i]

    def _next(self) -> Token:
        tok = self._tokens[self._i]
        self._i += 1
        return tok

    def _is_word(self, tok: Token, word: str) -> bool:
        return tok.kind is Tok.IDENT and tok.text == word

    def _error(self, tok: Token, what: str) -> StubError:
        return syntax_error(self._text, tok.pos, what)

    def _describe(self, tok: Token) -> str:
        if tok.kind is Tok.EOF:
            return "the end of the filter"
        return repr(tok.text)

    def _case_hint(self, tok: Token) -> str:
        if tok.kind is Tok.IDENT and tok.text not in _KEYWORDS:
            lower = tok.text.lower()
            if lower in _KEYWORDS or lower in _BOOL_WORDS or lower == "null":
                return f" (keywords are case-sensitive: write '{lower}')"
        return ""

    # -- grammar ---------------------------------------------------------------
    def parse(self) -> Node:
        result = self._or()
        tok = self._peek()
        if tok.kind is not Tok.EOF:
            if tok.kind is Tok.RPAREN:
                raise self._error(tok, "unbalanced parentheses: ')' without a matching '('")
            raise self._error(
                tok,
                f"expected 'and', 'or' or the end of the filter, found {self._describe(tok)}"
                + self._case_hint(tok),
            )
        node = self._condition(result, None)
        count = count_comparisons(node)
        if count > MAX_COMPARISONS:
            raise invalid_input(
                f"The filter has {count} comparisons; the Table service allows at most "
                f"{MAX_COMPARISONS} discrete comparisons in a $filter."
            )
        return node

    def _or(self) -> _Parsed:
        first = self._and()
        if not self._is_word(self._peek(), "or"):
            return first
        items = list(self._flatten(Or, self._condition(first, "or")))
        while self._is_word(self._peek(), "or"):
            self._next()
            items.extend(self._flatten(Or, self._condition(self._and(), "or")))
        return Or(tuple(items))

    def _and(self) -> _Parsed:
        first = self._unary()
        if not self._is_word(self._peek(), "and"):
            return first
        items = list(self._flatten(And, self._condition(first, "and")))
        while self._is_word(self._peek(), "and"):
            self._next()
            items.extend(self._flatten(And, self._condition(self._unary(), "and")))
        return And(tuple(items))

    @staticmethod
    def _flatten(kind: type[And] | type[Or], node: Node) -> tuple[Node, ...]:
        if isinstance(node, kind):
            return node.items
        return (node,)

    def _unary(self) -> _Parsed:
        tok = self._peek()
        if self._is_word(tok, "not"):
            self._next()
            if self._peek().kind is Tok.EOF:
                raise self._error(self._peek(), "expected a condition after 'not'")
            self._enter(tok)
            operand = self._condition(self._unary(), "not")
            self._depth -= 1
            return Not(operand)
        return self._compare()

    def _compare(self) -> _Parsed:
        left = self._primary()
        tok = self._peek()
        if tok.kind is Tok.IDENT:
            if tok.text in _CMP_OPS:
                self._next()
                if self._peek().kind is Tok.EOF:
                    raise self._error(
                        self._peek(), f"expected a property name or a literal after '{tok.text}'"
                    )
                right = self._primary()
                after = self._peek()
                if after.kind is Tok.IDENT and after.text in _ARITH_OPS:
                    raise unsupported(f"arithmetic operator '{after.text}' at position {after.pos}")
                return self._comparison(left, tok, right)
            if tok.text in _ARITH_OPS:
                raise unsupported(f"arithmetic operator '{tok.text}' at position {tok.pos}")
            if tok.text in _LATER_OPS:
                raise self._error(
                    tok,
                    f"the '{tok.text}' operator is not supported by the Table service"
                    + (" (combine 'eq' comparisons with 'or' instead)" if tok.text == "in" else ""),
                )
            nxt = self._tokens[self._i + 1]
            if tok.text not in _KEYWORDS and (
                nxt.kind in (Tok.LITERAL, Tok.LPAREN)
                or (nxt.kind is Tok.IDENT and nxt.text not in _KEYWORDS)
            ):
                # "Age eqq 1", "Name like 'x'", "Age EQ 1": a word where an operator belongs.
                hint = self._case_hint(tok) or (
                    " (the comparison operators are eq, ne, gt, ge, lt and le)"
                )
                raise self._error(tok, f"unknown operator '{tok.text}'" + hint)
        elif tok.kind is Tok.MINUS:
            raise unsupported(f"arithmetic operator '-' at position {tok.pos}")
        return left

    def _primary(self) -> _Parsed:
        tok = self._next()
        kind = tok.kind
        if kind is Tok.LITERAL:
            assert tok.edm is not None
            return Lit(tok.edm, tok.value, tok.text, tok.pos)
        if kind is Tok.IDENT:
            return self._word(tok)
        if kind is Tok.LPAREN:
            if self._peek().kind is Tok.RPAREN:
                raise self._error(self._peek(), "empty parentheses")
            self._enter(tok)
            inner = self._or()
            close = self._peek()
            if close.kind is not Tok.RPAREN:
                if close.kind is Tok.EOF:
                    raise self._error(close, "unbalanced parentheses: missing ')'")
                raise self._error(
                    close,
                    f"expected ')' or an operator, found {self._describe(close)}"
                    + self._case_hint(close),
                )
            self._next()
            self._depth -= 1
            return inner
        if kind is Tok.MINUS:
            raise unsupported(f"arithmetic negation '-' at position {tok.pos}")
        if kind is Tok.EOF:
            raise self._error(tok, "expected a condition, found the end of the filter")
        if kind is Tok.RPAREN:
            raise self._error(tok, "unexpected ')'")
        raise self._error(tok, f"unexpected {self._describe(tok)}")

    def _word(self, tok: Token) -> _Parsed:
        word = tok.text
        after = self._peek()
        if after.kind is Tok.LPAREN:
            raise unsupported(f"function '{word}' at position {tok.pos}")
        if after.kind is Tok.SLASH:
            raise unsupported(f"navigation or lambda path '{word}/...' at position {tok.pos}")
        if word in _BOOL_WORDS:
            return Lit(Edm.BOOLEAN, _BOOL_WORDS[word], word, tok.pos)
        if word == "null":
            raise self._error(
                tok,
                "'null' is not supported: the Table service does not store nulls, and a "
                "comparison on a missing property is always false",
            )
        if word in _KEYWORDS:
            raise self._error(tok, f"expected a property name or a literal, found '{word}'")
        # "Not A eq 1": a keyword in the wrong case (a property named "Not" would be
        # followed by an operator, not by an operand).
        if (
            after.kind in (Tok.IDENT, Tok.LITERAL, Tok.LPAREN)
            and self._case_hint(tok)
            and not (after.kind is Tok.IDENT and after.text in _KEYWORDS)
        ):
            raise self._error(tok, f"unexpected '{word}'" + self._case_hint(tok))
        if word.lower() in ("datetime", "guid", "binary", "x"):
            # "datetime '...'": a literal prefix separated from its quoted value.
            nxt = after
            if nxt.kind is Tok.LITERAL and nxt.edm is Edm.STRING:
                raise self._error(tok, f"no space is allowed between '{word}' and its quoted value")
        return Prop(word, tok.pos)

    def _comparison(self, left: _Parsed, op_tok: Token, right: _Parsed) -> Compare:
        op = op_tok.text
        if isinstance(left, Prop) and isinstance(right, Lit):
            return Compare(op, left.name, right)
        if isinstance(left, Lit) and isinstance(right, Prop):
            return Compare(FLIPPED[op], right.name, left)
        if isinstance(left, Prop) and isinstance(right, Prop):
            raise self._error(
                op_tok,
                f"comparing two properties ('{left.name}' {op} '{right.name}') is not supported; "
                "one side must be a literal",
            )
        if isinstance(left, Lit) and isinstance(right, Lit):
            raise self._error(
                op_tok,
                f"comparing two literals ({left.text} {op} {right.text}) is not supported; "
                "one side must be a property name",
            )
        raise self._error(
            op_tok,
            f"the operands of '{op}' must be a property name and a literal, not a condition",
        )

    def _condition(self, parsed: _Parsed, context: str | None) -> Node:
        """Use ``parsed`` where a Boolean condition is required."""
        if isinstance(parsed, Prop):
            return BoolProp(parsed.name)
        if isinstance(parsed, Lit):
            if parsed.edm is Edm.BOOLEAN:
                return Const(bool(parsed.value))
            if context is None:
                raise invalid_input(
                    "The $filter expression must evaluate to a single boolean value."
                )
            raise syntax_error(
                self._text,
                parsed.pos,
                f"the operand of '{context}' must be a condition, found the {parsed.edm} "
                f"literal {parsed.text}",
            )
        return parsed
