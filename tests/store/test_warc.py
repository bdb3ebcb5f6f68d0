"""WARC records: written, found again by location, and checked by digest."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from websift.store.errors import WarcError
from websift.store.warc import (
    PREFETCH_GAP_BYTES,
    BodyReader,
    WarcLocation,
    WarcWriterFile,
    _prefetch_ranges,
    read_body,
    read_response,
)

Reader = Callable[[Path, WarcLocation], object]


def _write(tmp_path: Path, bodies: list[bytes]) -> list[WarcLocation]:
    writer = WarcWriterFile(tmp_path)
    locs = [
        writer.write_response(f"http://h.example/{i}", 200, "OK",
                              [("Content-Type", "text/html"), ("Content-Encoding", "gzip")], body)
        for i, body in enumerate(bodies)
    ]
    writer.close()
    return locs


def test_round_trip_by_location(tmp_path: Path) -> None:
    bodies = [b"<html>one</html>", b"", "<p>caf\u00e9</p>".encode(), bytes(range(256)) * 50]
    locs = _write(tmp_path, bodies)
    for i, (loc, body) in enumerate(zip(locs, bodies, strict=True)):
        rec = read_response(tmp_path, loc)
        assert rec.body == body
        assert read_body(tmp_path, loc) == body  # the indexer's fast path
        assert rec.url == f"http://h.example/{i}"
        assert rec.status == 200
        assert rec.header("content-type") == "text/html"
        assert rec.header("Content-Encoding") is None  # body is stored decoded
        assert rec.header("Content-Length") == str(len(body))


def test_rotation_starts_new_files(tmp_path: Path) -> None:
    writer = WarcWriterFile(tmp_path, rotate_bytes=1)
    locs = [writer.write_response(f"http://h/{i}", 200, "OK", [], b"x" * 10) for i in range(3)]
    writer.close()
    assert len({loc.file for loc in locs}) == 3
    assert all(read_response(tmp_path, loc).body == b"x" * 10 for loc in locs)


# Offsets inside the deflate stream and the gzip trailer (bytes 4-9 of a gzip header, the
# mtime and flags, protect nothing and may change without harm to the content).
@pytest.mark.parametrize("read", [read_response, read_body])
@pytest.mark.parametrize("position", [20, 40, 120, -12, -3])
def test_flipped_byte_is_detected(tmp_path: Path, position: int, read: Reader) -> None:
    loc = _write(tmp_path, [b"<html>" + b"payload " * 200 + b"</html>"])[0]
    path = tmp_path / loc.file
    data = bytearray(path.read_bytes())
    data[loc.offset + (position if position >= 0 else loc.length + position)] ^= 0x55
    path.write_bytes(bytes(data))
    with pytest.raises(WarcError):
        read(tmp_path, loc)


@pytest.mark.parametrize("read", [read_response, read_body])
def test_truncated_record_is_detected(tmp_path: Path, read: Reader) -> None:
    loc = _write(tmp_path, [b"<html>" + b"payload " * 200 + b"</html>"])[0]
    path = tmp_path / loc.file
    path.write_bytes(path.read_bytes()[: loc.length // 2])
    with pytest.raises(WarcError, match="truncated"):
        read(tmp_path, loc)


def test_missing_file_is_a_warc_error(tmp_path: Path) -> None:
    with pytest.raises(WarcError, match="cannot read"):
        read_response(tmp_path, WarcLocation("absent.warc.gz", 0, 10))


def test_whole_file_reads_with_any_warc_tool(tmp_path: Path) -> None:
    """One gzip member per record: warcio's plain iterator reads the file front to back."""
    from warcio.archiveiterator import ArchiveIterator

    bodies = [b"first", b"second" * 1000, b"third"]
    locs = _write(tmp_path, bodies)
    with open(tmp_path / locs[0].file, "rb") as fh:
        seen = [(r.rec_headers.get_header("WARC-Target-URI"), r.content_stream().read())
                for r in ArchiveIterator(fh)]
    assert seen == [(f"http://h.example/{i}", b) for i, b in enumerate(bodies)]



def test_a_body_reader_keeps_few_files_open_and_reads_them_all(tmp_path: Path) -> None:
    writer = WarcWriterFile(tmp_path, rotate_bytes=1)  # one file per record
    bodies = [f"<p>page {i}</p>".encode() for i in range(5)]
    locs = [writer.write_response(f"http://h/{i}", 200, "OK", [], b) for i, b in enumerate(bodies)]
    writer.close()
    reader = BodyReader(tmp_path, max_open=2)
    try:
        for _ in range(2):
            for loc, body in zip(locs, bodies, strict=True):
                assert reader.read(loc) == body
                assert len(reader._fds) <= 2
        with pytest.raises(WarcError, match="truncated"):
            reader.read(WarcLocation(locs[0].file, locs[0].offset, locs[0].length + 10**6))
        with pytest.raises(WarcError, match="cannot read"):
            reader.read(WarcLocation("absent.warc.gz", 0, 10))
    finally:
        reader.close()
    assert not reader._fds


def test_prefetch_merges_near_records_and_leaves_a_missing_file_to_the_reader(
        tmp_path: Path) -> None:
    writer = WarcWriterFile(tmp_path)
    bodies = [f"<p>page {i}</p>".encode() * 50 for i in range(6)]
    locs = [writer.write_response(f"http://h/{i}", 200, "OK", [], b) for i, b in enumerate(bodies)]
    writer.close()
    far = WarcLocation(locs[0].file, locs[-1].offset + PREFETCH_GAP_BYTES * 3, 10)
    ranges = _prefetch_ranges([locs[3], locs[0], locs[1], far, locs[2]])
    # one file: the four adjacent records as one range (in offset order), the far one alone
    assert ranges == {locs[0].file: [(locs[0].offset, locs[3].offset + locs[3].length),
                                     (far.offset, far.offset + 10)]}
    reader = BodyReader(tmp_path)
    try:
        assert reader.prefetch([*locs, WarcLocation("absent.warc.gz", 0, 10)]) == 1
        assert reader.prefetch([]) == 0
        assert [reader.read(loc) for loc in locs] == bodies  # prefetching changes no read
        with pytest.raises(WarcError, match="cannot read"):
            reader.read(WarcLocation("absent.warc.gz", 0, 10))
    finally:
        reader.close()


def test_read_page_gives_the_first_content_language(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    writer = WarcWriterFile(tmp_path)
    cases = [([("Content-Language", "de-DE, en")], "de-DE"), ([("content-language", " fr ")], "fr"),
             ([("Content-Type", "text/html")], None), ([("Content-Language", "")], None)]
    locs = [writer.write_response(f"http://h/{i}", 200, "OK", headers, b"<p>x</p>")
            for i, (headers, _) in enumerate(cases)]
    writer.close()
    reader = BodyReader(tmp_path)
    try:
        for loc, (_, want) in zip(locs, cases, strict=True):
            assert reader.read_page(loc) == (b"<p>x</p>", want)
        # warcio's path (taken by a record of another shape) gives the same
        monkeypatch.setattr("websift.store.warc._record_fast", lambda _raw: None)
        for loc, (_, want) in zip(locs, cases, strict=True):
            assert reader.read_page(loc) == (b"<p>x</p>", want)
    finally:
        reader.close()
