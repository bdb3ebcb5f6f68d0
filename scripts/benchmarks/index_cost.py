"""Where a page's indexing CPU goes: ``websift index --rebuild --procs 1``, by stage, in µs/doc.

    .venv/bin/python -m scripts.benchmarks.index_cost [--pages 5000] [--hosts 10] [--rounds 1]
        [--work DIR] [--data DIR] [--no-lang]

The corpus is bench_index_rate's generated web (``testkit/genweb.py`` pages stored through the
real crawl store and WARC writer), or ``--data``, a data directory whose index is rebuilt.  The
run is in this process with one analyser (``--procs 1``: every stage runs here), and the
functions of each stage are wrapped with a timer of this process's CPU
(``time.process_time``); a stage's time is its own, the stages it calls taken out (the
template measurement parses its sample pages: that parsing counts as parsing).  The stages:

- ``read``: WARC records read and digest-checked (store/warc.py ``BodyReader.read_page``);
- ``parse``: lexbor, the scope's text, blocks and their hashes, fragments (indexer/parse.py);
- ``language``: the pages' languages (indexer/languages.py ``page_languages``);
- ``template cut``: the text shown without a host's template blocks (indexer/display_text.py);
- ``fragments``: the stored fragments' key terms (indexer/fragments.py ``encode_fragments``);
- ``hits``: fields to word IDs and positions (indexer/hits.py via ``BatchAnalyser._hits``);
- ``batch rest``: the rest of a batch's analysis (field lists, the stored text's zlib);
- ``templates``: measuring each host's template blocks on its sample, less its parsing;
- ``finish``: inverting the barrels, bit-packing the postings, writing the segment;
- ``other``: everything else (the store's queries, the main process's per-document
  bookkeeping and segment writing as documents arrive, start-up).

``--no-lang`` takes every page as English without identifying it (the index then differs): the
share identification and the per-language analysis it leads to take together.  Figures on a busy
machine vary by some percent from run to run; the shares are steadier than the totals.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STAGES = ("read", "parse", "language", "template cut", "fragments", "hits", "batch rest",
          "templates", "finish")


class StageClock:
    """Exclusive CPU time per stage: a wrapped call's time less that of the wrapped calls it
    makes."""

    def __init__(self) -> None:
        self.spent = dict.fromkeys(STAGES, 0.0)
        self._inner: list[float] = []  # per open call, the time of the wrapped calls inside

    def wrap(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self._inner.append(0.0)
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                total = time.process_time() - t0
                inner = self._inner.pop()
                self.spent[stage] += total - inner
                if self._inner:
                    self._inner[-1] += total
        return timed


def instrument(clock: StageClock, english_only: bool) -> None:
    """Wrap each stage's functions where the indexer looks them up (a function this tree
    does not have is left out: the script runs on older trees too)."""
    from websift.indexer import build, docbatch
    from websift.indexer.segment_writer import SegmentWriter
    from websift.store.warc import BodyReader

    def wrap(owner: Any, name: str, stage: str) -> None:
        if hasattr(owner, name):
            setattr(owner, name, clock.wrap(stage, getattr(owner, name)))

    wrap(BodyReader, "read_page", "read")
    wrap(docbatch, "parse_html", "parse")
    wrap(build, "parse_html", "parse")
    if english_only:
        from websift.indexer.languages import normalise_lang

        docbatch.page_language = lambda declared, text: normalise_lang(declared)
        docbatch.page_languages = lambda pages: [normalise_lang(d) for d, _ in pages]
    else:
        wrap(docbatch, "page_language", "language")  # a page at a time
        wrap(docbatch, "page_languages", "language")  # a batch's pages together
    wrap(docbatch, "join_shown", "template cut")
    wrap(docbatch, "encode_fragments", "fragments")
    wrap(docbatch.BatchAnalyser, "_hits", "hits")
    wrap(docbatch.BatchAnalyser, "analyse", "batch rest")
    wrap(build, "_templates", "templates")
    wrap(SegmentWriter, "finish", "finish")


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=5_000)
    ap.add_argument("--hosts", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "websift-rate")
    ap.add_argument("--data", type=Path, help="index this data directory (its index is rebuilt)")
    ap.add_argument("--no-lang", action="store_true", help="every page English, unidentified")
    args = ap.parse_args(argv)
    from scripts.benchmarks.bench_index_rate import corpus

    data = args.data.resolve() if args.data else corpus(args.work.resolve(), args.pages,
                                                        args.hosts, False)
    start = cpu()
    clock = StageClock()
    instrument(clock, args.no_lang)
    from websift.api import cli

    for r in range(args.rounds):
        clock.spent = dict.fromkeys(STAGES, 0.0)
        shutil.rmtree(data / "index", ignore_errors=True)
        t0 = cpu() if r else start
        code = cli.main(["index", "--rebuild", "--quiet", "--procs", "1", "--data", str(data)])
        if code:
            return int(code)
        total = cpu() - t0
        docs = int(json.loads((data / "index" / "manifest.json").read_text())
                   ["stats"]["live_docs"])
        per = {k: v / docs * 1e6 for k, v in clock.spent.items()}
        per["other"] = total / docs * 1e6 - sum(per.values())
        whole = total / docs * 1e6
        print(f"round {r + 1}: {docs} documents, {total:.1f} s CPU = {whole:.0f} us/doc"
              + (" (every page English, unidentified)" if args.no_lang else ""))
        for k, v in per.items():
            print(f"  {k:13s} {v:6.0f} us/doc  {v / whole:5.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
