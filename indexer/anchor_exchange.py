"""Anchor text across shards: each shard exports, as one checked file, the anchor texts of its
links to pages it did not fetch; every other shard's index reads those files and adds the texts
to the pages it fetched.

Question: a page fetched by shard B is linked from pages shard A fetched; B's store has no such
link, so B's index would lack that anchor text (Brin & Page 1998, section 2.2: the text of a
link belongs to the page it points to).  How does a sharded index answer like one index of the
same pages?  Answer, in the spirit of the OPIC paper's buffered money transfers (section 4.1):
one batch per shard.  ``websift anchors export --data A --out A.anchors.json`` writes:

- ``rows``: (target URL, source URL, text) for every link of A's pages to a URL A did not fetch
  (a page known to A only by its links, or one redirecting or canonical to it), with A's rules
  already applied (indexer/anchors.py: no self-links, no nofollow, none from duplicates, one
  text per source and spelling), all but the navigation rule;
- ``fetched``: the URLs A fetched, so another shard leaves out its anchor-only document for a
  page A holds whole;
- ``anchor_use``: per source host origin, A's pages of it with an anchored link and, per
  anchor text (its boilerplate key), the pages using it (indexer/anchors.py ``HostUse``);
- ``template_samples``: per host, the URLs and template keys of the pages A samples to measure
  the host's template (indexer/templates.py), so a shard holding the host's other pages
  measures it on the sample of one store (``merged_sample``).

A host's pages may be split over shards (a partition's lease moved mid-crawl), and one store's
navigation rule (a text on links from ANCHOR_TEMPLATE_MIN_SHARE of the host's pages) counts
the host's pages, all of them.  So the rule is applied by the reader, on the sums of every
shard's ``anchor_use`` and its own (``summed_boilerplate``): to its own links and to the
others' rows alike; and the host's page template is measured on the merged samples.
(Version 1 files, rows filtered by their writer's own counts, no ``anchor_use`` and no
samples, are read as they are.)

``websift index --data B --anchors-from A.anchors.json C.anchors.json`` matches target URLs with
B's URLs (URL IDs are per store in a partitioned crawl: URLs, never IDs, cross shards), follows
B's redirects and canonical variants, and adds the rows to the pages B fetched.  The files are
plain data, so shards on separate machines copy them (scp, rsync) like any other file.

A URL no shard fetched (disallowed by robots.txt, out of scope, or not reached) is known to
every shard that links to it, and one store holding every page would index it as one
anchor-only document with all their texts.  So exactly one shard indexes it, the *holder*:
the shard holding its smallest source URL (the smallest URL among the sources of its rows,
rules applied).  Every shard sees the same rows (its own, and the others' exports), so all
agree without a word exchanged; the holder adds the others' texts, the others leave it out.

Input: a crawl store; output: the checked export file (core/checked.py envelope, format
``websift-anchor-export``).  Invariant: with every other shard's export given, a page's anchor
field in its shard's index holds the same texts as in one index over one store holding every
shard's pages (order aside: a field's words are scored by count, not place), and a page no shard
fetched is one anchor-only document, in its holder's index, with the texts of every shard.  Not
covered: a source page fetched by two shards (a crawl that lost a lease mid-fetch) may make both
hold a page it links to; the front server shows a URL once (api/fanout.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from websift.core.checked import Format, read_json, write_json
from websift.core.errors import CheckedFileError, StageFailed
from websift.core.html import squash
from websift.indexer.anchors import (
    Anchors,
    HostUse,
    SourceHosts,
    anchor_key,
    host_anchor_use,
    in_anchors_many,
    local_boilerplate,
    redirect_aliases,
    summed_boilerplate,
)
from websift.indexer.settings import MAX_ANCHOR_CHARS, MAX_ANCHORS_PER_PAGE, STORE_READ_IDS
from websift.store.schema import DISALLOWED, DISCOVERED, FETCHED, OUT_OF_SCOPE, Page, origin_of
from websift.store.views import StoreReader

# 2: rows unfiltered by the navigation rule, with the per-host counts that decide it
EXPORT_FORMAT = Format("websift-anchor-export", 2, "anchor export")
# the statuses of a URL whose anchor text another shard's page may need (the pages known only
# by links: what indexer/build.py indexes as anchor-only documents)
EXPORTED_STATUSES = (DISCOVERED, OUT_OF_SCOPE, DISALLOWED)


@dataclass
class AnchorExport:
    """One shard's batch: the URLs it fetched and its anchor rows for the others."""

    fetched: list[str]
    rows: list[tuple[str, str, str]]  # (target URL, source URL, anchor text)
    # source host origin -> its anchor use on this shard's pages (the navigation rule's counts)
    anchor_use: dict[str, HostUse] = field(default_factory=dict)
    # the rows are already without the writer's own navigation texts (a version 1 file)
    filtered: bool = False
    # host -> (URL, template keys) of the pages sampled to measure its template
    template_samples: dict[str, list[tuple[str, set[int]]]] = field(default_factory=dict)


def export_anchors(store: StoreReader, *, navigation: bool = True,
                   samples: dict[str, list[tuple[str, set[int]]]] | None = None
                   ) -> AnchorExport:
    """The batch of ``store`` (see the module docstring).  ``navigation``: count the source
    hosts' anchor use, for the readers' navigation rule (IndexSettings.anchor_templates);
    ``samples``: the template samples to carry (indexer/build.py ``template_samples``)."""
    aliases = redirect_aliases(store)
    use = host_anchor_use(store) if navigation else {}
    sources = SourceHosts(store)
    fetched: list[str] = []
    targets: list[int] = []
    for page in store.pages():
        if page.status == FETCHED:
            fetched.append(page.url)
        elif page.status in EXPORTED_STATUSES:
            targets.append(page.id)
    rows: list[tuple[str, str, str]] = []
    for lo in range(0, len(targets), STORE_READ_IDS):
        got = in_anchors_many(store, targets[lo : lo + STORE_READ_IDS], aliases, None, sources)
        urls = store.urls_of({i for t, a in got.items() if a.texts for i in (t, *a.by)})
        for t, a in got.items():
            rows.extend((urls[t], urls[src], text) for src, text in zip(a.by, a.texts,
                                                                        strict=True))
    return AnchorExport(fetched, rows, use, template_samples=samples or {})


def write_export(path: Path, export: AnchorExport) -> str:
    """Write ``export`` as a checked JSON file, atomically; returns its checksum."""
    use = {o: {"pages": u.pages, "texts": dict(sorted(u.texts.items()))}
           for o, u in sorted(export.anchor_use.items())}
    return write_json(path, EXPORT_FORMAT, {"fetched": export.fetched,
                                            "rows": [list(r) for r in export.rows],
                                            "anchor_use": use,
                                            "template_samples": {
                                                h: [[u, sorted(f"{k:016x}" for k in keys)]
                                                    for u, keys in s]
                                                for h, s in sorted(
                                                    export.template_samples.items())}})


def read_export(path: Path) -> AnchorExport:
    """One export file, checked (StageFailed with one line when missing, damaged or newer)."""
    try:
        got = read_json(path, EXPORT_FORMAT)
    except CheckedFileError as exc:
        raise StageFailed(str(exc)) from None
    body = got.body
    fetched, rows = body.get("fetched"), body.get("rows")
    if not isinstance(fetched, list) or not isinstance(rows, list) \
            or not all(isinstance(u, str) for u in fetched) \
            or not all(isinstance(r, list) and len(r) == 3
                       and all(isinstance(x, str) for x in r) for r in rows):
        raise StageFailed(f"{path} is not a websift anchor export (bad fetched or rows)")
    if got.version < 2:
        return AnchorExport(fetched, [(r[0], r[1], r[2]) for r in rows], filtered=True)
    return AnchorExport(fetched, [(r[0], r[1], r[2]) for r in rows],
                        _read_use(path, body.get("anchor_use")),
                        template_samples=_read_samples(path, body.get("template_samples")))


def _read_samples(path: Path, raw: object) -> dict[str, list[tuple[str, set[int]]]]:
    """An export's ``template_samples`` (StageFailed with one line when it is not one)."""
    bad = StageFailed(f"{path} is not a websift anchor export (bad template_samples)")
    if not isinstance(raw, dict):
        raise bad
    out: dict[str, list[tuple[str, set[int]]]] = {}
    try:
        for host, pages in raw.items():
            if not isinstance(pages, list):
                raise bad
            out[host] = [(str(u), {int(k, 16) for k in keys}) for u, keys in pages]
    except (TypeError, ValueError, AttributeError):
        raise bad from None
    return out


def _read_use(path: Path, raw: object) -> dict[str, HostUse]:
    """An export's ``anchor_use`` (StageFailed with one line when it is not one)."""
    bad = StageFailed(f"{path} is not a websift anchor export (bad anchor_use)")
    if not isinstance(raw, dict):
        raise bad
    out: dict[str, HostUse] = {}
    for origin, u in raw.items():
        pages = u.get("pages") if isinstance(u, dict) else None
        texts = u.get("texts") if isinstance(u, dict) else None
        if not isinstance(pages, int) or not isinstance(texts, dict) or not all(
                isinstance(k, str) and isinstance(n, int) for k, n in texts.items()):
            raise bad
        out[origin] = HostUse(pages, Counter(texts))
    return out


@dataclass
class ForeignAnchors:
    """Other shards' exports as this store's URL IDs."""

    texts: dict[int, list[tuple[str, str]]] = field(default_factory=dict)  # (source URL, text)
    first_source: dict[int, str] = field(default_factory=dict)  # the smallest source URL
    elsewhere: set[int] = field(default_factory=set)  # pages another shard fetched
    rows: int = 0  # rows read
    matched: int = 0  # rows whose target this store knows
    # the pages the next run indexes again (None: all of them): a follower that indexed them
    # once with these texts sets it to the new ones alone (indexer/follow.py)
    reindex: set[int] | None = None
    # the navigation texts of this store's links, measured on every shard's counts summed
    # (None: not measured, the navigation rule off): what the index leaves out of its own
    boilerplate: set[tuple[int, str]] | None = None
    navigation: int = 0  # rows left out as their source host's navigation
    # host -> the other shards' (URL, template keys) of its sampled pages
    samples: dict[str, list[tuple[str, set[int]]]] = field(default_factory=dict)

    def affected(self) -> set[int]:
        """The pages whose anchor text or place these exports may move."""
        return set(self.texts) | self.elsewhere

    def candidates(self) -> set[int]:
        """The pages this run must index again: their anchor text or their place may move."""
        return self.affected() if self.reindex is None else set(self.reindex)


def foreign_anchors(store: StoreReader, exports: Sequence[AnchorExport], *,
                    navigation: bool = True) -> ForeignAnchors:
    """Match ``exports`` with ``store``'s URLs: a target that redirects here, or is a canonical
    variant of a page here, counts for that page (as in :func:`in_anchors_many`).
    ``navigation``: measure the source hosts' navigation texts on the sums of ``store``'s and
    the exports' counts, and leave them out of the rows (and of the index's own links, through
    ``boilerplate``), as the index does (IndexSettings.anchor_templates)."""
    out = ForeignAnchors()
    boiler: set[tuple[str, str]] = set()
    if navigation:
        boiler = summed_boilerplate(store, (e.anchor_use for e in exports))
        out.boilerplate = local_boilerplate(store, boiler)
    redirect_of = {r: t for t, rs in redirect_aliases(store).items() for r in rs}
    ids: dict[str, int | None] = {}

    def local(url: str) -> int | None:
        if url not in ids:
            ids[url] = store.url_id(url)
        return ids[url]

    for export in exports:
        for host, sample in export.template_samples.items():
            out.samples.setdefault(host, []).extend(sample)
        for url in export.fetched:
            uid = local(url)
            if uid is not None:
                out.elsewhere.add(uid)
        for target, source, text in export.rows:
            out.rows += 1
            if boiler and not export.filtered \
                    and (origin_of(source), anchor_key(text)) in boiler:
                out.navigation += 1
                continue
            uid = local(target)
            if uid is None:
                continue
            out.matched += 1
            uid = redirect_of.get(uid, uid)
            out.texts.setdefault(uid, []).append((source, text))
            first = out.first_source.get(uid)
            if first is None or source < first:
                out.first_source[uid] = source
    return out


def apply_foreign(store: StoreReader, pages: Mapping[int, Page], anchors: Mapping[int, Anchors],
                  foreign: ForeignAnchors) -> set[int]:
    """Add other shards' texts to ``anchors`` (this store's, rules applied, of ``pages``): to
    each page fetched here, and to each page no shard fetched that this shard holds (the
    module docstring).  Returns the pages no shard fetched that another shard holds: their
    anchor-only documents are that shard's."""
    orphans = [u for u in anchors if u in foreign.texts and u not in foreign.elsewhere
               and pages[u].status != FETCHED]
    own = store.urls_of({src for u in orphans for src in anchors[u].by})
    held_elsewhere: set[int] = set()
    for u, a in anchors.items():
        rows = foreign.texts.get(u)
        if not rows or u in foreign.elsewhere:
            continue
        if pages[u].status != FETCHED:
            mine = min((own[src] for src in a.by if src in own), default=None)
            if mine is None or foreign.first_source[u] < mine:
                held_elsewhere.add(u)
                continue
        add_foreign(a, rows)
    return held_elsewhere


def add_foreign(anchors: Anchors, rows: Sequence[tuple[str, str]]) -> None:
    """Another shard's texts for one page, after its own: one per (source, spelling), within
    the per-page cap (their sources have no ID here, so ``sources`` and ``by`` stay local)."""
    seen: set[tuple[str, str]] = set()
    for source, raw in rows:
        if len(anchors.texts) >= MAX_ANCHORS_PER_PAGE:
            return
        text = squash(raw)[:MAX_ANCHOR_CHARS]
        key = (source, text.lower())
        if not text or key in seen:
            continue
        seen.add(key)
        anchors.texts.append(text)


def read_exports(paths: Sequence[Path]) -> list[AnchorExport]:
    return [read_export(p) for p in paths]


def export_files(directory: Path) -> list[Path]:
    """The export files of a directory of them (``*.json``, by name)."""
    return sorted(directory.glob("*.json")) if directory.is_dir() else []
