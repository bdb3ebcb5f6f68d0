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
from collections.abc import Set as AbstractSet

from websift.indexer.template_keys import LINK, MARK, Block

GLUE = "\x1f"  # between two text nodes (an ASCII unit separator: whitespace to str.split)
# A link whose text is only a permalink mark (permalink marks standing alone: "¶").
_PERMALINK = re.compile(f"{LINK}[\\s{GLUE}]*[¶#§⚓🔗]?[\\s{GLUE}]*{LINK}")


def shown_text(marked: str) -> str:
    """Text with block and link marks and GLUE between text nodes (a scope's, or one block
    element's) as shown: permalink marks out, text nodes joined, whitespace normalised (the
    block marks are whitespace to ``str.split``).  The permalink links go first (a pattern
    that starts with the link mark, which the regex engine looks for as a literal), then a
    lone "¶" is a space: as one pattern with both, which tries each character, but faster."""
    if LINK in marked:
        marked = _PERMALINK.sub(" ", marked).replace(LINK, "")
    if "¶" in marked:
        marked = marked.replace("¶", " ")
    return " ".join(marked.replace(GLUE, "").split())


def join_shown(marked: str, starts: list[int], blocks: list[Block],
               dropped: AbstractSet[int] | None = None) -> str:
    """The text as shown of a scope's ``marked`` text (whose :func:`page_blocks` are
    ``blocks``, the first of each block element's at ``starts``) without the blocks whose
    template key is in ``dropped``: a block element whose blocks are all kept is shown as it
    reads, one with some dropped by its kept blocks' texts."""
    if not dropped:
        return shown_text(marked)
    parts = [p for p in marked.split(MARK) if p and not p.isspace()]
    ends = [*starts[1:], len(blocks)]
    out: list[str] = []
    for part, first, end in zip(parts, starts, ends, strict=True):
        drop = [b.key in dropped for b in blocks[first:end]]
        if not any(drop):
            if first < end and (text := shown_text(part)):
                out.append(text)
        elif not all(drop):
            out.extend(b.text for b, d in zip(blocks[first:end], drop, strict=True) if not d)
    return " ".join(out)
