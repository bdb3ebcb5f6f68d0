"""api/schedule_cache.py: the refresh schedule read at most once per window, on a driven clock."""

from __future__ import annotations

from websift.api.page_info import schedule_position
from websift.api.schedule_cache import ScheduleCache
from websift.core.datadir import DataDir
from websift.crawler.recrawl import recrawl_schedule
from websift.store.views import StoreReader


def test_one_reading_per_window_and_positions_as_the_schedule_says(site_data: DataDir) -> None:
    now = [100.0]
    cache = ScheduleCache(entries=3, max_age_s=5.0, clock=lambda: now[0])
    with StoreReader.open(site_data.store_path) as store:
        expected = recrawl_schedule(store, 3)
        first = cache.get(store)
        assert first.items == expected
        now[0] += 4.9
        assert cache.get(store) is first and cache.readings == 1
        now[0] += 0.1
        assert cache.get(store) is not first and cache.readings == 2
        top = expected[0]
        assert schedule_position(first, top.url_id) == {
            "position": 1, "priority": top.priority,
            "meaning": "refetched as number 1 by the next 'websift recrawl'"}
        beyond = recrawl_schedule(store, 4)[3].url_id
        assert schedule_position(first, beyond) == {
            "position": None, "priority": None,
            "meaning": "not among the first 3 pages of the refresh schedule"}


def test_max_age_zero_reads_for_every_request(site_data: DataDir) -> None:
    cache = ScheduleCache(entries=2, max_age_s=0.0)
    with StoreReader.open(site_data.store_path) as store:
        cache.get(store)
        cache.get(store)
    assert cache.readings == 2
