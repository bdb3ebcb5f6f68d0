"""`websift` subcommands owned by ranking/ (registered by api/cli.py).

- ``websift rank [--damping C] [--tol T] [--dangling teleport|paper1998]
  [--engine embedded|dask [--scheduler ADDR] [--workers N]]``
- ``websift graph stats|page|plot``
- ``websift topics add|list|remove``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from websift.core.arguments import number, seconds
from websift.core.datadir import DataDir
from websift.core.extras import require
from websift.ranking import settings
from websift.ranking.errors import GraphError, RankingError
from websift.ranking.rank_progress import RankProgress
from websift.store.views import StoreReader

# The jobs themselves (graph_report, rank_job, topics) are imported by the functions that run
# them: every `websift` command builds this parser, and they pull in scipy and the indexer.


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this package's subcommands to the `websift` parser."""
    _register_rank(sub)
    _register_graph(sub)
    _register_topics(sub)


# ---------------------------------------------------------------------------- rank
def _register_rank(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "rank",
        help="compute PageRank (and topic vectors) from the crawl store's link graph",
        description="Build the link graph from the crawl store, compute global PageRank by "
        "power iteration (its progress on one line of stderr; --verbose: every iteration's "
        "L1 residual), levels from the seeds, the giant SCC and every topic's vector, and "
        "write them as a new ranks generation.",
    )
    rank_options(p)
    talk = p.add_mutually_exclusive_group()
    talk.add_argument("--quiet", action="store_true", help="no progress line")
    talk.add_argument("--verbose", action="store_true",
                      help="every iteration's L1 residual on a line of its own")
    p.add_argument("--shard", type=Path, nargs="+", default=None, metavar="DIR",
                   help="rank the union of these crawl stores (shards sharing a frontier's URL "
                   "IDs, or a partitioned crawl's, matched by URL) or link exports (made by "
                   "--export-links; matched by URL) and write the same global generation to "
                   "each (either engine)")
    p.add_argument("--export-links", type=Path, default=None, metavar="OUT",
                   help="rank nothing: write the link export of --data's crawl store (as of "
                   "one commit) into OUT, for 'rank --shard OUT ...' on another machine "
                   "(Parquet; needs the 'cluster' extra)")
    _register_rank_engine(p)
    p.set_defaults(func=_rank)


def rank_options(p: argparse.ArgumentParser) -> None:
    """PageRank's parameters: ``rank`` has them, and ``websift up`` passes them on."""
    p.add_argument("--damping", type=number(float, low=0, high=1, strict=True), default=settings.DAMPING, metavar="C",
                   help="probability of following a link")
    p.add_argument("--tol", type=number(float, low=0, strict=True), default=settings.TOLERANCE, metavar="T",
                   help="stop when successive iterates differ by <= T in L1")
    p.add_argument("--dangling", choices=settings.DANGLING_POLICIES,
                   default=settings.DANGLING_POLICY,
                   help="dangling pages: 'teleport' (Google matrix) or 'paper1998' (remove them, "
                   "converge, add them back)")


def _register_rank_engine(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", choices=settings.DASK_ENGINES, default=settings.DASK_ENGINES[0],
                   help="where the link matrix lives: 'embedded' (in this process) or 'dask' "
                   "(in row blocks on Dask workers; same results, same ranks format)")
    p.add_argument("--scheduler", metavar="ADDR", default=None,
                   help="with --engine dask: the scheduler to use, e.g. tcp://HOST:8786 "
                   "(default: start a local cluster on 127.0.0.1)")
    p.add_argument("--workers", type=number(int, low=1), default=None, metavar="N",
                   help="with --engine dask: worker processes of the local cluster (default: "
                   f"{settings.DASK_LOCAL_WORKERS}), or with --scheduler how many workers to "
                   "wait for (default: 1)")
    p.add_argument("--connect-timeout", type=seconds(strict=True),
                   default=settings.DASK_CONNECT_TIMEOUT, metavar="T",
                   help="with --scheduler: time to reach it and for its workers to join "
                   "(seconds, or 30s, 2m)")
    p.add_argument("--dask-tls-ca", type=Path, default=None, metavar="FILE",
                   help="with a tls:// --scheduler: the CA certificate that signed the "
                   "cluster's certificates (docs/several-machines.md makes them with openssl)")
    p.add_argument("--dask-tls-cert", type=Path, default=None, metavar="FILE",
                   help="with a tls:// --scheduler: this client's certificate")
    p.add_argument("--dask-tls-key", type=Path, default=None, metavar="FILE",
                   help="with a tls:// --scheduler: this client's private key")
    p.add_argument("--blocks-dir", type=Path, default=None, metavar="DIR",
                   help="with --engine dask: where the link blocks are written for the "
                   "workers to read, on a file system every worker sees at the same path "
                   "(default: DATA/tmp; deleted after the run)")


def _rank_engine(args: argparse.Namespace) -> Any:
    """None for the embedded engine, else a DaskEngine (imported only then: dask is heavy)."""
    if args.engine != "dask":
        if args.scheduler or args.workers or args.blocks_dir:
            raise RankingError("--scheduler, --workers and --blocks-dir need --engine dask")
        return None
    require("cluster", "--engine dask", ("dask", "distributed"))
    from websift.ranking.dask_engine import DaskEngine, DaskTLS, check_scheduler

    files = (args.dask_tls_ca, args.dask_tls_cert, args.dask_tls_key)
    if any(files) and not all(files):
        raise RankingError("give --dask-tls-ca, --dask-tls-cert and --dask-tls-key together")
    tls = DaskTLS(*files) if all(files) else None
    if args.scheduler is not None:
        check_scheduler(args.scheduler, tls)  # before any file opens
    return DaskEngine(scheduler=args.scheduler, workers=args.workers,
                      connect_timeout=args.connect_timeout, tls=tls, blocks_dir=args.blocks_dir)


def _rank(args: argparse.Namespace) -> int:
    from websift.ranking.rank_job import run_rank

    if args.export_links is not None:
        return _export_links(args)
    engine = _rank_engine(args)  # a bad engine choice or a missing extra before any file opens
    if args.shard:
        return _rank_shards(args, engine)
    data = DataDir.open(args.data)

    progress = RankProgress(sys.stderr, verbose=args.verbose, quiet=args.quiet)
    try:
        report = run_rank(data, damping=args.damping, tol=args.tol, dangling=args.dangling,
                          progress=progress, engine=engine)
    except BaseException:
        progress.finish(completed=False)  # the error's own line follows on a line of its own
        raise
    progress.finish()
    if engine is not None:
        print(engine.last_run.summary(), file=sys.stderr)
    r = report.result
    state = "converged" if r.converged else "NOT converged (raise the iteration limit)"
    print(f"ranks generation {report.generation}: {report.pages} pages, {report.links} links, "
          f"giant SCC {report.giant_scc}")
    extra = f", {r.removal_rounds} dangling-removal rounds" if args.dangling == "paper1998" else ""
    last = r.residuals[-1] if r.residuals else 0.0
    print(f"pagerank: {state} in {r.iterations} iterations (last residual {last:.3e}{extra}), "
          f"{report.seconds:.2f} s")
    if report.hosts is not None:
        hosts = report.hosts
        print(f"host pagerank: {hosts['hosts']} hosts, {hosts['links']} host links, "
              f"{'converged' if hosts['converged'] else 'NOT converged'} in "
              f"{hosts['iterations']} iterations")
    for name, iterations in report.topics.items():
        print(f"topic {name}: {iterations} iterations")
    return 0 if r.converged else 1


def _export_links(args: argparse.Namespace) -> int:
    from websift.ranking.link_export import export_bytes, export_store

    if args.shard or args.engine == "dask":
        raise RankingError("--export-links writes an export and ranks nothing: "
                           "no --shard or --engine with it")
    data = DataDir.open(args.data)
    if not data.store_path.exists():
        raise RankingError(f"{data.root} has no crawl store to export")
    out: Path = args.export_links
    if out.is_dir() and any(out.iterdir()) and not (out / "websift.json").exists():
        raise RankingError(f"--export-links {out} holds files but no link export: give an "
                           "empty or new directory, or one an earlier --export-links wrote")
    body = export_store(data, out)
    print(f"{out}: link export generation {body['generation']}: {body['urls']} URLs, "
          f"{body['links']} links, {export_bytes(out)} bytes")
    return 0


def _rank_shards(args: argparse.Namespace, engine: Any) -> int:
    from websift.ranking.rank_by_url import run_rank_by_url
    from websift.ranking.rank_job import own_id_spaces, run_rank_shards

    shards = [DataDir.open(d) for d in args.shard]
    by_url = own_id_spaces(shards)  # a partitioned crawl's stores: matched by URL
    progress = RankProgress(sys.stderr, verbose=args.verbose, quiet=args.quiet)
    try:
        if by_url and engine is not None:
            reports = engine.run_by_url(shards, damping=args.damping, tol=args.tol,
                                        dangling=args.dangling, progress=progress)
        elif by_url:
            reports = run_rank_by_url(shards, damping=args.damping, tol=args.tol,
                                      dangling=args.dangling, progress=progress)
        elif engine is None:
            reports = run_rank_shards(shards, damping=args.damping, tol=args.tol,
                                      dangling=args.dangling, progress=progress)
        else:
            reports = engine.run_shards(shards, damping=args.damping, tol=args.tol,
                                        dangling=args.dangling, progress=progress)
    except BaseException:
        progress.finish(completed=False)
        raise
    progress.finish()
    if engine is not None:
        print(engine.last_run.summary(), file=sys.stderr)
    for d, report in zip(args.shard, reports, strict=True):
        print(f"{d}: ranks generation {report.generation}: {report.pages} pages, "
              f"{report.links} links, giant SCC {report.giant_scc}")
    r = reports[0].result
    state = "converged" if r.converged else "NOT converged (raise the iteration limit)"
    print(f"pagerank: {state} in {r.iterations} iterations, {reports[0].seconds:.2f} s")
    return 0 if r.converged else 1


# ---------------------------------------------------------------------------- graph
def _register_graph(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "graph",
        help="questions about the link graph (stats, one page, plots)",
        description="Look at the link graph of the crawl store, as it is now (no 'websift "
        "rank' needed, except for the PageRank and level that 'graph page' shows): "
        "'graph stats' for the whole graph, 'graph page' for one page, 'graph plot' for "
        "distribution plots.",
    )
    gsub = p.add_subparsers(dest="graph_command", metavar="ACTION")
    gsub.required = True

    s = gsub.add_parser(
        "stats",
        help="pages, links, dangling pages, degrees, SCCs, levels",
        description="Statistics of the whole link graph, computed afresh from the crawl "
        "store: pages, links, dangling pages, in- and out-degree distributions, strongly "
        "connected components and the giant one, pages per level, global PageRank, and "
        "PageRank restricted to the pages near the roots compared with the global one. A "
        "page's level is its distance in clicks from the nearest root, found by "
        "breadth-first search over links: the roots are level 0, the pages they link to "
        "level 1, and so on; -1 counts the pages no root reaches.",
    )
    s.add_argument("--root", action="append", default=[], metavar="URL",
                   help="a root page, level 0 (repeatable; default: the crawl's seeds)")
    s.add_argument("--levels", type=number(int, low=0), default=settings.RESTRICTED_LEVELS,
                   metavar="L", help="restrict PageRank to the pages at most L clicks from a "
                   "root (levels 0..L, by breadth-first search) and compare it with the "
                   "global PageRank")
    s.add_argument("--monte-carlo", type=number(int, low=0), default=0, metavar="M",
                   help="also run Monte Carlo PageRank with M walks per page and report its "
                   "error on the top pages (default: 0, off)")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=_graph_stats)

    pg = gsub.add_parser(
        "page",
        help="one page: links with anchors, level, SCC, PageRank, OPIC",
        description="One page of the crawl store: its in-links with their anchor text, its "
        "out-links (nofollow marked), and from the latest ranks generation its PageRank, OPIC "
        "cash, level (clicks from the nearest seed) and whether it is in the giant strongly "
        "connected component.",
    )
    pg.add_argument("url", metavar="URL", help="the page's URL (or its numeric URL ID)")
    pg.add_argument("--max-links", type=number(int, low=0), default=50, metavar="K",
                    help="show at most K in-links and K out-links")
    pg.add_argument("--json", action="store_true", help="print JSON")
    pg.set_defaults(func=_graph_page)

    pl = gsub.add_parser(
        "plot",
        help="write PNG plots of degree and PageRank distributions",
        description="Write degree_distribution.png (in- and out-degree, log-log) and "
        "pagerank_distribution.png (PageRank by rank position, log-log) of the link graph into "
        "DIR, created if missing, and print their paths.",
    )
    pl.add_argument("--out", type=Path, required=True, metavar="DIR", help="output directory")
    pl.set_defaults(func=_graph_plot)


def _graph_stats(args: argparse.Namespace) -> int:
    from websift.ranking.graph_report import graph_stats

    stats = graph_stats(DataDir.open(args.data), roots=args.root or None,
                        restricted_levels=args.levels, mc_walks=args.monte_carlo)
    summary = stats.summary()
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    for key, value in summary.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{k}={v}" for k, v in value.items() if k != "distribution")
            print(f"{key}: {inner}")
        else:
            print(f"{key}: {value}")
    return 0


def _graph_page(args: argparse.Namespace) -> int:
    from websift.ranking.graph_report import page_graph_info

    data = DataDir.open(args.data)
    if args.url.isdigit():
        url_id = int(args.url)
    else:
        with StoreReader.open(data.store_path) as store:
            found = store.url_id(args.url)
        if found is None:
            raise GraphError(f"{args.url} is not in the crawl store")
        url_id = found
    info = page_graph_info(data, url_id, max_links=args.max_links)
    if args.json:
        print(json.dumps(info, indent=1))
        return 0
    print(f"{info['url']}  (URL ID {info['url_id']}, {info['status']})")
    if info["ranks_generation"] is None:
        print("  no ranks for this page yet: run 'websift rank'")
    else:
        level = "unreachable from the seeds" if info["level"] is None else info["level"]
        print(f"  pagerank {info['pagerank']:.6g}   opic {info['opic']:.6g}   level {level}   "
              f"giant SCC {'yes' if info['in_giant_scc'] else 'no'}   "
              f"(ranks generation {info['ranks_generation']})")
        site = info["site"]
        if site is None:
            print("  host rank: none in this ranks generation (run 'websift rank')")
        else:
            print(f"  host rank {site['host_rank']:.6g} ({site['host_rank_normalised']:.3g} times "
                  f"the mean of {site['hosts']} hosts)   within its host: number "
                  f"{site['position_in_host']} of {site['host_pages']} pages, "
                  f"{site['rank_in_host']:.4g} of the host's PageRank")
    print(f"  in-degree {info['in_degree']}, out-degree {info['out_degree']} "
          f"(distinct pages, nofollow left out), {info['self_links']} links to itself (not shown)")
    for title, key in (("in-links", "in_links"), ("out-links", "out_links")):
        print(f"  {title}:")
        for link in info[key]:
            flag = " [nofollow]" if link["nofollow"] else ""
            anchor = f"  \"{link['anchor']}\"" if link["anchor"] else ""
            print(f"    {link['url']}{anchor}{flag}")
    return 0


def _graph_plot(args: argparse.Namespace) -> int:
    from websift.ranking.graph_report import graph_stats
    require("plots", "the plots")
    from websift.ranking.plots import write_plots

    stats = graph_stats(DataDir.open(args.data), restricted_levels=None)
    for path in write_plots(stats, args.out):
        print(path)
    return 0


# ---------------------------------------------------------------------------- topics
def _register_topics(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "topics",
        help="topic sets for topic-sensitive PageRank",
        description="A topic is a named set of pages (URLs, hosts, URL patterns). Each topic "
        "gets its own PageRank vector, teleporting to its pages only, and a term model; "
        "searches can then be biased towards a topic.",
    )
    tsub = p.add_subparsers(dest="topics_command", metavar="ACTION")
    tsub.required = True

    a = tsub.add_parser(
        "add",
        help="define (or replace) a topic and compute its PageRank vector",
        description="Define the topic NAME, or replace it, from the pages given by --url, "
        "--host and --pattern (at least one), then compute its PageRank vector and term model "
        "into a new ranks generation.",
    )
    a.add_argument("name", metavar="NAME", help="the topic's name, as /search?topic= takes it")
    a.add_argument("--url", action="append", default=[], metavar="U",
                   help="a page (repeatable; default: none)")
    a.add_argument("--host", action="append", default=[], metavar="H",
                   help="every page on a host, e.g. docs.python.org (repeatable; default: none)")
    a.add_argument("--pattern", action="append", default=[], metavar="RE",
                   help="every page whose URL matches a regular expression (repeatable; "
                   "default: none)")
    a.set_defaults(func=_topics_add)

    ls = tsub.add_parser(
        "list",
        help="the defined topics",
        description="List the defined topics: pages, distinct terms, the ranks generation of "
        "their vector, and the --url/--host/--pattern that define them.",
    )
    ls.set_defaults(func=_topics_list)

    r = tsub.add_parser(
        "remove",
        help="delete a topic and its vector",
        description="Delete the topic NAME and its PageRank vector: a new ranks generation "
        "without it replaces the current one.",
    )
    r.add_argument("name", metavar="NAME", help="the topic's name")
    r.set_defaults(func=_topics_remove)


def _topics_add(args: argparse.Namespace) -> int:
    from websift.ranking.topics import TopicSet, add_topic

    topic = TopicSet(args.name, tuple(args.url), tuple(args.host), tuple(args.pattern))
    info = add_topic(DataDir.open(args.data), topic)
    failures = ", ".join(f"{k}: {v}" for k, v in sorted(info.text_failures.items()))
    print(f"topic {info.name}: {info.pages} pages, term model from {info.text_pages} pages "
          f"({info.distinct_terms} distinct terms{'; skipped ' + failures if failures else ''}), "
          f"vector in {info.iterations} iterations, ranks generation {info.generation}")
    return 0


def _topics_list(args: argparse.Namespace) -> int:
    from websift.ranking.topics import topic_infos

    infos = topic_infos(DataDir.open(args.data))
    if not infos:
        print("no topics; add one with 'websift topics add NAME --host H'")
    for info in infos:
        t = info.topic
        parts = [f"--url {u}" for u in t.urls] + [f"--host {h}" for h in t.hosts]
        parts += [f"--pattern {p}" for p in t.patterns]
        vec = "no vector yet" if info.generation is None else f"generation {info.generation}"
        print(f"{t.name}: {info.pages} pages, {info.distinct_terms} terms, {vec}  "
              f"[{' '.join(parts)}]")
    return 0


def _topics_remove(args: argparse.Namespace) -> int:
    from websift.ranking.topics import remove_topic

    remove_topic(DataDir.open(args.data), args.name)
    print(f"topic {args.name} removed")
    return 0
