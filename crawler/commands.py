"""`websift` subcommands owned by crawler/ (registered by api/cli.py).

``crawl`` and ``recrawl`` (like ``import``) hold the data directory's store writer lock
(``core/lock.py``) for their whole run: a second writer on the same ``--data`` exits 2 with one
line naming the running one.  Every run keeps its scope in its ``crawls`` row
(``crawler/runs.py``); ``recrawl`` and a ``crawl`` given no seed URL apply the scope of the last
run that kept one.

A ``crawl`` whose every seed fails (refused connection, 404, robots.txt unreachable, a name that
does not resolve) exits 1 with one line naming each seed and why (``crawler/seeds.py``); a seed
whose name does not resolve is skipped with a line when others remain.  Seeds are judged before
the data directory is made, so a crawl refused at the start leaves no new directory behind.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from websift.core.arguments import number, seconds
from websift.core.datadir import DataDir
from websift.core.errors import WebsiftError
from websift.core.lock import store_writer_lock
from websift.crawler import frontier_command, robots_command, warc_import
from websift.crawler import settings as S
from websift.crawler.errors import FrontierError, FrontierLost, ScopeError
from websift.crawler.identity import user_agent
from websift.crawler.recrawl import recrawl_schedule
from websift.crawler.runs import FORCED_STOP, stored_scope
from websift.crawler.scope import UNRESOLVABLE, Scope, ScopeConfig
from websift.crawler.seeds import no_seed_line
from websift.crawler.session import KIND_RECRAWL, CrawlConfig, CrawlSession, checked_seeds
from websift.crawler.urls import canonicalize, host_of, port_of
from websift.ranking.opic import Strategy
from websift.store.crawl_store import origin_of
from websift.store.views import StoreReader

EXIT_FORCED = 130  # a crawl stopped by a second signal (requests in flight abandoned)
EXIT_NO_SEED = 1  # every seed failed and nothing was fetched (crawler/seeds.py)
EXIT_FRONTIER_DATA_LOST = 1  # the shared frontier lost its data mid-crawl (redis_frontier.py)
EXIT_USAGE = 2  # contradictory options


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this package's subcommands to the `websift` parser."""
    robots_command.register(sub)
    frontier_command.register(sub)
    warc_import.register(sub)
    _register_crawl(sub)
    _register_recrawl(sub)


def _politeness_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--delay", type=seconds(), default=S.DEFAULT_DELAY, metavar="T",
                   help="time between request starts per host: seconds, or 2s, 1m (robots.txt "
                   "Crawl-delay and slow answers raise it)")
    p.add_argument("--concurrency-per-host", type=number(int, low=1),
                   default=S.DEFAULT_CONCURRENCY_PER_HOST, metavar="K",
                   help="requests in flight per host")
    p.add_argument("--allow-private", action="store_true",
                   help="allow private, loopback and link-local addresses (local sites)")
    p.add_argument("--user-agent", type=user_agent, default=S.USER_AGENT, metavar="UA",
                   help="the User-Agent sent with every request; its product token (the part "
                   "before '/') picks the robots.txt group obeyed. Name yourself and a contact "
                   "URL: 'examplebot/1.0 (+https://example.org/bot)'")


def cidr(text: str) -> str:
    """An argparse ``type=`` for an address range: ``10.0.0.0/8``, ``2001:db8::/32``, or one
    address; returned in its normal spelling."""
    try:
        return str(ipaddress.ip_network(text.strip(), strict=True))
    except ValueError as exc:
        # host bits set (127.0.0.1/8) are refused, as ScopeConfig refuses them: a typo in a
        # range must not silently widen or move it
        raise argparse.ArgumentTypeError(
            f"not an IP address range: {text!r} ({exc}; e.g. 10.0.0.0/8 or 2001:db8::/32)"
        ) from None


def _register_crawl(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "crawl",
        help="crawl from seed URLs into the crawl store (resumes an interrupted crawl)",
        description="Fetch pages politely, OPIC-greedy first, into --data. The URLs discovered "
        "and not yet fetched are the frontier: running it again continues where it stopped "
        "(with no SEED_URL, under the scope the last run was started with). Discovery and "
        "refresh share one schedule: read pages keep gathering cash and are refetched "
        "(conditionally) when they are the richest. --continuous runs until stopped: the "
        "first SIGINT/SIGTERM lets the requests in flight finish, commits and exits 0; a "
        "second stops at once.",
    )
    p.add_argument("seeds", nargs="*", metavar="SEED_URL",
                   help="where to start, e.g. https://docs.python.org/3/ (http:// if no scheme; "
                   "none: resume the data directory's crawl with its stored scope)")
    p.add_argument("--max-pages", type=number(int, low=0), default=None, metavar="N",
                   help=f"pages to fetch in this run (default: {S.DEFAULT_MAX_PAGES}; no limit "
                   "with --continuous)")
    p.add_argument("--continuous", action="store_true",
                   help="run until stopped (SIGINT/SIGTERM, --duration or --max-pages): when "
                   "nothing is due, wait for the next page to come due instead of ending")
    p.add_argument("--duration", type=seconds(strict=True), default=None, metavar="T",
                   help="stop after this long: seconds, or a number with s, m, h, d, w (30m, 2h, "
                   "1d); in-flight requests finish (default: no limit)")
    crawl_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress line and no summary table")
    p.set_defaults(func=crawl_command)


def crawl_options(p: argparse.ArgumentParser) -> None:
    """The crawl's scope, schedule, frontier and politeness options (all but the seeds, its
    length and --quiet): ``crawl`` has them, and ``websift up`` passes them on to its crawl."""
    p.add_argument("--max-depth", type=number(int, low=0), default=None, metavar="D",
                   help=f"link hops from a seed (default: {S.DEFAULT_MAX_DEPTH})")
    p.add_argument("--allow-domain", action="append", default=[], metavar="D",
                   help="stay on these domains and their subdomains (repeatable; "
                   "default: the seeds' hosts)")
    p.add_argument("--any-domain", action="store_true",
                   help="follow links to any domain (no domain restriction)")
    p.add_argument("--filter", action="append", default=[], metavar="RE",
                   help="a URL must match one of these regular expressions (repeatable; "
                   "default: any URL)")
    p.add_argument("--fence", action="append", default=[], metavar="RE",
                   help="a URL matching one of these is never fetched (repeatable; default: "
                   "none)")
    p.add_argument("--allow-ip", action="append", type=cidr, default=[], metavar="CIDR",
                   help="fetch only from hosts whose every address is in one of these ranges "
                   "(repeatable; default: any public address)")
    p.add_argument("--deny-ip", action="append", type=cidr, default=[], metavar="CIDR",
                   help="never fetch from a host with an address in one of these ranges "
                   "(repeatable; default: none)")
    p.add_argument("--max-pages-per-host", type=number(int, low=1), default=S.MAX_PAGES_PER_HOST,
                   metavar="N", help="spider-trap limit: pages fetched per host in one run")
    p.add_argument("--strategy", choices=[s.value for s in Strategy], default=S.DEFAULT_STRATEGY,
                   help="OPIC page selection: greedy fetches the page with the most cash "
                   "first, random picks any at random, cycle goes round them in URL-ID order")
    p.add_argument("--discovery-share", type=number(float, low=0, high=1),
                   default=S.DISCOVERY_SHARE, metavar="S",
                   help="share of the virtual page's cash handed to pages never fetched "
                   "(discovery); the rest goes to every page (refresh)")
    p.add_argument("--window", type=number(float, low=0, strict=True), default=S.OPIC_WINDOW,
                   metavar="T", help="OPIC Interpolation window, in units of the OPIC clock "
                   "(about 2 per full round of the known pages)")
    p.add_argument("--min-refetch-interval", type=seconds(), default=S.MIN_REFETCH_INTERVAL,
                   metavar="T", help="least time between two fetches of one page: seconds, or "
                   "30m, 2h, 1d")
    p.add_argument("--signals", action=argparse.BooleanOptionalAction, default=None,
                   help="use the sites' own signals: read sitemaps (robots.txt Sitemap: lines "
                   "and /sitemap.xml) and RSS/Atom feeds; a lastmod newer than a page's fetch "
                   "and a feed's new items move those pages up the schedule, a trusted lastmod "
                   "that did not move puts the refetch off; a same-site rel=canonical makes a "
                   "page a variant, indexed under its canonical URL. Default: on with the "
                   "embedded frontier, off with --frontier (which refuses --signals)")
    p.add_argument("--sitemap-interval", type=seconds(strict=True), default=S.SITEMAP_INTERVAL,
                   metavar="T", help="with --signals: how often a sitemap is read again")
    p.add_argument("--feed-min-interval", type=seconds(strict=True),
                   default=S.FEED_MIN_INTERVAL, metavar="T",
                   help="with --signals: a feed's adaptive refetch interval, at least this")
    p.add_argument("--feed-max-interval", type=seconds(strict=True),
                   default=S.FEED_MAX_INTERVAL, metavar="T",
                   help="with --signals: a feed's adaptive refetch interval, at most this")
    p.add_argument("--focus", action="append", default=[], metavar="RE",
                   help="focused crawling: URLs matching one of these regular expressions get "
                   "--focus-share of the virtual page's cash (repeatable; default: none)")
    p.add_argument("--focus-topic", default=None, metavar="NAME",
                   help="focused crawling: the pages of this topic set (websift topics) get "
                   "--focus-share of the virtual page's cash (default: none)")
    p.add_argument("--focus-share", type=number(float, low=0, high=1), default=S.FOCUS_SHARE,
                   metavar="S", help="share of the virtual page's cash given to focus pages")
    p.add_argument("--frontier", default=None, metavar="URL",
                   help="share one frontier with other crawler processes: redis://HOST:PORT/DB, "
                   "rediss://... (TLS) or redis+cluster://HOST:PORT,HOST:PORT (a Redis Cluster); "
                   "the password from $WEBSIFT_REDIS_PASSWORD or $REDISCLI_AUTH. Each crawler "
                   "keeps its own --data (a shard). Default: the embedded frontier")
    p.add_argument("--frontier-lease", type=seconds(strict=True), default=S.FRONTIER_LEASE_TTL,
                   metavar="T", help="a shared frontier's host lease: renewed while held; a "
                   "dead crawler's hosts and taken URLs go to the others after this")
    p.add_argument("--partitioned", default=None, metavar="URL",
                   help="a partitioned crawl with other crawler processes, coordinated by the "
                   "Redis at URL (redis://HOST:PORT/DB): hosts fall into --partitions by a hash, "
                   "each crawler leases some and crawls them with the embedded frontier in its "
                   "own --data; links and cash for the others go as batches through Redis")
    p.add_argument("--partitions", type=number(int, low=1), default=S.PARTITIONS, metavar="N",
                   help="virtual partitions of a partitioned crawl (the same for every crawler)")
    p.add_argument("--partition-lease", type=seconds(strict=True),
                   default=S.PARTITION_LEASE_TTL, metavar="T",
                   help="a partitioned crawl's lease: a dead crawler's partitions move after T")
    p.add_argument("--partition-rejoin", type=seconds(), default=S.PARTITION_REJOIN,
                   metavar="T", help="a partitioned crawl after a Redis restart: the partitions "
                   "of a crawler alive when Redis stopped wait until Redis is up T for it to "
                   "start again (default: 10 leases)")
    p.add_argument("--partition-mirror", action="store_true",
                   help="a partitioned crawl keeps each partition's queued URLs and read "
                   "fingerprints in Redis, so a crawler killed for good loses no queued page "
                   "(Redis memory per queued URL and commands per commit: docs/benchmarks.md)")
    p.add_argument("--frontier-hosts", type=number(int, low=1), default=S.FRONTIER_MAX_HOSTS,
                   metavar="N", help="hosts one crawler holds at once on a shared frontier")
    _politeness_args(p)


def _register_recrawl(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "recrawl",
        help="refetch known pages, most important first, with conditional requests",
        description="Refetch fetched pages in order of refresh priority (OPIC cash gathered "
        "since the last fetch, weighted by how often the page changed). A 304 costs no "
        "re-indexing. Links found are judged by the scope the crawl was started with.",
    )
    p.add_argument("--budget", type=number(int, low=0), default=S.DEFAULT_RECRAWL_BUDGET,
                   metavar="N", help="pages to refetch")
    p.add_argument("--dry-run", action="store_true",
                   help="print the schedule (URL, priority, last fetch) and fetch nothing")
    _politeness_args(p)
    p.add_argument("--quiet", action="store_true", help="no progress line and no summary table")
    p.set_defaults(func=recrawl_command)


def _scope(args: argparse.Namespace) -> ScopeConfig:
    domains = tuple(args.allow_domain)
    if not domains and not args.any_domain:
        domains = tuple(dict.fromkeys(host_of(canonicalize(s)) for s in args.seeds))
    return ScopeConfig(
        allow_domains=domains,
        filters=tuple(args.filter),
        fences=tuple(args.fence),
        max_depth=S.DEFAULT_MAX_DEPTH if args.max_depth is None else args.max_depth,
        allow_private=args.allow_private,
        allow_ip=tuple(args.allow_ip),
        deny_ip=tuple(args.deny_ip),
    )


def _resumed_scope(args: argparse.Namespace, data: DataDir) -> ScopeConfig:
    """No seed URL: the scope the data directory's last run kept (``--allow-private`` may be
    added, as a local site needs it again; any other scope option needs seeds)."""
    given = [
        flag for flag, value in (
            ("--allow-domain", args.allow_domain), ("--any-domain", args.any_domain),
            ("--filter", args.filter), ("--fence", args.fence), ("--allow-ip", args.allow_ip),
            ("--deny-ip", args.deny_ip), ("--max-depth", args.max_depth is not None),
        ) if value
    ]
    if given:
        raise ScopeError(
            f"{', '.join(given)} set a new scope and need seed URLs; without SEED_URL the crawl "
            "resumes with the scope it was started with"
        )
    stored = _stored_scope(data)
    if stored is None:
        raise ScopeError(f"no SEED_URL given and no earlier crawl in {data.root} to resume")
    return replace(stored, allow_private=stored.allow_private or args.allow_private)


def _stored_scope(data: DataDir) -> ScopeConfig | None:
    if not data.store_path.exists():
        return None
    with StoreReader.open(data.store_path) as store:
        return stored_scope(store)


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_HOST_PORT = re.compile(r"^[^/:@]+:\d+(/|$)")


def seed_with_scheme(seed: str) -> str:
    """A seed typed as ``example.org`` or ``localhost:8000/docs`` means http://; anything that
    already names a scheme (``https://``, ``ftp:``) is left for canonicalize to judge."""
    seed = seed.strip()
    if _HOST_PORT.match(seed) or not _SCHEME.match(seed):
        return "http://" + seed
    return seed


def _one_per_origin(urls: Iterable[str]) -> list[str]:
    return list({origin_of(u): u for u in urls}.values())


def summary_notes(summary: dict[str, Any]) -> list[str]:
    """What the operator must know of a run's figures, said even by a quiet run: the limits
    that left pages unfetched."""
    counts = summary.get("counts") or {}
    left = counts.get("skipped/host_page_limit", 0)
    if not left:
        return []
    limit = (summary.get("settings") or {}).get("max_pages_per_host")
    return [f"{left} URLs of hosts that reached the per-host page limit ({limit} pages a run) "
            "are left for a later run: raise --max-pages-per-host to crawl a large site in "
            "one run"]


def _finish(summary: dict[str, Any], quiet: bool) -> int:
    if not quiet and summary:
        from websift.crawler.progress import (
            print_summary,  # rich, only when there is a table to print
        )

        print_summary(summary)
    for note in summary_notes(summary):
        print(f"websift crawl: note: {note}", file=sys.stderr)
    if summary.get("frontier_data_lost"):
        # not a setup error: the crawl failed; its shard is sound and kept as it is
        print(f"websift crawl: error: {summary.get('frontier_lost')}; this crawler's pages are "
              f"committed (URL IDs up to {summary.get('url_ids_up_to')}): keep this --data as "
              "it is; to crawl on, make a new frontier above every crawler's IDs (`websift "
              "frontier init --ids-above N` on an empty Redis, N the highest 'up to' of all "
              "crawlers) and give each crawler a fresh --data", file=sys.stderr)
        return EXIT_FRONTIER_DATA_LOST
    if summary.get("finish_reason") == "frontier_lost":
        raise FrontierLost(f"{summary.get('frontier_lost')}; this crawler's batch is committed: "
                           "run the same command again to resume")
    return EXIT_FORCED if summary.get("finish_reason") == FORCED_STOP else 0


def _signals(args: argparse.Namespace) -> bool:
    """--signals / --no-signals, or the default: on unless the frontier is shared or partitioned
    (those take no evidence: crawler/signals.py)."""
    spread = next((flag for flag, value in (("--frontier", getattr(args, "frontier", None)),
                                            ("--partitioned", getattr(args, "partitioned", None)))
                   if value is not None), None)
    shared = spread is not None
    wanted: bool | None = getattr(args, "signals", None)
    if wanted and shared:
        raise FrontierError(f"--signals needs the embedded frontier: a crawl with {spread} takes "
                            "no sitemap, feed or lastmod evidence (drop --signals)")
    return not shared if wanted is None else wanted


def crawl_config(args: argparse.Namespace, scope: ScopeConfig) -> CrawlConfig:
    """The crawl's settings from its command line (every issue-10 option included)."""
    max_pages = args.max_pages
    if max_pages is None and not args.continuous:
        max_pages = S.DEFAULT_MAX_PAGES
    return CrawlConfig(
        seeds=list(args.seeds),
        max_pages=max_pages,
        scope=scope,
        delay=args.delay,
        concurrency=args.concurrency_per_host,
        strategy=Strategy(args.strategy),
        max_pages_per_host=args.max_pages_per_host,
        continuous=args.continuous,
        duration=args.duration,
        discovery_share=args.discovery_share,
        window=args.window,
        min_refetch_interval=args.min_refetch_interval,
        focus_patterns=tuple(args.focus),
        focus_topic=args.focus_topic,
        focus_share=args.focus_share,
        frontier=getattr(args, "frontier", None),
        frontier_lease=getattr(args, "frontier_lease", S.FRONTIER_LEASE_TTL),
        frontier_hosts=getattr(args, "frontier_hosts", S.FRONTIER_MAX_HOSTS),
        partitioned=getattr(args, "partitioned", None),
        partitions=getattr(args, "partitions", S.PARTITIONS),
        partition_lease=getattr(args, "partition_lease", S.PARTITION_LEASE_TTL),
        partition_mirror=getattr(args, "partition_mirror", False),
        partition_rejoin=getattr(args, "partition_rejoin", S.PARTITION_REJOIN),
        signals=_signals(args),
        sitemap_interval=args.sitemap_interval,
        feed_min_interval=args.feed_min_interval,
        feed_max_interval=args.feed_max_interval,
        user_agent=args.user_agent,
    )


def crawl_command(args: argparse.Namespace) -> int:
    from websift.crawler.runner import run_crawl

    if args.partitioned is not None and args.frontier is not None:
        print("websift crawl: error: --partitioned and --frontier are two ways to spread a "
              "crawl: give one", file=sys.stderr)
        return EXIT_USAGE
    args.seeds = [seed_with_scheme(s) for s in args.seeds]
    _signals(args)  # --signals with a shared frontier: refused before anything is made
    unresolvable: dict[str, str] = {}
    scope: ScopeConfig | None = None
    if args.seeds:
        # judged before the data directory is made: a refused seed leaves nothing behind
        scope = _scope(args)
        args.seeds, unresolvable = _resolvable_seeds(Scope(scope), args.seeds)
        if not args.seeds:
            print(no_seed_line("crawl", unresolvable), file=sys.stderr)
            return EXIT_NO_SEED
        for url, why in unresolvable.items():
            print(f"websift crawl: skipping seed {url}: {why}", file=sys.stderr)
    elif not DataDir(args.data).store_path.exists():
        _resumed_scope(args, DataDir(args.data))  # raises: nothing to resume, nothing made
    data = DataDir.create(args.data)
    with store_writer_lock(data.root):
        if scope is None:
            scope = _resumed_scope(args, data)
        summary = run_crawl(data, crawl_config(args, scope), progress=not args.quiet)
    code = _finish(summary, args.quiet)
    failed = summary.get("seeds_failed")
    if code == 0 and isinstance(failed, dict) and failed:
        print(no_seed_line("crawl", {**unresolvable, **failed}), file=sys.stderr)
        return EXIT_NO_SEED
    return code


def _resolvable_seeds(judge: Scope, seeds: list[str]) -> tuple[list[str], dict[str, str]]:
    """The seeds whose host resolves (each checked against the scope: a refusal raises), and
    the others with why (a seed whose name does not resolve is one that cannot be fetched)."""
    kept: list[str] = []
    unresolvable: dict[str, str] = {}
    for seed in seeds:
        url = canonicalize(seed)
        verdict = judge.verdict(host_of(url), port_of(url))
        if verdict.reason == UNRESOLVABLE:
            unresolvable[url] = verdict.detail
        else:
            kept.append(seed)
    checked_seeds(judge, kept)
    return kept, unresolvable


def recrawl_command(args: argparse.Namespace) -> int:
    data = DataDir.open(args.data)
    if args.dry_run:  # a read: no lock, a crawl may be running
        with StoreReader.open(data.store_path) as store:
            schedule = recrawl_schedule(store, args.budget)
        print(f"{'priority':>12}  {'last fetch (UTC)':<20}  url")
        for item in schedule:
            when = (
                time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(item.fetched_at))
                if item.fetched_at is not None else "never"
            )
            print(f"{item.priority:12.6g}  {when:<20}  {item.url}")
        return 0
    with store_writer_lock(data.root):
        return _recrawl(args, data)


def _recrawl(args: argparse.Namespace, data: DataDir) -> int:
    from websift.crawler.runner import run_session

    with StoreReader.open(data.store_path) as store:
        schedule = recrawl_schedule(store, args.budget)
        stored = stored_scope(store)
    if not schedule:
        print("websift recrawl: nothing fetched yet to refresh", file=sys.stderr)
        return 0
    # The scope the crawl was started with: links found while refreshing are judged by it (a
    # store no run kept a scope in, e.g. an import's, is refreshed with no URL restriction).
    scope = stored or ScopeConfig(max_depth=None)
    scope = replace(scope, allow_private=scope.allow_private or args.allow_private)
    judge = Scope(scope)
    # one in-scope URL per origin: refuse private addresses with one clear line up front
    # (out-of-scope pages are skipped one by one as the session picks them)
    checked_seeds(judge, _one_per_origin(
        item.url for item in schedule if judge.check(item.url, 0) is None
    ))
    config = CrawlConfig(
        max_pages=len(schedule),
        scope=scope,
        delay=args.delay,
        concurrency=args.concurrency_per_host,
        kind=KIND_RECRAWL,
        recrawl=[(item.url_id, item.priority) for item in schedule],
        discovery_share=0.0,  # refresh only
        user_agent=args.user_agent,
    )
    session = CrawlSession(data, config)
    try:
        session.schedule_recrawl()
    except WebsiftError:
        session.close("bad_schedule")
        raise
    summary = run_session(session, progress=not args.quiet)
    return _finish(summary, args.quiet)
