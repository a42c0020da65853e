"""Split points: ``between`` finds a string strictly inside a key interval in the service's
UTF-16 order, whole characters only (no lone surrogates), no control characters."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from azt._orm.planner import ordinal
from azt.scan import between

# characters around every seam of UTF-16 order: ASCII, U+D7FF, astral, U+E000, U+FFFF
CHARS = st.sampled_from(
    [" ", "!", "0", "a", "z", "~", "\x7f", "é", "\ud7ff", "\U00010000", "\U0001f600",
     "\U0010ffff", "\ue000", "\uebff", "\ufffd", "\uffff"]
)  # fmt: skip
KEYS = st.text(CHARS, max_size=5)


@given(KEYS, st.one_of(st.none(), KEYS))
def test_between_is_strictly_inside_and_well_formed(low: str, high: str | None) -> None:
    mid = between(low, high)
    if high is not None and ordinal(high) <= ordinal(low):
        assert mid is None
    if mid is None:
        return
    assert ordinal(low) < ordinal(mid)
    assert high is None or ordinal(mid) < ordinal(high)
    mid.encode("utf-8")  # no lone surrogate
    assert all(ord(c) >= 0x20 for c in mid)


def test_between_prefers_short_ascii_points() -> None:
    assert between("", None) == "O"
    assert between("p003", "p020") == "p01"
    assert between("a", "b") == "aO"
    assert between("a", "a") is None
    assert between("a", "a ") is None  # nothing fits before the lowest allowed character


def test_between_reaches_astral_and_private_use_gaps() -> None:
    mid = between("a\U00010000", "a\uffff")
    assert mid is not None
    assert ordinal("a\U00010000") < ordinal(mid) < ordinal("a\uffff")
    top = between("\U0010ffff", None)
    assert top is not None
    assert ordinal(top) > ordinal("\U0010ffff")
