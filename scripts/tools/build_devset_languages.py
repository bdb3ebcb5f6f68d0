"""Build the languages development set: Debian's aptitude manual in nine languages and the KiCad
manuals in Chinese and Japanese, as one site with a language chooser, and queries per language.

    apt-get install -y aptitude-doc-en aptitude-doc-cs aptitude-doc-es aptitude-doc-fi \\
        aptitude-doc-fr aptitude-doc-it aptitude-doc-ja aptitude-doc-nl aptitude-doc-ru \\
        kicad-doc-zh kicad-doc-ja
    .venv/bin/python -m scripts.tools.build_devset_languages --out D   # D/site, D/queries.tsv

The site (``D/site``): ``/aptitude/<lang>/`` is a copy of ``/usr/share/doc/aptitude/html/<lang>``
(about 90 DocBook pages per language; they declare no language); ``/kicad/<lang>/`` holds the
KiCad manuals of ``/usr/share/doc/kicad/help/<lang>``, each manual (one long page) cut into one
page per top-level section (``div.sect1``), under the manual's own ``<html lang="en">`` (a
declaration the text contradicts), with an ``index.html`` listing them; ``/index.html`` is the
language chooser linking every manual's start page.

Queries (``D/queries.tsv``; ``qid kind query relevant`` as shared/eval/pydocs_queries.tsv, ``kind``
the language): the manuals have no back-of-book index, so each heading (``h1``-``h4``) of a
content page, its section number removed, is a query whose relevant pages are the pages that
have that heading (a chapter's table-of-contents page, which repeats its sections' titles as
links, is not a relevant page: its headings are its own title only).  Headings the translators
left in English (those of the English manual; in Chinese and Japanese, those without CJK) are
left out of the other languages' queries.  At most PER_LANG queries
per language, drawn with ``random.Random(SEED)`` from the sorted distinct headings: the output
is the same on every run for the same packages.
"""

from __future__ import annotations

import argparse
import html
import random
import re
import shutil
import sys
from pathlib import Path

import lxml.html

from websift.indexer.folding import has_cjk

APTITUDE = Path("/usr/share/doc/aptitude/html")
KICAD = Path("/usr/share/doc/kicad/help")
APTITUDE_LANGS = ("en", "cs", "es", "fi", "fr", "it", "ja", "nl", "ru")
KICAD_LANGS = ("zh", "ja")
PER_LANG = 60
SEED = 7
_NUMBER = re.compile(r"^\s*(?:[0-9IVXivx]+[.)]\s*)*(?:[0-9]+\s)?\s*")
_SPACE = re.compile(r"\s+")


def heading_text(text: str) -> str:
    """A heading as a query: whitespace squashed, its section number ("2.1.3.") removed."""
    return _NUMBER.sub("", _SPACE.sub(" ", text)).strip()


def _split_kicad(src: Path, dest: Path) -> list[str]:
    """One page per ``div.sect1`` of a KiCad manual; returns the pages' file names."""
    doc = lxml.html.parse(str(src)).getroot()
    lang = doc.get("lang") or ""
    names: list[str] = []
    for i, sect in enumerate(doc.find_class("sect1")):
        h2 = sect.find(".//h2")
        title = heading_text(h2.text_content()) if h2 is not None else src.stem
        name = f"{src.stem}-{i + 1:02d}.html"
        body = lxml.html.tostring(sect, encoding="unicode")
        (dest / name).write_text(
            f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title></head><body><div id=\"content\">{body}"
            f'</div><p><a href="index.html">index</a></p></body></html>\n', encoding="utf-8")
        names.append(name)
    return names


def build_site(out: Path) -> list[tuple[str, str]]:
    """Write ``out`` (the site); returns (language, start page path) per manual."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    starts: list[tuple[str, str]] = []
    for lang in APTITUDE_LANGS:
        src = APTITUDE / lang
        if not (src / "index.html").is_file():
            raise SystemExit(f"error: no aptitude manual at {src} "
                             f"(apt-get install -y aptitude-doc-{lang})")
        shutil.copytree(src, out / "aptitude" / lang)
        starts.append((lang, f"aptitude/{lang}/index.html"))
    for lang in KICAD_LANGS:
        src = KICAD / lang
        if not src.is_dir():
            raise SystemExit(f"error: no KiCad manuals at {src} (apt-get install -y kicad-doc-{lang})")
        dest = out / "kicad" / lang
        dest.mkdir(parents=True)
        names = [n for f in sorted(src.glob("*.html")) for n in _split_kicad(f, dest)]
        links = "".join(f'<li><a href="{n}">{n}</a></li>' for n in names)
        (dest / "index.html").write_text(
            f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8"><title>KiCad '
            f"({lang})</title></head><body><ul>{links}</ul></body></html>\n", encoding="utf-8")
        starts.append((lang, f"kicad/{lang}/index.html"))
    links = "".join(f'<li><a href="{p}">{p.split("/")[0]} ({lang})</a></li>' for lang, p in starts)
    (out / "index.html").write_text(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Manuals</title></head>"
        f"<body><h1>Choose a language</h1><ul>{links}</ul></body></html>\n", encoding="utf-8")
    return starts


def page_headings(path: Path) -> list[str]:
    """The headings of a page (h1-h4), as queries."""
    try:
        doc = lxml.html.parse(str(path)).getroot()
    except (OSError, ValueError):
        return []
    if doc is None:
        return []
    out = []
    for el in doc.iter("h1", "h2", "h3", "h4"):
        text = heading_text(el.text_content())
        if len(text) >= 2:
            out.append(text)
    return out


def _translated(heading: str, lang: str, english: set[str]) -> bool:
    """Whether a heading is in its manual's language: not left in English by the translators
    (a heading of the English manual, or, in Chinese and Japanese, one without CJK)."""
    if lang == "en":
        return True
    if lang in ("zh", "ja", "ko"):
        return has_cjk(heading)
    return heading not in english


def build_queries(site: Path, per_lang: int = PER_LANG, seed: int = SEED
                  ) -> list[tuple[str, str, str, list[str]]]:
    """(qid, language, query, relevant page paths) for the site ``build_site`` wrote."""
    rng = random.Random(seed)
    rows: list[tuple[str, str, str, list[str]]] = []
    groups = [(lang, site / "aptitude" / lang) for lang in APTITUDE_LANGS] + [
        (lang, site / "kicad" / lang) for lang in KICAD_LANGS]
    english = {h for f in (site / "aptitude" / "en").glob("*.html") for h in page_headings(f)}
    for lang, root in groups:
        found: dict[str, set[str]] = {}
        for f in sorted(root.glob("*.html")):
            if f.name == "index.html":
                continue
            for h in page_headings(f):
                if _translated(h, lang, english):
                    found.setdefault(h, set()).add(f.relative_to(site).as_posix())
        texts = sorted(found)
        rng.shuffle(texts)
        for text in sorted(texts[:per_lang]):
            rows.append((f"{root.parent.name}-{lang}-{len(rows) + 1}", lang, text,
                         sorted(found[text])))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="writes OUT/site and OUT/queries.tsv")
    ap.add_argument("--per-lang", type=int, default=PER_LANG)
    args = ap.parse_args(argv)
    build_site(args.out / "site")
    rows = build_queries(args.out / "site", args.per_lang)
    with open(args.out / "queries.tsv", "w", encoding="utf-8") as fh:
        for qid, lang, text, rel in rows:
            fh.write(f"{qid}\t{lang}\t{text}\t{' '.join(rel)}\n")
    print(f"{len(rows)} queries, site at {args.out / 'site'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
