"""Benchmark: the by-URL join of ``rank --shard`` (ranking/url_join.py) against a dict keyed
by URL (the join it replaced), in the same run, as URLs grow.

    .venv/bin/python -m scripts.benchmarks.bench_url_join                     # 1e5 and 1e6 URLs
    .venv/bin/python -m scripts.benchmarks.bench_url_join --urls 100000 300000 --shards 4

Synthetic crawl of ``--shards`` stores: ``--urls`` distinct URLs on 1 host per 200 URLs, each
host owned by one shard; every shard also knows ``--shared`` (0.3) times its own URLs from other
shards (its pages' link targets), so about 1.3 rows per distinct URL.  Rows are generated on the
fly, store by store, in URL ID order (as ``StoreReader.urls`` streams them), so neither join
holds its input.  Per size and join:

- seconds: the join, less the time to generate the same rows (measured apart, "rows s");
- bytes/URL: the peak of what the join allocates (tracemalloc: Python objects and numpy arrays)
  over the distinct URLs, in a second, untimed run.

Both joins must give the same maps.  The last line is ``time_ratio=R memory_ratio=M`` (the
columnar join's over the dict's, at the largest size).
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from collections.abc import Callable, Iterator

import numpy as np

from websift.ranking.url_join import join_keys, store_keys

Rows = Callable[[int], Iterator[tuple[int, str]]]


def synthetic(urls: int, shards: int, shared: float, seed: int = 1) -> tuple[Rows, list[int]]:
    """A function giving shard s's (URL ID, URL) rows, and each shard's map length."""
    rng = np.random.default_rng(seed)
    owner = (np.arange(urls) // 200) % shards  # host h = url // 200, owned by shard h % shards
    plans = []
    for s in range(shards):
        own = np.flatnonzero(owner == s)
        others = np.flatnonzero(owner != s)
        extra = rng.choice(others, size=min(others.size, int(own.size * shared)), replace=False)
        order = rng.permutation(np.concatenate([own, extra]))  # the order the crawl met them
        plans.append(order)

    def rows(s: int) -> Iterator[tuple[int, str]]:
        for uid, u in enumerate(plans[s].tolist(), start=1):
            yield uid, f"https://host{u // 200}.example.org/section/{u % 7}/page-{u}.html"

    return rows, [p.size + 1 for p in plans]


def dict_join(rows: Rows, sizes: list[int]) -> tuple[list[np.ndarray], int]:
    ids: dict[str, int] = {}
    maps = []
    for s, size in enumerate(sizes):
        m = np.full(size, -1, dtype=np.int64)
        for uid, url in rows(s):
            m[uid] = ids.setdefault(url, len(ids))
        maps.append(m)
    return maps, len(ids)


def columnar_join(rows: Rows, sizes: list[int]) -> tuple[list[np.ndarray], int]:
    join = join_keys(store_keys(rows(s), size) for s, size in enumerate(sizes))
    return join.maps, join.n


def generate_only(rows: Rows, sizes: list[int]) -> tuple[list[np.ndarray], int]:
    for s in range(len(sizes)):
        for _ in rows(s):
            pass
    return [], 0


def timed(fn: Callable[[Rows, list[int]], tuple[list[np.ndarray], int]], rows: Rows,
          sizes: list[int]) -> tuple[float, tuple[list[np.ndarray], int]]:
    gc.collect()
    t = time.perf_counter()
    out = fn(rows, sizes)
    return time.perf_counter() - t, out


def peak_bytes(fn: Callable[[Rows, list[int]], tuple[list[np.ndarray], int]], rows: Rows,
               sizes: list[int]) -> int:
    gc.collect()
    tracemalloc.start()
    out = fn(rows, sizes)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del out
    return peak


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--urls", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--shared", type=float, default=0.3)
    args = ap.parse_args(argv)
    print(f"{'URLs':>10} {'rows':>10} {'rows s':>7} {'dict s':>7} {'cols s':>7} "
          f"{'dict us/URL':>11} {'cols us/URL':>11} {'dict B/URL':>10} {'cols B/URL':>10}")
    ratio_t = ratio_m = 0.0
    for n in args.urls:
        rows, sizes = synthetic(n, args.shards, args.shared)
        base, _ = timed(generate_only, rows, sizes)
        t_dict, (maps_d, n_d) = timed(dict_join, rows, sizes)
        t_cols, (maps_c, n_c) = timed(columnar_join, rows, sizes)
        assert n_d == n_c == n, (n_d, n_c, n)
        for a, b in zip(maps_d, maps_c, strict=True):
            np.testing.assert_array_equal(a, b)
        del maps_d, maps_c
        m_dict = peak_bytes(dict_join, rows, sizes)
        m_cols = peak_bytes(columnar_join, rows, sizes)
        d, c = max(t_dict - base, 1e-9), max(t_cols - base, 1e-9)
        print(f"{n:>10} {sum(sizes) - len(sizes):>10} {base:>7.2f} {d:>7.2f} {c:>7.2f} "
              f"{1e6 * d / n:>11.2f} {1e6 * c / n:>11.2f} {m_dict / n:>10.0f} "
              f"{m_cols / n:>10.0f}", flush=True)
        ratio_t, ratio_m = c / d, m_cols / m_dict
    print(f"time_ratio={ratio_t:.2f} memory_ratio={ratio_m:.2f}")


if __name__ == "__main__":
    main()
