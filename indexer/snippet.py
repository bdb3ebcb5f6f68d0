"""Query-biased snippets (Tombros & Sanderson 1998): the window of the page's text that holds
the most distinct query terms, with the character spans of the matching words.

Fast path: ``str.find`` of each query term (stems are prefixes of most word forms) and raw word
finds candidate places in C; each candidate word is then put through the analyzer to confirm it
really matches a query term.
"""

from __future__ import annotations

from indexer.analysis import TOKEN_RE, Analyzer
from indexer.settings import SNIPPET_CHARS, SNIPPET_SCAN_CHARS

_MAX_PER_LITERAL = 40  # places kept per query word
_MAX_TRIES_PER_LITERAL = 400  # places looked at per query word


def make_snippet(text: str, terms: set[str], words: list[str], analyzer: Analyzer,
                 width: int = SNIPPET_CHARS) -> tuple[str, list[tuple[int, int]]]:
    """(snippet, highlight spans inside it) for ``text`` and the query's ``terms``."""
    scan = text[:SNIPPET_SCAN_CHARS]
    lower = scan.lower()
    # Raw words that analyse to no query term (stop words, "C") would only cost time.
    literals = {t for t in terms if len(t) > 1} | {
        w.lower() for w in words if any(t in terms for t in analyzer.terms(w))}
    matches: list[tuple[int, int, str]] = []
    seen: set[int] = set()
    for lit in literals:
        # str.find runs in C; each place found is confirmed through the analyzer.
        at, found_here, tried = lower.find(lit), 0, 0
        while at != -1 and found_here < _MAX_PER_LITERAL and tried < _MAX_TRIES_PER_LITERAL:
            tried += 1
            if (at == 0 or not (lower[at - 1].isalnum() or lower[at - 1] == "_")) \
                    and at not in seen:
                tok = TOKEN_RE.match(lower, at)
                if tok is not None:
                    hit = [t for t in analyzer.token(tok.group(0))[0] if t in terms]
                    if hit:
                        seen.add(at)
                        matches.append((tok.start(), tok.end(), hit[0]))
                        found_here += 1
            at = lower.find(lit, at + 1)
    matches.sort()
    # A part found inside a compound already matched ("errors" in "fs_errors") is one match.
    kept: list[tuple[int, int, str]] = []
    for m in matches:
        if kept and m[0] < kept[-1][1]:
            continue
        kept.append(m)
    matches = kept
    if not matches:
        cut = _cut(scan, 0, width)
        return cut[0], []
    best, best_key = 0, (-1, -1)
    for i, (start, _, _) in enumerate(matches):
        distinct: set[str] = set()
        count = 0
        for _, e, t in matches[i:]:
            if e - start > width:
                break
            distinct.add(t)
            count += 1
        key = (len(distinct), count)
        if key > best_key:
            best, best_key = i, key
    anchor = matches[best][0]
    begin = max(0, anchor - width // 5)
    snippet, offset = _cut(scan, begin, width)
    end = offset + len(snippet) - (1 if snippet.endswith("…") else 0)
    shift = offset - (1 if snippet.startswith("…") else 0)
    spans = [(s - shift, e - shift) for s, e, _ in matches if s >= offset and e <= end]
    return snippet, spans


def _cut(text: str, begin: int, width: int) -> tuple[str, int]:
    """text[begin:begin+width] moved to word boundaries, with ellipses; returns (cut, offset)."""
    if begin > 0:
        space = text.find(" ", begin)
        if space != -1 and space - begin < 30:
            begin = space + 1
    end = min(len(text), begin + width)
    if end < len(text):
        space = text.rfind(" ", begin, end)
        if space > begin + width // 2:
            end = space
    piece = text[begin:end]
    return ("…" if begin > 0 else "") + piece + ("…" if end < len(text) else ""), begin
