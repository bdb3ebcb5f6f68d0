"""Fault injection: kill -9, a full disk, corrupt files and live replacement, stage by stage.

Runs each case against real ``websift`` processes on a real local site (the demo's pydoc corpus,
served on loopback with a request log) and prints a table: case, expected, observed, verdict.
Exit status 1 when any case fails.  Seeds are printed so that a failure can be replayed::

    .venv/bin/python -m scripts.evaluation.faults  # everything, 20 kills per stage
    .venv/bin/python -m scripts.evaluation.faults --kills 3 --only crawl-kill,index-kill
    .venv/bin/python -m scripts.evaluation.faults --seed 1234 --only rank-kill  # replay

Cases (issue 'Reliability and security'):
- crawl-kill / index-kill / rank-kill: SIGKILL at a random moment, then the same command again;
  the store, index and ranks open cleanly, every page the site's log shows as served is in the
  store once (or was fetched again), and the index answers as an uninterrupted run does; the
  stored OPIC cash plus the virtual page's is 1 right after the kill and after the rerun.
- *-disk-full: crawl, recrawl, index and rank each on a small tmpfs (mounted by the script: run
  it as root) with room for half of what the stage writes: exit 1 within seconds with one line
  naming the cause, no traceback, nothing half-written left (no tmp- segment, no array file the
  manifest does not name), the store sound, the previous index and ranks still serve, and the
  same command on a larger disk (the tmpfs remounted) finishes.
- index-parent-kill: kill -9 of ``websift index`` while its workers run: none outlives it.
- corrupt-*: a flipped byte or a truncated WARC record, segment file or rank file: detected,
  reported, skipped or refused; never served as garbage.
- api-churn: ``websift serve`` under constant queries while ``websift index`` and ``websift
  rank`` replace their output N times: no failed request.
- hostile-clients: ``websift serve`` against a client trickling its request head (cut at the
  read deadline), a flood of request headers (400), a 300 MB body declared and one chunked
  (413 after at most the cap is read); a search answered the same before and after each.
- hostile-headers: ``websift crawl`` of a page answering with 300 MB of response headers:
  counted too_large, fetched once, the crawler's peak memory bounded.
- redis-restart-empty: a crawl on a shared frontier (``--frontier redis://``, a real
  redis-server with no persistence) whose Redis is restarted empty mid-crawl: the crawler
  stops at once with one line and exit 1, its store sound with every page it committed, no
  URL ID given twice, nothing written into the empty Redis; a new frontier made with
  ``frontier init --ids-above N`` and a fresh --data crawl on above the old shard's IDs.
- redis-two-scopes: two crawls with different scopes on one frontier: the second is refused
  with one line naming the difference (exit 2) before any fetch; the first crawls on (exit 0).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from testkit.ports import free_port
from testkit.testweb import StaticSite
from testkit.waiting import wait_for
from websift.api.demo import ROBOTS_TXT, build_site
from websift.core.datadir import DataDir
from websift.core.errors import StoreError
from websift.store.schema import FETCHED
from websift.store.views import StoreReader
from websift.store.warc import WarcLocation, read_response

REPO = Path(__file__).resolve().parents[2]
DISK_FULL_TIMEOUT = 60.0  # seconds a stage on a full disk may take to exit: past that it hung

QUERIES = ["json encoder", "socket timeout", "regular expression", "thread lock", "path",
           "http server request handler", "decimal context", "zip file", "email message",
           "unittest mock patch"]


@dataclass
class Outcome:
    case: str
    expected: str
    observed: str
    ok: bool


# ----------------------------------------------------------------------------- processes
def websift_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "websift.api.cli", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run one websift command to its end."""
    return subprocess.run(websift_cmd(*args), capture_output=True, text=True, env=_env(),
                          cwd=REPO, timeout=timeout, check=False)


def run_killed(args: list[str], after: float) -> tuple[bool, float]:
    """Start a websift command and SIGKILL it ``after`` seconds in (if still running).

    Returns (killed, seconds it ran)."""
    start = time.monotonic()
    proc = subprocess.Popen(websift_cmd(*args), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=_env(), cwd=REPO)
    try:
        proc.wait(timeout=after)
        return False, time.monotonic() - start
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True, time.monotonic() - start


def timed(*args: str) -> float:
    start = time.monotonic()
    done = run(*args)
    if done.returncode != 0:
        raise SystemExit(f"faults: 'websift {' '.join(args)}' failed:\n{done.stderr}")
    return time.monotonic() - start


def search_json(data: Path, query: str) -> list[tuple[str, float]]:
    done = run("search", query, "--json", "-k", "10", "--data", str(data))
    if done.returncode != 0:
        raise RuntimeError(f"search {query!r} failed: {done.stderr.strip()}")
    payload = json.loads(done.stdout)
    hits = payload["results"]  # the /search object
    return [(h["url"], round(float(h["score"]), 4)) for h in hits]


def answers(data: Path) -> dict[str, list[tuple[str, float]]]:
    return {q: search_json(data, q) for q in QUERIES}


# ----------------------------------------------------------------------------- checks
def check_store(data: Path, served: set[str]) -> str | None:
    """None when the store is sound and holds every served page once, else what is wrong."""
    with StoreReader.open(data / "crawl.sqlite3") as store:
        unsound = store.check_integrity()
        if unsound is not None:
            return unsound
        fetched = {p.url: p for p in store.pages(FETCHED)}
        missing = sorted(served - set(fetched))
        if missing:
            return f"{len(missing)} served pages not in the store, e.g. {missing[0]}"
        for page in fetched.values():
            if page.warc_file is None:
                continue
            read_response(data / "warc", WarcLocation(page.warc_file, page.warc_offset or 0,
                                                      page.warc_length or 0))
    return None


def check_cash(data: Path) -> str | None:
    """None when the stored OPIC cash (every page's base plus its pending dividends) plus the
    virtual page's is 1 (Lemma 2.2), else what it is."""
    with StoreReader.open(data / "crawl.sqlite3") as store:
        if store.get_meta("opic_virtual_cash") is None:
            return None  # killed before the first commit of OPIC state: nothing to check
        total = store.opic_cash_total()
    return None if abs(total - 1.0) <= 1e-9 else f"stored cash sums to {total!r}, not 1"


def served_pages(site: StaticSite) -> set[str]:
    return {site.origin + e.path for e in site.web.entries()
            if e.status == 200 and not e.path.startswith("/robots.txt")}


def du(path: Path) -> int:
    """Bytes in the files under ``path``."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset % len(data)] ^= 0x5A
    path.write_bytes(bytes(data))


class FullWatch:
    """Notes when a filesystem first has (almost) no room left, to time the exit after it."""

    def __init__(self, mount: Path, margin: int = 128 * 1024) -> None:
        self.mount = mount
        self.margin = margin
        self.full_at: float | None = None
        self.ended_at = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.02):
            stat = os.statvfs(self.mount)
            if self.full_at is None and stat.f_bavail * stat.f_frsize <= self.margin:
                self.full_at = time.monotonic()

    def stop(self) -> None:
        self.ended_at = time.monotonic()
        self._stop.set()
        self._thread.join()

    def after_full(self) -> float:
        """Seconds from the disk filling up to the command's exit (0: never seen full)."""
        return 0.0 if self.full_at is None else self.ended_at - self.full_at


def _listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found: set[int] = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def _alive(pids: set[int]) -> set[int]:
    """Those of ``pids`` still running (a zombie counts as gone)."""
    out: set[int] = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.add(pid)
    return out


def start_serve(data: Path) -> tuple[subprocess.Popen[bytes], int, str]:
    """``websift serve`` on ``data`` at a free loopback port, once /healthz answers (within
    60 s, else SystemExit): (the process, its port, its base URL); the caller stops it."""
    port = free_port()
    server = subprocess.Popen(websift_cmd("serve", "--data", str(data), "--port", str(port)),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(),
                              cwd=REPO)
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(base_url + "/healthz", timeout=2).read()
            return server, port, base_url
        except (urllib.error.URLError, ConnectionError):
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                server.wait()
                raise SystemExit("faults: websift serve did not start") from None
            time.sleep(0.1)  # polling a starting server; not a test


# ----------------------------------------------------------------------------- the harness
class Faults:
    def __init__(self, work: Path, site: StaticSite, kills: int, seed: int) -> None:
        self.work = work
        self.site = site
        self.kills = kills
        self.rng = random.Random(seed)
        self.seed = seed
        self.results: list[Outcome] = []
        self.crawl_args = [site.origin + "/", "--allow-private", "--delay", "0",
                           "--concurrency-per-host", "4", "--quiet"]

    def record(self, case: str, expected: str, observed: str, ok: bool) -> None:
        self.results.append(Outcome(case, expected, observed, ok))
        mark = "ok " if ok else "FAIL"
        print(f"[{mark}] {case}: {observed}", file=sys.stderr, flush=True)

    def fresh(self, name: str) -> Path:
        path = self.work / name
        shutil.rmtree(path, ignore_errors=True)
        return path

    def copy(self, src: Path, name: str) -> Path:
        dst = self.fresh(name)
        shutil.copytree(src, dst)
        return dst

    # --- bases, built once
    def _reusable(self, base: Path, done: str) -> bool:
        """A base from an earlier run of this script is reused only for the same site address."""
        stamp = base / done
        return stamp.exists() and stamp.read_text() == self.site.origin

    def base_complete(self) -> Path:
        """A complete crawl, indexed and ranked: the reference everything compares with."""
        base = self.work / "base-complete"
        if not self._reusable(base, "complete"):
            shutil.rmtree(base, ignore_errors=True)
            timed("crawl", *self.crawl_args, "--data", str(base))
            timed("index", "--data", str(base), "--quiet")
            timed("rank", "--data", str(base))
            (base / "complete").write_text(self.site.origin)
        return base

    def base_two_generations(self) -> Path:
        """A partial crawl indexed and ranked (generation 1), then the crawl completed."""
        base = self.work / "base-two"
        if not self._reusable(base, "crawl-complete"):
            shutil.rmtree(base, ignore_errors=True)
            timed("crawl", *self.crawl_args, "--max-pages", "120", "--data", str(base))
            timed("index", "--data", str(base), "--quiet")
            timed("rank", "--data", str(base))
            timed("crawl", *self.crawl_args, "--data", str(base))
            (base / "crawl-complete").write_text(self.site.origin)
        return base

    # --- kill -9
    @staticmethod
    def _has_store(data: Path) -> bool:
        try:
            StoreReader.open(data / "crawl.sqlite3").close()
        except StoreError:  # absent, or empty: killed before its schema committed
            return False
        return True

    def crawl_kill(self) -> None:
        ref = self.fresh("crawl-ref")
        self.site.web.clear()
        duration = timed("crawl", *self.crawl_args, "--data", str(ref))
        for trial in range(self.kills):
            seed = self.rng.randrange(2**31)
            after = random.Random(seed).uniform(0.3, max(duration, 1.0))
            data = self.fresh("crawl-kill")
            self.site.web.clear()
            killed, _ = run_killed(["crawl", *self.crawl_args, "--data", str(data)], after)
            # what the killed crawl committed: exact OPIC state (a kill before the store's
            # schema committed leaves nothing to check)
            had_store = self._has_store(data)
            problem = check_cash(data) if had_store else None
            problem = problem and f"after the kill: {problem}"
            done = run("crawl", *self.crawl_args, "--data", str(data))
            if problem is None and done.returncode != 0:
                problem = f"rerun exit {done.returncode}: {done.stderr.strip()[-200:]}"
            problem = problem or check_store(data, served_pages(self.site)) or check_cash(data)
            self.record(f"crawl-kill #{trial} seed={seed}",
                        "store opens; every served page stored once; stored cash sums to 1",
                        f"killed at {after:.2f}s" + ("" if killed else " (had finished)")
                        + ("" if had_store else " (before its store existed)")
                        + (f"; {problem}" if problem else "; store sound, all served pages "
                           "stored, cash 1" + (" after the kill and" if had_store else "")
                           + " after the rerun"),
                        problem is None)

    def index_kill(self) -> None:
        base = self.base_two_generations()
        ref = self.copy(base, "index-ref")
        duration = timed("index", "--data", str(ref), "--quiet")
        expected = answers(ref)
        for trial in range(self.kills):
            seed = self.rng.randrange(2**31)
            after = random.Random(seed).uniform(0.05, max(duration, 0.5) * 1.2)
            data = self.copy(base, "index-kill")
            killed, _ = run_killed(["index", "--data", str(data), "--quiet"], after)
            problem = None
            try:
                search_json(data, QUERIES[0])  # the previous (or new) generation serves
            except RuntimeError as exc:
                problem = f"after kill: {exc}"
            if problem is None:
                done = run("index", "--data", str(data), "--quiet")
                if done.returncode != 0:
                    problem = f"rerun exit {done.returncode}: {done.stderr.strip()[-200:]}"
                elif (got := answers(data)) != expected:
                    diff = [q for q in QUERIES if got[q] != expected[q]]
                    problem = f"answers differ from an uninterrupted run for {diff[:3]}"
            self.record(f"index-kill #{trial} seed={seed}",
                        "old index serves; rerun answers as uninterrupted",
                        f"killed at {after:.2f}s" + ("" if killed else " (had finished)")
                        + (f"; {problem}" if problem else "; same answers"), problem is None)

    def rank_kill(self) -> None:
        import numpy as np

        from websift.core.datadir import DataDir
        from websift.ranking.ranks import Ranks

        base = self.base_two_generations()
        ref = self.copy(base, "rank-ref")
        duration = timed("rank", "--data", str(ref))
        expected = Ranks.open(DataDir.open(ref)).pagerank.copy()
        for trial in range(self.kills):
            seed = self.rng.randrange(2**31)
            after = random.Random(seed).uniform(0.05, max(duration, 0.5) * 1.2)
            data = self.copy(base, "rank-kill")
            killed, _ = run_killed(["rank", "--data", str(data)], after)
            problem = None
            try:
                Ranks.open(DataDir.open(data))
            except Exception as exc:  # noqa: BLE001 - the observation is the point
                problem = f"after kill ranks do not open: {exc}"
            if problem is None:
                done = run("rank", "--data", str(data))
                if done.returncode != 0:
                    problem = f"rerun exit {done.returncode}: {done.stderr.strip()[-200:]}"
                else:
                    got = Ranks.open(DataDir.open(data)).pagerank
                    if got.shape != expected.shape or not np.allclose(got, expected, atol=1e-12):
                        problem = "PageRank differs from an uninterrupted run"
            self.record(f"rank-kill #{trial} seed={seed}",
                        "old ranks open; rerun equals uninterrupted",
                        f"killed at {after:.2f}s" + ("" if killed else " (had finished)")
                        + (f"; {problem}" if problem else "; same ranks"), problem is None)

    # --- disk full
    def disk_full(self) -> None:
        """Each stage on a small tmpfs holding the data with room for only half of what the
        stage writes (measured on an uninterrupted copy), so it fills up mid-stage: the stage
        must exit 1 within seconds with one line, leave nothing half-written, keep what it had
        (the store sound, the previous index and ranks serving) and finish when rerun on a
        larger disk."""
        fresh = self.fresh("disk-empty")
        fresh.mkdir(parents=True)
        for stage, args, base in (
                ("crawl", ["crawl", *self.crawl_args], fresh),
                ("recrawl", ["recrawl", "--budget", "200", "--allow-private", "--delay", "0",
                             "--quiet"], self.base_two_generations()),
                ("index", ["index", "--quiet", "--rebuild"], self.base_two_generations()),
                ("rank", ["rank"], self.base_two_generations())):
            probe = self.copy(base, f"disk-probe-{stage}")
            before_bytes = du(probe)
            run(*args, "--data", str(probe))
            written = max(du(probe) - before_bytes, 64 * 1024)
            mount = self.fresh(f"disk-{stage}")
            mount.mkdir(parents=True)
            size_kb = (du(base) + written // 2) // 1024 + 64
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(mount)],
                           check=True)
            try:
                self._disk_full_case(stage, args, base, mount, size_kb)
            finally:
                subprocess.run(["umount", str(mount)], check=False)

    def _disk_full_case(self, stage: str, args: list[str], base: Path, mount: Path,
                        size_kb: int) -> None:
        from websift.core.datadir import DataDir
        from websift.ranking.ranks import Ranks

        data = mount / "data"
        shutil.copytree(base, data)
        has_output = (data / "index").is_dir()
        before = answers(data) if has_output else None
        index_files = _listing(data / "index")
        rank_files = _listing(data / "ranks")
        watch = FullWatch(mount)
        try:
            done = run(*args, "--data", str(data), timeout=DISK_FULL_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.record(f"{stage}-disk-full ({size_kb} KiB tmpfs)", "exit 1 within seconds",
                        f"no exit within {DISK_FULL_TIMEOUT:.0f} s (hung)", False)
            return
        finally:
            watch.stop()
        seconds = watch.after_full()
        err = done.stderr.strip().splitlines()
        last = err[-1] if err else ""
        problems: list[str] = []
        if done.returncode != 1 or "Traceback" in done.stderr \
                or not last.startswith(f"websift {args[0]}: error: "):
            problems.append(f"exit {done.returncode}, stderr: {done.stderr.strip()[-300:]!r}")
        if stage == "index":
            extra = sorted(set(_listing(data / "index")) - set(index_files))
            if any(name.startswith(("tmp-", "seg-")) for name in extra):
                problems.append(f"left in index/: {extra}")
        if stage == "rank" and _listing(data / "ranks") != rank_files:
            problems.append(f"left in ranks/: {sorted(set(_listing(data / 'ranks')) - set(rank_files))}")
        if before is not None:
            try:
                if answers(data) != before:
                    problems.append("answers changed after the failed run")
                Ranks.open(DataDir.open(data))
            except Exception as exc:  # noqa: BLE001 - the observation is the point
                problems.append(f"previous output no longer serves: {exc}")
        # a larger disk: the same command again finishes
        subprocess.run(["mount", "-o", f"remount,size={size_kb * 4}k", "tmpfs", str(mount)],
                       check=True)
        # (a store in WAL mode opens, even read-only, only where its -shm file can grow)
        with StoreReader.open(data / "crawl.sqlite3") as store:
            unsound = store.check_integrity()
        if unsound:
            problems.append(f"store: {unsound}")
        again = run(*args, "--data", str(data), timeout=DISK_FULL_TIMEOUT * 5)
        if again.returncode != 0:
            problems.append(f"rerun exit {again.returncode}: {again.stderr.strip()[-200:]}")
        elif stage == "crawl":
            missing = check_store(data, served_pages(self.site))
            if missing:
                problems.append(f"after the rerun: {missing}")
        self.record(f"{stage}-disk-full ({size_kb} KiB tmpfs)",
                    "exit 1 within seconds, one line; nothing half-written; old output serves; "
                    "rerun on a larger disk finishes",
                    "; ".join(problems) if problems else
                    f"exit {done.returncode} {seconds:.1f} s after the disk filled: {last}; "
                    "nothing lost; rerun finished", not problems)

    # --- parent killed
    def parent_kill(self) -> None:
        """kill -9 of ``websift index`` while its worker processes run: none outlives it."""
        base = self.base_two_generations()
        for trial in range(max(1, min(self.kills, 5))):
            data = self.copy(base, "parent-kill")
            proc = subprocess.Popen(websift_cmd("index", "--rebuild", "--quiet", "--procs", "2",
                                                "--data", str(data)),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    env=_env(), cwd=REPO)
            workers: set[int] = set()
            deadline = time.monotonic() + 60
            while len(workers) < 2 and proc.poll() is None and time.monotonic() < deadline:
                workers |= _children(proc.pid)  # both workers forked: kill it mid-run
                time.sleep(0.02)  # polling /proc for the workers to appear; not a test
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            gone_by = time.monotonic() + 5
            while _alive(workers) and time.monotonic() < gone_by:
                time.sleep(0.05)  # polling /proc; not a test
            left = _alive(workers)
            self.record(f"index-parent-kill #{trial}",
                        "no worker process outlives the killed run",
                        f"{len(workers)} workers seen, {len(left)} left after the kill"
                        + ("" if workers else " (the run finished before its workers started)"),
                        bool(workers) and not left)

    # --- corrupt files
    def corrupt(self) -> None:
        from websift.core.datadir import DataDir
        from websift.ranking.ranks import Ranks

        base = self.base_complete()
        # a WARC record: the index run reports it and leaves the page out
        data = self.copy(base, "corrupt-warc")
        shutil.rmtree(data / "index")
        with StoreReader.open(data / "crawl.sqlite3") as store:
            victim = next(p for p in store.pages(FETCHED)
                          if (p.content_type or "").startswith("text/html")
                          and p.url.endswith("json.html"))
        assert victim.warc_file and victim.warc_offset is not None and victim.warc_length
        flip_byte(data / "warc" / victim.warc_file, victim.warc_offset + victim.warc_length // 2)
        done = run("index", "--data", str(data))
        reported = done.returncode == 0 and ("corrupt" in done.stderr.lower()
                                             or "warc" in done.stderr.lower())
        urls = [u for u, _ in search_json(data, "JSONDecoder")] if done.returncode == 0 else []
        ok = reported and victim.url not in urls
        self.record("corrupt-warc-record", "index run reports it, skips the page",
                    f"exit {done.returncode}; reported={reported}; page served={victim.url in urls}",
                    ok)
        # segment files: flipped byte and truncation
        for how in ("flip", "truncate"):
            data = self.copy(base, f"corrupt-seg-{how}")
            files = sorted(p for p in (data / "index").rglob("*") if p.is_file()
                           and p.stat().st_size > 64 and "manifest" not in p.name)
            target = max(files, key=lambda p: p.stat().st_size)
            if how == "flip":
                flip_byte(target, target.stat().st_size // 2)
            else:
                target.write_bytes(target.read_bytes()[: target.stat().st_size // 2])
            done = run("search", "json", "--data", str(data))
            refused = done.returncode != 0 and "Traceback" not in done.stderr
            self.record(f"corrupt-segment-{how}", "search refuses with a clear error",
                        f"{target.name}: exit {done.returncode}: {done.stderr.strip()[-160:]}", refused)
        # rank files
        for how in ("flip", "truncate"):
            data = self.copy(base, f"corrupt-rank-{how}")
            files = sorted(p for p in (data / "ranks").rglob("*.npy"))
            target = max(files, key=lambda p: p.stat().st_size)
            if how == "flip":
                flip_byte(target, target.stat().st_size - 9)
            else:
                target.write_bytes(target.read_bytes()[:-16])
            try:
                Ranks.open(DataDir.open(data))
                observed, ok = "opened without complaint", False
            except Exception as exc:  # noqa: BLE001
                observed, ok = f"{type(exc).__name__}: {exc}", "Corrupt" in type(exc).__name__
            self.record(f"corrupt-rank-{how}", "refused as corrupt", observed[:200], ok)

    # --- the API under replacement
    def api_churn(self, replacements: int) -> None:
        data = self.copy(self.base_two_generations(), "api-churn")
        server, _, base_url = start_serve(data)
        try:
            stop = threading.Event()
            counts = {"ok": 0, "failed": 0}
            failures: list[str] = []

            def client() -> None:
                i = 0
                while not stop.is_set():
                    q = urllib.parse.quote(QUERIES[i % len(QUERIES)])
                    i += 1
                    try:
                        with urllib.request.urlopen(f"{base_url}/search?q={q}", timeout=10) as r:
                            json.loads(r.read())
                        counts["ok"] += 1
                    except (urllib.error.URLError, ConnectionError, ValueError, TimeoutError) as exc:
                        counts["failed"] += 1
                        failures.append(str(exc)[:120])

            threads = [threading.Thread(target=client) for _ in range(2)]
            for t in threads:
                t.start()
            for i in range(replacements):
                run("index", "--data", str(data), "--quiet", "--rebuild")
                run("rank", "--data", str(data))
                print(f"api-churn: replacement {i + 1}/{replacements}, "
                      f"{counts['ok']} requests ok, {counts['failed']} failed",
                      file=sys.stderr, flush=True)
            stop.set()
            for t in threads:
                t.join()
            self.record("api-churn", f"no failed request during {replacements} index+rank replacements",
                        f"{counts['ok']} ok, {counts['failed']} failed"
                        + (f"; e.g. {failures[0]}" if failures else ""),
                        counts["failed"] == 0 and counts["ok"] > 0)
        finally:
            server.terminate()
            server.wait(timeout=30)


# ----------------------------------------------------------------------------- hostile peers
FLOOD = 300 * 1024 * 1024  # bytes a hostile client or server offers to send
READ_TIMEOUT_S = 10.0  # websift serve's request_read_timeout_s default (api/settings.py)
SLACK_S = 5.0
CRAWLER_RSS_BOUND = 400 * 1024 * 1024


def _offer(sock: socket.socket, piece: bytes) -> int:
    """Send ``piece`` over and over until ``FLOOD`` bytes or the peer hangs up; bytes sent."""
    sent = 0
    try:
        while sent < FLOOD:
            sent += sock.send(piece)
    except OSError:
        pass  # the server closed the connection: what this measures
    return sent


def _status(sock: socket.socket) -> int | None:
    try:
        line = sock.makefile("rb").readline()
        return int(line.split(b" ", 2)[1])
    except (OSError, ValueError, IndexError):
        return None


def _trickle_until_closed(port: int) -> float | None:
    """Seconds until the server closed a connection sent one header byte every 0.5 s."""
    head = b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-slow: " + b"s" * 200
    with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
        started = time.monotonic()
        for byte in head:
            try:
                sock.send(bytes([byte]))
                if sock.recv(1) == b"":
                    return time.monotonic() - started
            except TimeoutError:
                continue  # open still: the next byte after the recv timeout's half second
            except OSError:
                return time.monotonic() - started
    return None


def _serve_head_flood(sock: socket.socket, stop: threading.Event, sent: list[int]) -> None:
    """Answer robots.txt 404 and every other request with endless 1 KiB header lines."""
    line = b"x-pad: " + b"p" * 1015 + b"\r\n"
    while not stop.is_set():
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        with conn:
            request = conn.recv(65536)
            if b" /robots.txt " in request:
                conn.sendall(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                continue
            sent.append(0)
            sent[-1] = _offer(conn, b"HTTP/1.1 200 OK\r\n" + line * 64)


def _peak_rss(child: subprocess.Popen[str], timeout: float) -> int:
    import psutil

    proc, peak, deadline = psutil.Process(child.pid), 0, time.monotonic() + timeout
    while child.poll() is None and time.monotonic() < deadline:
        try:
            peak = max(peak, proc.memory_info().rss)
        except psutil.Error:
            break
        try:
            child.wait(timeout=0.05)
        except subprocess.TimeoutExpired:
            continue
    return peak


def hostile_clients(f: Faults) -> None:
    data = f.copy(f.base_two_generations(), "hostile-clients")
    server, port, base_url = start_serve(data)

    def search() -> str:
        with urllib.request.urlopen(f"{base_url}/search?q=json+encoder", timeout=30) as r:
            return json.dumps([h["url"] for h in json.loads(r.read())["results"]])

    try:
        before = search()

        def after(case: str, expected: str, observed: str, ok: bool) -> None:
            same = search() == before
            f.record(case, expected + "; search answers the same after",
                     observed + ("" if same else "; SEARCH CHANGED"), ok and same)

        closed = _trickle_until_closed(port)
        after("slow-header-client", f"closed within {READ_TIMEOUT_S:g} s (+{SLACK_S:g} s)",
              "never closed" if closed is None else f"closed after {closed:.1f} s",
              closed is not None and closed < READ_TIMEOUT_S + SLACK_S)
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")
            sent = _offer(sock, (b"x-pad: " + b"p" * 1000 + b"\r\n") * 16)
            status = _status(sock)
        after("request-header-flood", "400, connection closed early",
              f"{status}, {sent / 2**20:.1f} MiB sent of {FLOOD >> 20}", status == 400
              and sent < FLOOD // 10)
        for chunked in (False, True):
            framing = b"transfer-encoding: chunked" if chunked else b"content-length: %d" % FLOOD
            piece = b"x" * 65536
            if chunked:
                piece = b"%x\r\n" % len(piece) + piece + b"\r\n"
            with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
                sock.sendall(b"POST /topics HTTP/1.1\r\nhost: x\r\n" + framing + b"\r\n\r\n")
                sent = _offer(sock, piece)
                status = _status(sock)
            after(f"body-flood-{'chunked' if chunked else 'declared'}",
                  "413 before the body is read", f"{status}, {sent / 2**20:.1f} MiB sent of "
                  f"{FLOOD >> 20}", status == 413 and sent < FLOOD // 10)
    finally:
        server.terminate()
        server.wait(timeout=30)


def hostile_headers(f: Faults) -> None:
    data = f.fresh("hostile-headers")
    listener = socket.create_server(("127.0.0.1", 0))
    stop, sent = threading.Event(), []
    thread = threading.Thread(target=_serve_head_flood, args=(listener, stop, sent), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/"
    try:
        child = subprocess.Popen(websift_cmd("crawl", url, "--data", str(data), "--allow-private",
                                             "--delay", "0", "--max-pages", "1", "--quiet"),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                 env=_env(), cwd=REPO)
        peak = _peak_rss(child, 120)
        code = child.wait(30)
    finally:
        stop.set()
        listener.close()
    with StoreReader.open(DataDir.open(data).store_path) as store:
        last = store.last_crawl()
    counts = json.loads(last[3])["counts"] if last and last[3] else {}
    too_large = counts.get("failure/too_large", 0)
    f.record("hostile-response-headers",
             f"exit 1 (its one seed failed), too_large, fetched once, peak RSS < "
             f"{CRAWLER_RSS_BOUND >> 20} MiB",
             f"exit {code}, too_large {too_large}, requests {len(sent)}, "
             f"{(sent[0] if sent else 0) / 2**20:.1f} MiB sent, peak RSS {peak >> 20} MiB",
             code == 1 and too_large == 1 and len(sent) == 1 and peak < CRAWLER_RSS_BOUND)


class SharedFrontier:
    """The two shared-frontier cases (a real redis-server, testkit/redis_server.py)."""

    def __init__(self, faults: Faults) -> None:
        self.f = faults

    def crawl(self, data: Path, url: str, *extra: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            websift_cmd("crawl", *self.f.crawl_args, "--data", str(data), "--frontier", url,
                        *extra),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env(), cwd=REPO)

    def restart_empty(self) -> None:
        from testkit.redis_server import RedisServer
        from websift.crawler.redis_admin import connect, frontier_status

        f = self.f
        srv = RedisServer(f.fresh("redis-restart"))
        try:
            data = f.fresh("redis-shard")
            f.site.web.clear()
            proc = self.crawl(data, srv.url())
            wait_for(lambda: len(f.site.web.entries()) >= 30 or proc.poll() is not None,
                     "the crawl to be under way", timeout=120)
            srv.restart()
            restarted = time.monotonic()
            _, err = proc.communicate(timeout=300)
            took = time.monotonic() - restarted
            lines = err.strip().splitlines()
            problems: list[str] = []
            if proc.returncode != 1:
                problems.append(f"exit {proc.returncode}")
            if len(lines) != 1 or "lost its data" not in err:
                problems.append(f"stderr {err.strip()[-200:]!r}")
            if "UNIQUE" in err:
                problems.append("UNIQUE constraint errors")
            if srv.client.dbsize():
                problems.append(f"{srv.client.dbsize()} keys written into the empty Redis")
            served = served_pages(f.site)
            with StoreReader.open(data / "crawl.sqlite3") as store:
                sound = store.check_integrity()
                stored = {p.url for p in store.pages(FETCHED)}
                high = store.max_url_id()
            if sound is not None:
                problems.append(sound)
            in_flight = len(served - stored)  # served while the crawler stopped, not committed
            if in_flight > 4:  # --concurrency-per-host 4 on one site
                problems.append(f"{in_flight} served pages not stored")
            # recovery: a new frontier above the shard's IDs, a fresh --data
            done = run("frontier", "init", "--frontier", srv.url(), "--ids-above", str(high))
            fresh = f.fresh("redis-shard-2")
            f.site.web.clear()
            again = self.crawl(fresh, srv.url())
            _, err2 = again.communicate(timeout=600)
            with StoreReader.open(fresh / "crawl.sqlite3") as store:
                low = int(store.url_ids().min())
            if done.returncode != 0 or again.returncode != 0:
                problems.append(f"recovery: init {done.returncode}, crawl {again.returncode} "
                                f"{err2.strip()[-200:]}")
            problem = check_store(fresh, served_pages(f.site))
            if problem or low <= high:
                problems.append(f"recovery: {problem or ''} lowest new ID {low} <= {high}")
            total = frontier_status(connect(srv.url()))["cash"]["total"]  # quiet: still 1
            if abs(total - 1.0) > 1e-9:
                problems.append(f"new frontier's cash {total!r}")
            f.record("redis-restart-empty",
                     "exit 1, one line, store sound, no ID reused; recovery crawls on",
                     f"exit {proc.returncode} {took:.1f}s after the restart; {len(stored)} "
                     f"pages committed, {in_flight} served during the stop not stored; IDs up to {high}, "
                     f"recovery's from {low}" + (f"; {'; '.join(problems)}" if problems else ""),
                     not problems)
        finally:
            srv.stop()

    def two_scopes(self) -> None:
        from testkit.redis_server import RedisServer

        f = self.f
        srv = RedisServer(f.fresh("redis-scopes"))
        try:
            f.site.web.clear()
            fenced = self.crawl(f.fresh("redis-fenced"), srv.url(), "--fence", "/[a-m][^/]*$")
            wait_for(lambda: bool(f.site.web.entries()) or fenced.poll() is not None,
                     "the fenced crawl to be under way", timeout=60)
            seen = len(f.site.web.entries())
            full = self.crawl(f.fresh("redis-full"), srv.url())
            _, err = full.communicate(timeout=120)
            _, err_fenced = fenced.communicate(timeout=600)
            problems = []
            if full.returncode != 2 or len(err.strip().splitlines()) != 1 \
                    or "fences" not in err:
                problems.append(f"second crawl: exit {full.returncode} {err.strip()[-200:]!r}")
            if fenced.returncode != 0:
                problems.append(f"first crawl: exit {fenced.returncode} {err_fenced[-200:]}")
            fetched = len(f.site.web.entries())
            if fetched <= seen:
                problems.append("the first crawl stopped")
            f.record("redis-two-scopes", "second scope refused, one line, exit 2; first exit 0",
                     f"second exit {full.returncode}: {err.strip()[:120]}...; first exit "
                     f"{fenced.returncode}, {fetched} requests"
                     + (f"; {'; '.join(problems)}" if problems else ""), not problems)
        finally:
            srv.stop()


CASES: dict[str, Callable[[Faults, argparse.Namespace], None]] = {
    "crawl-kill": lambda f, a: f.crawl_kill(),
    "index-kill": lambda f, a: f.index_kill(),
    "rank-kill": lambda f, a: f.rank_kill(),
    "disk-full": lambda f, a: f.disk_full(),
    "parent-kill": lambda f, a: f.parent_kill(),
    "corrupt": lambda f, a: f.corrupt(),
    "api-churn": lambda f, a: f.api_churn(a.replacements),
    "hostile-clients": lambda f, a: hostile_clients(f),
    "hostile-headers": lambda f, a: hostile_headers(f),
    "redis-restart-empty": lambda f, a: SharedFrontier(f).restart_empty(),
    "redis-two-scopes": lambda f, a: SharedFrontier(f).two_scopes(),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20, help="kills per stage (default 20)")
    parser.add_argument("--replacements", type=int, default=50, help="index+rank runs under load")
    parser.add_argument("--seed", type=int, default=None, help="replay a run")
    parser.add_argument("--only", default=",".join(CASES), help="comma-separated cases")
    parser.add_argument("--work", type=Path, default=None, help="work directory (kept)")
    parser.add_argument("--address", default="127.0.0.9", help="loopback address for the site")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    print(f"faults: seed {seed} (replay with --seed {seed})", file=sys.stderr)
    work = args.work or Path(tempfile.mkdtemp(prefix="websift-faults-"))
    work.mkdir(parents=True, exist_ok=True)
    site_dir = work / "site"
    build_site(site_dir)
    with StaticSite(site_dir, args.address, ROBOTS_TXT) as site:
        faults = Faults(work, site, args.kills, seed)
        for name in args.only.split(","):
            if name not in CASES:
                raise SystemExit(f"faults: unknown case {name!r}; choose from {', '.join(CASES)}")
            CASES[name](faults, args)
    width = max(len(r.case) for r in faults.results) if faults.results else 10
    print(f"\n{'case':<{width}}  {'verdict':<7}  expected | observed")
    for r in faults.results:
        print(f"{r.case:<{width}}  {'ok' if r.ok else 'FAILED':<7}  {r.expected} | {r.observed}")
    failed = sum(not r.ok for r in faults.results)
    print(f"\n{len(faults.results) - failed} passed, {failed} failed (seed {seed})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
