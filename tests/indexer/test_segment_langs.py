"""SegmentReader.lang_ordinals reads each document's language from the stored heads in array
passes (a million-page segment's first language prior took 4.4 s head by head): the same codes
as reading head by head, for any heads, and the same clear error for a corrupt one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from websift.indexer.errors import IndexCorrupt
from websift.indexer.segment import SegmentReader
from websift.indexer.segment_format import SEP


def reader(heads: list[bytes]) -> SegmentReader:
    """A reader over these stored heads alone (what lang_ordinals reads)."""
    r = SegmentReader.__new__(SegmentReader)
    r.name = "seg-test"
    r._head = np.frombuffer(b"".join(heads), dtype=np.uint8)
    r._head_off = np.cumsum([0] + [len(h) for h in heads]).astype(np.int64)
    r._lang_codes = None
    return r


def by_language(r: SegmentReader, codes: tuple[dict[str, int], np.ndarray]) -> dict[str, list[int]]:
    names, per_doc = codes
    return {lang: np.flatnonzero(per_doc == code).tolist() for lang, code in names.items()}


text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters=SEP),
               max_size=12)
langs = st.one_of(st.none(), st.sampled_from(["", "en", "fr", "zh-hans", "pt-br", "de"]),
                  st.text(max_size=10))  # any text: longer than 7 bytes, a separator inside


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(text, text, langs), max_size=30))
def test_the_array_reading_gives_each_language_the_documents_reading_head_by_head_does(
        docs: list[tuple[str, str, str | None]]) -> None:
    heads = [(url + SEP + title + ("" if lang is None else SEP + lang)).encode(
        "utf-8", "surrogatepass") for url, title, lang in docs]
    fast, slow = reader(heads), reader(heads)
    got = by_language(fast, fast._read_lang_codes())
    want = by_language(slow, slow._read_lang_codes_slowly())
    assert got == want
    for lang in want:  # lang_ordinals itself, one language and two at once
        assert reader(heads).lang_ordinals({lang}).tolist() == want[lang]
        assert reader(heads).lang_ordinals({lang, ""}).tolist() == sorted(
            set(want[lang]) | set(want.get("", [])))


def test_a_short_language_set_is_read_in_arrays_not_head_by_head(
        monkeypatch: pytest.MonkeyPatch) -> None:
    heads = [f"https://h/{i}{SEP}t{SEP}{'fr' if i % 3 else 'en'}".encode() for i in range(1000)]
    r = reader(heads)

    def slowly() -> None:
        raise AssertionError("read head by head")

    monkeypatch.setattr(r, "_read_lang_codes_slowly", slowly)
    assert r.lang_ordinals({"en"}).tolist() == list(range(0, 1000, 3))


def test_a_head_without_a_separator_is_a_clear_error() -> None:
    heads = [f"https://h/0{SEP}t{SEP}en".encode(), b"https://h/1-no-title", b"x" + SEP.encode()]
    with pytest.raises(IndexCorrupt, match="stored document 1 is corrupt"):
        reader(heads).lang_ordinals({"en"})
    with pytest.raises(IndexCorrupt, match="stored document 1 is corrupt"):
        reader(heads)._read_lang_codes_slowly()
