"""api/highlight.py: match spans become <mark>, everything else is escaped text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from websift.api.highlight import highlight


def test_marks_spans_and_escapes_the_rest() -> None:
    got = highlight('a <b> "x" & y', [(0, 1), (12, 13)])
    assert str(got) == '<mark>a</mark> &lt;b&gt; &#34;x&#34; &amp; <mark>y</mark>'


def test_overlapping_and_out_of_range_spans_merge_and_clip() -> None:
    assert str(highlight("abcdef", [(3, 99), (1, 4), (5, 2)])) == "a<mark>bcdef</mark>"


def test_markup_inside_a_span_is_escaped() -> None:
    assert str(highlight("<script>", [(0, 8)])) == "<mark>&lt;script&gt;</mark>"


@given(st.text(max_size=40), st.lists(st.tuples(st.integers(-5, 50), st.integers(-5, 50))))
def test_never_lets_markup_through(text: str, spans: list[tuple[int, int]]) -> None:
    html = str(highlight(text, spans))
    stripped = html.replace("<mark>", "").replace("</mark>", "")
    assert "<" not in stripped and ">" not in stripped
