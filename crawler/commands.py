"""`websift` subcommands owned by crawler/ (registered by api/cli.py)."""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Iterable

from core.arguments import number
from core.datadir import DataDir
from core.errors import WebsiftError
from crawler import robots_command
from crawler import settings as S
from crawler.recrawl import recrawl_schedule
from crawler.scope import Scope, ScopeConfig
from crawler.session import KIND_RECRAWL, CrawlConfig, CrawlSession, checked_seeds
from ranking.opic import Strategy
from store.crawl_store import CrawlStore, origin_of


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this package's subcommands to the `websift` parser."""
    robots_command.register(sub)
    _register_crawl(sub)
    _register_recrawl(sub)


def _politeness_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--delay", type=number(float, low=0), default=S.DEFAULT_DELAY, metavar="S",
                   help=f"seconds between request starts per host (default {S.DEFAULT_DELAY}; "
                   "robots.txt Crawl-delay and slow answers raise it)")
    p.add_argument("--concurrency-per-host", type=number(int, low=1),
                   default=S.DEFAULT_CONCURRENCY_PER_HOST, metavar="K",
                   help=f"requests in flight per host (default {S.DEFAULT_CONCURRENCY_PER_HOST})")
    p.add_argument("--allow-private", action="store_true",
                   help="allow private, loopback and link-local addresses (local sites)")
    p.add_argument("--quiet", action="store_true", help="no progress line and no summary table")


def _register_crawl(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "crawl",
        help="crawl from seed URLs into the crawl store (resumes an interrupted crawl)",
        description="Fetch pages politely, OPIC-greedy first, into --data. The URLs discovered "
        "and not yet fetched are the frontier: running it again continues where it stopped.",
    )
    p.add_argument("seeds", nargs="+", metavar="SEED_URL")
    p.add_argument("--max-pages", type=number(int, low=0), default=S.DEFAULT_MAX_PAGES,
                   metavar="N", help=f"pages to fetch in this run (default {S.DEFAULT_MAX_PAGES})")
    p.add_argument("--max-depth", type=number(int, low=0), default=S.DEFAULT_MAX_DEPTH,
                   metavar="D", help=f"link hops from a seed (default {S.DEFAULT_MAX_DEPTH})")
    p.add_argument("--allow-domain", action="append", default=[], metavar="D",
                   help="stay on these domains and their subdomains (repeatable; "
                   "default: the seeds' hosts)")
    p.add_argument("--any-domain", action="store_true",
                   help="follow links to any domain (no domain restriction)")
    p.add_argument("--filter", action="append", default=[], metavar="RE",
                   help="a URL must match one of these regular expressions (repeatable)")
    p.add_argument("--fence", action="append", default=[], metavar="RE",
                   help="a URL matching one of these is never fetched (repeatable)")
    p.add_argument("--max-pages-per-host", type=number(int, low=1), default=S.MAX_PAGES_PER_HOST,
                   metavar="N", help=f"spider-trap limit per host (default {S.MAX_PAGES_PER_HOST})")
    p.add_argument("--strategy", choices=[s.value for s in Strategy], default=S.DEFAULT_STRATEGY,
                   help="OPIC page selection (default greedy: highest cash first)")
    _politeness_args(p)
    p.set_defaults(func=crawl_command)


def _register_recrawl(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "recrawl",
        help="refetch known pages, most important first, with conditional requests",
        description="Refetch fetched pages in order of refresh priority (OPIC cash gathered "
        "since the last fetch, weighted by how often the page changed). A 304 costs no "
        "re-indexing.",
    )
    p.add_argument("--budget", type=number(int, low=0), default=S.DEFAULT_RECRAWL_BUDGET,
                   metavar="N", help=f"pages to refetch (default {S.DEFAULT_RECRAWL_BUDGET})")
    p.add_argument("--dry-run", action="store_true",
                   help="print the schedule (URL, priority, last fetch) and fetch nothing")
    _politeness_args(p)
    p.set_defaults(func=recrawl_command)


def _scope(args: argparse.Namespace) -> ScopeConfig:
    from crawler.urls import canonicalize, host_of

    domains = tuple(args.allow_domain)
    if not domains and not args.any_domain:
        domains = tuple(dict.fromkeys(host_of(canonicalize(s)) for s in args.seeds))
    return ScopeConfig(
        allow_domains=domains,
        filters=tuple(args.filter),
        fences=tuple(args.fence),
        max_depth=args.max_depth,
        allow_private=args.allow_private,
    )


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


def _finish(summary: dict[str, object], quiet: bool) -> int:
    if not quiet and summary:
        from crawler.progress import print_summary  # rich, only when there is a table to print

        print_summary(summary)
    return 0


def crawl_command(args: argparse.Namespace) -> int:
    from crawler.runner import run_crawl

    args.seeds = [seed_with_scheme(s) for s in args.seeds]
    config = CrawlConfig(
        seeds=list(args.seeds),
        max_pages=args.max_pages,
        scope=_scope(args),
        delay=args.delay,
        concurrency=args.concurrency_per_host,
        strategy=Strategy(args.strategy),
        max_pages_per_host=args.max_pages_per_host,
    )
    summary = run_crawl(DataDir.create(args.data), config, progress=not args.quiet)
    return _finish(summary, args.quiet)


def recrawl_command(args: argparse.Namespace) -> int:
    from crawler.runner import run_session

    data = DataDir.open(args.data)
    with CrawlStore.open(data.store_path, readonly=True) as store:
        schedule = recrawl_schedule(store, args.budget)
    if args.dry_run:
        print(f"{'priority':>12}  {'last fetch (UTC)':<20}  url")
        for item in schedule:
            when = (
                time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(item.fetched_at))
                if item.fetched_at is not None else "never"
            )
            print(f"{item.priority:12.6g}  {when:<20}  {item.url}")
        return 0
    if not schedule:
        print("websift recrawl: nothing fetched yet to refresh", file=sys.stderr)
        return 0
    scope = ScopeConfig(allow_private=args.allow_private, max_depth=None)
    checked_seeds(Scope(scope), _one_per_origin(item.url for item in schedule))
    config = CrawlConfig(
        max_pages=len(schedule),
        scope=scope,
        delay=args.delay,
        concurrency=args.concurrency_per_host,
        kind=KIND_RECRAWL,
        recrawl=[(item.url_id, item.priority) for item in schedule],
    )
    session = CrawlSession(data, config)
    try:
        session.schedule_recrawl()
    except WebsiftError:
        session.close("bad_schedule")
        raise
    summary = run_session(session, progress=not args.quiet)
    return _finish(summary, args.quiet)
