"""`websift index` (registered by api/cli.py; `websift search` is api/commands.py's, so it
ranks with /search's code)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from websift.core.arguments import number, seconds
from websift.core.datadir import DataDir
from websift.core.errors import StageFailed
from websift.indexer.anchor_exchange import (
    AnchorExport,
    ForeignAnchors,
    export_anchors,
    export_files,
    foreign_anchors,
    read_exports,
    write_export,
)
from websift.indexer.build import build_index, template_samples
from websift.indexer.settings import (
    DEFAULT_INDEX_PROCS,
    DEFAULT_RAM_MB,
    FOLLOW_EVERY_PAGES,
    FOLLOW_INTERVAL_SECONDS,
    REBUILD_PROGRESS_SECONDS,
    IndexSettings,
)
from websift.store.views import StoreReader


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this package's subcommands to the `websift` parser."""
    p = sub.add_parser(
        "index", help="index the pages crawled since the last run (all of them the first time)",
        description="Turn the crawl store into searchable index segments: forward barrels, "
        "inverter, lexicon, bit-packed postings.  A later run adds only what changed.")
    p.add_argument("--ram-mb", type=number(int, low=1), default=DEFAULT_RAM_MB, metavar="M",
                   help="memory for hit buffers and barrel inversion, in MB (default: "
                   f"{DEFAULT_RAM_MB} MB)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--rebuild", action="store_true",
                   help="index the whole store into a new generation, ignoring the incremental "
                   "state (after changing analysis or field settings); the old generation "
                   "serves until the new one replaces it")
    p.add_argument("--procs", type=number(int, low=1), default=DEFAULT_INDEX_PROCS, metavar="N",
                   help="worker processes that read, parse and analyse pages (1 = no workers)")
    p.add_argument("--follow", action="store_true",
                   help="keep indexing what the crawl commits, a segment per cut, until SIGINT "
                   "or SIGTERM (one line per cut; status in DATA/index/follow-status.json)")
    p.add_argument("--interval", type=seconds(), default=FOLLOW_INTERVAL_SECONDS,
                   metavar="DURATION", help="with --follow: cut when pages changed and this "
                   "long passed since the last cut (seconds, or 30s, 1m)")
    p.add_argument("--every", type=number(int, low=1), default=FOLLOW_EVERY_PAGES,
                   metavar="PAGES", help="with --follow: cut as soon as this many changed pages "
                   f"wait, and at most this many per cut (default: {FOLLOW_EVERY_PAGES})")
    p.add_argument("--anchors-from", type=Path, nargs="+", default=None, metavar="FILE",
                   help="other shards' anchor texts ('websift anchors export' files): added to "
                   "the pages this shard fetched; give the same files at every run")
    p.add_argument("--anchors-dir", type=Path, default=None, metavar="DIR",
                   help="other shards' anchor exports: every *.json file in DIR (as "
                   "--anchors-from); with --follow, read again whenever a file changes and "
                   "applied at the next cut (websift up --exchange keeps DIR up to date)")
    p.set_defaults(func=index_command)
    a = sub.add_parser(
        "anchors", help="anchor text across shards",
        description="Exchange anchor text between the shards of a crawl: each shard exports "
        "the texts of its links to pages it did not fetch; 'websift index --anchors-from' "
        "reads the other shards' files.")
    verbs = a.add_subparsers(dest="anchors_command", metavar="ACTION", required=True)
    e = verbs.add_parser("export", help="write this shard's anchor texts for the others",
                         description="Write the anchor texts of this shard's links to pages it "
                         "did not fetch, and the URLs it fetched, as one checked file to copy "
                         "to the other shards.")
    e.add_argument("--out", type=Path, required=True, metavar="FILE",
                   help="the export file to write (replaced atomically)")
    e.set_defaults(func=anchors_export_command)


def anchors_export_command(args: argparse.Namespace) -> int:
    from websift.store.views import StoreReader

    settings = _settings()
    if settings is None:
        return 2
    data = DataDir.open(args.data)
    with StoreReader.open(data.store_path) as store, store.snapshot():
        export: AnchorExport = export_anchors(
            store, navigation=settings.anchor_templates,
            samples=template_samples(data.warc_dir, store, settings))
    digest = write_export(args.out, export)
    print(f"anchors: {len(export.rows)} anchor texts for pages {len(export.fetched)} fetched "
          f"pages did not cover, written to {args.out} (sha256 {digest[:12]})")
    return 0


def _settings() -> IndexSettings | None:
    """The indexing settings from the environment (None, said on stderr, when bad)."""
    try:
        return IndexSettings.from_env()
    except ValidationError as exc:
        bad = "; ".join(f"WEBSIFT_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}"
                        for e in exc.errors())
        print(f"index: bad setting: {bad}", file=sys.stderr)
        return None


def older_analysis(index_dir: Path) -> str | None:
    """Why the index in ``index_dir`` must be rebuilt before this websift adds to it (a segment
    built by another analyzer version: websift was upgraded), or None (no index, or one it
    reads)."""
    from websift.indexer.errors import REBUILD_ADVICE, IndexAnalyzerMismatch, IndexMissing
    from websift.indexer.manifest import read_manifest
    from websift.indexer.segment_format import built_with, read_meta

    try:
        manifest = read_manifest(index_dir)
    except IndexMissing:
        return None
    for entry in manifest.segments:
        try:
            built_with(entry.name, read_meta(index_dir / entry.name))
        except IndexAnalyzerMismatch as exc:
            return str(exc).removesuffix(f": {REBUILD_ADVICE}")
    return None


def _foreign(exports: list[AnchorExport] | None, settings: IndexSettings
             ) -> Callable[[StoreReader], ForeignAnchors] | None:
    """build_index's ``foreign``: the other shards' anchor ``exports`` matched with the store
    (None: none)."""
    if exports is None:
        return None
    return lambda store: foreign_anchors(store, exports, navigation=settings.anchor_templates)


def upgraded(index_dir: Path, when: str) -> bool:
    """True, said on stderr, when the index must be rebuilt before this run adds to it
    (:func:`older_analysis`: websift was upgraded and analyses words otherwise now)."""
    older = older_analysis(index_dir)
    if older is not None:
        print(f"index: {older}; rebuilding the index from the crawl store {when}(the old "
              "index stays on disk until the new one replaces it)", file=sys.stderr, flush=True)
    return older is not None


def _follow(data: DataDir, args: argparse.Namespace, settings: IndexSettings,
            say: Callable[[str], None] | None) -> int:
    """Follow the crawl (indexer/follow.py) until SIGINT or SIGTERM; 0 when stopped so."""
    from websift.indexer.follow import follow  # not imported by a one-off run

    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stop.set()

    if upgraded(data.index_dir, "first "):  # rebuilt once, then followed
        anchors_dir = getattr(args, "anchors_dir", None)  # with the other shards' anchors
        try:
            exports = read_exports(export_files(anchors_dir)) if anchors_dir is not None else []
        except StageFailed as exc:  # the follow reads them again as they change
            print(f"index: rebuilding without the other shards' anchors for now: {exc}",
                  file=sys.stderr, flush=True)
            exports = []
        # a long job even under --quiet (websift up): its progress, a line every half minute
        r = build_index(data, ram_mb=args.ram_mb, rebuild=True,
                        progress=say or (lambda msg: print(f"index: rebuilding: {msg}",
                                                           file=sys.stderr, flush=True)),
                        progress_every=None if say else REBUILD_PROGRESS_SECONDS,
                        procs=args.procs, settings=settings,
                        foreign=_foreign(exports or None, settings))
        print(f"index: rebuilt: generation {r.generation} ({r.live_docs} documents) in "
              f"{r.seconds:.1f}s", file=sys.stderr, flush=True)
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        status = follow(data, stop, interval=args.interval, every=args.every,
                        ram_mb=args.ram_mb, procs=args.procs, settings=settings,
                        say=say or (lambda _msg: None),
                        on_cut=lambda line: print(f"index: {line}", flush=True),
                        anchors_dir=getattr(args, "anchors_dir", None))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print(f"index: stopped after {status.cuts} cuts; generation {status.generation} "
          f"({status.live_docs} documents in {status.segments} segments)", flush=True)
    return 0


def index_command(args: argparse.Namespace) -> int:
    # The one place indexing settings come from the environment (WEBSIFT_*, IndexSettings):
    # read once, here, and handed down; a variable set later changes nothing in this run.
    settings = _settings()
    if settings is None:
        return 2
    anchors_from = getattr(args, "anchors_from", None)  # absent when called from another command
    anchors_dir = getattr(args, "anchors_dir", None)
    if anchors_dir is not None and anchors_from:
        print("index: give --anchors-from or --anchors-dir, not both", file=sys.stderr)
        return 2
    if anchors_dir is not None and not args.follow:
        anchors_from = export_files(anchors_dir)
    if args.follow and anchors_from:
        print("index: --anchors-from and --follow do not go together (index with the other "
              "shards' anchors in a run of its own)", file=sys.stderr)
        return 2
    if args.follow and args.rebuild:
        print("index: --rebuild and --follow do not go together (rebuild first, then follow)",
              file=sys.stderr)
        return 2
    say = None if args.quiet else (lambda msg: print(f"index: {msg}", file=sys.stderr))
    if args.follow:  # started beside the crawl, it may come first: the directory is made here
        return _follow(DataDir.create(args.data), args, settings, say)
    data = DataDir.open(args.data)
    exports = None
    if anchors_from:
        try:
            exports = read_exports(anchors_from)
        except StageFailed as exc:
            print(f"index: --anchors-from: {exc}", file=sys.stderr)
            return 2
    r = build_index(data, ram_mb=args.ram_mb, progress=say,
                    rebuild=args.rebuild or upgraded(data.index_dir, ""),
                    procs=args.procs, settings=settings, foreign=_foreign(exports, settings))
    if r.mode == "unchanged":
        print(f"index: nothing new since seq {r.last_seq}; generation {r.generation} "
              f"({r.live_docs} documents in {r.segments} segments)")
        return 0
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(r.skipped.items())) or "none"
    print(f"index: generation {r.generation} ({r.mode}) in {r.seconds:.1f}s: "
          f"{r.documents} pages, {r.anchor_only} known by anchors only, {r.dropped} removed, "
          f"{r.hits} hits; live: {r.live_docs} documents in {r.segments} segments; "
          f"left out: {skipped}")
    if r.merges:
        print(f"index: {r.merges} merges wrote {r.merge_bytes / 1e6:.1f} MB (the cut: "
              f"{r.cut_bytes / 1e6:.1f} MB)")
    if r.template_hosts or r.anchor_boilerplate:
        print(f"index: boilerplate: {r.template_hosts} hosts' templates measured on "
              f"{r.template_pages} pages, {r.anchor_boilerplate} navigation anchor texts left "
              f"out, in {r.template_seconds:.1f}s")
    if r.pages_seconds:
        print(f"index: time: pages {r.pages_seconds:.1f}s (workers analysing "
              f"{r.worker_busy_seconds:.1f}s, idle {r.worker_idle_seconds:.1f}s; the main "
              f"process waiting for them {r.main_wait_seconds:.1f}s), finishing "
              f"{r.finish_seconds:.1f}s")
    if r.template_errors:
        print(f"index: warning: {r.template_errors} sampled pages could not be read to measure "
              "their host's template", file=sys.stderr)
    if r.skipped.get("warc_error"):
        print(f"index: warning: {r.skipped['warc_error']} pages skipped because their WARC "
              "record failed to read or its digest check", file=sys.stderr)
    return 0
