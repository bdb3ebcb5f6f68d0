"""BatchAnalyser._hits: a batch whose pages alternate between analysis languages gives the hits,
field lengths and word IDs of one ``HitMaker.batch`` per run of pages of one language."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from websift.indexer.docbatch import BatchAnalyser
from websift.indexer.hits import HitMaker
from websift.indexer.settings import DEFAULT_INDEX_SETTINGS, N_FIELDS

TEXTS = ["Les chats mangent le poisson, x + y", "the running os.path.join() of C++ code",
         "", "donnees du reseau et des chats", "running runs ran the, and; (os.path)"]


def page(i: int) -> list[str | list[str]]:
    fields: list[str | list[str]] = [TEXTS[(i + k) % len(TEXTS)] for k in range(N_FIELDS)]
    fields[4] = [TEXTS[i % len(TEXTS)], "next page"]  # anchors
    return fields


def by_runs(docs: list[list[str | list[str]]], langs: list[str]
            ) -> tuple[list[tuple[str, int, int, int]], list[str]]:
    """The hits as (word, position, slot, counted) and the words in ID order, one
    ``HitMaker.batch`` per run of documents of one language."""
    hm = HitMaker.of(DEFAULT_INDEX_SETTINGS)
    out: list[tuple[str, int, int, int]] = []
    lo = 0
    for i in range(len(docs)):
        if i == len(docs) - 1 or langs[i + 1] != langs[i]:
            hm.use(langs[i])
            w, p, s = hm.batch(docs[lo : i + 1])
            c = hm.counted(w)
            out.extend((hm.words[int(a)], int(b), int(d) + lo * N_FIELDS, int(e))
                       for a, b, d, e in zip(w, p, s, c, strict=True))
            lo = i + 1
    return out, hm.words


@pytest.mark.parametrize("langs", [
    ["en", "fr", "en", "none", "en", "fr", "fr", "en"],
    ["fr", "fr", "fr"],
    ["none", "en", "en", "en", "none"],
])
def test_alternating_languages_give_the_hits_and_word_ids_of_one_pass(
        tmp_path: Path, langs: list[str]) -> None:
    docs = [page(i) for i in range(len(langs))]
    analyser = BatchAnalyser(tmp_path, DEFAULT_INDEX_SETTINGS)
    w, p, s, c = analyser._hits(docs, langs)
    words = analyser.hits.words
    got = [(words[int(a)], int(b), int(d), int(e)) for a, b, d, e in zip(w, p, s, c, strict=True)]
    want, want_words = by_runs(docs, langs)
    assert got == want
    assert words == want_words  # new words get their IDs in the order one pass meets them
    assert np.all(np.diff(s) >= 0)  # document and field order
