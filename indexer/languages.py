"""The language of a page or a query, and what analysis each language gets.

A page's language is, in order: the ``lang`` of its ``<html>`` element, its
``Content-Language`` (``<meta http-equiv>``), when the text agrees with it; else the language
py3langid's model (Lui & Baldwin 2012, langid.py's, shipped with the package; evaluated by
indexer/langid_fast.py to py3langid's own answers) finds in a sample of the text
(LANG_SAMPLE_CHARS from the middle of the body: the cost of identifying is bounded whatever
the page's length).  A declared language the text contradicts (a template's
``lang="en"`` on a translated page) loses to the text when the identifier is sure
(LANG_OVERRIDE_PROB).  Short texts (under LANG_MIN_CHARS) keep the declared language, or none;
so does a text the identifier is unsure of (under LANG_GUESS_PROB) on a page that declares none.

Per language (:func:`stemmer_for`): English is analysed as before (Porter, whoosh); the
languages Snowball covers (PyStemmer) get their Snowball stemmer; another known language gets
no stemming; a page of unknown language gets English's analysis (as every page did before
languages were told apart).  Stop words per
language are Whoosh's lists (the policy of indexer/analysis.py: kept in the index, scored by
the query when it is mostly stop words).  CJK is language-independent (indexer/folding.py).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

from whoosh.lang.porter import stem as porter_stem
from whoosh.lang.stopwords import stoplists

from websift.indexer.langid_fast import FastIdentifier
from websift.indexer.settings import (
    LANG_GUESS_PROB,
    LANG_MIN_CHARS,
    LANG_OVERRIDE_PROB,
    LANG_SAMPLE_CHARS,
    QUERY_LANG_PROB,
)

ENGLISH = "en"
# ISO 639-1 -> Snowball algorithm (PyStemmer).
SNOWBALL = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech",
    "da": "danish", "nl": "dutch", "eo": "esperanto", "et": "estonian", "fi": "finnish",
    "fr": "french", "de": "german", "el": "greek", "hi": "hindi", "hu": "hungarian",
    "id": "indonesian", "ga": "irish", "it": "italian", "lt": "lithuanian", "ne": "nepali",
    "no": "norwegian", "nb": "norwegian", "nn": "norwegian", "fa": "persian", "pl": "polish",
    "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian", "es": "spanish",
    "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish"}
RTL = frozenset({"ar", "fa", "he", "ur", "yi", "ps", "sd", "ug", "dv", "ku"})
_TAG = re.compile(r"^([a-z]{2,3})(?:[-_].*)?$")


def normalise_lang(tag: str | None) -> str | None:
    """A BCP 47 tag's primary language in lower case (``fr-CA`` -> ``fr``), None when it is
    not one (``""``, ``x-klingon``, ``*``)."""
    if not tag:
        return None
    m = _TAG.match(tag.strip().split(",")[0].strip().lower())
    if m is None or m.group(1) in {"und", "mul", "zxx"}:
        return None
    lang = m.group(1)
    return {"iw": "he", "in": "id", "ji": "yi", "jw": "jv"}.get(lang, lang)


def is_rtl(lang: str | None) -> bool:
    return lang in RTL


# Whoosh's English stop words (whoosh.analysis.filters.STOP_WORDS, the same words: a test holds
# them equal), written out: importing whoosh.analysis for them took 0.05-0.14 s of start-up.
ENGLISH_STOP_WORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "for", "from", "have", "if", "in",
    "is", "it", "may", "not", "of", "on", "or", "tbd", "that", "the", "this", "to", "us", "we",
    "when", "will", "with", "yet", "you", "your"))

_IDENTIFIER_LOAD = threading.Lock()  # one model load at a time: threads that miss wait for it


def _identifier(among: frozenset[str] = frozenset()) -> FastIdentifier:
    """py3langid's model (loaded once) as indexer/langid_fast.py evaluates it, restricted to
    ``among`` when given.  Under a lock: a server's first queries arrive on several threads at
    once, and each would otherwise decompress and load the model itself."""
    with _IDENTIFIER_LOAD:
        return _load_identifier(among)


@lru_cache(maxsize=8)
def _load_identifier(among: frozenset[str]) -> FastIdentifier:
    if among:
        return _load_identifier(frozenset()).restricted(among)
    from websift.indexer.langid_model import load_fast_identifier

    return load_fast_identifier()


def load_identifier() -> None:
    """Load py3langid's model now (decompressing it is most of a small run's identifying):
    a process about to fork workers calls it so they inherit the one copy."""
    _identifier()


def identify(text: str, min_chars: int = LANG_MIN_CHARS,
             among: frozenset[str] = frozenset()) -> tuple[str | None, float]:
    """(language, probability) of ``text`` by py3langid's model on a sample (from the middle:
    the cost is bounded whatever the text's length); (None, 0) when short, or when none of
    ``among`` (when given) is a language the model knows."""
    sample = _sample(text, min_chars)
    if sample is None:
        return None, 0.0
    if among:
        among = among & _identifier().languages
        if not among:
            return None, 0.0
    lang, prob = _identifier(among).classify(sample)
    return normalise_lang(lang), prob


def _sample(text: str, min_chars: int) -> str | None:
    """What :func:`identify` classifies of ``text``: LANG_SAMPLE_CHARS from its middle, its
    white space collapsed; None when that is under ``min_chars``."""
    if len(text) > 2 * LANG_SAMPLE_CHARS:
        mid = (len(text) - 2 * LANG_SAMPLE_CHARS) // 2
        text = text[mid : mid + 2 * LANG_SAMPLE_CHARS]
    text = " ".join(text.split())  # white space runs as one space (as re's \s+ sees them)
    if len(text) < min_chars:
        return None
    if len(text) > LANG_SAMPLE_CHARS:
        mid = (len(text) - LANG_SAMPLE_CHARS) // 2
        text = text[mid : mid + LANG_SAMPLE_CHARS]
    return text


def page_language(declared: str | None, text: str) -> str | None:
    """The language of a page: its declared one unless the text is surely another."""
    return page_languages([(declared, text)])[0]


def page_languages(pages: Sequence[tuple[str | None, str]]) -> list[str | None]:
    """:func:`page_language` of each (declared language, text), the texts identified together
    (langid_fast ``classify_many``: a batch shares the numpy calls)."""
    samples = [_sample(text, LANG_MIN_CHARS) for _, text in pages]
    found = iter(_identifier().classify_many([s for s in samples if s is not None]))
    langs = []
    for (declared, _), sample in zip(pages, samples, strict=True):
        lang = normalise_lang(declared)
        if sample is not None:
            code, prob = next(found)
            guess = normalise_lang(code)  # None: a code websift does not name
            needed = LANG_GUESS_PROB if lang is None else LANG_OVERRIDE_PROB
            if guess is not None and guess != lang and prob >= needed:
                lang = guess
        langs.append(lang)
    return langs


def query_language(text: str, *, explicit: str | None = None, hint: str | None = None,
                   index_langs: Mapping[str, int] | None = None) -> tuple[str | None, bool]:
    """The language of a query: ``explicit`` (a ``lang:`` operator or ``lang`` parameter);
    else the index's only language; else the language py3langid finds in the query among
    the index's languages when it is sure (QUERY_LANG_PROB), else ``hint`` (``Accept-Language``) when the index has it, else the index's
    most common language.  Returns (language, whether it is sure: explicit, the only one, or
    found in the query)."""
    lang = normalise_lang(explicit)
    if lang is not None:
        return lang, True
    counts: dict[str, int] = {}
    for k, n in (index_langs or {}).items():
        key = normalise_lang(k)
        if key is not None:
            counts[key] = counts.get(key, 0) + n
    if len(counts) <= 1:
        return next(iter(counts), normalise_lang(hint)), True
    among = frozenset(counts)
    found, prob = identify(text, 1, among)
    if found is not None and prob >= QUERY_LANG_PROB:
        return found, True
    hinted = normalise_lang(hint)
    if hinted in counts:
        return hinted, False
    return max(counts, key=lambda k: (counts[k], k == ENGLISH)), False


def analysis_language(lang: str | None) -> str:
    """The analysis a page of ``lang`` gets: ``en`` (Porter), a Snowball language, or
    ``none`` (no stemming).  Unknown is English (as every page was before languages)."""
    if lang is None or lang == ENGLISH:
        return ENGLISH
    return lang if lang in SNOWBALL else "none"


def stemmer_for(lang: str) -> Callable[[str], str]:
    """The stemming function of an analysis language (:func:`analysis_language`)."""
    if lang == ENGLISH:
        return porter_stem
    if lang in SNOWBALL:
        import Stemmer

        return Stemmer.Stemmer(SNOWBALL[lang]).stemWord
    return _same


def _same(word: str) -> str:
    return word


def stoplist_for(lang: str) -> frozenset[str]:
    """Whoosh's stop words of a language (English's for English, none when it has no list)."""
    if lang == ENGLISH:
        return ENGLISH_STOP_WORDS
    words = stoplists.get(lang)
    return frozenset(words) if words else frozenset()
