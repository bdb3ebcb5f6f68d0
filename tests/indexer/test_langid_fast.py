"""indexer/langid_fast.py gives py3langid's own answers: the same features counted in the same
order as its automaton walk, the same language and probability as its ``classify`` (random
texts of many scripts, arbitrary bytes, the real pages of the aptitude and KiCad manuals), the
same when restricted to a few languages; the identifier's tables kept beside the model copy."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from websift.indexer import langid_model
from websift.indexer.langid_fast import FastIdentifier

MANUALS = [Path("/usr/share/doc/aptitude/html"), Path("/usr/share/doc/kicad/help")]
_TAG = re.compile(r"<[^>]*>")
_WS = re.compile(r"\s+")

ASCII = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=700)
LATIN = st.text(st.sampled_from("aeiouytnrslcdm éèêàçüöäßñõøåœæ,.'-"), max_size=700)
CYRILLIC = st.text(st.characters(min_codepoint=0x400, max_codepoint=0x4FF) | st.just(" "),
                   max_size=400)
CJK = st.text(st.characters(min_codepoint=0x3040, max_codepoint=0x30FF)
              | st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
              | st.sampled_from("。、 "), max_size=300)
ANY = st.text(max_size=300)  # every code point, lone surrogates among them
WORDS = st.lists(st.sampled_from(
    ["the", "and", "der", "und", "le", "la", "des", "и", "в", "не", "的", "是", "です", "el",
     "que", "HTML", "2024", "www", "é", "ß", "—", "\ud800", "x"]), max_size=120).map(" ".join)
TEXTS = ASCII | LATIN | CYRILLIC | CJK | ANY | WORDS | (ASCII.map(str.upper))


@pytest.fixture(scope="module")
def models() -> tuple[Any, FastIdentifier]:
    """(py3langid's identifier, the fast one) over the shipped model."""
    return langid_model.load_identifier(norm_probs=True), langid_model.load_fast_identifier()


def same_answer(ref: Any, fast: FastIdentifier, text: str) -> None:
    lang, prob = ref.classify(text)
    got_lang, got_prob = fast.classify(text)
    assert got_lang == lang, text
    assert got_prob == pytest.approx(prob, abs=1e-5), text
    assert got_prob == float(prob)  # the same numpy expressions on the same arrays: to the bit


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXTS)
def test_the_same_language_and_probability_as_py3langid(
        models: tuple[Any, FastIdentifier], text: str) -> None:
    same_answer(*models, text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TEXTS, max_size=30))
def test_a_batch_gets_each_text_s_own_answer(models: tuple[Any, FastIdentifier],
                                             texts: list[str]) -> None:
    """Texts classified together (the indexer's batches) get what each gets alone, to the bit:
    their features are not mixed (the pad between them), nor their scores."""
    ref, fast = models
    assert fast.classify_many(texts) == [ref.classify(t) for t in texts]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=800) | TEXTS.map(lambda t: t.encode("utf8", "surrogatepass")[1:-1]))
def test_the_same_features_in_the_same_order_as_its_walk(
        models: tuple[Any, FastIdentifier], data: bytes) -> None:
    """Any bytes (partial UTF-8, 0xff, NUL): the automaton's features, counted, in the order
    py3langid's Counter holds them (the order of the sum that scores them)."""
    from py3langid.langid import visit_counts

    ref, fast = models
    walked = visit_counts(ref.tk_nextmove, ref._rowbase, ref.tk_output, data) or {}
    ids, counts = fast.features(data)
    assert ids.tolist() == list(walked.keys())
    assert counts.tolist() == list(walked.values())


def _manual_samples() -> Iterator[str]:
    for root in MANUALS:
        for page in sorted(root.rglob("*.html")):
            text = _WS.sub(" ", _TAG.sub(" ", page.read_text(errors="replace"))).strip()
            many = 20 if len(text) > 100_000 else 1  # KiCad's big pages: 20 samples across
            step = max(600, len(text) // many)
            yield from (text[i : i + 600] for i in range(len(text) % step // 2, len(text), step))


@pytest.mark.skipif(not any(m.is_dir() for m in MANUALS),
                    reason="no aptitude-doc or kicad-doc (scripts/ensure_system_packages.sh)")
def test_the_real_pages_of_the_manuals(models: tuple[Any, FastIdentifier]) -> None:
    ref, fast = models
    samples = list(_manual_samples())
    for text in samples:
        same_answer(ref, fast, text)
    assert len(samples) > 100
    assert {"en", "fr", "ja"} <= {fast.classify(text)[0] for text in samples}


@pytest.mark.parametrize("among", [("en", "de"), ("fr", "es", "it", "pt"), ("ru", "uk", "bg"),
                                   ("ja", "zh"), ("sr", "hr", "bs")])
def test_restricted_to_a_few_languages(models: tuple[Any, FastIdentifier],
                                       among: tuple[str, ...]) -> None:
    """``query_language`` chooses among the index's languages: as py3langid's
    ``set_languages`` does (its aliased columns, ``srl`` -> ``sr``, folded the same)."""
    ref = langid_model.load_identifier(norm_probs=True)
    ref.set_languages(list(among))
    fast = models[1].restricted(among)
    assert fast.languages == frozenset(among)
    for text in ["Die Pakete werden installiert", "the packages are installed", "paquete",
                 "Пакеты установлены", "пакети", "パッケージ", "软件包", "paketi su instalirani",
                 "пакети су инсталирани", "x", ""]:  # noqa: RUF001
        same_answer(ref, fast, text)


def test_the_tables_are_kept_beside_the_model_copy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, models: tuple[Any, FastIdentifier]
) -> None:
    # the model copy the fixture loaded, linked (decompressing another is not what is tested)
    (copy,) = (p for p in langid_model.cache_dir().glob("langid-*.npz")
               if not p.name.endswith(("-depths.npz", "-fast.npz")))
    (tmp_path / copy.name).symlink_to(copy)
    monkeypatch.setenv("WEBSIFT_CACHE_DIR", str(tmp_path))
    # an older release's file and another model's copy: removed when the tables are written
    stale = [tmp_path / copy.name.replace(".npz", "-depths.npz"),
             tmp_path / "langid-0123456789abcdef.npz"]
    for path in stale:
        path.write_bytes(b"old")
    text = "Le renard brun rapide saute par-dessus le chien paresseux"
    first = langid_model.load_fast_identifier()  # writes the tables
    (kept,) = tmp_path.glob("langid-*-fast.npz")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([copy.name, kept.name])
    assert not list(tmp_path.glob("*.tmp"))
    assert np.array_equal(first.depths, models[1].depths)
    assert first.max_depth == int(first.depths.max()) > 1
    again = langid_model.load_fast_identifier()  # read from them
    for name, array in first.arrays().items():
        assert np.array_equal(again.arrays()[name], array), name
        assert again.arrays()[name].dtype == array.dtype, name
    for sample in (text, "Die Pakete werden installiert", "Настройка сети", "x", ""):
        assert again.classify(sample) == first.classify(sample) == models[0].classify(sample)
    # damaged tables are said, built again, and kept anew
    kept.write_bytes(kept.read_bytes()[:100])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        healed = langid_model.load_fast_identifier()
    assert any("unusable" in str(w.message) for w in caught)
    assert healed.classify(text) == first.classify(text)
    assert np.array_equal(np.load(kept)["depth"], first.depths)
    # read back as maps of the file (not copies), each array's bytes checked first: one byte
    # changed in the middle of the largest array is caught by its CRC-32, not used
    mapped = langid_model.load_fast_identifier().arrays()
    assert not mapped["ptc"].flags.writeable and not mapped["ptc"].flags.owndata
    raw = bytearray(kept.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    kept.write_bytes(bytes(raw))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        healed = langid_model.load_fast_identifier()
    assert any("CRC" in str(w.message) for w in caught)
    for name, array in first.arrays().items():
        assert np.array_equal(healed.arrays()[name], array), name
    # tables that do not go together are refused, not used
    with pytest.raises(ValueError, match="not this automaton's"):
        FastIdentifier(models[0], first.depths[:-1])
    arrays = first.arrays()
    with pytest.raises(ValueError, match="do not go together"):
        FastIdentifier.from_arrays({**arrays, "pc": arrays["pc"][:-1]})
    with pytest.raises(ValueError, match="do not go together"):
        FastIdentifier.from_arrays({**arrays, "rowbase": arrays["rowbase"][:-1]})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from([None, "en", "fr-CA", "de", "x-klingon", ""]),
                          TEXTS | WORDS.map(lambda t: t * 3)), max_size=24))
def test_a_batch_of_pages_gets_each_page_s_language(
        models: tuple[Any, FastIdentifier], pages: list[tuple[str | None, str]]) -> None:
    """``page_languages`` (a worker's batch) decides each page as ``page_language`` did with
    py3langid: the declared language unless the text is surely another."""
    from websift.indexer import languages
    from websift.indexer.settings import LANG_GUESS_PROB, LANG_MIN_CHARS, LANG_OVERRIDE_PROB

    ref = models[0]

    def before(declared: str | None, text: str) -> str | None:
        lang = languages.normalise_lang(declared)
        sample = sample_before(text, LANG_MIN_CHARS)
        if sample is None:
            return lang
        found, prob = ref.classify(sample)
        # a code that names no language (py3langid's ``zxx``: no linguistic content) is no
        # guess: the page keeps what it declared
        guess = languages.normalise_lang(str(found))
        if guess is None:
            return lang
        if lang is None:
            return guess if prob >= LANG_GUESS_PROB else None
        return guess if guess != lang and prob >= LANG_OVERRIDE_PROB else lang

    assert languages.page_languages(pages) == [before(d, t) for d, t in pages]


def sample_before(text: str, min_chars: int) -> str | None:
    """The sample identify() took before langid_fast (white space collapsed by a regex)."""
    from websift.indexer.settings import LANG_SAMPLE_CHARS

    if len(text) > 2 * LANG_SAMPLE_CHARS:
        mid = (len(text) - 2 * LANG_SAMPLE_CHARS) // 2
        text = text[mid : mid + 2 * LANG_SAMPLE_CHARS]
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) < min_chars:
        return None
    if len(text) > LANG_SAMPLE_CHARS:
        mid = (len(text) - LANG_SAMPLE_CHARS) // 2
        text = text[mid : mid + LANG_SAMPLE_CHARS]
    return text


SPACES = "".join(chr(c) for c in range(0x3100) if chr(c).isspace() or c in (0x200B, 0xFEFF))


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(SPACES) | st.sampled_from("ab\u00e9\u4e2d"), max_size=1500),
       st.sampled_from([1, 40]))
def test_the_sample_is_the_one_taken_before(text: str, min_chars: int) -> None:
    from websift.indexer import languages

    assert languages._sample(text, min_chars) == sample_before(text, min_chars)
