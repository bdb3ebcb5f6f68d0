"""Querying a lexbor (selectolax) tree, as the field parser and the fragment extraction do.

One CSS selector engine per thread (:func:`css`, :func:`css_first`), a node's text as the index
reads it (:func:`node_text`: whitespace squashed) and the heading tags.
"""

from __future__ import annotations

import threading
from typing import Protocol, cast

from selectolax.lexbor import LexborCSSSelector, LexborHTMLParser, LexborNode

from websift.core.html import squash

HEADING_TAGS = ("h1", "h2", "h3", "h4", "h5", "h6")

_LOCAL = threading.local()


class _Selector(Protocol):
    def find(self, query: str, node: LexborNode) -> list[LexborNode]: ...
    def find_first(self, query: str, node: LexborNode) -> list[LexborNode]: ...


def _selector() -> _Selector:
    """This thread's CSS selector engine.  ``node.css()`` creates one per parsed page on its
    first query (a CSS parser and a selectors engine: ~100 us, as much as parsing a small page);
    one engine serves any tree, so a thread keeps one for all its pages."""
    sel = getattr(_LOCAL, "selector", None)
    if sel is None:
        sel = _LOCAL.selector = cast(_Selector, LexborCSSSelector())  # type: ignore[no-untyped-call]
    return cast(_Selector, sel)


def css(node: LexborNode | LexborHTMLParser, query: str) -> list[LexborNode]:
    """``node.css(query)`` with this thread's engine (:func:`_selector`)."""
    if isinstance(node, LexborHTMLParser):
        if node.root is None:
            return []
        node = node.root
    return _selector().find(query, node)


def css_first(node: LexborNode, query: str) -> LexborNode | None:
    """``node.css_first(query)`` with this thread's engine (:func:`_selector`)."""
    found = _selector().find_first(query, node)
    return found[0] if found else None


def node_text(node: LexborNode) -> str:
    return squash(node.text(separator=" "))
