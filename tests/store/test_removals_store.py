"""The removals table: what a rule covers, the upgrade that adds the table, undo's re-index."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from websift.core.errors import StoreError
from websift.store.crawl_store import CrawlStore
from websift.store.removals import Removal, RemovalRules
from websift.store.schema import SCHEMA_VERSION
from websift.store.views import StoreReader


def _rule(rid: int, kind: str, value: str, active: bool = True) -> Removal:
    return Removal(rid, kind, value, "cli", 0.0, "", active)


def test_what_each_kind_of_rule_covers() -> None:
    rules = RemovalRules([_rule(1, "url", "http://a.example/x"),
                          _rule(2, "host", "b.example"),
                          _rule(3, "pattern", r"/private/\d+$"),
                          _rule(4, "host", "c.example", active=False)])
    assert rules.key == (1, 2, 3)
    covered = ["http://a.example/x", "http://b.example/", "https://b.example:8443/y",
               "http://www.b.example/z", "http://d.example/private/12"]
    kept = ["http://a.example/x/", "http://notb.example/", "http://b.example.org/",
            "http://c.example/", "http://d.example/private/12/more"]
    assert [rules.matches(u) for u in covered] == [True] * len(covered)
    assert [rules.matches(u) for u in kept] == [False] * len(kept)
    assert not RemovalRules() and not RemovalRules().matches("http://b.example/")


def test_a_version_2_store_has_no_removals_until_a_writer_upgrades_it(tmp_path: Path) -> None:
    path = tmp_path / "crawl.sqlite3"
    CrawlStore.open(path).close()
    conn = sqlite3.connect(path)
    conn.executescript("DROP TABLE removals; UPDATE meta SET value='2' "
                       "WHERE key='schema_version';")
    conn.close()
    with StoreReader.open(path) as reader:
        assert reader.schema_version == 2
        assert reader.removals() == [] and not reader.removal_rules()
    with CrawlStore.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        made = store.add_removal("host", "a.example", "cli", "why")
        assert (made.id, made.active, made.reason) == (1, True, "why")


def test_undo_queues_the_pages_it_covered_for_indexing(tmp_path: Path) -> None:
    with CrawlStore.open(tmp_path / "crawl.sqlite3") as store:
        with store.transaction():
            ids = [store.add_url(u)[0] for u in ("http://a.example/1", "http://www.a.example/2",
                                                  "http://b.example/3")]
        rule = store.add_removal("host", "a.example", "cli")
        assert [r.value for r in store.removals(active_only=True)] == ["a.example"]
        seq = int(store.get_meta("seq") or 0)
        undone, count = store.undo_removal(rule.id, "api:admin")
        assert (undone.active, undone.undone_by, count) == (False, "api:admin", 2)
        assert [store.page(i).seq for i in ids] == [seq + 1, seq + 1, 0]  # type: ignore[union-attr]
        assert store.removals(active_only=True) == [] and len(store.removals()) == 1
        with pytest.raises(StoreError, match="already undone"):
            store.undo_removal(rule.id, "cli")
