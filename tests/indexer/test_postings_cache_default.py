"""The postings cache's default bound follows the memory the process may use (an eighth of it,
at least 1 GiB); $WEBSIFT_POSTINGS_CACHE_MB sets it outright."""

from __future__ import annotations

import os
import subprocess
import sys

from websift.indexer.settings import (
    POSTINGS_CACHE_MIN_BYTES,
    default_postings_cache_bytes,
    memory_bytes,
)

GiB = 1 << 30


def test_an_eighth_of_the_memory_and_never_below_a_gibibyte() -> None:
    assert default_postings_cache_bytes(24 * GiB) == 3 * GiB
    assert default_postings_cache_bytes(64 * GiB) == 8 * GiB
    assert default_postings_cache_bytes(4 * GiB) == POSTINGS_CACHE_MIN_BYTES == GiB
    assert default_postings_cache_bytes(None) == GiB  # the OS does not say


def test_the_memory_is_the_machines_or_its_cgroups_limit() -> None:
    memory = memory_bytes()
    assert memory is not None
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert 0 < memory <= physical


def bound_in_child(env: dict[str, str]) -> int:
    out = subprocess.run(
        [sys.executable, "-c",
         "from websift.indexer.postings import PostingStore; "
         "from websift.indexer.settings import POSTINGS_CACHE_BYTES; print(POSTINGS_CACHE_BYTES)"],
        env=env, capture_output=True, text=True, check=True)
    return int(out.stdout)


def test_the_environment_sets_the_bound_outright() -> None:
    base = {k: v for k, v in os.environ.items() if k != "WEBSIFT_POSTINGS_CACHE_MB"}
    assert bound_in_child({**base, "WEBSIFT_POSTINGS_CACHE_MB": "64"}) == 64 << 20
    assert bound_in_child(base) == default_postings_cache_bytes(memory_bytes())
