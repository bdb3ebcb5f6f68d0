"""Recording what a fetch produced: WARC record, page row, links, OPIC step, in one transaction.

Question: a response (or a failure) came back for a URL of the frontier; what lands in the store?

Every outcome is one *step* and one SQLite transaction holding the page's row, its out-links and
newly discovered URLs, and the OPIC state the step changed (``Frontier.persist``).  A WARC record
is written and fsynced *before* the transaction that points into it commits, so a crash leaves at
worst an unreferenced record, never a row pointing at nothing.  A URL is fetched again after a
crash only if its step had not committed, so no page is ever stored twice.

Outcomes (counted in ``stats`` as ``outcome/...``, failures as ``failure/<reason>``):
2xx HTML (parsed: links, robots directives, exact and near duplicates), 2xx other types (stored
and archived, not parsed), 304 / unchanged (no new ``seq``: nothing to re-index), redirects (the
target enters the frontier, the hop count is limited), robots.txt refusals and failures.

A link whose host's address verdict is not known yet (the judge answers ``ADDRESS_PENDING``:
its lookup runs in ``crawler/dns.py``'s threads) is stored but *parked*, outside OPIC, until
the session hands the verdict to :meth:`PageRecorder.settle`; then it enters the frontier or is
recorded ``out_of_scope``, exactly as if it had been judged at once.  Only its parent's cash
differs: the parent was read before the child was known, so it paid its other children and the
virtual page (as for an out-of-scope link), and the child starts from the virtual page's
payouts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus

from websift.core.cache import Cache
from websift.core.html import is_html, media_type
from websift.crawler import settings as S
from websift.crawler.canonical import link_header_canonical, same_site
from websift.crawler.dedup import (
    NEAR_DUPLICATE_DISTANCE,
    NearDuplicateIndex,
    TextFingerprint,
    content_hash,
    text_fingerprint,
)
from websift.crawler.dns import ADDRESS_PENDING
from websift.crawler.extract import Extracted, extract, robots_directives
from websift.crawler.frontier import CrawlFrontier
from websift.crawler.groupcommit import GroupCommit
from websift.crawler.robots import RobotsDecision
from websift.crawler.scope import ScopeConfig, host_key
from websift.crawler.urls import UrlError, canonicalize, host_of
from websift.store.crawl_store import DISALLOWED, OUT_OF_SCOPE, REDIRECT, CrawlStore, Link
from websift.store.warc import DEFAULT_GZIP_LEVEL, WarcWriterFile, pack_response

# (url, depth) -> None when in scope, else the reason key
ScopeJudge = Callable[[str, int], "str | None"]


@dataclass
class Fetched:
    """A response, in plain values (the spider converts Scrapy's objects)."""

    uid: int
    url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    encoding: str | None = None
    looks_html: bool = False  # Scrapy chose HtmlResponse (type sniffed when the header is absent)
    depth: int = 0
    fetched_at: float = 0.0

    def header(self, name: str) -> str | None:
        lname = name.lower()
        for key, value in self.headers:
            if key.lower() == lname:
                return value
        return None

    def header_all(self, name: str) -> list[str]:
        lname = name.lower()
        return [v for k, v in self.headers if k.lower() == lname]

    @property
    def content_type(self) -> str | None:
        raw = self.header("Content-Type")
        if not raw:
            return "text/html" if self.looks_html else None
        return media_type(raw)


@dataclass
class Prepared:
    """What :meth:`PageRecorder.page` computes from a 2xx response alone, before it looks at
    the store: the body's hash, its WARC record (a gzip member), and for HTML the extraction
    and the text's fingerprint.  :func:`prepare` makes it; ``websift import``'s workers make it
    in other processes, so the one writer only applies it."""

    digest: str
    member: bytes
    extracted: Extracted | None  # None: not HTML (its ``text`` may be dropped once fingerprinted)
    fingerprint: TextFingerprint | None  # of the extracted text; None when not HTML


def prepare(f: Fetched, agent: str = S.ROBOTS_AGENT, gzip_level: int = DEFAULT_GZIP_LEVEL,
            digest: str | None = None) -> Prepared:
    """The store-independent work of recording a 2xx response (a pure function of ``f``, but
    for the WARC record's ID and date); ``digest``: its body's hash when already known."""
    member = pack_response(f.url, f.status, _phrase(f.status), f.headers, f.body,
                           gzip_level=gzip_level)
    ex: Extracted | None = None
    fp: TextFingerprint | None = None
    if is_html(f.content_type):
        ex = extract(f.body, f.url, f.encoding, f.header_all("X-Robots-Tag"), agent=agent)
        fp = text_fingerprint(ex.text[: S.SIMHASH_MAX_CHARS], title=ex.title)
    return Prepared(content_hash(f.body) if digest is None else digest, member, ex, fp)


@dataclass
class _Parked:
    """A link waiting for its host's address verdict (merged over the links naming it)."""

    url: str
    depth: int
    follow: bool
    created: bool  # stored by this run: its scope reason is counted once, when known
    hops: int  # redirect hops to it (the redirect limit holds across hosts being looked up)


@dataclass
class LinkSet:
    links: list[Link] = field(default_factory=list)
    children: list[int] = field(default_factory=list)  # followed, in scope, known to OPIC


class PageRecorder:
    """Writes each step's outcome to the WARC files, the store and the OPIC state."""

    def __init__(
        self,
        store: CrawlStore,
        warc: WarcWriterFile,
        frontier: CrawlFrontier,
        judge: ScopeJudge,
        stats: Counter[str],
        *,
        near: NearDuplicateIndex,
        batch: GroupCommit,
        agent: str = S.ROBOTS_AGENT,
        url_cache_size: int = S.URL_CACHE_SIZE,
        max_url_length: int = ScopeConfig().max_url_length,
        max_parked: int = S.DNS_PARKED_MAX,
    ) -> None:
        # A URL longer than the scope's limit is counted but not stored: one page of a hundred
        # megabyte links must not become a hundred megabytes of rows (and of index over them).
        self.max_url_length = max_url_length
        self.store = store
        self.warc = warc
        self.batch = batch
        self.url_cache_size = url_cache_size
        # canonical URL -> (id, scope reason or None), for URLs met in this run, the most
        # recently met kept (bounded LRU); a depth verdict is not kept (the same URL may come
        # back through a shorter path)
        self._seen: Cache[str, tuple[int, str | None]] = Cache(url_cache_size)
        # pages to write with the open batch besides those the frontier marks itself (every
        # page whose OPIC row changed, Frontier.dirty): written by flush_opic
        self._dirty: set[int] = set()
        # host key -> URL id -> link waiting for that host's address verdict (bounded in all)
        self._parked: dict[str, dict[int, _Parked]] = {}
        self._parked_count = 0
        self.max_parked = max_parked
        batch.before_commit.append(self.flush_opic)
        self.frontier = frontier
        self.judge = judge
        self.stats = stats
        self.near = near
        self.agent = agent
        # hooks of crawler/signals.py: a refetch's outcome (page, changed) and a page's feed
        # links (page, base URL, hrefs); None when the crawl runs without signals
        self.refetched: Callable[[int, bool], None] | None = None
        self.found_feeds: Callable[[int, str, list[str]], None] | None = None
        # rel="canonical" honoured (crawler/canonical.py) when ``retire`` is set: a variant is
        # stored as a duplicate of its canonical page, its cash goes to it, and it is retired
        # (not fetched again); ``variants`` maps a variant's ID to its canonical page's
        self.retire: Callable[[int], None] | None = None
        self.variants: dict[int, int] = {}

    # ------------------------------------------------------------------ URLs entering
    def discover(self, url: str, depth: int, follow: bool, hops: int = 0) -> tuple[int, bool]:
        """Store a URL named by a link (or seed); frontier it when followed and in scope.

        Returns (id, entered OPIC).  Out-of-scope URLs get status ``out_of_scope`` with the
        reason in ``error`` (only while they were never fetched).  A URL whose host's address
        verdict is pending is parked (module doc): not entered yet.
        """
        cached = self._seen.get(url)
        if cached is not None:
            uid, reason = cached
            if reason is not None or not follow or self.frontier.is_known(uid):
                return uid, False
            return uid, self._enter(uid, url, depth, created=False)
        uid, created = self.store.add_url(url, depth, self.frontier.url_id(url))
        if created:
            self.stats["discovery/urls"] += 1
        if self.frontier.is_known(uid):
            self._remember(url, uid, None)
            return uid, False
        reason = self.judge(url, depth)
        if reason == ADDRESS_PENDING:
            self._park(uid, _Parked(url, depth, follow, created, hops))
            return uid, False
        self._remember(url, uid, reason)
        if reason is not None:
            self._refuse(uid, reason, created)
            return uid, False
        if not follow:
            return uid, False
        return uid, self._enter(uid, url, depth, created)

    def _refuse(self, uid: int, reason: str, created: bool) -> None:
        """An out-of-scope URL: counted once (when this run stored it), marked unless fetched."""
        if created:
            self.stats[f"scope/{reason}"] += 1
        page = self.store.page(uid) if not created else None
        if created or (page is not None and page.status in ("discovered", OUT_OF_SCOPE)):
            self.store.update_page(uid, status=OUT_OF_SCOPE, error=reason)

    # ------------------------------------------------------------------ links waiting for DNS
    def _park(self, uid: int, link: _Parked) -> None:
        key = host_key(host_of(link.url))
        waiting = self._parked.get(key)
        old = None if waiting is None else waiting.get(uid)
        if old is not None:  # named again meanwhile: the shortest path and any follow count
            old.depth = min(old.depth, link.depth)
            old.follow = old.follow or link.follow
            old.created = old.created or link.created
            old.hops = min(old.hops, link.hops)
            return
        if self._parked_count >= self.max_parked:
            # stored as discovered, outside OPIC: the next link naming it once its host's
            # verdict is known brings it in
            self.stats["skipped/address_pending"] += 1
            return
        if waiting is None:
            waiting = self._parked[key] = {}
        waiting[uid] = link
        self._parked_count += 1
        self.stats["dns/parked_links"] += 1

    def parked_count(self) -> int:
        """Links waiting for their host's address verdict."""
        return self._parked_count

    def settle(self, host: str, reason: str | None) -> list[tuple[int, int]]:
        """Host ``host``'s address verdict is known: its parked links enter the frontier (when
        followed) or are recorded out of scope with ``reason``, in one crawl step.  Returns
        (id, redirect hops) of the URLs that entered."""
        waiting = self._parked.pop(host_key(host), None)
        if not waiting:
            return []
        self._parked_count -= len(waiting)
        entered: list[tuple[int, int]] = []
        with self.batch.step():
            for uid, link in waiting.items():
                if self.frontier.is_known(uid):
                    continue  # entered meanwhile (a seed, or a verdict known another way)
                self._remember(link.url, uid, reason)
                if reason is not None:
                    self._refuse(uid, reason, link.created)
                elif link.follow and self._enter(uid, link.url, link.depth, link.created):
                    self._dirty.add(uid)  # its OPIC row is written with this batch
                    entered.append((uid, link.hops))
        return entered

    def forget_verdicts(self) -> None:
        """Judge every URL met again (the scope changed: removals came or went)."""
        self._seen.clear()

    def _remember(self, url: str, uid: int, reason: str | None) -> None:
        if reason == "depth":
            return
        self._seen.put(url, (uid, reason))

    def _enter(self, uid: int, url: str, depth: int, created: bool) -> bool:
        """A followed, in-scope URL joins OPIC and the frontier."""
        if not created:
            # out of scope before, in scope now; a page this shard fetched keeps its row (a
            # shared frontier knows it, though this run of the crawler has not met it yet)
            page = self.store.page(uid)
            if page is None or page.status in ("discovered", OUT_OF_SCOPE):
                self.store.update_page(uid, status="discovered", error=None)
        self.frontier.add(uid, url, self.store.host_id_of_url(uid), depth)
        return True

    def _canonical(self, f: Fetched, ex: Extracted | None) -> int | None:
        """The canonical page this fetched page is a variant of (recorded in the store), or
        None: it names none, itself, another site's URL (recorded only), or one not crawled."""
        href = (ex.canonical if ex is not None else None) or link_header_canonical(
            f.header_all("Link"))
        if href is None:
            self.store.set_canonical(f.uid, None)
            return None
        try:
            target = canonicalize(href, ex.base if ex is not None else f.url)
        except UrlError:
            self.stats["canonical/bad_url"] += 1
            return None
        if target == f.url:
            self.store.set_canonical(f.uid, None)
            return None
        if not same_site(target, f.url):  # recorded, not followed
            cid, _ = self.discover(target, f.depth + 1, follow=False)
            self.store.set_canonical(f.uid, cid, same_site=False)
            self.stats["canonical/other_site"] += 1
            return None
        cid, _ = self.discover(target, f.depth, follow=True)
        cid = self.variants.get(cid, cid)  # a variant's canonical is the canonical
        if cid == f.uid:
            self.stats["canonical/loop"] += 1
            self.store.set_canonical(f.uid, None)
            return None
        if not self.frontier.is_known(cid):  # out of scope, or its host's address unknown yet
            self.stats["canonical/target_not_crawled"] += 1
            return None
        self.store.set_canonical(f.uid, cid)
        self.variants[f.uid] = cid
        self.stats["canonical/variants"] += 1
        return cid

    def _hreflang(self, f: Fetched, ex: Extracted) -> None:
        """Record the page's language alternates (stored URLs; followed only if linked)."""
        alternates: dict[str, int] = {}
        for lang, href in ex.hreflang.items():
            try:
                url = canonicalize(href, ex.base)
            except UrlError:
                self.stats["hreflang/bad_url"] += 1
                continue
            if len(url) <= self.max_url_length:
                alternates[lang] = self.discover(url, f.depth + 1, follow=False)[0]
        if alternates or ex.hreflang:
            self.stats["hreflang/pages"] += 1
        self.store.set_hreflang(f.uid, alternates)

    def _links(self, uid: int, depth: int, ex: Extracted) -> LinkSet:
        out = LinkSet()
        seen_children: set[int] = set()
        targets: list[tuple[str, bool, str]] = []  # (URL, nofollow, anchor)
        for raw in ex.links:
            try:
                target = canonicalize(raw.href, ex.base)
            except UrlError:
                self.stats["links/unusable_href"] += 1
                continue
            if len(target) > self.max_url_length:
                self.stats["scope/url_too_long"] += 1
                self.stats["links/too_long_not_stored"] += 1
                continue
            targets.append((target, raw.nofollow, raw.anchor))
        # a shared frontier allocates the page's link IDs in one round trip, not one per link
        self.frontier.prefetch_ids([t for t, _, _ in targets])
        for target, nofollow, anchor in targets:
            follow = not nofollow
            dst, _ = self.discover(target, depth + 1, follow)
            out.links.append(Link(dst, anchor, nofollow))
            dst = self.variants.get(dst, dst)  # a link to a variant pays its canonical page
            if follow and dst != uid and dst not in seen_children and self.frontier.is_known(dst):
                seen_children.add(dst)
                out.children.append(dst)
        self.stats["links/stored"] += len(out.links)
        return out

    # ------------------------------------------------------------------ the OPIC step
    def _step(
        self, uid: int, children: list[int], *, dead: bool, changed: bool | None = None
    ) -> None:
        """Read the page in OPIC (``changed``: a refetch found new content, or not; None for a
        first fetch); the rows it changed are written when the batch commits."""
        self.frontier.read(uid, children, dead=dead, changed=changed)
        if self.frontier.virtual_due():
            self.frontier.distribute_virtual()  # O(1): dividend levels, no row changes

    def flush_opic(self) -> None:
        """Write the OPIC state the batch's steps changed (the group commit calls this inside
        the batch transaction, just before committing it): one UPDATE per changed page per
        batch, not per step, and the stored cash still sums to the constant."""
        self.frontier.persist(self.store, self._dirty)
        self._dirty.clear()

    # ------------------------------------------------------------------ outcomes
    def page(self, f: Fetched, ready: Prepared | None = None) -> None:
        """A 2xx answer: archive, parse when HTML, detect duplicates, store, step OPIC.

        ``ready``: what :func:`prepare` made of ``f`` elsewhere (its body is then not read)."""
        digest = content_hash(f.body) if ready is None else ready.digest
        previous = self.store.page(f.uid)
        if previous is not None and previous.fetch_count and previous.content_hash == digest:
            with self.batch.step():
                self._unchanged(f, f.uid)  # a refetch with the same bytes: nothing to archive
            return
        if ready is None:
            ready = prepare(f, self.agent, self.warc.gzip_level, digest)
        ctype = f.content_type
        # flushed now, fsynced by the group commit before the row that points at it commits
        loc = self.warc.append(ready.member)
        ex = ready.extracted
        if ex is not None:
            if ex.parse_error:
                self.stats[f"parse/{ex.parse_error}"] += 1
        else:
            self.stats["outcome/non_html"] += 1
        with self.batch.step():
            variant_of = self._canonical(f, ex) if self.retire is not None else None
            duplicate_of, simhash = self._duplicate(f, ready.fingerprint, digest, variant_of)
            links = self._links(f.uid, f.depth, ex) if ex is not None else LinkSet()
            if self.retire is not None and ex is not None:
                self._hreflang(f, ex)
            if variant_of is not None:  # indexed under its canonical page, which gets its cash
                links.children = [variant_of] if self.frontier.is_known(variant_of) else []
            # X-Robots-Tag applies to every type (a PDF can say noindex); HTML adds its meta tags
            header = robots_directives(f.header_all("X-Robots-Tag"), self.agent)
            noindex = bool(ex and ex.noindex) or "noindex" in header
            if noindex:
                self.stats["outcome/noindex"] += 1
            self.store.record_fetched(
                f.uid,
                http_status=f.status,
                content_type=ctype,
                warc=(loc.file, loc.offset, loc.length),
                content_hash=digest,
                links=links.links,
                simhash=simhash,
                duplicate_of=duplicate_of,
                noindex=noindex,
                nofollow=bool(ex and ex.nofollow) or "nofollow" in header,
                etag=f.header("ETag"),
                last_modified=f.header("Last-Modified"),
                fetched_at=f.fetched_at,
            )
            refetch = previous is not None and previous.fetch_count > 0
            self._step(f.uid, links.children, dead=False, changed=True if refetch else None)
            if variant_of is not None and self.retire is not None:
                self.retire(f.uid)
        self.stats["outcome/fetched"] += 1
        if refetch and self.refetched is not None:
            self.refetched(f.uid, True)
        if ex is not None and ex.feeds and self.found_feeds is not None:
            self.found_feeds(f.uid, ex.base, ex.feeds)

    def _duplicate(
        self, f: Fetched, fp: TextFingerprint | None, digest: str, variant_of: int | None
    ) -> tuple[int | None, int | None]:
        """(the page it duplicates, its SimHash): a rel="canonical" variant duplicates its
        canonical page; else the first page with the same bytes, else (HTML: ``fp``, the
        fingerprint of its text) the first page within the near-duplicate distance, which the
        page joins when it is none."""
        if variant_of is not None:
            return variant_of, None if fp is None else fp.simhash
        duplicate_of = self.store.first_with_hash(digest, exclude=f.uid)
        if duplicate_of is not None:
            self.stats["outcome/duplicate_exact"] += 1
        if fp is None:
            return duplicate_of, None
        if duplicate_of is None:
            duplicate_of = self.near.find(
                fp.simhash, NEAR_DUPLICATE_DISTANCE, tokens=fp.tokens, exclude=f.uid
            )
            if duplicate_of is not None:
                self.stats["outcome/duplicate_near"] += 1
            else:
                self.near.add(f.uid, fp.simhash, tokens=fp.tokens)
        return duplicate_of, fp.simhash

    def _unchanged(self, f: Fetched, uid: int) -> None:
        """Refetched with the same bytes: like a 304, no new seq (inside the transaction)."""
        self.store.touch_fetched(
            uid, f.fetched_at, etag=f.header("ETag"), last_modified=f.header("Last-Modified")
        )
        self._step(uid, self.store.followed_children(uid, self.frontier.is_known), dead=False,
                   changed=False)
        self.stats["outcome/unchanged"] += 1
        if self.refetched is not None:
            self.refetched(uid, False)

    def not_modified(self, f: Fetched) -> None:
        """304 to a conditional request: fetched_at and fetch_count move, seq does not."""
        with self.batch.step():
            self.store.touch_fetched(
                f.uid, f.fetched_at, etag=f.header("ETag"), last_modified=f.header("Last-Modified")
            )
            self._step(f.uid, self.store.followed_children(f.uid, self.frontier.is_known),
                       dead=False, changed=False)
        self.stats["outcome/not_modified"] += 1
        if self.refetched is not None:
            self.refetched(f.uid, False)

    def redirect(self, f: Fetched, location: str, hops: int, max_hops: int) -> tuple[int, str] | None:
        """A 3xx: the source row points at the target, which enters the frontier.

        Returns (target id, target URL) when the target was newly frontiered, so the caller can
        carry the hop count to its request.
        """
        try:
            target = canonicalize(location, f.url)
        except UrlError:
            self.failed(f.uid, "bad_redirect", f.status, f.fetched_at)
            return None
        if hops > max_hops:
            self.failed(f.uid, "too_many_redirects", f.status, f.fetched_at)
            return None
        if len(target) > self.max_url_length:
            self.stats["scope/url_too_long"] += 1
            self.failed(f.uid, "redirect_url_too_long", f.status, f.fetched_at)
            return None
        with self.batch.step():
            tid, entered = self.discover(target, f.depth, follow=True, hops=hops)
            self.store.update_page(
                f.uid, status=REDIRECT, http_status=f.status, redirect_to=tid,
                fetched_at=f.fetched_at, error=None,
            )
            self.store.bump_fetch_count(f.uid)
            children = [tid] if self.frontier.is_known(tid) and tid != f.uid else []
            self._step(f.uid, children, dead=False)
        self.stats["outcome/redirect"] += 1
        return (tid, target) if entered else None

    def failed(self, uid: int, reason: str, http_status: int | None, when: float) -> None:
        """A final failure: status error with its reason; the page's cash goes back."""
        with self.batch.step():
            self.store.mark_failed(uid, reason, http_status, when)
            self._step(uid, [], dead=True)
        self.stats[f"failure/{reason}"] += 1

    def disallowed(self, uid: int, decision: RobotsDecision) -> None:
        where = f"robots.txt line {decision.line}: {decision.rule}" if decision.line else decision.reason
        with self.batch.step():
            self.store.update_page(uid, status=DISALLOWED, error=where)
            self._step(uid, [], dead=True)
        self.stats["outcome/disallowed"] += 1


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""
