"""A page's text as a reader sees it, for snippets: the text nodes of inline elements joined
as the browser lays them out (``<code>asyncio</code>.<code>gather</code>(`` reads
``asyncio.gather(``, not ``asyncio . gather (``), and layout marks left out (the ``¶`` of a
Sphinx headerlink, a link whose whole text is ``#`` or ``§``).

The indexed body keeps a space between every two text nodes (its tokens do not change); the
parser reads the scope's text once with :data:`GLUE` between text nodes, which is whitespace to
``str.split`` and to ``re``'s ``\\s`` like the block and link marks, so the blocks built from it
are those of a text with spaces there.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Set as AbstractSet
from itertools import compress, count
from operator import itemgetter

from websift.indexer.template_keys import LINK, MARK, Block

GLUE = "\x1f"  # between two text nodes (an ASCII unit separator: whitespace to str.split)
# A link whose text is only a permalink mark (permalink marks standing alone: "¶").
_PERMALINK = re.compile(f"{LINK}[\\s{GLUE}]*[¶#§⚓🔗]?[\\s{GLUE}]*{LINK}")
# The same within one block element's text (no block mark inside: GLUE is whitespace), so
# that block elements' texts joined around block marks are shown each as it would be alone.
_PERMALINK_IN_PART = re.compile(f"{LINK}[^\\S{MARK}]*[¶#§⚓🔗]?[^\\S{MARK}]*{LINK}")
_KEY = itemgetter(1)  # a Block's template key


def shown_text(marked: str, permalink: re.Pattern[str] = _PERMALINK) -> str:
    """Text with block and link marks and GLUE between text nodes (a scope's, or one block
    element's) as shown: permalink marks out, text nodes joined, whitespace normalised (the
    block marks are whitespace to ``str.split``).  The permalink links go first (a pattern
    that starts with the link mark, which the regex engine looks for as a literal), then a
    lone "¶" is a space: as one pattern with both, which tries each character, but faster."""
    if LINK in marked:
        marked = permalink.sub(" ", marked).replace(LINK, "")
    if "¶" in marked:
        marked = marked.replace("¶", " ")
    return " ".join(marked.replace(GLUE, "").split())


def _shown_parts(parts: list[str], limit: int | None = None) -> str:
    """``" ".join`` of the non-empty texts as shown of block elements' texts (``parts``, no
    block mark inside): one :func:`shown_text` of their text joined around block marks, the
    permalink pattern kept inside each.  ``limit``: as many parts as give the first ``limit``
    characters (each pass takes parts of as many characters as are still missing: no part
    shows longer than it is)."""
    if limit is None:
        return shown_text(MARK.join(parts), _PERMALINK_IN_PART)
    out: list[str] = []
    size = at = 0  # size: the characters of " ".join(out) and one separator
    while at < len(parts) and size <= limit:
        end, chars = at, 0
        while end < len(parts) and chars <= limit - size:
            chars += len(parts[end])
            end += 1
        if text := shown_text(MARK.join(parts[at:end]), _PERMALINK_IN_PART):
            out.append(text)
            size += len(text) + 1
        at = end
    return " ".join(out)


def join_shown(marked: str, starts: list[int], blocks: list[Block],
               dropped: AbstractSet[int] | None = None, limit: int | None = None) -> str:
    """The text as shown of a scope's ``marked`` text (whose :func:`page_blocks` are
    ``blocks``, the first of each block element's at ``starts``) without the blocks whose
    template key is in ``dropped``: a block element whose blocks are all kept is shown as it
    reads, one with some dropped by its kept blocks' texts.  ``limit``: only the first
    ``limit`` characters are asked for (the text may stop soon after them).

    The block elements between two that hold a dropped block are shown at once
    (:func:`_shown_parts`), not one by one: the same text as each shown alone."""
    if not dropped:
        return shown_text(marked)
    parts = [p for p in marked.split(MARK) if p and not p.isspace()]
    ends = [*starts[1:], len(blocks)]
    if len(parts) != len(starts):
        raise ValueError(f"{len(parts)} block elements' texts but {len(starts)} starts")
    # The block elements holding a dropped block, or none (no text of theirs is shown).
    gone = compress(count(), map(dropped.__contains__, map(_KEY, blocks)))
    held = sorted({bisect_right(starts, i) - 1 for i in gone}
                  | {j for j, (first, end) in enumerate(zip(starts, ends, strict=True))
                     if first >= end})
    out: list[str] = []
    size = at = 0  # size: the characters of " ".join(out) and one separator
    for j in [*held, len(parts)]:
        if limit is not None and size > limit:
            break
        if text := _shown_parts(parts[at:j], None if limit is None else limit - size):
            out.append(text)
            size += len(text) + 1
        if j < len(parts):
            kept = [b.text for b in blocks[starts[j] : ends[j]] if b.key not in dropped]
            out.extend(kept)
            size += sum(map(len, kept)) + len(kept)
        at = j + 1
    return " ".join(out)
