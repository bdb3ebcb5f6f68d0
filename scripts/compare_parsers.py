"""lxml against lexbor (selectolax) for exactly the fields websift extracts, page by page.

    .venv/bin/python scripts/compare_parsers.py [--root /usr/share/doc/python3.11/html]

For every ``*.html`` under ``--root`` (the development corpus: the Python 3.11 manual), parses
the page with the lxml extraction websift used before (``lxml_fields`` below, kept here as the
reference) and with ``indexer.parse.parse_html`` (lexbor), compares title, headings, body and
lang, and prints how many pages differ per field with the first difference of each; then the
time per page of both (best of ``--repeat`` passes over all pages; noisy on a shared machine),
with and without the structure (blocks and fragments) the lexbor parse also extracts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import lxml.etree

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.html import drop_invisible, squash, text_of, visible_text  # noqa: E402
from indexer.parse import _CHARSET, ParsedPage, parse_html, url_words  # noqa: E402
from indexer.settings import MAX_HTML_BYTES, MAX_TITLE_CHARS, SNIPPET_TEXT_CHARS  # noqa: E402

FIELDS = ("title", "headings", "body", "lang")


def lxml_fields(body: bytes, url: str, content_type: str | None = None) -> ParsedPage:
    """websift's extraction with lxml.etree (indexer/parse.py before lexbor)."""
    words = url_words(url)
    empty = ParsedPage(title="", headings="", body="", url_words=words, text="")
    if not body or not body.strip():
        return empty
    charset = None
    m = _CHARSET.search(content_type or "")
    if m:
        charset = m.group(1)
    try:
        parser = lxml.etree.HTMLParser(encoding=charset, remove_comments=True, remove_pis=True)
    except LookupError:
        parser = lxml.etree.HTMLParser(remove_comments=True, remove_pis=True)
    try:
        root = lxml.etree.fromstring(body[:MAX_HTML_BYTES], parser=parser)
    except (lxml.etree.ParserError, lxml.etree.XMLSyntaxError, ValueError, LookupError,
            UnicodeError):
        return empty
    if root is None:
        return empty
    title_el = root.find(".//title")
    title = squash(text_of(title_el)) if title_el is not None else ""
    lang = root.get("lang") or None
    drop_invisible(root)
    main = None
    for path in (".//main", ".//*[@role='main']", ".//article", ".//body"):
        main = root.find(path)
        if main is not None:
            break
    scope = main if main is not None else root
    headings = squash(" ".join(text_of(h) for h in scope.iter("h1", "h2", "h3", "h4", "h5", "h6")))
    if not title:
        first = next(iter(scope.iter("h1")), None)
        title = squash(text_of(first)) if first is not None else ""
    text = visible_text(scope)
    return ParsedPage(title=title[:MAX_TITLE_CHARS], headings=headings, body=text,
                      url_words=words, text=text[:SNIPPET_TEXT_CHARS], lang=lang)


def first_difference(a: str, b: str) -> str:
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"at {i}: lxml {a[max(0, i - 30) : i + 30]!r} / lexbor {b[max(0, i - 30) : i + 30]!r}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path("/usr/share/doc/python3.11/html"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    pages = [(f.relative_to(args.root).as_posix(), f.read_bytes())
             for f in sorted(args.root.rglob("*.html")) if f.is_file()]
    ctype = "text/html; charset=utf-8"
    differ: dict[str, list[str]] = {f: [] for f in FIELDS}
    joined = 0
    for rel, body in pages:
        url = "http://docs.example/" + rel
        a, b = lxml_fields(body, url, ctype), parse_html(body, url, ctype, structure=True)
        for f in FIELDS:
            x, y = getattr(a, f), getattr(b, f)
            if x != y:
                differ[f].append(rel)
                if len(differ[f]) == 1:
                    print(f"{f} differs on {rel}: {first_difference(str(x), str(y))}")
        joined += " ".join(blk.text for blk in b.blocks) == b.body
    print(f"{len(pages)} pages; pages whose field differs: "
          + ", ".join(f"{f} {len(v)}" for f, v in differ.items()))
    print(f"pages whose blocks join to the body exactly: {joined}/{len(pages)}")
    print(f"fragments: {sum(len(parse_html(b, 'http://d/' + r, ctype, structure=True).fragments) for r, b in pages)}")

    def best(fn: object) -> float:
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            for rel, body in pages:
                fn(body, "http://docs.example/" + rel, ctype)  # type: ignore[operator]
            times.append(time.perf_counter() - t)
        return min(times) / len(pages) * 1e6

    t_lxml = best(lxml_fields)
    t_lex = best(parse_html)
    t_full = best(lambda b, u, c: parse_html(b, u, c, structure=True))
    print(f"per page (best of {args.repeat}, noisy): lxml {t_lxml:.0f} us, lexbor {t_lex:.0f} us "
          f"(lxml/lexbor {t_lxml / t_lex:.2f}x), lexbor with blocks and fragments {t_full:.0f} us "
          f"(structure costs {t_full / t_lex:.2f}x)")
    return 1 if any(differ.values()) or joined != len(pages) else 0


if __name__ == "__main__":
    sys.exit(main())
