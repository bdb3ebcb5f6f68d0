"""What counts as an HTML page, and what of it a reader sees: one rule for crawler and indexer.

Question: is this stored response a web page, and what is its visible text?  The crawler asks
it to decide whether to parse a page (links, robots meta tags, near-duplicate fingerprint), the
indexer to decide whether to index one, the API to explain why a page is not indexed; all three
must answer the same way, so the answer lives here.

The parsing itself stays with each caller (the crawler parses with ``lxml.html`` for links, the
indexer with lexbor through selectolax for speed); this module says which elements are
invisible (both drop :data:`INVISIBLE_TAGS`) and how the text of what is left reads (every text
node, a space between them, whitespace squashed: :func:`visible_text` for lxml trees; the
indexer's ``parse_html`` gives the same text, checked by tests/core/test_html.py and, page by
page on the Python manual, by scripts/benchmarks/compare_parsers.py).
"""

from __future__ import annotations

import lxml.etree

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})

# Elements whose text a reader never sees: code, style sheets, the no-script fallback (we read
# as a browser with scripts on), inert templates, vector drawings' labels, and the head (its
# title is read on its own before these are dropped).
INVISIBLE_TAGS = ("script", "style", "noscript", "template", "svg", "head")

_TEXTS = lxml.etree.XPath("descendant::text()", smart_strings=False)


def media_type(content_type: str | None) -> str | None:
    """``Text/HTML; charset=utf-8`` -> ``text/html``; None or blank -> None."""
    if content_type is None:
        return None
    return content_type.split(";", 1)[0].strip().lower() or None


def is_html(content_type: str | None) -> bool:
    """Is a response with this stored ``Content-Type`` an HTML page (parsed, indexed)?

    Only ``text/html`` and ``application/xhtml+xml``, whatever their parameters and case.

    A missing type is *not* HTML.  Browsers sniff a response that has no ``Content-Type`` (the
    WHATWG MIME Sniffing standard), and so does the crawler, once, at fetch time, when it has the
    bytes in hand: Scrapy picks an HTML response from the body, and the crawler then stores
    ``text/html`` as the page's type (``crawler.pipeline.Fetched.content_type``).  So a type
    still missing in the store means the server named none *and* the bytes did not look like
    HTML (an image, an archive, plain text); parsing that as a page would index binary noise as
    words, and the indexer would disagree with the crawler, which took no links from it.
    """
    return media_type(content_type) in HTML_TYPES


def drop_invisible(root: lxml.etree._Element) -> None:
    """Remove the :data:`INVISIBLE_TAGS` elements from the tree (in place).  Their tails stay:
    the text after ``</script>`` is visible."""
    lxml.etree.strip_elements(root, *INVISIBLE_TAGS, with_tail=False)


def squash(text: str) -> str:
    """Runs of whitespace to one space, ends trimmed."""
    return " ".join(text.split())


def text_of(el: lxml.etree._Element) -> str:
    """Every text node under ``el``, a space between them: block elements must not glue words
    (``foo</p><p>bar`` reads "foo bar").  One XPath call builds the list in C."""
    return " ".join(_TEXTS(el))


def visible_text(el: lxml.etree._Element) -> str:
    """The whitespace-normalised text of ``el`` once :func:`drop_invisible` has run on its
    tree: what the crawler fingerprints and the indexer indexes."""
    return squash(text_of(el))
