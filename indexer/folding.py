"""Characters to terms in any script: Unicode folding and CJK bigrams (analysis.py's first
and last steps).

Folding (the Unicode Standard's default caseless matching, section 3.13, plus Lucene's
ASCIIFoldingFilter for accents):

* a text is NFKC-normalised and case-folded before it is tokenised (:func:`fold_text`):
  full-width letters (U+FF21...) are ASCII ones, the ligature ``ﬁ`` is ``fi``, ``Straße`` is
  ``strasse``;
* a term (after stemming, so a stemmer sees the accents its language writes) loses its
  diacritics (:func:`fold_term`): the combining marks of U+0300-U+036F after canonical
  decomposition, then recomposed (Hangul syllables and kana with dakuten stay whole), and the
  Latin letters that do not decompose (``ø``, ``æ``, ``ł``, ``đ``...) mapped as
  ASCIIFoldingFilter maps them.  ``naïve`` and ``naive``, ``réseau`` and ``reseau`` are one
  term: a query without accents finds the accented word, ranked as with them.

CJK (Lucene's CJKAnalyzer): Han, kana and Hangul are written without spaces between words, so a
run of them is one regex token (``空间管理``, ``パッケージの管理``, ``학교에서``).  Such a run
becomes its overlapping bigrams (``空间 间管 管理``), one position each; a run of one character
is itself.  A query word is a run too, so its bigrams are found inside any longer run holding
it (recall without a dictionary), and a Korean word with a particle attached (``학교에서``)
shares the word's bigram (``학교``).  A token mixing scripts (``python3の``) is split where the
script changes.
"""

from __future__ import annotations

import re
import unicodedata

# Han (with extension A and compatibility ideographs), hiragana, katakana (and its phonetic
# extensions, half-width forms), Hangul syllables and jamo.
_CJK = ("\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
        "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f\uff66-\uff9f")
CJK_RE = re.compile(f"[{_CJK}]")
_CJK_SPLIT = re.compile(f"([{_CJK}]+)")
_MARKS = re.compile("[\u0300-\u036f]")
# Letters with no canonical decomposition (a subset of Lucene's ASCIIFoldingFilter), after
# case folding.
_LETTERS = str.maketrans({
    "ø": "o", "æ": "ae", "œ": "oe", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ħ": "h",
    "\u0131": "i", "ŀ": "l", "ŧ": "t", "ƀ": "b", "ɨ": "i", "ʉ": "u"})


def fold_text(text: str) -> str:
    """NFKC, then case folding: what the tokenizer reads (at index and at query time)."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    return text.casefold()


def fold_term(term: str) -> str:
    """A term without its diacritics (``réseau`` -> ``reseau``); ASCII terms as they are."""
    if term.isascii():
        return term
    decomposed = unicodedata.normalize("NFD", term)
    stripped = _MARKS.sub("", decomposed)
    return unicodedata.normalize("NFC", stripped).translate(_LETTERS)


def has_cjk(token: str) -> bool:
    return CJK_RE.search(token) is not None


def script_runs(token: str) -> list[tuple[str, bool]]:
    """The token cut where CJK starts or ends: (part, is CJK) in order."""
    return [(p, i % 2 == 1) for i, p in enumerate(_CJK_SPLIT.split(token)) if p]


def bigrams(run: str) -> list[str]:
    """A CJK run's overlapping bigrams; a one-character run is itself."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]
