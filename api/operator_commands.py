"""`websift` subcommands for running an engine (registered by api/cli.py): ``remove`` and
``removed`` (api/removals.py), ``backup`` and ``restore`` (api/backup.py).  None of them takes
the data directory's writer lock: each works while ``websift up`` (or a crawl, an indexing run
and a server) runs on the same ``--data``."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from websift.core.arguments import number
from websift.core.datadir import DataDir
from websift.crawler.errors import RemovalError
from websift.store.removals import Removal


def _when(t: float | None) -> str:
    return "-" if t is None else time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))


def _describe(r: Removal) -> str:
    return f"#{r.id} {r.kind} {r.value}"


def remove_command(args: argparse.Namespace) -> int:
    from websift.api.removals import WHO_CLI, add_removal, undo_removal

    given = [(k, v) for k, v in (("url", args.url), ("host", args.host),
                                 ("pattern", args.pattern)) if v is not None]
    if args.undo is not None:
        if given or args.reason:
            raise RemovalError("--undo ID takes no URL, --host, --pattern or --reason")
        removal, reindexed = undo_removal(DataDir.open(args.data), args.undo, WHO_CLI)
        print(f"websift remove: undid {_describe(removal)}: back in search at the server's "
              f"next reload check and in the crawl's scope at its next commit; {reindexed} "
              "pages will be indexed again by the next 'websift index'")
        return 0
    if len(given) != 1:
        raise RemovalError("give one of URL, --host HOST, --pattern REGEX (or --undo ID)")
    kind, value = given[0]
    removal = add_removal(DataDir.open(args.data), kind, value, WHO_CLI, args.reason)
    print(f"websift remove: {_describe(removal)}: out of search at the server's next reload "
          "check, out of the crawl's scope at its next commit; the next 'websift index' drops "
          f"its pages (undo: websift remove --undo {removal.id})")
    return 0


def removed_command(args: argparse.Namespace) -> int:
    from websift.api.removals import list_removals

    rows = list_removals(DataDir.open(args.data), active_only=args.active)
    if args.json:
        print(json.dumps([r.__dict__ for r in rows], indent=1))
        return 0
    if not rows:
        print("no removals")
        return 0
    print(f"{'id':>4}  {'state':<6}  {'kind':<7}  {'value':<40}  {'when (UTC)':<19}  who  reason")
    for r in rows:
        state = "active" if r.active else "undone"
        print(f"{r.id:>4}  {state:<6}  {r.kind:<7}  {r.value:<40}  {_when(r.created):<19}  "
              f"{r.who}  {r.reason}" + ("" if r.active else
                                        f"  (undone {_when(r.undone)} by {r.undone_by})"))
    return 0


def backup_command(args: argparse.Namespace) -> int:
    from websift.api.backup import backup

    report = backup(DataDir.open(args.data), args.dest)
    print(f"websift backup: {report.files} files, {report.bytes / 1e6:.1f} MB into {args.dest} "
          f"(index generation {report.index_generation}, ranks generation "
          f"{report.ranks_generation}) in {report.seconds:.1f}s")
    return 0


def restore_command(args: argparse.Namespace) -> int:
    from websift.api.backup import restore

    report = restore(args.src, args.data, force=args.force)
    print(f"websift restore: {report.files} files, {report.bytes / 1e6:.1f} MB checked and "
          f"restored into {args.data} (index generation {report.index_generation}, ranks "
          f"generation {report.ranks_generation}) in {report.seconds:.1f}s")
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add these subcommands to the `websift` parser."""
    p = sub.add_parser(
        "remove", help="take a page, a host or a URL pattern out of search and out of the crawl",
        description="Record a removal in the crawl store: a running server drops the pages "
        "from its results at its next reload check, a running crawl stops fetching them at "
        "its next commit, and the next 'websift index' drops them from the index. Safe while "
        "'websift up' runs on the same --data. --undo ID puts a removal out of force ('websift "
        "removed' lists them).")
    p.add_argument("url", nargs="?", default=None, metavar="URL", help="one page's URL")
    p.add_argument("--host", default=None, metavar="HOST",
                   help="every page of this host and of its subdomains, any port")
    p.add_argument("--pattern", default=None, metavar="REGEX",
                   help="every page whose canonical URL this Python regular expression matches "
                   "(re.search)")
    p.add_argument("--reason", default="", metavar="TEXT", help="why, kept in the log")
    p.add_argument("--undo", type=number(int, low=1), default=None, metavar="ID",
                   help="undo removal ID instead: its pages come back")
    p.set_defaults(func=remove_command)

    p = sub.add_parser("removed", help="list the removals, undone ones included",
                       description="Every removal 'websift remove' or POST /admin/removals "
                       "made, oldest first: id, state, kind, value, when, who and why.")
    p.add_argument("--active", action="store_true", help="only the removals in force")
    p.add_argument("--json", action="store_true", help="print them as a JSON list")
    p.set_defaults(func=removed_command)

    p = sub.add_parser(
        "backup", help="copy the data directory, while it is in use, into a new directory",
        description="Copy the index segments and manifest, the ranks, the topics, the crawl "
        "store (SQLite's online backup) and the WARC files (up to what the store points at) "
        "into DEST, with a manifest of their SHA-256 checksums. Safe while 'websift up' runs. "
        "DEST must not exist; it appears only once the backup is complete.")
    p.add_argument("dest", type=Path, metavar="DEST",
                   help="the new directory to write the backup into")
    p.set_defaults(func=backup_command)

    p = sub.add_parser(
        "restore", help="restore a backup into a data directory, checking every file",
        description="Copy the backup SRC into --data, checking each file's size and SHA-256 "
        "against the backup's manifest; a damaged backup is refused and nothing is changed. "
        "--data must be empty or new unless --force.")
    p.add_argument("src", type=Path, metavar="SRC", help="a directory 'websift backup' made")
    p.add_argument("--force", action="store_true",
                   help="replace a non-empty --data (refused while a crawl writes it)")
    p.set_defaults(func=restore_command)
