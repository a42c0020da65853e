"""Parser of the stub's ``$filter`` engine: what it accepts (and how), what it refuses."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from azt_server_stub.errors import StubError
from azt_server_stub.model import Edm, Entity
from azt_server_stub.odata import compile_entity_filter, compile_table_filter
from azt_server_stub.odata._ast import And, BoolProp, Compare, Const, Node, Not, Or
from azt_server_stub.odata._parser import parse_filter


def show(node: Node) -> str:
    """A compact s-expression of a tree, for readable expectations."""
    if isinstance(node, Compare):
        return f"({node.op} {node.prop} {node.lit.text})"
    if isinstance(node, BoolProp):
        return node.prop
    if isinstance(node, Const):
        return "TRUE" if node.value else "FALSE"
    if isinstance(node, Not):
        return f"(not {show(node.operand)})"
    word = "and" if isinstance(node, And) else "or"
    assert isinstance(node, And | Or)
    return f"({word} " + " ".join(show(item) for item in node.items) + ")"


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("PartitionKey eq 'a'", "(eq PartitionKey 'a')"),
        ("'a' eq PartitionKey", "(eq PartitionKey 'a')"),
        ("'a' lt RowKey", "(gt RowKey 'a')"),
        ("5 ge Age", "(le Age 5)"),
        ("5 gt Age", "(lt Age 5)"),
        ("5 le Age", "(ge Age 5)"),
        ("5 ne Age", "(ne Age 5)"),
        ("Age gt 5 and Age lt 9", "(and (gt Age 5) (lt Age 9))"),
        ("A eq 1 or B eq 2 and C eq 3", "(or (eq A 1) (and (eq B 2) (eq C 3)))"),
        ("A eq 1 and B eq 2 or C eq 3", "(or (and (eq A 1) (eq B 2)) (eq C 3))"),
        ("(A eq 1 or B eq 2) and C eq 3", "(and (or (eq A 1) (eq B 2)) (eq C 3))"),
        ("A eq 1 and B eq 2 and C eq 3", "(and (eq A 1) (eq B 2) (eq C 3))"),
        ("A eq 1 and (B eq 2 and C eq 3)", "(and (eq A 1) (eq B 2) (eq C 3))"),
        ("A eq 1 or (B eq 2 or C eq 3) or D eq 4", "(or (eq A 1) (eq B 2) (eq C 3) (eq D 4))"),
        ("not A eq 1", "(not (eq A 1))"),
        ("not (A eq 1)", "(not (eq A 1))"),
        ("not A eq 1 and B eq 2", "(and (not (eq A 1)) (eq B 2))"),
        ("not (A eq 1 and B eq 2)", "(not (and (eq A 1) (eq B 2)))"),
        ("not not A eq 1", "(not (not (eq A 1)))"),
        ("IsActive", "IsActive"),
        ("not IsActive", "(not IsActive)"),
        ("IsActive and Age gt 3", "(and IsActive (gt Age 3))"),
        ("(IsActive)", "IsActive"),
        ("IsActive eq true", "(eq IsActive true)"),
        ("false ne IsActive", "(ne IsActive false)"),
        ("true", "TRUE"),
        ("A eq 1 or false", "(or (eq A 1) FALSE)"),
        ("(Age) gt 3", "(gt Age 3)"),
        ("Age gt (3)", "(gt Age 3)"),
        ("((Age)) gt ((3))", "(gt Age 3)"),
        ("((((A eq 1))))", "(eq A 1)"),
        ("A eq'x'", "(eq A 'x')"),
        ("(A eq 1)and(B eq 2)", "(and (eq A 1) (eq B 2))"),
        ("  A  eq  1  ", "(eq A 1)"),
        ("Name eq 'it''s'", "(eq Name 'it''s')"),
        ("Name eq 'and or not eq'", "(eq Name 'and or not eq')"),
        ("Stamp ge datetime'2020-01-01T00:00:00Z'", "(ge Stamp datetime'2020-01-01T00:00:00Z')"),
        (
            "Id eq guid'c9da6455-213d-42c9-9a79-3e9149a57833'",
            "(eq Id guid'c9da6455-213d-42c9-9a79-3e9149a57833')",
        ),
        ("Blob eq X'0A'", "(eq Blob X'0A')"),
        ("Big eq 12345678901L", "(eq Big 12345678901L)"),
        ("Ratio lt -1.5e3", "(lt Ratio -1.5e3)"),
        ("X eq 1", "(eq X 1)"),  # a property named like a literal prefix
        ("datetime eq 1", "(eq datetime 1)"),
        ("Datetime gt 2", "(gt Datetime 2)"),
        ("Score lt INF", "(lt Score INF)"),
        ("Score gt -INF", "(gt Score -INF)"),
        ("IsActive or Not", "(or IsActive Not)"),  # properties named like keywords
        ("Not eq 1 and And ne 2", "(and (eq Not 1) (ne And 2))"),
    ],
)
def test_accepted(text: str, tree: str) -> None:
    assert show(parse_filter(text)) == tree


def test_fifteen_comparisons_are_allowed() -> None:
    text = " or ".join(f"PartitionKey eq '{i}'" for i in range(15))
    assert len(compile_entity_filter(text).ranges) == 15


def test_bare_booleans_count_as_comparisons() -> None:
    text = " and ".join(f"F{i}" for i in range(16))
    with pytest.raises(StubError, match="16 comparisons"):
        parse_filter(text)
    parse_filter(" and ".join(f"F{i}" for i in range(15)) + " and true")


def refusal(text: str) -> StubError:
    with pytest.raises(StubError) as info:
        parse_filter(text)
    return info.value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # structure
        ("PartitionKey eq", "expected a property name or a literal after 'eq'"),
        ("eq 'a'", "found 'eq'"),
        ("PartitionKey 'a'", "expected 'and', 'or' or the end of the filter, found \"'a'\""),
        ("A eq 1 B eq 2", "found 'B'"),
        ("A eq 1 and", "expected a condition, found the end of the filter"),
        ("A eq 1 or or B eq 2", "found 'or'"),
        ("and A eq 1", "found 'and'"),
        ("not", "expected a condition after 'not'"),
        ("(A eq 1", "unbalanced parentheses: missing ')'"),
        ("((A eq 1)", "unbalanced parentheses: missing ')'"),
        ("A eq 1)", "unbalanced parentheses: ')' without a matching '('"),
        (")", "unexpected ')'"),
        ("()", "empty parentheses"),
        ("(A eq 1 B)", "expected ')' or an operator, found 'B'"),
        ("A eq 1,", "found ','"),
        ("A eq ,", "unexpected ','"),
        ("A eq 1 eq true", "found 'eq'"),
        ("A eq B eq 1", "comparing two properties"),
        ("(A eq 1) eq true", "must be a property name and a literal, not a condition"),
        ("A eq (B eq 1)", "must be a property name and a literal, not a condition"),
        # case-sensitive keywords
        ("A eq 1 And B eq 2", "keywords are case-sensitive: write 'and'"),
        ("A eq 1 OR B eq 2", "keywords are case-sensitive: write 'or'"),
        ("A EQ 1", "unknown operator 'EQ' (keywords are case-sensitive: write 'eq')"),
        ("Age eqq 1", "unknown operator 'eqq' (the comparison operators are eq, ne, gt"),
        ("Name like 'x%'", "unknown operator 'like'"),
        ("Name contains Other", "unknown operator 'contains'"),
        ("Age is (1)", "unknown operator 'is'"),
        ("(A eq 1 Or B eq 2)", "keywords are case-sensitive: write 'or'"),
        ("IsActive eq True", "comparing two properties"),
        ("Not A eq 1", "unexpected 'Not' (keywords are case-sensitive: write 'not')"),
        # operands
        ("A eq B", "comparing two properties ('A' eq 'B')"),
        ("PartitionKey eq RowKey", "comparing two properties"),
        ("1 eq 1", "comparing two literals (1 eq 1)"),
        ("'a' lt 'b'", "comparing two literals"),
        ("true eq false", "comparing two literals"),
        ("A eq null", "'null' is not supported"),
        ("null eq A", "'null' is not supported"),
        ("A ne null", "'null' is not supported"),
        ("datetime '2020-01-01T00:00:00Z' lt A", "no space is allowed between 'datetime'"),
        ("A lt guid 'c9da6455-213d-42c9-9a79-3e9149a57833'", "no space is allowed"),
        # operators from later OData versions
        ("A in ('a', 'b')", "the 'in' operator is not supported"),
        ("A has 1", "the 'has' operator is not supported"),
        # malformed literals surface through the parser
        ("Age eq 2147483648", "Unrecognized 'Edm.Int32' literal '2147483648'"),
        ("Name eq 'abc", "unterminated string literal"),
        ('Name eq "abc"', "not double quotes"),
    ],
)
def test_refused_with_invalid_input(text: str, message: str) -> None:
    err = refusal(text)
    assert (err.status, err.code) == (400, "InvalidInput")
    assert message in err.message, err.message


@pytest.mark.parametrize(
    "text",
    ["1", "'abc'", "2.5", "datetime'2020-01-01T00:00:00Z'", "(1)", "X'00'"],
)
def test_non_boolean_filter(text: str) -> None:
    err = refusal(text)
    assert (err.status, err.code) == (400, "InvalidInput")
    assert err.message == "The $filter expression must evaluate to a single boolean value."


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("A eq 1 and 5", "the operand of 'and' must be a condition, found the Edm.Int32"),
        ("'x' or A eq 1", "the operand of 'or' must be a condition, found the Edm.String"),
        ("not 5", "the operand of 'not' must be a condition"),
    ],
)
def test_non_boolean_operands(text: str, message: str) -> None:
    err = refusal(text)
    assert (err.status, err.code) == (400, "InvalidInput")
    assert message in err.message


def test_more_than_fifteen_comparisons() -> None:
    text = " or ".join(f"PartitionKey eq '{i}'" for i in range(16))
    err = refusal(text)
    assert (err.status, err.code) == (400, "InvalidInput")
    assert "at most 15" in err.message
    nested = "not (" + " and ".join(f"(A eq {i} or B eq {i})" for i in range(8)) + ")"
    assert "16 comparisons" in refusal(nested).message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("startswith(PartitionKey, 'a')", "function 'startswith'"),
        ("startswith(PartitionKey,'a') eq true", "function 'startswith'"),
        ("substringof('a', Name)", "function 'substringof'"),
        ("endswith(Name, 'x')", "function 'endswith'"),
        ("length(Name) gt 3", "function 'length'"),
        ("tolower(Name) eq 'x'", "function 'tolower'"),
        ("year(Stamp) eq 2020", "function 'year'"),
        ("isof(Name, 'Edm.String')", "function 'isof'"),
        ("cast(Age, 'Edm.Int64') eq 1L", "function 'cast'"),
        ("Age add 1 eq 2", "arithmetic operator 'add'"),
        ("Age sub 1 eq 2", "arithmetic operator 'sub'"),
        ("Age mul 2 eq 2", "arithmetic operator 'mul'"),
        ("Age div 2 eq 2", "arithmetic operator 'div'"),
        ("Age mod 2 eq 0", "arithmetic operator 'mod'"),
        ("Age eq 1 add 1", "arithmetic operator 'add'"),
        ("-Age eq 1", "arithmetic negation '-'"),
        ("Age eq - 1", "arithmetic negation '-'"),
        ("Age - 1 eq 2", "arithmetic operator '-'"),
        ("Tags/any(t: t eq 'a')", "navigation or lambda path 'Tags/...'"),
        ("Address/City eq 'Oslo'", "navigation or lambda path 'Address/...'"),
    ],
)
def test_unimplemented_odata_is_501(text: str, message: str) -> None:
    err = refusal(text)
    assert (err.status, err.code) == (501, "NotImplemented")
    assert err.message.startswith(
        "The requested operation is not implemented on the specified resource."
    )
    assert message in err.message


def test_entity_and_table_filters_refuse_alike() -> None:
    for compile_ in (compile_entity_filter, compile_table_filter):
        with pytest.raises(StubError) as info:
            compile_("TableName eq")
        assert info.value.code == "InvalidInput"
        with pytest.raises(StubError) as info:
            compile_("startswith(TableName, 'a')")
        assert info.value.code == "NotImplemented"


def test_messages_quote_the_filter_and_position() -> None:
    err = refusal("PartitionKey eq 'a' and")
    assert err.message == (
        "Syntax error at position 23 in 'PartitionKey eq 'a' and': "
        "expected a condition, found the end of the filter"
    )


def test_nesting_is_limited() -> None:
    deep = "(" * 64 + "A eq 1" + ")" * 64
    assert show(parse_filter(deep)) == "(eq A 1)"
    assert show(parse_filter("not " * 64 + "A eq 1")).count("not") == 64
    compile_entity_filter("not " * 32 + "(" * 32 + "A eq 1" + ")" * 32)
    nested = "A eq 1"
    for i in range(14):  # 15 comparisons, 28 levels; then 18 levels of 'not ('
        nested = f"not (B eq {i} or {nested})"
    nested = "not (" * 18 + nested + ")" * 18
    assert compile_entity_filter(nested).kind == "scan"
    assert compile_entity_filter("not " * 64 + "A eq 1").kind == "scan"
    for text in (
        "(" * 65 + "A eq 1" + ")" * 65,
        "not " * 65 + "A eq 1",
        "not (" * 40 + "A eq 1" + ")" * 40,
        "(" * 100_000,
    ):
        err = refusal(text)
        assert (err.status, err.code) == (400, "InvalidInput")
        assert "more than 64 levels deep" in err.message


FRAGMENTS = [
    "PartitionKey", "RowKey", "Timestamp", "A", "Flag", "eq", "ne", "gt", "ge", "lt", "le",
    "and", "or", "not", "And", "add", "in", "has", "(", ")", "'x'", "''", "'", "1", "-1",
    "1L", "2147483648", "1.5", "1e5", "INF", "-INF", "NaN", "-", "datetime'2020-01-01T00:00:00Z'",
    "datetime'", "X'0A'", "X'0", "guid'c9da6455-213d-42c9-9a79-3e9149a57833'", "guid'", "null",
    "true", "false", ",", "/", ":", "startswith", "\"", "$", "1.5m", " ", "  ",
]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.lists(st.sampled_from(FRAGMENTS), max_size=14).map(" ".join),
        st.lists(st.sampled_from(FRAGMENTS), max_size=14).map("".join),
        st.text(max_size=30),
    )
)
def test_any_text_compiles_or_is_refused_cleanly(text: str) -> None:
    refused: StubError | None = None
    try:
        flt = compile_entity_filter(text)
    except StubError as err:
        refused = err
    if refused is not None:
        assert (refused.status, refused.code) in ((400, "InvalidInput"), (501, "NotImplemented"))
        assert refused.message
        return
    sample = Entity("x", "x", 0, {"A": (Edm.INT32, 1), "Flag": (Edm.BOOLEAN, True)})
    assert isinstance(flt.matches(sample), bool)
    assert isinstance(compile_table_filter(text)("x"), bool)
