"""Peer engines for the benchmarks, built on the same pages: Whoosh BM25F and tantivy BM25.

Both index title + body text (lxml, the whole <body>), as the figures in
shared/eval/README.md were measured; Whoosh with its StemmingAnalyzer, tantivy with ``en_stem``.
Queries are passed as given: Whoosh's parser with OR grouping over title and body, tantivy's
lenient parser (a disjunction by default).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import lxml.etree
import lxml.html

from websift.core.datadir import DataDir
from websift.indexer.build import is_html
from websift.store.schema import FETCHED
from websift.store.views import StoreReader
from websift.store.warc import WarcLocation, read_response


@dataclass
class PeerDoc:
    url: str
    title: str
    body: str


def peer_text(body: bytes) -> tuple[str, str]:
    """(title, body text) of a page with lxml: the peers' input."""
    try:
        root = lxml.html.document_fromstring(body)
    except (lxml.etree.ParserError, ValueError):
        return "", ""
    for el in list(root.iter("script", "style")):
        el.drop_tree()
    t = root.find(".//title")
    title = " ".join(t.itertext()).strip() if t is not None else ""
    b = root.find(".//body")
    text = " ".join((b if b is not None else root).itertext())
    return title, " ".join(text.split())


def stored_pages(data: DataDir) -> Iterator[PeerDoc]:
    """The fetched, indexable HTML pages of a crawl store, as the peers see them."""
    with StoreReader.open(data.store_path) as store:
        for page in store.pages(FETCHED):
            if page.noindex or page.duplicate_of is not None or page.warc_file is None \
                    or not is_html(page.content_type):
                continue
            resp = read_response(data.warc_dir, WarcLocation(
                str(page.warc_file), int(page.warc_offset or 0), int(page.warc_length or 0)))
            title, body = peer_text(resp.body)
            yield PeerDoc(page.url, title, body)


class WhooshPeer:
    def __init__(self, docs: list[PeerDoc]) -> None:
        from whoosh import index
        from whoosh.analysis import StemmingAnalyzer
        from whoosh.fields import ID, TEXT, Schema

        self.dir = Path(tempfile.mkdtemp(prefix="whoosh-"))
        schema = Schema(url=ID(stored=True), title=TEXT(analyzer=StemmingAnalyzer()),
                        body=TEXT(analyzer=StemmingAnalyzer()))
        self.ix = index.create_in(str(self.dir), schema)
        w = self.ix.writer()
        for d in docs:
            w.add_document(url=d.url, title=d.title, body=d.body)
        w.commit()
        self.searcher = self.ix.searcher()
        from whoosh.qparser import MultifieldParser, OrGroup

        self.parser = MultifieldParser(["title", "body"], schema, group=OrGroup)

    def search(self, q: str, k: int = 10) -> list[str]:
        return [h["url"] for h in self.searcher.search(self.parser.parse(q), limit=k)]

    def close(self) -> None:
        self.searcher.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class TantivyPeer:
    def __init__(self, docs: list[PeerDoc], tokenizer: str = "en_stem") -> None:
        """``tokenizer``: tantivy's ``en_stem``, or ``default`` (no stemming, for any
        language)."""
        import tantivy

        sb = tantivy.SchemaBuilder()
        sb.add_text_field("url", stored=True, tokenizer_name="raw")
        sb.add_text_field("title", stored=False, tokenizer_name=tokenizer)
        sb.add_text_field("body", stored=False, tokenizer_name=tokenizer)
        self.dir = Path(tempfile.mkdtemp(prefix="tantivy-"))
        self.index = tantivy.Index(sb.build(), path=str(self.dir))
        w = self.index.writer()
        for d in docs:
            w.add_document(tantivy.Document(url=d.url, title=d.title, body=d.body))
        w.commit()
        w.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()

    def search(self, q: str, k: int = 10) -> list[str]:
        query, _errors = self.index.parse_query_lenient(q, ["title", "body"])
        hits = self.searcher.search(query, k).hits
        return [self.searcher.doc(addr)["url"][0] for _score, addr in hits]

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
