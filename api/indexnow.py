"""Site owners' pushes (IndexNow): the work behind ``POST /indexnow`` and ``GET /indexnow``.

Question: a site owner says which of their URLs changed; when is that taken, and what does the
crawl get?

A submission is, in this order: rate-limited per host (``indexnow_per_minute`` submissions a
minute, in this server process; past it 429), checked (crawler/indexnow.py: well-formed, 400;
every URL on the host, 422), its key verified by fetching the key file from the site with the
crawl's address rules (403 when it is not the key; a verified key is trusted for
``indexnow_key_ttl_s``), and its in-scope URLs written to the crawl store's ``pushes`` table
(202).  A running ``websift crawl`` on the embedded frontier takes them at its next batch commit
or idle tick (crawler/pushes.py).  Every outcome is counted (``/stats`` ``indexnow``, ``/metrics``).

The scope is the newest run's (crawler/runs.py ``stored_scope``) with the removals in force; a
data directory no crawl ran in has none, and every push to it is 422.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from dataclasses import dataclass

from websift.api.errors import ApiError
from websift.api.settings import Settings
from websift.core.datadir import DataDir
from websift.crawler.indexnow import SubmissionError, check_submission, verify_key
from websift.crawler.runs import stored_scope
from websift.crawler.scope import Scope
from websift.store.crawl_store import CrawlStore
from websift.store.views import StoreReader

MAX_TRACKED_HOSTS = 10_000  # rate-limit windows and verified keys kept (oldest dropped past it)
OUTCOMES = ("accepted", "bad_request", "forbidden", "wrong_host", "rate_limited")


class PushBadRequest(ApiError):
    status = 400
    code = "bad_request"


class PushForbidden(ApiError):
    status = 403
    code = "key_not_valid"


class PushWrongHost(ApiError):
    status = 422
    code = "url_not_on_host"


class PushRateLimited(ApiError):
    status = 429
    code = "too_many_requests"


@dataclass(frozen=True)
class PushResult:
    host: str
    accepted: int
    refused: list[tuple[str, str]]


class IndexNow:
    """This server process's push state: per-host windows, verified keys, outcome counts."""

    def __init__(self, settings: Settings) -> None:
        self.per_minute = settings.indexnow_per_minute
        self.key_ttl = settings.indexnow_key_ttl_s
        self.timeout = settings.indexnow_key_timeout_s
        self.lock = threading.Lock()
        self.windows: dict[str, deque[float]] = {}
        self.verified: dict[tuple[str, str], float] = {}  # (key URL, key) -> until
        self.counts: Counter[str] = Counter({k: 0 for k in OUTCOMES})
        self.urls = 0  # URLs written to the store

    def count(self, outcome: str) -> None:
        with self.lock:
            self.counts[outcome] += 1

    def _admit(self, host: str, now: float) -> bool:
        with self.lock:
            window = self.windows.get(host)
            if window is None:
                if len(self.windows) >= MAX_TRACKED_HOSTS:
                    self.windows.pop(next(iter(self.windows)))
                window = self.windows[host] = deque()
            while window and window[0] <= now - 60.0:
                window.popleft()
            if len(window) >= self.per_minute:
                return False
            window.append(now)
            return True

    def _key_trusted(self, key_url: str, key: str, now: float) -> bool:
        with self.lock:
            until = self.verified.get((key_url, key))
            return until is not None and until > now

    def _trust_key(self, key_url: str, key: str, now: float) -> None:
        with self.lock:
            if len(self.verified) >= MAX_TRACKED_HOSTS:
                self.verified.pop(next(iter(self.verified)))
            self.verified[(key_url, key)] = now + self.key_ttl

    def submit(self, data: DataDir, host: str, key: str, key_location: str | None,
               urls: list[str]) -> PushResult:
        """Take one submission (module doc); an ApiError subclass when refused."""
        try:
            return self._submit(data, host, key, key_location, urls)
        except ApiError as exc:
            self.count({400: "bad_request", 403: "forbidden", 422: "wrong_host",
                        429: "rate_limited"}.get(exc.status, "bad_request"))
            raise

    def _submit(self, data: DataDir, host: str, key: str, key_location: str | None,
                urls: list[str]) -> PushResult:
        now = time.time()
        if not self._admit(host.strip().lower(), now):
            raise PushRateLimited(f"more than {self.per_minute} submissions a minute for {host}")
        if not data.store_path.exists():
            raise PushWrongHost("no crawl in this data directory: no URL is in scope")
        with StoreReader.open(data.store_path) as store:
            config = stored_scope(store)
            removals = store.removal_rules()
        if config is None:
            raise PushWrongHost("no crawl recorded a scope in this data directory")
        scope = Scope(config)
        scope.removals = removals
        try:
            sub = check_submission(host, key, key_location, urls, scope)
        except SubmissionError as exc:
            if exc.kind == "wrong_host":
                raise PushWrongHost(str(exc)) from None
            raise PushBadRequest(str(exc)) from None
        if not sub.urls:  # before any key fetch: no request goes to a host the crawl skips
            reasons = ", ".join(sorted({r for _, r in sub.refused}))
            raise PushWrongHost(f"no URL is in the crawl's scope ({reasons})")
        if not self._key_trusted(sub.key_url, sub.key, now):
            why = verify_key(sub.key_url, sub.key, scope.rules, self.timeout)
            if why is not None:
                raise PushForbidden(why)
            self._trust_key(sub.key_url, sub.key, now)
        with CrawlStore.open(data.store_path) as store:
            store.add_pushes(sub.host, sub.urls)
        with self.lock:
            self.counts["accepted"] += 1
            self.urls += len(sub.urls)
        return PushResult(sub.host, len(sub.urls), sub.refused)

    def figures(self) -> dict[str, int]:
        with self.lock:
            return {**{k: self.counts[k] for k in OUTCOMES}, "urls": self.urls}
