"""Language identification's CPU per page: indexer/langid_fast.py against py3langid, same run.

    .venv/bin/python -m scripts.benchmarks.bench_langid [--pages 2000] [--rounds 5]
        [--manual DIR ...]

The pages are real ones: the installed manuals' HTML (the Python 3.11 manual, aptitude's in
nine languages, KiCad's; ``--manual`` to choose), parsed by websift (indexer/parse.py) into the
text ``page_language`` identifies.  Each round times, with ``time.process_time``, three ways
of identifying every page, in alternation: the sample ``identify()`` takes given to py3langid's
``LanguageIdentifier.classify`` (what websift ran before); ``identify()``, one page at a time
(langid_fast); ``page_languages()`` on batches of BATCH_FULL_DOCS pages, as the indexer's
workers run it.  It prints the median CPU per page of each, the ratios, and whether every
answer (language and probability; the page's language) was the same.  CPU on a shared machine is noisy: the ratio
within a run is the figure.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

MANUALS = [Path("/usr/share/doc/python3.11/html"), Path("/usr/share/doc/aptitude/html"),
           Path("/usr/share/doc/kicad/help")]


def page_texts(manuals: list[Path], limit: int) -> list[str]:
    """The body text of up to ``limit`` pages, spread over the manuals."""
    from websift.indexer.parse import parse_html

    paths = [p for m in manuals for p in sorted(m.rglob("*.html"))]
    step = max(1, len(paths) // limit)
    texts = []
    for path in paths[::step][:limit]:
        parsed = parse_html(path.read_bytes(), f"http://127.0.0.1/{path.name}", "text/html")
        texts.append(parsed.body)
    return texts


def sample(text: str) -> str | None:
    """The sample ``identify`` classifies (None: too short to identify), as websift took it
    before langid_fast (white space collapsed by a regular expression)."""
    from websift.indexer.settings import LANG_MIN_CHARS, LANG_SAMPLE_CHARS

    if len(text) > 2 * LANG_SAMPLE_CHARS:
        mid = (len(text) - 2 * LANG_SAMPLE_CHARS) // 2
        text = text[mid : mid + 2 * LANG_SAMPLE_CHARS]
    text = _WS.sub(" ", text).strip()
    if len(text) < LANG_MIN_CHARS:
        return None
    if len(text) > LANG_SAMPLE_CHARS:
        mid = (len(text) - LANG_SAMPLE_CHARS) // 2
        text = text[mid : mid + LANG_SAMPLE_CHARS]
    return text


_WS = re.compile(r"\s+")


def cpu_per_page(run: Callable[[str], Any], texts: list[str]) -> float:
    start = time.process_time()
    for text in texts:
        run(text)
    return (time.process_time() - start) / len(texts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--manual", type=Path, action="append", help="a folder of HTML pages")
    args = ap.parse_args(argv)
    manuals = [m for m in (args.manual or MANUALS) if m.is_dir()]
    if not manuals:
        print("bench_langid: no manual installed (scripts/ensure_system_packages.sh)",
              file=sys.stderr)
        return 2
    from websift.indexer.langid_model import load_identifier
    from websift.indexer.languages import identify, normalise_lang, page_languages
    from websift.indexer.languages import load_identifier as load_fast
    from websift.indexer.settings import BATCH_FULL_DOCS, LANG_GUESS_PROB

    texts = page_texts(manuals, args.pages)
    py3langid = load_identifier(norm_probs=True)
    load_fast()

    def before(text: str) -> tuple[str | None, float]:
        got = sample(text)
        if got is None:
            return None, 0.0
        lang, prob = py3langid.classify(got)
        return normalise_lang(lang), float(prob)

    def batched(pages: list[str]) -> None:
        for i in range(0, len(pages), BATCH_FULL_DOCS):
            page_languages([(None, t) for t in pages[i : i + BATCH_FULL_DOCS]])

    differ = sum(identify(t) != before(t) for t in texts)
    guessed = page_languages([(None, t) for t in texts])
    differ += sum(g != (None if p < LANG_GUESS_PROB else lang)
                  for g, (lang, p) in zip(guessed, map(before, texts), strict=True))
    langs = Counter(identify(t)[0] for t in texts)
    rounds: dict[str, list[float]] = {"py3langid": [], "identify": [], "batch": []}
    for _ in range(args.rounds):
        rounds["py3langid"].append(cpu_per_page(before, texts) * 1e6)
        rounds["identify"].append(cpu_per_page(identify, texts) * 1e6)
        start = time.process_time()
        batched(texts)
        rounds["batch"].append((time.process_time() - start) / len(texts) * 1e6)
    then, one, many = (statistics.median(v) for v in rounds.values())
    print(f"{len(texts)} pages of {', '.join(str(m) for m in manuals)}; languages found: "
          + ", ".join(f"{k}={n}" for k, n in langs.most_common(8)))
    print(f"CPU a page (median of {args.rounds} rounds): py3langid classify {then:.0f} us; "
          f"identify, a page at a time {one:.0f} us ({one / then:.2f}x); page_languages, "
          f"{BATCH_FULL_DOCS} pages a call {many:.0f} us ({many / then:.2f}x)")
    print("answers: " + ("all the same" if differ == 0 else f"{differ} differ"))
    return 0 if differ == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
