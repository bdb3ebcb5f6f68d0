"""A page's blocks and their template keys: what template detection (indexer/templates.py)
counts on a host's pages.

A page's ``blocks`` (indexer/parse.py ``ParsedPage``): the body split at block-level elements
(p, li, td, headings, div, nav ...), in document order, each with :func:`block_hash` of its
text: ``" ".join`` of the blocks' texts is exactly ``body``.  A block that recurs on many pages
of a host is template (navigation, "Prev Up Home Next"); its template ``key`` is its hash, or,
for a block with links and words between them ("Next: <a>X</a>, Up: <a>Y</a>", whose link texts
change from page to page), the hash of the words outside its links.  A navigation-shaped block
(NAV_MIN_LINKS links or more, at most NAV_MAX_LABEL_WORDS words between two) is split into its
items, a link with its label, so a page whose navigation lacks an item ("Next: X, Up: Z" where
most have "Next: X, Previous: Y, Up: Z") shares the other items' keys: the shape recurs, not
the whole text.

The field parser (indexer/parse.py ``parse_html``) marks the scope's text with :data:`MARK`
around each block-level element and :data:`LINK` around each link's text; :func:`page_blocks`
splits that text into blocks.
"""

from __future__ import annotations

import re
from functools import partial
from hashlib import blake2b
from itertools import repeat
from typing import NamedTuple, cast

import numpy as np

from websift.core.cache import ClearingMemo
from websift.indexer.settings import (
    NAV_MAX_LABEL_WORDS,
    NAV_MIN_LINKS,
)

MARK = "\x1e"  # a block boundary (an ASCII record separator: whitespace to str.split)
LINK = "\x1c"  # either end of a link's text (a file separator: whitespace to str.split too)
_SKELETON = "\x00links:"  # prefix of a template key made of the text outside links
_WORD_TOKEN = re.compile(r"[^\s\x1c\x1e]*[^\W_][^\s\x1c\x1e]*")  # a token with a letter or digit
_ALNUM = re.compile(r"[^\W_]")  # a letter or digit: str.isalnum() of one character


class Block(NamedTuple):
    text: str  # whitespace-normalised, never empty
    # The template key: :attr:`hash`, or for a block with links and text between them the hash
    # of the text outside its links ("Next: <a>X</a>, Up: <a>Y</a>" has one key on every page).
    key: int

    @property
    def hash(self) -> int:
        """block_hash(text): unsigned 64-bit (made when asked: a block keyed by the words
        outside its links, a paragraph with links, needs no hash of its whole text)."""
        return squashed_hash(self.text)


def block_hash(text: str) -> int:
    """Stable 64-bit hash of a text as a template key: case-folded, whitespace-normalised
    (BLAKE2b, so the same on every machine and run, unlike ``hash``)."""
    return squashed_hash(" ".join(text.split()))


def squashed_hash(text: str) -> int:
    """:func:`block_hash` of a text :func:`squash` left as it is."""
    key = text.casefold().encode("utf-8", "surrogatepass")
    return int.from_bytes(blake2b(key, digest_size=8).digest(), "little")


_BLAKE8 = partial(blake2b, digest_size=8)


def squashed_hashes(texts: list[str]) -> list[int]:
    """:func:`squashed_hash` of each text, by C calls alone (``map``), none of Python's a text:
    a page's blocks hashed at once."""
    keys = map(str.encode, map(str.casefold, texts), repeat("utf-8"), repeat("surrogatepass"))
    digests = b"".join(map(blake2b.digest, map(_BLAKE8, keys)))
    return cast(list[int], np.frombuffer(digests, dtype="<u8").tolist())


def _template_key(part: str, whole: int) -> int:
    """A block's template key (see :class:`Block`): the words outside its links (punctuation
    left out) when it has both links and such words, else its whole text's hash."""
    key = _skeleton_key(part)
    return whole if key is None else key


def _skeleton_key(part: str) -> int | None:
    """The hash of the words outside a block's links (punctuation left out) when it has both
    links and such words, else None (its key is its whole text's hash)."""
    if LINK not in part:
        return None
    skeleton = _skeleton(part.split(LINK))
    return None if skeleton is None else squashed_hash(skeleton)  # a squashed text's


def _skeleton(pieces: list[str]) -> str | None:
    """What a block's template key hashes when it has both link text and words outside its
    links (punctuation left out): those words after :data:`_SKELETON`; else None (its whole
    text).  ``pieces``: the block split at its link marks."""
    links = "".join(pieces[1::2])
    if not links or links.isspace():
        return None  # no link text: the words outside are all of it
    outside = _words(" ".join(pieces[0::2]))
    return _SKELETON + " ".join(outside) if outside else None


def _link_items(part: str) -> list[str]:
    """A navigation-shaped block (NAV_MIN_LINKS links or more, at most NAV_MAX_LABEL_WORDS
    words between two links) split into its items, each link with the label before it ("Next:
    <a>X</a>", ", Up: <a>Z</a>", "[<a>Contents</a>]"), so that each item has a template key of
    its own: a page that leaves an item out ("Next: X, Up: Z" where most have "Next: X,
    Previous: Y, Up: Z") shares the other items' keys.  Any other block is one item."""
    if LINK not in part:
        return [part]
    pieces = part.split(LINK)
    links = len(pieces) // 2
    if links < NAV_MIN_LINKS or len(pieces) % 2 == 0 or any(
            len(_WORD_TOKEN.findall(p)) > NAV_MAX_LABEL_WORDS for p in pieces[0::2]):
        return [part]
    items = [pieces[2 * i] + LINK + pieces[2 * i + 1] + LINK for i in range(links)]
    items[-1] += pieces[-1]
    return items


def _wordy(token: str) -> bool:
    """Whether ``token`` holds a letter or digit."""
    return token.isalnum() or _ALNUM.search(token) is not None


_WORDY = ClearingMemo(_wordy, 1 << 16)  # a site's punctuation recurs


def _words(text: str) -> list[str]:
    """``_WORD_TOKEN.findall(text)``, 2-6 times faster: the whitespace-separated tokens (the
    marks are whitespace to both) holding a letter or digit, most of them all letters and
    digits (checked in C), the others asked of :data:`_WORDY` (``filter`` and a dict lookup,
    in C, for a token met before: a site's punctuation recurs)."""
    tokens = text.split()
    if all(map(str.isalnum, tokens)):
        return tokens
    return list(filter(_WORDY.__getitem__, tokens))


def page_blocks(raw: str, starts: list[int] | None = None) -> list[Block]:
    """The blocks of a scope's text with its block and link marks: each block's text split
    at the marks, navigation-shaped ones into items (:func:`_link_items`), with their hashes
    and template keys (:func:`_template_key`).  The same as those functions part by part, but
    a block without links (most) costs a split and a join, and the keys are hashed together at
    the end (:func:`squashed_hashes`).  ``starts``, when given, gets the index of the first
    block made from each block element's text (a non-blank text between two marks)."""
    texts: list[str] = []
    hashed: list[str] = []  # what each block's key is the hash of (its text or its skeleton)
    for block in raw.split(MARK):
        if not block or block.isspace():  # between two marks (the marks are whitespace too)
            continue
        if starts is not None:
            starts.append(len(texts))
        if LINK not in block:
            text = " ".join(block.split())
            texts.append(text)
            hashed.append(text)
            continue
        pieces = block.split(LINK)
        # Navigation-shaped: every label short (a label of few whitespace-separated tokens has
        # as few words: asked first, and the first long label ends the asking).
        if len(pieces) // 2 >= NAV_MIN_LINKS and len(pieces) % 2 == 1 and all(
                len(p.split()) <= NAV_MAX_LABEL_WORDS or len(_words(p)) <= NAV_MAX_LABEL_WORDS
                for p in pieces[0::2]):
            for part in _link_items(block):
                if text := " ".join(part.split()):
                    texts.append(text)
                    hashed.append(_skeleton(part.split(LINK)) or text)
            continue
        text = " ".join(block.split())  # not blank: never empty
        texts.append(text)
        hashed.append(_skeleton(pieces) or text)
    new = tuple.__new__  # a NamedTuple's own __new__ is Python code: 7x the cost of a tuple's
    return [new(Block, pair) for pair in zip(texts, squashed_hashes(hashed), strict=True)]
