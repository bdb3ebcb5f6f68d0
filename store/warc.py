"""Raw responses in WARC files (ISO 28500), written and read with warcio.

Writer: one gzip member per record, appended to ``DATA/warc/<name>.warc.gz``; a file is rotated
when it passes a size.  Each write returns ``(file name, offset, length)``, which the store keeps
so that the indexer can seek straight to a record.  warcio puts a SHA-1 ``WARC-Payload-Digest``
on every record; the reader checks it, so a corrupt or truncated record is reported, never
returned as content.

The body stored is the one Scrapy hands over (already decoded from any Content-Encoding), so
the Content-Encoding and Transfer-Encoding headers are dropped and Content-Length is set to match.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from websift.store.errors import WarcError

DEFAULT_ROTATE_BYTES = 256 * 1024 * 1024
# gzip level per record: warcio's own wrapper uses 9 (about 4 ms a manual page); 3 costs about a
# third of that for files about 15% larger, and the crawler writes every page it fetches.
DEFAULT_GZIP_LEVEL = 3
READER_OPEN_FILES = 16  # WARC files a BodyReader keeps open
PREFETCH_GAP_BYTES = 64 << 10  # records closer than this are prefetched as one range
_DROPPED_HEADERS = {"content-encoding", "transfer-encoding", "content-length"}


@dataclass(frozen=True)
class WarcLocation:
    file: str
    offset: int
    length: int


@dataclass(frozen=True)
class WarcResponse:
    url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    date: str

    def header(self, name: str) -> str | None:
        lname = name.lower()
        for key, value in self.headers:
            if key.lower() == lname:
                return value
        return None


def payload_digest(body: bytes) -> str:
    """The WARC payload digest warcio writes: ``sha1:`` + base32 of the SHA-1."""
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


def pack_response(
    url: str,
    status: int,
    reason: str,
    headers: list[tuple[str, str]],
    body: bytes,
    *,
    gzip_level: int = DEFAULT_GZIP_LEVEL,
) -> bytes:
    """One response record as the gzip member :meth:`WarcWriterFile.append` writes (its own
    record ID and a WARC-Date of now); a pure function of its arguments otherwise, so another
    process may build it (``websift import``'s workers do)."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    kept = [(k, v) for k, v in headers if k.lower() not in _DROPPED_HEADERS]
    kept.append(("Content-Length", str(len(body))))
    http_headers = StatusAndHeaders(f"{status} {reason}".strip(), kept, protocol="HTTP/1.1")
    # warcio builds the record (headers, digests) uncompressed; each record becomes one gzip
    # member of its own, so a reader can seek straight to it.
    plain = io.BytesIO()
    writer = WARCWriter(plain, gzip=False)
    record = writer.create_warc_record(
        url, "response", payload=io.BytesIO(body), http_headers=http_headers
    )
    writer.write_record(record)
    packer = zlib.compressobj(gzip_level, zlib.DEFLATED, zlib.MAX_WBITS + 16)
    return packer.compress(plain.getbuffer()) + packer.flush()


class WarcWriterFile:
    """Appends response records to rotating WARC files in one directory.

    Each crawl process writes its own files (name carries time and pid), so two writers never
    share a file.  ``flush`` is called after every record: what the store points at is on disk.
    """

    def __init__(
        self,
        directory: Path,
        prefix: str = "websift",
        rotate_bytes: int = DEFAULT_ROTATE_BYTES,
        gzip_level: int = DEFAULT_GZIP_LEVEL,
    ):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.prefix = prefix
        self.rotate_bytes = rotate_bytes
        self.gzip_level = gzip_level
        self._serial = 0
        self._fh: io.BufferedWriter | None = None
        self._name = ""

    def _open_next(self) -> None:
        self.close()
        self._serial += 1
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
        self._name = f"{self.prefix}-{stamp}-{os.getpid()}-{self._serial:05d}.warc.gz"
        self._fh = open(self.directory / self._name, "ab")  # noqa: SIM115 - long-lived handle

    def write_response(
        self,
        url: str,
        status: int,
        reason: str,
        headers: list[tuple[str, str]],
        body: bytes,
    ) -> WarcLocation:
        return self.append(pack_response(url, status, reason, headers, body,
                                          gzip_level=self.gzip_level))

    def append(self, member: bytes) -> WarcLocation:
        """Append one record :func:`pack_response` made (a gzip member) and flush it."""
        if self._fh is None or self._fh.tell() >= self.rotate_bytes:
            self._open_next()
        assert self._fh is not None
        offset = self._fh.tell()
        try:
            self._fh.write(member)
            self._fh.flush()
        except OSError as exc:
            self._abandon(offset)
            raise OSError(exc.errno, exc.strerror, str(self.directory / self._name)) from exc
        return WarcLocation(self._name, offset, self._fh.tell() - offset)

    def _abandon(self, offset: int) -> None:
        """A record that could not be written (a full disk): cut the file back to the end of
        the last whole record and close it without flushing what is left in its buffer; the
        next record goes to a new file."""
        fh, self._fh = self._fh, None
        assert fh is not None
        raw = fh.detach()  # drops the buffer: a flush would only fail again
        try:
            os.ftruncate(raw.fileno(), offset)
        except OSError:
            pass  # the partial record stays, never pointed at (readers seek by offset)
        finally:
            raw.close()

    @property
    def path(self) -> Path:
        """The file being written, or last written (the directory before the first record)."""
        return self.directory / self._name if self._name else self.directory

    def sync(self) -> None:
        """fsync the current file (called before the store commits a batch that points into it)."""
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None


def _read_raw(directory: Path, location: WarcLocation) -> bytes:
    path = Path(directory) / location.file
    try:
        with open(path, "rb") as fh:
            fh.seek(location.offset)
            raw = fh.read(location.length)
    except OSError as exc:
        raise WarcError(f"cannot read WARC record {location.file}@{location.offset}: {exc}") from None
    if len(raw) != location.length:
        raise WarcError(f"WARC record {location.file}@{location.offset} is truncated")
    return raw


def _body_fast(raw: bytes) -> bytes | None:
    """The payload of one gzipped response record as this module writes it (WARC headers, an
    HTTP header block, the body), digest-checked; None when the record is not of that plain
    shape (or fails its check), so the caller takes warcio's path and its error message."""
    got = _record_fast(raw)
    return None if got is None else got[0]


def _record_fast(raw: bytes) -> tuple[bytes, bytes] | None:
    """:func:`_body_fast`'s payload and the record's HTTP header block (status line and
    headers, lines ending CRLF), or None."""
    inflate = zlib.decompressobj(zlib.MAX_WBITS + 16)
    try:
        block = inflate.decompress(raw)
    except zlib.error:
        return None
    if not inflate.eof:  # no complete gzip member (its CRC and size unchecked)
        return None
    warc_end = block.find(b"\r\n\r\n")
    if warc_end < 0 or not block.startswith(b"WARC/"):
        return None
    head = block[:warc_end]
    length: int | None = None
    digest: str | None = None
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        key = name.strip().lower()
        if key == b"content-length":
            length = int(value) if value.strip().isdigit() else None
        elif key == b"warc-payload-digest":
            digest = value.strip().decode("ascii", "replace")
        elif key == b"warc-type" and value.strip() != b"response":
            return None
    start = warc_end + 4
    if length is None or digest is None or len(block) < start + length:
        return None
    http = block[start : start + length]
    if not http.startswith(b"HTTP/"):
        return None
    http_end = http.find(b"\r\n\r\n")
    if http_end < 0:
        return None
    body = http[http_end + 4 :]
    return (body, http[: http_end + 2]) if payload_digest(body) == digest else None


def _content_language(header_block: bytes) -> str | None:
    """The ``Content-Language`` value of an HTTP header block, or None."""
    at = header_block.lower().find(b"\r\ncontent-language:")
    if at < 0:
        return None
    start = at + len(b"\r\ncontent-language:")
    end = header_block.find(b"\r\n", start)
    return header_block[start : end if end >= 0 else None].decode("ascii", "replace")


def _first_language(value: str | None) -> str | None:
    """The first language of a ``Content-Language`` value (RFC 9110 8.5: a list, "de, en"),
    or None."""
    first = (value or "").split(",")[0].strip()
    return first or None


class BodyReader:
    """:func:`read_body` for many records: keeps up to ``max_open`` WARC files open (the
    least recently used is closed), read with ``os.pread``; a reader per process (an
    indexing worker), closed when done."""

    def __init__(self, directory: Path, max_open: int = READER_OPEN_FILES) -> None:
        self.directory = Path(directory)
        self.max_open = max(1, max_open)
        self._fds: dict[str, int] = {}  # file name -> descriptor, least recently used first

    def _fd(self, name: str) -> int:
        fd = self._fds.pop(name, None)
        if fd is None:
            if len(self._fds) >= self.max_open:
                os.close(self._fds.pop(next(iter(self._fds))))
            fd = os.open(self.directory / name, os.O_RDONLY)
        self._fds[name] = fd
        return fd

    def _raw(self, location: WarcLocation) -> bytes:
        try:
            raw = os.pread(self._fd(location.file), location.length, location.offset)
        except OSError as exc:
            raise WarcError(f"cannot read WARC record {location.file}@{location.offset}: "
                            f"{exc}") from None
        if len(raw) != location.length:
            raise WarcError(f"WARC record {location.file}@{location.offset} is truncated")
        return raw

    def read(self, location: WarcLocation) -> bytes:
        """The digest-checked body of one response record. Raises :class:`WarcError`."""
        body = _body_fast(self._raw(location))
        return body if body is not None else read_response(self.directory, location).body

    def read_page(self, location: WarcLocation) -> tuple[bytes, str | None]:
        """:meth:`read`'s body and the first language of the response's ``Content-Language``
        header (None when it has none). Raises :class:`WarcError`."""
        raw = self._raw(location)
        got = _record_fast(raw)
        if got is not None:
            return got[0], _first_language(_content_language(got[1]))
        response = read_response(self.directory, location)
        return response.body, _first_language(response.header("Content-Language"))

    def prefetch(self, locations: Iterable[WarcLocation]) -> int:
        """Ask the kernel to read these records in the background (``posix_fadvise``
        WILLNEED), records of one file less than PREFETCH_GAP_BYTES apart as one range: the
        process that hands out work (the indexer's main process) calls it for the batches it
        queues, so a worker reading them later finds them in the page cache instead of waiting
        for the disk record by record (two workers reading alternate batches defeat the
        kernel's own readahead).  Returns the ranges advised.  A file that cannot be opened is
        left alone: the reader of its records reports it (:meth:`read` raises WarcError)."""
        advised = 0
        if not hasattr(os, "posix_fadvise"):  # not on every platform (macOS): reads as before
            return 0
        for name, spans in _prefetch_ranges(locations).items():
            try:
                fd = self._fd(name)
            except OSError:
                continue
            for start, end in spans:
                os.posix_fadvise(fd, start, end - start, os.POSIX_FADV_WILLNEED)
                advised += 1
        return advised

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def _prefetch_ranges(locations: Iterable[WarcLocation]) -> dict[str, list[tuple[int, int]]]:
    """Per file, the byte ranges covering ``locations``, records less than PREFETCH_GAP_BYTES
    apart merged into one range."""
    by_file: dict[str, list[tuple[int, int]]] = {}
    for loc in locations:
        by_file.setdefault(loc.file, []).append((loc.offset, loc.offset + loc.length))
    out: dict[str, list[tuple[int, int]]] = {}
    for name, spans in by_file.items():
        spans.sort()
        merged = [spans[0]]
        for start, end in spans[1:]:
            if start - merged[-1][1] < PREFETCH_GAP_BYTES:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        out[name] = merged
    return out


def read_body(directory: Path, location: WarcLocation) -> bytes:
    """The digest-checked body of one response record (what the indexer needs, no headers):
    a plain record is read with zlib alone, anything else through :func:`read_response`.
    Raises :class:`WarcError`."""
    body = _body_fast(_read_raw(directory, location))
    return body if body is not None else read_response(directory, location).body


def read_response(directory: Path, location: WarcLocation) -> WarcResponse:
    """Read one response record and check its payload digest. Raises :class:`WarcError`."""
    # warcio is imported where it is used: a reader taking the zlib path (the indexer's) does
    # not pay for importing it
    from warcio.archiveiterator import ArchiveIterator
    from warcio.exceptions import ArchiveLoadFailed

    raw = _read_raw(directory, location)
    try:
        record = next(iter(ArchiveIterator(io.BytesIO(raw))))
        body = record.raw_stream.read()
    except (StopIteration, ArchiveLoadFailed, EOFError, zlib.error, OSError, ValueError) as exc:
        raise WarcError(
            f"WARC record {location.file}@{location.offset} is corrupt: "
            f"{type(exc).__name__}: {str(exc)[:80]!r}"
        ) from None
    expected = record.rec_headers.get_header("WARC-Payload-Digest")
    if expected is None or payload_digest(body) != expected:
        raise WarcError(f"WARC record {location.file}@{location.offset} fails its digest check")
    http = record.http_headers
    status = int((http.get_statuscode() or "0") if http else 0)
    return WarcResponse(
        url=record.rec_headers.get_header("WARC-Target-URI") or "",
        status=status,
        headers=list(http.headers) if http else [],
        body=body,
        date=record.rec_headers.get_header("WARC-Date") or "",
    )
