"""`websift import`: WARC files other tools wrote become fetched pages, indexable and rankable.

Two sources.  Debian's ``wget --warc-file -r`` mirrors a small loopback site (testkit/testweb.py)
once for the module: its WARC is imported, indexed, searched and ranked, and damaged copies of
it (cut in the middle of a record, a gzip member broken) import what is whole and count the
rest.  A Common-Crawl-style file written here with warcio holds what wget never writes: revisit
records, chunked and gzip-encoded payloads, a payload the writer truncated, a block whose digest
does not match, captures of one URL at different dates.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from testkit.testweb import Answer, Site, TestWeb, html, words
from testkit.waiting import wait_for
from websift.core.datadir import DataDir
from websift.core.lock import store_writer_lock
from websift.crawler import settings as S
from websift.crawler import warc_import
from websift.crawler.warc_import import MAX_BLOCK, import_warcs
from websift.crawler.warc_reader import Damage, NotAWarcFile, WarcReader, WarcRecord
from websift.store.schema import META_VIRTUAL, Page
from websift.store.table_rows import table_rows
from websift.store.views import StoreReader
from websift.store.warc import WarcLocation, read_response

WGET = shutil.which("wget")
REPO = Path(__file__).resolve().parents[2]
SITE_ROBOTS = "User-agent: *\nDisallow: /private/\n"


# ---------------------------------------------------------------------- the wget source
def _wget_supports_warc() -> bool:
    if WGET is None:
        return False
    done = subprocess.run([WGET, "--help"], capture_output=True, text=True, check=False)
    return "--warc-file" in done.stdout


_WGET_MISSING = pytest.mark.skipif(not _wget_supports_warc(), reason="no wget with WARC support")


def needs_wget(test: Callable[..., None]) -> Callable[..., None]:
    """The ``wget`` marker (``pytest -m "not wget"``), ``slow`` (the module's mirror runs wget and
    ``websift import``), and a skip where wget cannot write WARC."""
    return pytest.mark.slow(pytest.mark.wget(_WGET_MISSING(test)))


def _fill(site: Site) -> None:
    site.page("/", html("Home of the mirror", f"<p>{words(201)} zeppelin</p>"
                        "<a href='/a'>Alpha page</a> <a href='/b'>the b page</a> "
                        "<a href='/r'>moved</a> <a href='/missing'>missing</a> "
                        "<a href='/private/x'>private</a> <a href='/doc.pdf'>a pdf</a> "
                        "<a href='/gz'>compressed</a> <a href='/huge'>huge</a>"))
    site.page("/a", html("Alpha", f"<p>{words(202)} quixotic</p><a href='/'>home</a>"))
    site.page("/b", html("Bravo", f"<p>{words(203)}</p><a href='/a'>back to alpha</a>"))
    site.page("/r", Answer(301, b"", {"Location": "/b"}))
    site.page("/doc.pdf", Answer(body=b"%PDF-1.4\n" + bytes(range(256)) * 8,
                                 content_type="application/pdf"))
    site.page("/gz", Answer(body=gzip.compress(html("Gee zed", "<p>wombat marmalade</p>")),
                            headers={"Content-Encoding": "gzip"}))
    # longer than any block the import reads whole: passed over, only its headers kept
    site.page("/huge", Answer(body=b"<html><body>" + b"x" * (MAX_BLOCK + 4096)
                              + b"</body></html>"))
    site.page("/private/x", html("private", "<p>wget obeys robots.txt</p>"))


@dataclass
class Mirror:
    site: Site
    warc: Path

    def url(self, path: str) -> str:
        return self.site.url(path)


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mirror]:
    """The site, and the WARC file wget wrote of it (gzip, one member per record)."""
    web = TestWeb()
    site = web.add_site("mirror", "127.0.0.41", SITE_ROBOTS)
    _fill(site)
    where = tmp_path_factory.mktemp("wget")
    with web:
        if not _wget_supports_warc():
            pytest.skip("no wget with WARC support")
        assert WGET is not None
        done = subprocess.run(
            [WGET, "-r", "-l", "3", "--tries=1", "--timeout=20", "-q",
             f"--warc-file={where / 'site'}", "-P", str(where / "files"), site.url("/")],
            cwd=where, capture_output=True, text=True, timeout=120, check=False,
        )
        # 8: "server issued an error response" (the 404 on purpose); anything else is wrong
        assert done.returncode in (0, 8), done.stderr
        yield Mirror(site, where / "site.warc.gz")


def _records(path: Path) -> list[tuple[str, str, int, int]]:
    """(type, target URI, offset, length) of every record, as warcio reads the file."""
    out = []
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        for record in it:
            uri = (record.rec_headers.get_header("WARC-Target-URI") or "").strip("<>")
            rtype = record.rec_headers.get_header("WARC-Type")
            record.content_stream().read()
            out.append((rtype, uri, it.get_record_offset(), it.get_record_length()))
    return out


def _summary(data: Path) -> dict[str, Any]:
    with StoreReader.open(DataDir.open(data).store_path) as store:
        last = store.last_crawl()
    assert last is not None and last[0] == "import" and last[3] is not None
    summary: dict[str, Any] = json.loads(last[3])
    return summary


def _page(data: Path, url: str) -> Page:
    with StoreReader.open(DataDir.open(data).store_path) as store:
        page = store.page_by_url(url)
    assert page is not None, f"{url} is not in the store"
    return page


@pytest.fixture(scope="module")
def imported(
    mirror: Mirror, run_websift: Callable[..., subprocess.CompletedProcess[str]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    data = tmp_path_factory.mktemp("import") / "data"
    done = run_websift("import", "--data", str(data), str(mirror.warc))
    assert done.returncode == 0, done.stderr
    assert "websift import: finished" in done.stdout
    return data


# ---------------------------------------------------------------------- wget: what is stored
@needs_wget
def test_wget_responses_become_pages_as_a_crawl_records_them(
    mirror: Mirror, imported: Path
) -> None:
    home = _page(imported, mirror.url("/"))
    assert (home.status, home.http_status, home.content_type) == ("fetched", 200, "text/html")
    assert _page(imported, mirror.url("/a")).status == "fetched"
    pdf = _page(imported, mirror.url("/doc.pdf"))
    assert (pdf.status, pdf.content_type) == ("fetched", "application/pdf")
    moved = _page(imported, mirror.url("/r"))
    assert (moved.status, moved.http_status) == ("redirect", 301)
    assert moved.redirect_to == _page(imported, mirror.url("/b")).id
    missing = _page(imported, mirror.url("/missing"))
    assert (missing.status, missing.http_status, missing.error) == ("error", 404, "http_404")
    huge = _page(imported, mirror.url("/huge"))  # over the crawler's DOWNLOAD_MAXSIZE
    assert (huge.status, huge.error, huge.warc_file) == ("error", "too_large", None)
    # wget obeyed robots.txt: the page is known from its link only, and is the frontier a
    # later crawl continues from (in OPIC, never fetched)
    private = _page(imported, mirror.url("/private/x"))
    assert (private.status, private.fetch_count) == ("discovered", 0)
    assert private.g_last is not None
    with StoreReader.open(DataDir.open(imported).store_path) as store:
        assert store.page_by_url(mirror.url("/robots.txt")) is None


@needs_wget
def test_links_keep_their_anchor_text(mirror: Mirror, imported: Path) -> None:
    home, alpha, bravo = (_page(imported, mirror.url(p)) for p in ("/", "/a", "/b"))
    with StoreReader.open(DataDir.open(imported).store_path) as store:
        into_alpha = store.in_links(alpha.id)
    assert (home.id, "Alpha page", False) in into_alpha
    assert (bravo.id, "back to alpha", False) in into_alpha


@needs_wget
def test_bodies_are_copied_decoded_and_digest_checked(mirror: Mirror, imported: Path) -> None:
    data = DataDir.open(imported)
    page = _page(imported, mirror.url("/gz"))
    assert page.warc_file is not None and page.warc_file.startswith("import-")
    assert page.warc_offset is not None and page.warc_length is not None
    record = read_response(data.warc_dir, WarcLocation(page.warc_file, page.warc_offset,
                                                       page.warc_length))
    assert b"wombat marmalade" in record.body  # stored decoded, as the crawler stores bodies
    assert record.header("Content-Encoding") is None


@needs_wget
def test_the_run_is_summarised_by_record_type_and_skip_reason(
    mirror: Mirror, imported: Path
) -> None:
    records = _records(mirror.warc)
    summary = _summary(imported)
    counts = summary["counts"]
    responses = sum(1 for r in records if r[0] == "response")
    assert counts["records/response"] == responses
    assert counts["records/request"] == counts["skipped/request"] == sum(
        1 for r in records if r[0] == "request")
    assert counts["skipped/warcinfo"] == 1
    assert counts["skipped/robots_txt"] == 1
    assert summary["records"] == len(records)
    assert summary["pages"] == responses - 1  # every response but robots.txt
    assert counts["links/stored"] > 0
    assert not any(k.startswith("skipped/") and k.removeprefix("skipped/") in
                   ("truncated", "corrupt_gzip", "malformed_record", "digest_mismatch")
                   for k in counts)


@pytest.mark.slow
@needs_wget
def test_index_search_and_rank_work_on_imported_pages(
    mirror: Mirror, imported: Path, run_websift: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    done = run_websift("index", "--data", str(imported), "--procs", "1", "--quiet")
    assert done.returncode == 0, done.stderr
    found = run_websift("search", "--data", str(imported), "--json", "quixotic")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["results"]
    assert [h["url"] for h in hits] == [mirror.url("/a")]
    # "back" is only in the anchor text of /b's link to /a
    by_anchor = run_websift("search", "--data", str(imported), "--json", "back")
    assert mirror.url("/a") in [h["url"] for h in json.loads(by_anchor.stdout)["results"]]
    ranked = run_websift("rank", "--data", str(imported))
    assert ranked.returncode == 0, ranked.stderr


# ---------------------------------------------------------------------- wget: damaged copies
@needs_wget
def test_a_copy_cut_inside_a_record_imports_what_is_whole(
    mirror: Mirror, tmp_path: Path, run_websift: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    records = _records(mirror.warc)
    cut_at = next(i for i, r in enumerate(records)
                  if r[0] == "response" and r[1] == mirror.url("/b"))
    _, _, offset, length = records[cut_at]
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(mirror.warc.read_bytes()[: offset + length // 2])
    data = tmp_path / "data"
    done = run_websift("import", "--data", str(data), "--quiet", str(cut))
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "websift import: damaged records skipped: truncated 1"
    summary = _summary(data)
    assert summary["counts"]["skipped/truncated"] == 1
    before = [r for r in records[:cut_at] if r[0] == "response" and not r[1].endswith(".txt")]
    assert summary["pages"] == len(before)
    for _, uri, _, _ in before:
        assert _page(data, uri).status != "discovered"
    assert _page(data, mirror.url("/b")).status == "discovered"  # linked, never whole


@needs_wget
def test_a_broken_gzip_member_is_skipped_and_the_import_goes_on(
    mirror: Mirror, tmp_path: Path
) -> None:
    records = _records(mirror.warc)
    broken = next(i for i, r in enumerate(records)
                  if r[0] == "response" and r[1] == mirror.url("/a"))
    raw = bytearray(mirror.warc.read_bytes())
    offset = records[broken][2]
    assert raw[offset : offset + 3] == b"\x1f\x8b\x08"
    raw[offset + 3] = 0xE0  # reserved gzip header flags: zlib refuses the member outright
    damaged = tmp_path / "damaged.warc.gz"
    damaged.write_bytes(bytes(raw))
    summary = import_warcs(tmp_path / "data", [damaged])
    counts = summary["counts"]
    assert counts["skipped/corrupt_gzip"] == 1
    responses = [r for r in records if r[0] == "response" and not r[1].endswith(".txt")]
    assert summary["pages"] == len(responses) - 1
    assert _page(tmp_path / "data", mirror.url("/a")).status == "discovered"
    after = [r for r in records[broken + 1 :] if r[0] == "response"]
    assert after and all(_page(tmp_path / "data", r[1]).status != "discovered" for r in after
                         if not r[1].endswith(".txt"))


@pytest.mark.slow
def test_a_file_that_is_not_a_warc_exits_2_with_one_line(
    tmp_path: Path, run_websift: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    page = tmp_path / "page.html"
    page.write_text("<html><body>not an archive</body></html>")
    zipped = tmp_path / "notes.warc.gz"
    zipped.write_bytes(gzip.compress(b"just some notes\n"))
    for path in (page, zipped):
        data = tmp_path / f"data-{path.stem}"
        done = run_websift("import", "--data", str(data), str(path))
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith(f"websift import: error: {path} is not a WARC file")
        assert not data.exists()  # refused before the data directory is made
    with pytest.raises(NotAWarcFile, match="is empty"):
        (tmp_path / "empty.warc").write_bytes(b"")
        import_warcs(tmp_path / "data", [tmp_path / "empty.warc"])


# ---------------------------------------------------------------------- Common-Crawl-style
CC_HOST = "http://cc.example.org"
NEWER, OLDER = "2024-05-06T07:08:09Z", "2023-01-02T03:04:05Z"


def _record_bytes(build: Callable[[WARCWriter], Any]) -> bytes:
    """One record, uncompressed, as warcio writes it."""
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=False)
    writer.write_record(build(writer))
    return buf.getvalue()


def _response(url: str, body: bytes, date: str, *, status: str = "200 OK",
              headers: list[tuple[str, str]] | None = None,
              warc_headers: dict[str, str] | None = None) -> bytes:
    http = StatusAndHeaders(status, headers or [("Content-Type", "text/html; charset=utf-8")],
                            protocol="HTTP/1.1")
    return _record_bytes(lambda w: w.create_warc_record(
        url, "response", payload=io.BytesIO(body), http_headers=http,
        warc_headers_dict={"WARC-Date": date, **(warc_headers or {})}))


def _chunked(data: bytes, size: int = 40) -> bytes:
    parts = [b"%x\r\n%s\r\n" % (len(data[i : i + size]), data[i : i + size])
             for i in range(0, len(data), size)]
    return b"".join(parts) + b"0\r\n\r\n"


def _cc_records() -> list[bytes]:
    page1 = html("Page one", f"<p>{words(301)} ocelot</p><a href='/page2'>the second page</a>"
                 "<a href='http://elsewhere.example.net/x'>elsewhere</a>")
    page2_old = html("Page two", f"<p>{words(302)} first edition</p>")
    page2_new = html("Page two", f"<p>{words(303)} second edition pangolin</p>")
    request = StatusAndHeaders("GET /page1 HTTP/1.1", [("Host", "cc.example.org")],
                               is_http_request=True)
    tampered = bytearray(_response(f"{CC_HOST}/tampered", html("t", "<p>tampered</p>"), NEWER))
    tampered[tampered.rindex(b"tampered")] ^= 0x20  # same length, another byte: digest fails
    return [
        _record_bytes(lambda w: w.create_warcinfo_record("cc.warc.gz", {"software": "test"})),
        _record_bytes(lambda w: w.create_warc_record(
            f"{CC_HOST}/page1", "request", payload=io.BytesIO(b""), http_headers=request,
            warc_headers_dict={"WARC-Date": NEWER})),
        _response(f"{CC_HOST}/page1", page1, NEWER),
        _record_bytes(lambda w: w.create_warc_record(
            f"{CC_HOST}/page1", "metadata", payload=io.BytesIO(b'{"fetchTimeMs": 12}'),
            warc_content_type="application/json", warc_headers_dict={"WARC-Date": NEWER})),
        _response(f"{CC_HOST}/page2", _chunked(gzip.compress(page2_old)), OLDER,
                  headers=[("Content-Type", "text/html"), ("Content-Encoding", "gzip"),
                           ("Transfer-Encoding", "chunked")]),
        _record_bytes(lambda w: w.create_revisit_record(
            f"{CC_HOST}/page1", digest="sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            refers_to_uri=f"{CC_HOST}/page1", refers_to_date=NEWER,
            http_headers=StatusAndHeaders("200 OK", [("Content-Type", "text/html")],
                                          protocol="HTTP/1.1"))),
        _response(f"{CC_HOST}/page2", page2_new, NEWER),
        _response(f"{CC_HOST}/page1", html("Page one", "<p>an older capture</p>"), OLDER),
        _response(f"{CC_HOST}/big", b"<html>" + b"y" * 1000, NEWER,
                  warc_headers={"WARC-Truncated": "length"}),
        _response(f"{CC_HOST}/down", b"busy", NEWER, status="503 Service Unavailable"),
        # a small record whose body inflates past the crawler's size cap
        _response(f"{CC_HOST}/bomb", gzip.compress(bytes(S.DOWNLOAD_MAXSIZE + 1)), NEWER,
                  headers=[("Content-Type", "text/html"), ("Content-Encoding", "gzip")]),
        _response("dns:cc.example.org", b"cc.example.org. 300 IN A 192.0.2.1", NEWER,
                  headers=[("Content-Type", "text/dns")]),
        bytes(tampered),
    ]


def _write_cc(path: Path, records: list[bytes], compress: bool = True) -> Path:
    path.write_bytes(b"".join(gzip.compress(r) if compress else r for r in records))
    return path


def _cash_total(data: Path) -> float:
    with StoreReader.open(DataDir.open(data).store_path) as store:
        cash = sum(p.cash for p in store.pages())
        return cash + float(store.get_meta(META_VIRTUAL) or 0)


def test_a_common_crawl_style_file(tmp_path: Path) -> None:
    source = _write_cc(tmp_path / "cc.warc.gz", _cc_records())
    data = tmp_path / "data"
    summary = import_warcs(data, [source])
    counts = summary["counts"]
    assert counts["skipped/revisit"] == 1
    assert counts["skipped/request"] == 1
    assert counts["skipped/metadata"] == 1
    assert counts["skipped/warcinfo"] == 1
    assert counts["skipped/older_than_stored"] == 1  # the 2023 capture of page1
    assert counts["skipped/not_http_url"] == 1  # dns:
    assert counts["skipped/digest_mismatch"] == 1
    assert summary["pages"] == 6  # page1, page2 twice, big, down, bomb

    page1 = _page(data, f"{CC_HOST}/page1")
    assert (page1.status, page1.fetch_count) == ("fetched", 1)
    page2 = _page(data, f"{CC_HOST}/page2")
    assert (page2.status, page2.fetch_count, page2.change_count) == ("fetched", 2, 1)
    body = read_response(DataDir.open(data).warc_dir, WarcLocation(
        page2.warc_file or "", page2.warc_offset or 0, page2.warc_length or 0)).body
    assert b"pangolin" in body  # the newer capture, dechunked and gunzipped
    for path in ("/big", "/bomb"):
        page = _page(data, f"{CC_HOST}{path}")
        assert (page.status, page.error) == ("error", "too_large")
    down = _page(data, f"{CC_HOST}/down")
    assert (down.status, down.error, down.http_status) == ("error", "http_503", 503)
    with StoreReader.open(DataDir.open(data).store_path) as store:
        assert store.page_by_url(f"{CC_HOST}/tampered") is None
        assert (page1.id, "the second page", False) in store.in_links(page2.id)
    # a link to a host the import holds no response from is stored, but not frontier
    elsewhere = _page(data, "http://elsewhere.example.net/x")
    assert (elsewhere.status, elsewhere.error) == ("out_of_scope", "domain")
    assert _cash_total(data) == pytest.approx(1.0, abs=1e-12)  # OPIC Lemma 2.2


def test_importing_again_stores_nothing_new(tmp_path: Path) -> None:
    source = _write_cc(tmp_path / "cc.warc.gz", _cc_records())
    data = tmp_path / "data"
    import_warcs(data, [source])
    with StoreReader.open(DataDir.open(data).store_path) as store:
        seq = store.max_seq()
    again = import_warcs(data, [source])
    with StoreReader.open(DataDir.open(data).store_path) as store:
        assert store.max_seq() == seq  # identical captures: nothing to re-index
    assert again["counts"]["outcome/unchanged"] == 2  # page1, page2 (newest capture)
    assert again["counts"]["skipped/older_than_stored"] == 2  # page1 and page2 from 2023
    assert "outcome/fetched" not in again["counts"]
    # nothing written: the second run never opened a WARC file of its own
    assert len(list((DataDir.open(data).warc_dir).glob("import-*.warc.gz"))) == 1
    assert _cash_total(data) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("shape", ["uncompressed", "one gzip member"])
def test_uncompressed_and_whole_file_gzip_warcs(tmp_path: Path, shape: str) -> None:
    plain = b"".join(_cc_records())
    source = tmp_path / ("cc.warc" if shape == "uncompressed" else "cc.warc.gz")
    source.write_bytes(plain if shape == "uncompressed" else gzip.compress(plain))
    summary = import_warcs(tmp_path / "data", [source])
    assert summary["pages"] == 6
    assert summary["counts"]["skipped/digest_mismatch"] == 1
    assert _page(tmp_path / "data", f"{CC_HOST}/page2").change_count == 1


def test_garbage_between_records_is_counted_once_and_skipped(tmp_path: Path) -> None:
    records = _cc_records()
    junk = b"this line is not a record\r\n" * 3 + b"WARC-Type: response\r\n\r\n"
    source = tmp_path / "cc.warc"
    source.write_bytes(b"".join([*records[:3], junk, *records[3:]]))
    summary = import_warcs(tmp_path / "data", [source])
    assert summary["counts"]["skipped/malformed_record"] == 1
    assert summary["pages"] == 6


def test_a_file_of_only_requests_imports_nothing_and_says_so(
    tmp_path: Path, run_websift: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    source = _write_cc(tmp_path / "requests.warc.gz", _cc_records()[:2])
    done = run_websift("import", "--data", str(tmp_path / "data"), "--quiet", str(source))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "websift import: error: nothing imported from 1 file(s): 2 records read, no response "
        "stored (skipped: request 1, warcinfo 1)"
    ]


# ---------------------------------------------------------------------- the reader, any damage
# Every record but the 8 MiB bomb, one gzip member each: small enough to read hundreds of times.
SMALL_MEMBERS = [gzip.compress(r) for r in _cc_records() if b"/bomb" not in r[:800]]
SMALL_CC = b"".join(SMALL_MEMBERS)
MEMBER_ENDS = {sum(len(m) for m in SMALL_MEMBERS[: i + 1]) for i in range(len(SMALL_MEMBERS))}


def _read(data: bytes) -> tuple[list[WarcRecord], list[Damage]]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.warc.gz"
        path.write_bytes(data)
        items = list(WarcReader(path, MAX_BLOCK))
    return ([i for i in items if isinstance(i, WarcRecord)],
            [i for i in items if isinstance(i, Damage)])


WHOLE, WHOLE_DAMAGE = _read(SMALL_CC)


def test_the_reader_reads_the_whole_file() -> None:
    assert len(WHOLE) == len(SMALL_MEMBERS) - 1  # the tampered record fails its digest
    assert [d.reason for d in WHOLE_DAMAGE] == ["digest_mismatch"]


@settings(max_examples=150, deadline=None)
@given(cut=st.integers(min_value=len(b"\x1f\x8b\x08"), max_value=len(SMALL_CC) - 1))
def test_a_file_cut_anywhere_gives_whole_records_then_one_truncation(cut: int) -> None:
    records, damage = _read(SMALL_CC[:cut])
    assert [r.block for r in records] == [r.block for r in WHOLE[: len(records)]]
    cut_short = [d.reason for d in damage if d.reason != "digest_mismatch"]
    assert cut_short == ([] if cut in MEMBER_ENDS else ["truncated"])


@settings(max_examples=150, deadline=None)
@given(at=st.integers(min_value=12, max_value=len(SMALL_CC) - 1),
       junk=st.binary(min_size=1, max_size=16))
def test_damage_never_passes_a_changed_block_for_a_whole_one(at: int, junk: bytes) -> None:
    damaged = SMALL_CC[:at] + junk + SMALL_CC[at + len(junk):]
    records, _ = _read(damaged[: len(SMALL_CC)])
    originals = [r.block for r in WHOLE]
    assert all(r.block in originals for r in records)


# ---------------------------------------------------------------------- interrupted, then again
def _many_pages(path: Path, n: int) -> list[str]:
    urls = [f"{CC_HOST}/many/{i}" for i in range(n)]
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for i, url in enumerate(urls):
            links = "".join(f"<a href='/many/{(i * 7 + j) % n}'>to {j}</a>" for j in range(8))
            body = html(f"many {i}", f"<p>{words(1000 + i, 200)}</p>{links}")
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(
                url, "response", payload=io.BytesIO(body), http_headers=http,
                warc_headers_dict={"WARC-Date": NEWER}))
    return urls


def _rerun_completes_it(run_websift: Callable[..., subprocess.CompletedProcess[str]],
                        data: Path, source: Path, urls: list[str], fetched: list[Page]) -> None:
    """Every row ``fetched`` (committed by a stopped import) points at a whole record on disk,
    and importing ``source`` again stores every one of ``urls`` once, cash summing to 1."""
    warc_dir = DataDir.open(data).warc_dir
    for page in fetched:
        assert page.warc_file and page.warc_offset is not None and page.warc_length
        location = WarcLocation(page.warc_file, page.warc_offset, page.warc_length)
        assert read_response(warc_dir, location).url == page.url
    again = run_websift("import", "--data", str(data), "--quiet", str(source), timeout=600)
    assert again.returncode == 0, again.stderr
    with StoreReader.open(DataDir.open(data).store_path) as store:
        rows = list(store.pages("fetched"))
    assert sorted(p.url for p in rows) == sorted(urls)
    assert len({(p.warc_file, p.warc_offset) for p in rows}) == len(urls)  # one record each
    assert _summary(data)["counts"]["outcome/unchanged"] == len(fetched)
    assert _cash_total(data) == pytest.approx(1.0, abs=1e-9)


# Pages of the imports stopped mid-run: enough that the first progress line (PROGRESS_INTERVAL,
# 1 s into the run) comes well before the end.  The development machine imports 1,200 in 2.2 s
# with or without workers, start-up included, and under the whole suite's load one such
# import ended before its first progress line; 4,000 take about 4 s.
STOPPED_IMPORT_PAGES = 4000


def _start_import(tmp_path: Path, popen: Callable[..., Any], *, prefix: Sequence[str] = (),
                  extra: Sequence[str] = ()) -> tuple[Path, list[str], Path, Any]:
    """(source, its URLs, data directory, the child) of `websift import` started in a child
    process over STOPPED_IMPORT_PAGES pages, its stderr piped (progress lines), run through
    ``prefix``."""
    source = tmp_path / "many.warc.gz"
    urls = _many_pages(source, STOPPED_IMPORT_PAGES)
    data = tmp_path / "data"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = popen([*prefix, sys.executable, "-m", "websift.api.cli", "import", "--data",
                   str(data), *extra, str(source)], cwd=REPO, env=env,
                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return source, urls, data, child


@pytest.mark.slow
def test_an_interrupted_import_keeps_what_it_committed_and_a_rerun_completes_it(
    tmp_path: Path, run_websift: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    # The SIGINT follows the first progress line (PROGRESS_INTERVAL, 1 s, into the run): enough
    # pages that it lands mid-run (STOPPED_IMPORT_PAGES); the rerun imports nearly all of them,
    # bounded at 600 s for a loaded machine.
    # Started with SIGINT ignored, as a shell's ``trap "" INT`` or a script's background job
    # starts it (Python keeps an inherited SIG_IGN): the import honours SIGINT all the same.
    source, urls, data, child = _start_import(
        tmp_path, subprocess.Popen, prefix=["sh", "-c", 'trap "" INT; exec "$@"', "sh"])
    try:
        assert child.stderr is not None
        first = child.stderr.readline()  # the first progress line: pages are being stored
        assert first.startswith("records "), first
        child.send_signal(signal.SIGINT)
        rest = child.stderr.read()
        assert child.wait(timeout=60) == 130, rest
    finally:
        if child.poll() is None:
            child.kill()
    assert rest.strip().splitlines()[-1] == "websift import: interrupted"
    summary = _summary(data)
    assert summary["finish_reason"] == "interrupted"
    with StoreReader.open(DataDir.open(data).store_path) as store:
        fetched = list(store.pages("fetched"))
    assert 0 < len(fetched) < len(urls)
    assert _cash_total(data) == pytest.approx(1.0, abs=1e-9)
    _rerun_completes_it(run_websift, data, source, urls, fetched)


def test_an_import_is_refused_while_another_writer_runs(
    tmp_path: Path, run_websift: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    source = _write_cc(tmp_path / "cc.warc.gz", _cc_records())
    data = DataDir.create(tmp_path / "data")
    with store_writer_lock(data.root, "websift crawl"):
        done = run_websift("import", "--data", str(data.root), "--quiet", str(source))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "is in use by 'websift crawl'" in lines[0], done.stderr
    assert not data.store_path.exists()  # refused before the store was opened


# ---------------------------------------------------------------------- workers beside the writer
def _rows(data: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the crawl store, sorted; less the WARC locations (each run
    writes its own files) and the run log (its times)."""
    return table_rows(DataDir.open(data).store_path, skip_tables={"crawls"},
                      skip_columns={"urls": {"warc_file", "warc_offset", "warc_length"}})


def test_an_import_with_workers_stores_the_same_rows_as_one_without(tmp_path: Path) -> None:
    # several chunks per worker (64 records each), the Common Crawl file's odd records among
    # them (damage, revisits, an older capture after a newer one, a body over the cap), twice:
    # the second run applies captures the first stored
    many = tmp_path / "many.warc.gz"
    _many_pages(many, 700)
    cc = _write_cc(tmp_path / "cc.warc.gz", _cc_records())
    sources = [many, cc, many]
    alone = import_warcs(tmp_path / "alone", sources, workers=0)
    beside = import_warcs(tmp_path / "beside", sources, workers=2)
    assert alone["counts"] == beside["counts"]
    assert alone["counts"]["outcome/fetched"] == 700 + 3  # page1, page2 twice
    rows = _rows(tmp_path / "alone")
    assert len(rows["urls"]) > 700 and len(rows["links"]) >= 700 * 8
    assert _rows(tmp_path / "beside") == rows
    # and the bodies the rows point at are the same
    warcs = DataDir.open(tmp_path / "alone").warc_dir, DataDir.open(tmp_path / "beside").warc_dir
    with StoreReader.open(DataDir.open(tmp_path / "beside").store_path) as store:
        located = {p.url: p for p in store.pages("fetched")}
    with StoreReader.open(DataDir.open(tmp_path / "alone").store_path) as store:
        for page in store.pages("fetched"):
            other = located[page.url]
            bodies = [read_response(d, WarcLocation(p.warc_file or "", p.warc_offset or 0,
                                                    p.warc_length or 0)).body
                      for d, p in zip(warcs, (page, other), strict=True)]
            assert bodies[0] == bodies[1]


def test_workers_start_by_default_only_for_input_that_repays_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a few records: no worker is started (each costs about a second to start); past
    # WORKERS_MIN_BYTES of input, one per core up to the cap; an explicit count is obeyed
    small = tmp_path / "small.warc.gz"
    _many_pages(small, 20)
    assert small.stat().st_size < warc_import.WORKERS_MIN_BYTES
    assert import_warcs(tmp_path / "default", [small])["workers"] == 0
    assert import_warcs(tmp_path / "asked", [small], workers=2)["workers"] == 2
    monkeypatch.setattr(warc_import, "WORKERS_MIN_BYTES", small.stat().st_size)
    cores = len(os.sched_getaffinity(0))
    expected = 0 if cores < 2 else min(cores, warc_import.MAX_DEFAULT_WORKERS)
    repaid = import_warcs(tmp_path / "repaid", [small])
    assert repaid["workers"] == expected
    assert _rows(tmp_path / "repaid") == _rows(tmp_path / "default")


def _committed(data: Path) -> int:
    with StoreReader.open(DataDir.open(data).store_path) as store:
        return int(store.status_counts().get("fetched", 0))


@pytest.mark.slow
def test_a_killed_import_with_workers_keeps_what_it_committed_and_leaves_no_worker(
    tmp_path: Path, run_websift: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    source, urls, data, child = _start_import(tmp_path, psutil.Popen, extra=["--workers", "2"])
    try:
        assert child.stderr is not None
        first = child.stderr.readline()  # the first progress line: pages are being stored
        assert first.startswith("records "), first
        workers = child.children()
        assert len(workers) == 2
        # a batch committed: killed mid-import, not before (nor after it ended)
        wait_for(lambda: child.poll() is not None or _committed(data) > 0,
                 "the import's first committed batch", 300)
        assert child.poll() is None
        child.kill()  # SIGKILL: no clean-up at all
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    # the workers die with the writer (PR_SET_PDEATHSIG), nothing left waiting for work
    _, alive = psutil.wait_procs(workers, timeout=30)
    assert not alive
    with StoreReader.open(DataDir.open(data).store_path) as store:
        fetched = list(store.pages("fetched"))
    assert len(fetched) < len(urls)
    _rerun_completes_it(run_websift, data, source, urls, fetched)


def test_chunks_for_the_workers_keep_order_and_are_bounded_in_records_and_bytes() -> None:
    from websift.crawler.import_workers import CHUNK_BYTES, CHUNK_RECORDS
    from websift.crawler.warc_import import _chunks

    def record(i: int, size: int) -> WarcRecord:
        return WarcRecord("response", f"http://h.example/{i}", NEWER,
                          StatusAndHeaders("", [], protocol="WARC/1.0"), size, b"x" * size)

    sizes = [10] * 150 + [CHUNK_BYTES // 3] * 7 + [CHUNK_BYTES * 2] + [5] * 3
    items: list[WarcRecord | Damage] = [record(i, n) for i, n in enumerate(sizes)]
    items.insert(70, Damage("truncated", 0))
    chunks = list(_chunks(items))
    assert [x for c in chunks for x in c] == items  # every item, in order
    for chunk in chunks:
        assert len(chunk) <= CHUNK_RECORDS
        blocks = sum(len(x.block or b"") for x in chunk if isinstance(x, WarcRecord))
        assert blocks <= CHUNK_BYTES or len(chunk) == 1  # a record over the bound goes alone
    # the 23 small items left, then two thirds of the bound: a third third would pass it
    assert [len(c) for c in chunks][:4] == [CHUNK_RECORDS, CHUNK_RECORDS, 151 - 128 + 2, 3]
