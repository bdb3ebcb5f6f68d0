"""lxml against lexbor (selectolax) for exactly the fields websift extracts, page by page.

    .venv/bin/python -m scripts.benchmarks.compare_parsers [--root /usr/share/doc/python3.11/html]

For every ``*.html`` under ``--root`` (the development corpus: the Python 3.11 manual), parses
the page with the lxml extraction websift used before (``indexer.parse.parse_lxml``, kept
as the fallback for pages of many tags) and with ``indexer.parse.parse_html`` (lexbor),
compares title, headings, body and
lang, and prints how many pages differ per field with the first difference of each; then the
time per page of both (best of ``--repeat`` passes over all pages; noisy on a shared machine),
with and without the structure (blocks and fragments) the lexbor parse also extracts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import websift.indexer.parse
from websift.indexer.parse import parse_html, parse_lxml

# Compare lexbor on every page, the big ones too (parse_html hands those to lxml).
websift.indexer.parse.MAX_LEXBOR_TAGS = 1 << 62

FIELDS = ("title", "headings", "body", "lang")


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
        a, b = parse_lxml(body, url, ctype), parse_html(body, url, ctype, structure=True)
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

    t_lxml = best(parse_lxml)
    t_lex = best(parse_html)
    t_full = best(lambda b, u, c: parse_html(b, u, c, structure=True))
    print(f"per page (best of {args.repeat}, noisy): lxml {t_lxml:.0f} us, lexbor {t_lex:.0f} us "
          f"(lxml/lexbor {t_lxml / t_lex:.2f}x), lexbor with blocks and fragments {t_full:.0f} us "
          f"(structure costs {t_full / t_lex:.2f}x)")
    return 1 if any(differ.values()) or joined != len(pages) else 0


if __name__ == "__main__":
    sys.exit(main())
