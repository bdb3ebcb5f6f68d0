"""A three-host site for the shard tests, indexed whole and split into one index per host.

The site is stored, indexed and ranked as one crawl (``build_data_dir``, ``build_index``,
``run_rank``): one URL ID space.  :func:`split_by_host` then writes, for each host, a data
directory whose index holds exactly that host's live documents of the whole index (the
indexer's own ``merge_segments`` restricted to them: same field lengths, term frequencies,
positions and anchor text), as a crawler per host sharing one ID allocator would give.  Each
host's pages lean on their own words, so a word's df differs a lot between shards and a shard
scoring with its own statistics would rank differently from the whole index.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np

from testkit.corpus import build_data_dir
from websift.core.datadir import DataDir, fsync_dir
from websift.indexer.build import build_index, host_of
from websift.indexer.liveness import live_masks
from websift.indexer.manifest import (
    Manifest,
    SegmentEntry,
    describe_files,
    read_manifest,
    write_manifest,
)
from websift.indexer.merge import merge_segments
from websift.indexer.segment import SegmentReader
from websift.ranking.rank_job import run_rank

HOSTS = ("alpha.test", "beta.test", "gamma.test")
PAGES_PER_HOST = 14
SHARED = ["river", "stone", "market", "lantern", "harbor", "garden", "window", "winter",
          "bridge", "letter", "mirror", "orchard"]
OWN = {
    "alpha.test": ["falcon", "copper", "meadow", "quartz", "tunnel", "violet"],
    "beta.test": ["glacier", "saffron", "anchor", "basalt", "cedar", "pepper"],
    "gamma.test": ["nebula", "tundra", "walnut", "indigo", "canyon", "marble"],
}
# Words of each kind, the pairs across hosts, a phrase, OR, exclusion and site: filters.
QUERIES = [
    "river", "lantern", "falcon", "glacier", "nebula", "copper meadow", "saffron cedar",
    "walnut canyon", "river falcon", "stone glacier", "harbor nebula", "market bridge letter",
    '"river stone"', "falcon OR nebula", "garden -winter", "orchard site:beta.test",
    "mirror window", "quartz basalt marble", "winter", "anchor",
]
RAM = 16 << 20


def url(host: str, i: int) -> str:
    return f"http://{host}/p{i}.html"


def pages() -> dict[str, str]:
    """URL -> HTML: every page has shared words and its host's own, and links to a page of
    its host and of the next host (anchor text in another shard than the page)."""
    rnd = random.Random(14)
    out: dict[str, str] = {}
    for h, host in enumerate(HOSTS):
        nxt = HOSTS[(h + 1) % len(HOSTS)]
        for i in range(PAGES_PER_HOST):
            words = (rnd.choices(SHARED, k=rnd.randint(8, 40))
                     + rnd.choices(OWN[host], k=rnd.randint(2, 30))
                     + rnd.choices(OWN[nxt], k=rnd.randint(0, 2)))
            rnd.shuffle(words)
            title = " ".join(rnd.sample(SHARED + OWN[host], 3)).title()
            links = (f'<a href="{url(host, (i * 5 + 1) % PAGES_PER_HOST)}">'
                     f'{rnd.choice(OWN[host])} notes</a> '
                     f'<a href="{url(nxt, i)}">{rnd.choice(SHARED)} {rnd.choice(OWN[nxt])}</a>')
            out[url(host, i)] = (f"<html><head><title>{title}</title></head><body><main>"
                                 f"<h1>{title}</h1><p>{' '.join(words)}</p><p>{links}</p>"
                                 "</main></body></html>")
    return out


def make_site(root: Path) -> DataDir:
    """The whole site stored, indexed and ranked in ``root``."""
    data = build_data_dir(root, pages())
    build_index(data)
    run_rank(data)
    return data


def write_shard(whole: DataDir, root: Path, keep: Callable[[str], bool],
                generation: int = 1) -> DataDir:
    """Write generation ``generation`` of the index in ``root`` (a data directory, made if
    new): the live documents of ``whole``'s index whose URL ``keep`` accepts."""
    shard = DataDir.create(root)
    manifest = read_manifest(whole.index_dir)
    readers = [SegmentReader(whole.index_dir / s.name) for s in manifest.segments]
    masks = []
    for seg, live in zip(readers, live_masks(readers), strict=True):
        wanted = np.array([keep(seg.head(o)["url"]) for o in range(len(seg.doc_ids))],
                          dtype=bool)
        masks.append(live & wanted)
    shard.index_dir.mkdir(exist_ok=True)
    name = f"seg-{generation:06d}"
    tmp = shard.index_dir / f"tmp-{name}"
    meta = merge_segments(readers, masks, tmp, RAM)
    os.replace(tmp, shard.index_dir / name)
    fsync_dir(shard.index_dir)
    entry = SegmentEntry(name=name, doc_count=int(meta["doc_count"]),
                         files=describe_files(shard.index_dir / name))
    write_manifest(shard.index_dir, Manifest(generation=generation, last_seq=manifest.last_seq,
                                             segments=[entry],
                                             stats={"live_docs": int(meta["doc_count"])}))
    return shard


def split_by_host(whole: DataDir, root: Path) -> list[DataDir]:
    """One shard data directory per host, under ``root``."""
    return [write_shard(whole, root / host, lambda u, host=host: host_of(u) == host)
            for host in HOSTS]
