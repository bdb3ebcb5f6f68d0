"""Build the second relevance development set from the GNU Octave manual's own indexes.

    apt-get install -y octave-doc        # 568 pages (+ 2324 XREF redirect stubs) of Texinfo HTML
    .venv/bin/python -m scripts.tools.build_devset_octave  # writes eval/octave/queries.tsv

Built as shared/eval was for the Python manual: each entry of the manual's back-of-book indexes
(Texinfo's ``Concept-Index.html``, ``Function-Index.html``, ``Operator-Index.html`` and
``Graphics-Properties-Index.html``: one ``<table class="index-XX">`` each) is a query; the pages
that the entry's links point to (path, fragment removed) are its relevant pages.  Entries with the
same text are one query whose relevant pages are the union (``addition`` is indexed on two pages).
The index pages are kept out of the crawl by robots.txt (``ROBOTS``), since the judgements come
from them.

Sampling: the four indexes hold very different numbers of entries (about 1500 distinct function
names against 480 concepts), so a uniform sample would be mostly function names.  A fixed quota per
kind (``QUOTAS``: 160 concept, 140 function, 40 operator, 60 graphics property) is drawn with
``random.Random(SEED)`` from each kind's entries in sorted order, and the 400 are shuffled with the
same generator; the output is the same on every run for the same manual.  Columns as
shared/eval/pydocs_queries.tsv: ``qid kind query relevant`` (tab-separated, no header), ``kind`` is
the index the entry came from.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import lxml.html

ROOT = Path(__file__).resolve().parents[2]
DOCS = Path("/usr/share/doc/octave/octave.html")
OUT = ROOT / "eval" / "octave" / "queries.tsv"
SEED = 12
# (index page, kind); the order decides the kind of an entry found in two indexes.
INDEX_PAGES: tuple[tuple[str, str], ...] = (
    ("Concept-Index.html", "concept"),
    ("Function-Index.html", "function"),
    ("Operator-Index.html", "operator"),
    ("Graphics-Properties-Index.html", "property"),
)
QUOTAS = {"concept": 160, "function": 140, "operator": 40, "property": 60}
ROBOTS = ("User-agent: *\n" + "".join(f"Disallow: /{page}\n" for page, _ in INDEX_PAGES)
          ).encode()


@dataclass(frozen=True)
class Entry:
    kind: str
    text: str
    pages: frozenset[str]


def parse_index_page(html: str | bytes, base: str = "") -> list[tuple[str, str]]:
    """(entry text, page path) for every entry row of a Texinfo index page, in page order.

    A Texinfo index is a ``<table class="index-XX">`` whose entry rows hold the entry's link in
    their first cell with a link (``<a href="Page.html#index-foo">foo</a>:``) and the section's
    link in the last; letter headings and separators have no link.  ``base`` is the folder of the
    index page relative to the manual's root (pages are named from the root).
    """
    root = lxml.html.fromstring(html)
    out: list[tuple[str, str]] = []
    for table in root.iter("table"):
        if not str(table.get("class", "")).startswith("index-"):
            continue
        for tr in table.iter("tr"):
            link = next((a for td in tr.iter("td") for a in td.iter("a") if a.get("href")), None)
            if link is None:
                continue
            text = " ".join(link.text_content().split()).rstrip(":").strip()
            path = urlsplit(str(link.get("href"))).path  # as URLs spell it: no spaces
            if text and path and "://" not in str(link.get("href")):
                out.append((text, (base + path).lstrip("/")))
    return out


def collect(pages: Iterable[tuple[str, str, str]]) -> list[Entry]:
    """Merge (kind, text, page) rows into one entry per text, pages unioned, in first-seen order."""
    kinds: dict[str, str] = {}
    targets: dict[str, set[str]] = {}
    for kind, text, page in pages:
        kinds.setdefault(text, kind)
        targets.setdefault(text, set()).add(page)
    return [Entry(kinds[t], t, frozenset(p)) for t, p in targets.items()]


def sample(entries: list[Entry], quotas: dict[str, int], seed: int = SEED) -> list[Entry]:
    """A fixed quota per kind drawn with ``seed`` (all when fewer), then shuffled."""
    rng = random.Random(seed)
    chosen: list[Entry] = []
    for kind in sorted(quotas):
        pool = sorted((e for e in entries if e.kind == kind), key=lambda e: e.text)
        chosen += rng.sample(pool, min(quotas[kind], len(pool)))
    rng.shuffle(chosen)
    return chosen


def tsv(entries: list[Entry], prefix: str = "oc") -> str:
    return "".join(f"{prefix}{i:03d}\t{e.kind}\t{e.text}\t{' '.join(sorted(e.pages))}\n"
                   for i, e in enumerate(entries))


def build(docs: Path = DOCS) -> list[Entry]:
    excluded = {page for page, _ in INDEX_PAGES}
    rows: list[tuple[str, str, str]] = []
    for page, kind in INDEX_PAGES:
        for text, target in parse_index_page((docs / page).read_bytes()):
            if target not in excluded and (docs / unquote(target)).is_file():
                rows.append((kind, text, target))
    return collect(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--docs", type=Path, default=DOCS)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if not (args.docs / "index.html").is_file():
        print(f"error: no Octave manual at {args.docs} (apt-get install -y octave-doc)",
              file=sys.stderr)
        return 2
    entries = build(args.docs)
    counts = {k: sum(1 for e in entries if e.kind == k) for k in QUOTAS}
    chosen = sample(entries, QUOTAS)
    from websift.core.fileio import atomic_write_bytes

    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(args.out, tsv(chosen).encode())
    print(f"{len(entries)} distinct entries {counts}; wrote {len(chosen)} queries to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
