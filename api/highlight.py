"""Snippet highlighting for HTML: match spans become ``<mark>``, every other character is escaped."""

from __future__ import annotations

from collections.abc import Iterable

from markupsafe import Markup, escape


def highlight(snippet: str, spans: Iterable[tuple[int, int]]) -> Markup:
    """``snippet`` as safe HTML with the ``[start, end)`` spans wrapped in ``<mark>``.

    Spans are clipped to the snippet; overlapping or out-of-order spans are merged, so bad spans
    can never produce broken markup.
    """
    n = len(snippet)
    clipped = sorted((max(0, int(a)), min(n, int(b))) for a, b in spans)
    merged: list[tuple[int, int]] = []
    for a, b in clipped:
        if b <= a:
            continue
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    parts: list[str] = []
    pos = 0
    for a, b in merged:
        parts.append(str(escape(snippet[pos:a])))
        parts.append(f"<mark>{escape(snippet[a:b])}</mark>")
        pos = b
    parts.append(str(escape(snippet[pos:])))
    return Markup("".join(parts))
