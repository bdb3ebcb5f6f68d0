"""Build a data directory that looks like a crawl, without crawling: for indexer and API tests and
the index benchmarks.

``build_data_dir(path, pages)`` stores each page through the real crawl store and WARC writer
(``CrawlStore.add_url`` / ``record_fetched`` / ``WarcWriterFile.write_response``), with the
links lxml finds in its HTML (anchor text, ``rel=nofollow``) resolved with the crawler's own
canonicaliser; link targets that are not in ``pages`` stay ``discovered``.  Calling it again on
the same directory re-fetches the pages given (new seq, new links), as a recrawl would.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

import lxml.etree
import lxml.html

from websift.core.datadir import DataDir
from websift.crawler.errors import ScopeError
from websift.crawler.urls import canonicalize
from websift.indexer.build import build_index
from websift.indexer.manifest import (
    Manifest,
    SegmentEntry,
    describe_files,
    read_manifest,
    write_manifest,
)
from websift.indexer.searcher import Searcher
from websift.indexer.segment import SegmentReader
from websift.indexer.segment_writer import SegmentWriter
from websift.indexer.settings import DEFAULT_INDEX_SETTINGS, IndexSettings
from websift.store.crawl_store import CrawlStore, Link
from websift.store.warc import WarcWriterFile


def extract_links(html: bytes | str, base_url: str) -> list[tuple[str, str, bool]]:
    """(absolute URL, anchor text, nofollow) of every <a href> of a page."""
    raw = html.encode() if isinstance(html, str) else html
    if not raw.strip():
        return []
    try:
        root = lxml.html.document_fromstring(raw)
    except (lxml.etree.ParserError, ValueError):
        return []
    out = []
    for a in root.iter("a"):
        href = a.get("href")
        if not href or href.startswith(("mailto:", "javascript:", "#")):
            continue
        try:
            url = canonicalize(href, base_url)
        except ScopeError:
            continue
        text = " ".join(" ".join(a.itertext()).split())
        nofollow = "nofollow" in (a.get("rel") or "").lower().split()
        out.append((url, text, nofollow))
    return out


def page(title: str, body: str, links: str = "") -> str:
    """A plain HTML page: ``title``, one paragraph of ``body``, then ``links`` (HTML)."""
    return f"<html><head><title>{title}</title></head><body><p>{body}</p>{links}</body></html>"


def build_data_dir(
    path: Path | str,
    pages: Mapping[str, str | bytes],
    *,
    links: Iterable[tuple[str, str, str]] = (),
    content_types: Mapping[str, str] | None = None,
    noindex: Iterable[str] = (),
    duplicates: Mapping[str, str] | None = None,
    status: Mapping[str, str] | None = None,
    redirects: Mapping[str, str] | None = None,
) -> DataDir:
    """Store ``pages`` (URL -> HTML) as fetched, with their links; returns the data directory.

    ``links``: extra (source URL, target URL, anchor) links added to their source's out-links.
    ``content_types``: per URL (default ``text/html; charset=utf-8``).  ``noindex``: URLs
    stored with the noindex mark.  ``duplicates``: URL -> the URL it duplicates.  ``status``:
    URLs (not in ``pages``) to give another status, e.g. ``out_of_scope``.  ``redirects``:
    URL -> the URL it redirects to (stored as status ``redirect``).
    """
    data = DataDir.create(path)
    content_types = content_types or {}
    duplicates = duplicates or {}
    noindex = set(noindex)
    extra: dict[str, list[tuple[str, str, bool]]] = {}
    for src, dst, anchor in links:
        extra.setdefault(src, []).append((dst, anchor, False))
    writer = WarcWriterFile(data.warc_dir)
    # every record written and synced once before the store commits rows that point into them
    # (one fsync per call, not per page: the fsyncs were most of a large fixture's time)
    bodies = {url: html.encode() if isinstance(html, str) else html for url, html in pages.items()}
    types = {url: content_types.get(url, "text/html; charset=utf-8") for url in pages}
    locs = {url: writer.write_response(url, 200, "OK", [("Content-Type", types[url])], body)
            for url, body in bodies.items()}
    writer.sync()
    with CrawlStore.open(data.store_path) as store:
        with store.transaction():
            for url in pages:
                store.add_url(url)
        for url, body in bodies.items():
            ctype, loc = types[url], locs[url]
            found = extract_links(body, url) if "html" in ctype else []
            found += extra.get(url, [])
            with store.transaction():
                out = []
                for dst, anchor, nofollow in found:
                    dst_id, _ = store.add_url(dst)
                    out.append(Link(dst_id, anchor, nofollow))
                dup = duplicates.get(url)
                store.record_fetched(
                    store.add_url(url)[0], http_status=200, content_type=ctype,
                    warc=(loc.file, loc.offset, loc.length),
                    content_hash=hashlib.sha1(body).hexdigest(), links=out,
                    duplicate_of=store.add_url(dup)[0] if dup else None,
                    noindex=url in noindex)
        with store.transaction():
            for url, st in (status or {}).items():
                uid, _ = store.add_url(url)
                store.update_page(uid, status=st)
            for url, target in (redirects or {}).items():
                uid, _ = store.add_url(url)
                store.update_page(uid, status="redirect", redirect_to=store.add_url(target)[0])
    writer.close()
    return data


def ingest_files(root: Path, base_url: str, path: Path | str, *, exclude: Iterable[str] = (),
                 limit: int | None = None) -> DataDir:
    """Store every ``*.html`` file under ``root`` as if fetched at ``base_url`` + its path."""
    skip = tuple(exclude)
    pages: dict[str, bytes] = {}
    for f in sorted(root.rglob("*.html")):
        rel = f.relative_to(root).as_posix()
        if rel.startswith(skip) or not f.is_file():
            continue
        pages[canonicalize(base_url.rstrip("/") + "/" + rel)] = f.read_bytes()
        if limit is not None and len(pages) >= limit:
            break
    return build_data_dir(path, pages)


def make_index(root: Path, docs: list[tuple[str, str]],
               settings: IndexSettings = DEFAULT_INDEX_SETTINGS) -> DataDir:
    """A data directory whose index is one segment of ``docs`` (title, body), URL IDs from 1,
    written straight through SegmentWriter (no crawl store) with ``settings``."""
    data = DataDir.create(root)
    seg = data.index_dir / "seg-000001"
    writer = SegmentWriter(seg, ram_bytes=1 << 20, settings=settings)
    for i, (title, body) in enumerate(docs):
        writer.add_document(i + 1, host="h.example", url=f"http://h.example/{i + 1}",
                            title=title, text=body, fields=[title, "", body, "", []])
    writer.finish()
    write_manifest(data.index_dir, Manifest(generation=1, last_seq=0, segments=[
        SegmentEntry("seg-000001", len(docs), describe_files(seg))]))
    return data


def indexed_copy(site: Path, dest: Path, settings: IndexSettings = DEFAULT_INDEX_SETTINGS
                 ) -> Searcher:
    """A copy of ``site``'s crawl (no index) at ``dest``, indexed in one process with
    ``settings``."""
    shutil.copytree(site, dest, ignore=shutil.ignore_patterns("index", "*.lock"))
    data = DataDir.open(dest)
    build_index(data, procs=1, settings=settings)
    return Searcher.open(data)


def field_lengths(data: DataDir) -> dict[str, list[int]]:
    """URL -> its field lengths (BM25F's normalisation), over the index's segments."""
    out: dict[str, list[int]] = {}
    for entry in read_manifest(data.index_dir).segments:
        seg = SegmentReader(data.index_dir / entry.name)
        for k, url in enumerate(seg.urls()):
            out[url] = seg.field_lens[k].tolist()
    return out
