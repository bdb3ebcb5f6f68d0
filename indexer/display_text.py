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
from typing import NamedTuple

from websift.indexer.template_keys import LINK, MARK, Block, page_blocks

GLUE = "\x1f"  # between two text nodes (an ASCII unit separator: whitespace to str.split)
# A link whose text is only a permalink mark, and permalink marks standing alone.
_PERMALINK = re.compile(f"{LINK}[\\s{GLUE}]*[¶#§⚓🔗]?[\\s{GLUE}]*{LINK}|¶")


class Shown(NamedTuple):
    """One block element's text as shown, and the range of the page's blocks made from it."""
    text: str
    first: int  # index of its first Block
    end: int  # one past its last Block


def shown_text(part: str) -> str:
    """The text of one block element (between two MARKs, with LINK marks and GLUE) as shown:
    permalink marks out, text nodes joined, whitespace normalised."""
    if "¶" in part or LINK in part:
        part = _PERMALINK.sub(" ", part).replace(LINK, "")
    return " ".join(part.replace(GLUE, "").split())


def join_shown(shown: list[Shown], blocks: list[Block], dropped: AbstractSet[int] | None = None) -> str:
    """The page's text as shown without the blocks whose template key is in ``dropped``: a
    block element whose blocks are all kept is shown as it reads, one with some dropped by its
    kept blocks' texts."""
    if not dropped:
        return " ".join(s.text for s in shown if s.text)
    out: list[str] = []
    for s in shown:
        keys = [b.key in dropped for b in blocks[s.first : s.end]]
        if not any(keys):
            if s.text:
                out.append(s.text)
        elif not all(keys):
            out.extend(b.text for b, drop in zip(blocks[s.first : s.end], keys, strict=True)
                       if not drop)
    return " ".join(out)


def blocks_and_shown(raw: str) -> tuple[list[Block], list[Shown]]:
    """The blocks of a scope's marked text (:func:`page_blocks` of it: each block element's
    text on its own gives the same blocks) and each block element's text as shown."""
    blocks: list[Block] = []
    shown: list[Shown] = []
    for part in raw.split(MARK):
        if not part or part.isspace():
            continue
        made = page_blocks(part)
        if made:
            shown.append(Shown(shown_text(part), len(blocks), len(blocks) + len(made)))
            blocks.extend(made)
    return blocks, shown
