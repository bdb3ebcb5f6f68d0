"""The second development set's builder (scripts/tools/build_devset_octave.py) and the eval
harness's ablation rows (scripts/evaluation/eval_relevance.py), on hand-made input: no manual
needs to be installed."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scripts.evaluation.eval_relevance import parse_override, settings_with
from scripts.tools.build_devset_octave import Entry, collect, parse_index_page, sample, tsv
from testkit.devset import load_queries
from websift.indexer.settings import BM25FSettings

# The shape makeinfo 6.8 writes (Concept-Index.html of the Octave manual), cut down: a letter
# row, separators, entries with and without <code>, the same entry on two pages, an entry whose
# text is an operator, an encoded page name, and a navigation table that is not an index.
INDEX_PAGE = """<html><body>
<table class="cp-letters-header-printindex"><tr><td><a href="#Tiny_cp_letter-A"><b>A</b></a>
</td></tr></table>
<table class="index-cp" border="0">
<tr><td></td><th align="left">Index Entry</th><td>&nbsp;</td><th align="left"> Section</th></tr>
<tr><td colspan="4"> <hr></td></tr>
<tr><th id="Tiny_cp_letter-A">A</th><td></td><td></td></tr>
<tr><td></td><td valign="top"><a href="Arithmetic-Ops.html#index-addition">addition</a>:</td>
<td>&nbsp;</td><td valign="top"><a href="Arithmetic-Ops.html">Arithmetic Ops</a></td></tr>
<tr><td></td><td valign="top"><a href="Operator-Overloading.html#index-addition-1">addition</a>:
</td><td>&nbsp;</td><td valign="top"><a href="Operator-Overloading.html">Operator Overloading</a>
</td></tr>
<tr><td></td><td valign="top"><a href="Complex-Arithmetic.html#index-abs"><code>abs</code></a>:
</td><td>&nbsp;</td><td valign="top"><a href="Complex-Arithmetic.html">Complex Arithmetic</a></td>
</tr>
<tr><td></td><td valign="top"><a href="Element_002dby_002delement-Boolean-Operators.html#index-_0021"
>!</a>:</td><td>&nbsp;</td><td valign="top"><a href="Element_002dby_002delement-Boolean-Operators.html"
>Element-by-element Boolean Operators</a></td></tr>
<tr><td></td><td valign="top"><a href="Two%20Words.html#index-x">handle,   function
 handles</a>:</td><td>&nbsp;</td><td valign="top"><a href="Two%20Words.html">Two</a></td></tr>
<tr><td></td><td valign="top"><a href="https://example.org/#index-y">elsewhere</a>:</td></tr>
<tr><td colspan="4"> <hr></td></tr>
</table>
<table class="menu"><tr><td><a href="Nowhere.html">not an entry</a></td></tr></table>
</body></html>"""


def test_parse_index_page_rows() -> None:
    assert parse_index_page(INDEX_PAGE) == [
        ("addition", "Arithmetic-Ops.html"),
        ("addition", "Operator-Overloading.html"),
        ("abs", "Complex-Arithmetic.html"),
        ("!", "Element_002dby_002delement-Boolean-Operators.html"),
        ("handle, function handles", "Two%20Words.html"),
    ]


def test_entries_merge_and_tsv_round_trips(tmp_path: Path) -> None:
    rows = [("concept", t, p) for t, p in parse_index_page(INDEX_PAGE)]
    rows.append(("function", "abs", "Utility-Functions.html"))
    entries = collect(rows)
    assert [e.text for e in entries] == ["addition", "abs", "!", "handle, function handles"]
    assert entries[0].pages == {"Arithmetic-Ops.html", "Operator-Overloading.html"}
    assert entries[1] == Entry("concept", "abs",
                               frozenset({"Complex-Arithmetic.html", "Utility-Functions.html"}))
    out = tmp_path / "q.tsv"
    out.write_text(tsv(entries))
    queries = load_queries(out)
    assert [(q.qid, q.text, q.relevant) for q in queries] == [
        (f"oc{i:03d}", e.text, e.pages) for i, e in enumerate(entries)]


@given(st.lists(st.tuples(st.sampled_from(["concept", "function"]), st.text("abc", min_size=1),
                          st.sampled_from(["a.html", "b.html"])), max_size=40),
       st.integers(0, 5), st.integers(0, 5))
def test_sample_is_deterministic_and_keeps_quotas(rows: list[tuple[str, str, str]],
                                                  nc: int, nf: int) -> None:
    entries = collect(rows)
    quotas = {"concept": nc, "function": nf}
    chosen = sample(entries, quotas)
    assert chosen == sample(list(reversed(entries)), quotas)
    for kind, n in quotas.items():
        assert sum(e.kind == kind for e in chosen) == min(n, sum(e.kind == kind for e in entries))
    assert len({e.text for e in chosen}) == len(chosen)


def test_ablation_overrides() -> None:
    base = BM25FSettings()
    s = settings_with(base, ("weights.anchor=0", "k1=1.5", "proximity_window=5",
                             "WEBSIFT_SOMETHING=0"))
    assert s.weights == {**base.weights, "anchor": 0.0}
    assert (s.k1, s.proximity_window, s.b) == (1.5, 5, base.b)
    assert isinstance(s.proximity_window, int)
    assert parse_override("WEBSIFT_X=on") == ("WEBSIFT_X", "on")
    for bad in ("k1", "nosuch=1", "weights=1", "k1.title=1", "weights.nofield=1", "k1=high"):
        with pytest.raises(ValueError):
            parse_override(bad)
