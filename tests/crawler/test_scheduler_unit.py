"""FrontierScheduler without a running Scrapy: the start-up check of Scrapy's internals, waking
the engine, Scrapy's own follow-up requests, and freeing a host's place when a request leaves
the downloader.

Scrapy's engine and crawler are fakes here (plain namespaces with the attributes the scheduler
touches); the session behind the scheduler is the real one over a store in ``tmp_path``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import scrapy

from websift.core.datadir import DataDir
from websift.core.errors import WebsiftError
from websift.crawler import scheduler as scheduler_module
from websift.crawler.errors import ScrapyIncompatible
from websift.crawler.meta import META_KEY, FetchMeta, fetch_meta
from websift.crawler.scheduler import FrontierScheduler, check_scrapy_internals
from websift.crawler.scope import ScopeConfig
from websift.crawler.session import CrawlConfig, CrawlSession

A = "http://127.0.0.2:8001"
T0 = 1_700_000_000.0


class Factory:
    """The spider's request factory, reduced to real Scrapy requests with websift's meta."""

    def page_request(
        self, url: str, meta: FetchMeta, headers: dict[str, str], slot: str
    ) -> scrapy.Request:
        return scrapy.Request(url, meta={META_KEY: meta, "download_slot": slot}, headers=headers)

    def robots_request(self, url: str, meta: FetchMeta) -> scrapy.Request:
        return scrapy.Request(url, meta={META_KEY: meta})


class NextCall:
    def __init__(self) -> None:
        self.scheduled = 0

    def schedule(self, delay: float = 0) -> None:
        self.scheduled += 1


def engine_with_slot() -> SimpleNamespace:
    """What websift needs of Scrapy's ExecutionEngine once it has opened a spider."""
    return SimpleNamespace(_slot=SimpleNamespace(nextcall=NextCall()))


@pytest.fixture
def session(tmp_path: Path) -> Iterator[CrawlSession]:
    now = [T0]
    config = CrawlConfig(seeds=[A + "/", A + "/2"], scope=ScopeConfig(allow_private=True))
    s = CrawlSession(DataDir.create(tmp_path / "data"), config, clock=lambda: now[0])
    s.factory = Factory()
    s.add_seeds()
    yield s
    s.close("test_end")


def scheduler_for(session: CrawlSession, engine: Any) -> FrontierScheduler:
    return FrontierScheduler(SimpleNamespace(engine=engine), session)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- the start-up check
def test_the_check_passes_for_the_internals_websift_uses() -> None:
    check_scrapy_internals(engine_with_slot())  # no error


@pytest.mark.parametrize(
    ("engine", "named"),
    [
        (SimpleNamespace(), "ExecutionEngine._slot"),
        (SimpleNamespace(_slot=None), "ExecutionEngine._slot"),
        (SimpleNamespace(_slot=SimpleNamespace()), "ExecutionEngine._slot.nextcall.schedule()"),
        (
            SimpleNamespace(_slot=SimpleNamespace(nextcall=SimpleNamespace(schedule=None))),
            "ExecutionEngine._slot.nextcall.schedule()",
        ),
    ],
)
def test_a_missing_engine_internal_fails_with_one_line_naming_it(engine: Any, named: str) -> None:
    with pytest.raises(ScrapyIncompatible) as caught:
        check_scrapy_internals(engine)
    message = str(caught.value)
    assert isinstance(caught.value, WebsiftError)
    assert "\n" not in message
    assert named in message
    assert f"Scrapy {scrapy.__version__} " in message


def test_a_renamed_decompression_error_fails_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        scheduler_module, "DECOMPRESSION_CAP_ERROR",
        ("scrapy.utils._compression", "_RenamedInANewerScrapy"),
    )
    with pytest.raises(ScrapyIncompatible, match=r"scrapy\.utils\._compression\._RenamedInA"):
        check_scrapy_internals(engine_with_slot())
    monkeypatch.setattr(
        scheduler_module, "DECOMPRESSION_CAP_ERROR", ("scrapy.utils._gone_module", "_X")
    )
    with pytest.raises(ScrapyIncompatible, match=r"scrapy\.utils\._gone_module\._X"):
        check_scrapy_internals(engine_with_slot())


def test_opening_without_the_internals_refuses_the_crawl_before_any_request(
    session: CrawlSession,
) -> None:
    scheduler = scheduler_for(session, SimpleNamespace())  # an engine without _slot
    assert scheduler.has_pending_requests()  # the seeds are pending
    scheduler.open(None)  # type: ignore[arg-type]
    assert isinstance(session.start_refused, ScrapyIncompatible)
    # nothing pending and nothing handed out: the engine closes the spider as idle, cleanly
    assert not scheduler.has_pending_requests()
    assert scheduler.next_request() is None


def test_opening_with_the_internals_serves_requests(session: CrawlSession) -> None:
    scheduler = scheduler_for(session, engine_with_slot())
    scheduler.open(None)  # type: ignore[arg-type]
    assert session.start_refused is None
    request = scheduler.next_request()
    assert request is not None and request.url == A + "/robots.txt"


# ---------------------------------------------------------------------------- waking the engine
def test_a_due_wake_up_schedules_the_engines_next_call(session: CrawlSession) -> None:
    engine = engine_with_slot()
    scheduler = scheduler_for(session, engine)
    scheduler._fire()
    assert engine._slot.nextcall.scheduled == 1
    engine._slot = None  # the engine closed meanwhile: nothing to wake, no error
    scheduler._fire()


# ---------------------------------------------------------------------------- requests
def test_scrapys_follow_up_request_takes_no_place_and_goes_first(session: CrawlSession) -> None:
    scheduler = scheduler_for(session, engine_with_slot())
    first = scheduler.next_request()  # robots.txt of A: takes A's place
    assert first is not None
    original = fetch_meta(first.meta)
    assert original is not None and not original.released
    slot = session.politeness.slots[original.host_id]
    assert slot.in_flight == 1
    scheduler._left_downloader(first)  # the 301 to robots.txt left the downloader
    assert slot.in_flight == 0 and original.released
    # RedirectMiddleware copies meta shallowly: the follow-up shares the FetchMeta object
    follow_up = first.replace(url=A + "/moved/robots.txt", meta=dict(first.meta))
    original.released = False  # as if the signal had not come yet: the copy must not share it
    assert scheduler.enqueue_request(follow_up)
    copied = fetch_meta(follow_up.meta)
    assert copied is not None and copied.released and copied is not original
    assert not original.released
    assert session.has_pending()
    assert scheduler.next_request() is follow_up
    scheduler._left_downloader(follow_up)
    assert slot.in_flight == 0  # not freed a second time


def test_leaving_the_downloader_frees_the_place_once(session: CrawlSession) -> None:
    scheduler = scheduler_for(session, engine_with_slot())
    request = scheduler.next_request()
    assert request is not None
    meta = fetch_meta(request.meta)
    assert meta is not None
    slot = session.politeness.slots[meta.host_id]
    slot.in_flight += 1  # another request of the host is in flight too
    scheduler._left_downloader(request)
    scheduler._left_downloader(request)
    session.release(meta, None)  # and the spider's callback
    assert slot.in_flight == 1
    stranger = scrapy.Request(A + "/not-ours")  # no FetchMeta: frees nothing
    scheduler._left_downloader(stranger)
    assert slot.in_flight == 1
