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

import numpy as np

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


class _CharFolds(dict[int, str]):
    """Code point -> the character as the analyzer folds it (:func:`fold_text`, then
    :func:`fold_term`): ``É`` -> ``e``, ``ß`` -> ``ss``, ``ﬁ`` -> ``fi``.  A character that
    folds to nothing (a combining mark on its own) stays itself, so a view never gets shorter.
    Filled as characters are met; a ``str.translate`` table."""

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        folded = fold_term(fold_text(ch)) or ch
        self[code] = folded
        return folded


_CHAR_FOLDS = _CharFolds()
_DENSE_NON_ASCII = 8  # a text with more non-ASCII characters than 1 in this many: translated whole


def _non_ascii_places(text: str) -> np.ndarray:
    """The indexes of ``text``'s non-ASCII characters (from the lead bytes of its UTF-8)."""
    raw = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    leads = np.flatnonzero(raw >= 0xC0)
    before = np.cumsum((raw & 0xC0) == 0x80)  # continuation bytes up to each byte
    return leads - before[leads]


def match_view(lower: str) -> tuple[str, list[int] | None]:
    """``lower`` (a text with its ASCII letters lower-cased) with every other character folded
    as the analyzer folds it, so a query word typed without accents (``reseau``) is found by
    ``str.find`` where the text has it with them (``RÉSEAU``).  Returns (view, offsets):
    offsets None when each of the view's characters stands where the text's does, else the
    text's index of each view index, and one more for the end (``ß`` is two characters of the
    view).  English text with a few symbols (``¶``, ``—``) costs a few tens of microseconds:
    only its non-ASCII characters are looked at."""
    if lower.isascii():
        return lower, None
    fold = _CHAR_FOLDS
    places = _non_ascii_places(lower).tolist()
    if len(places) * _DENSE_NON_ASCII > len(lower):
        view = lower.translate(fold)
        if len(view) == len(lower):
            return view, None
        changed = [(at, fold[ord(lower[at])]) for at in places]
    else:
        changed = [(at, f) for at in places if (f := fold[ord(lower[at])]) != lower[at]]
        if not changed:
            return lower, None
        pieces: list[str] = []
        done = 0
        for at, f in changed:
            pieces += (lower[done:at], f)
            done = at + 1
        pieces.append(lower[done:])
        view = "".join(pieces)
        if len(view) == len(lower):
            return view, None
    offsets: list[int] = []
    done = 0
    for at, f in changed:
        if len(f) > 1:
            offsets.extend(range(done, at))
            offsets.extend([at] * len(f))
            done = at + 1
    offsets.extend(range(done, len(lower) + 1))
    return view, offsets
