"""Reading WARC files other tools wrote, record by record, through damage.

Question: here is a WARC file (ISO 28500) from Common Crawl, ``wget --warc-file`` or Heritrix,
perhaps cut short or damaged; which records does it hold, which could not be read, and why?

warcio, which reads websift's own files (``store/warc.py``), stops at the first damaged gzip
member or record header, and hands out a record that the end of the file cut short as if it were
whole.  An import must go on past damage and must never take half a page for a page, so this
module walks the file itself (warcio's parser reads the header lines):

- Compression: a ``.warc.gz`` is a series of gzip members, one per record as the standard
  recommends (one member for the whole file works too: records are read from the decompressed
  stream whatever the member boundaries).  A member whose data is corrupt, or that runs on to the
  end of the file although members follow it (damage that inflates without an error), is given
  up and reading resumes at the next gzip member that inflates to a record's first line
  (``corrupt_gzip``); NUL or blank padding between members is not damage.
- Records: a version line, header lines up to a blank line, then exactly ``Content-Length``
  bytes.  A record that does not parse is skipped up to the next line that opens a record
  (``malformed_record``); one the file ends inside is ``truncated``; one whose
  ``WARC-Block-Digest`` does not match its bytes is ``digest_mismatch``.  A run of damage with no
  good record in between counts once: one cut in a file is one problem, however many false gzip
  headers the rest of the cut member holds.
- Bounded memory: a record of a wanted type is read whole up to ``max_block`` bytes; of a larger
  one only the first ``HEAD_BYTES`` are kept (its HTTP headers) and ``oversize`` is set; records
  of other types are passed over without keeping their bytes.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from warcio.statusandheaders import (
    StatusAndHeaders,
    StatusAndHeadersParser,
    StatusAndHeadersParserException,
)

from websift.core.errors import WebsiftError

GZIP_MAGIC = b"\x1f\x8b\x08"  # ID1, ID2, CM=deflate: how every gzip member starts
WARC_VERSIONS = ["WARC/1.1", "WARC/1.0", "WARC/0.18", "WARC/0.17"]
RAW_CHUNK = 1 << 20  # bytes read from the file at a time
OUT_CHUNK = 1 << 20  # at most this much decompressed per step (a gzip bomb stays bounded)
MAX_HEADER_BYTES = 1 << 16  # a record header longer than this is not a header
HEAD_BYTES = 1 << 16  # bytes kept of an oversize block: its HTTP status line and headers
MAX_PADDING = 4096  # NUL / blank bytes between gzip members taken as padding, not damage
SNIFF_BYTES = 4096  # decompressed bytes looked at to tell a WARC file from anything else

# damage reasons (the keys the import counts under skipped/)
TRUNCATED = "truncated"
CORRUPT_GZIP = "corrupt_gzip"
MALFORMED = "malformed_record"
DIGEST_MISMATCH = "digest_mismatch"


class NotAWarcFile(WebsiftError):
    """A file given to ``websift import`` is not a WARC file (nor a gzip of one)."""


@dataclass(frozen=True)
class WarcRecord:
    """One whole record: its WARC headers and (for wanted types) its block."""

    type: str  # WARC-Type, lower case
    target_uri: str  # WARC-Target-URI, without the <angle brackets> wget 1.21 writes around it
    date: str  # WARC-Date as written
    headers: StatusAndHeaders
    length: int  # Content-Length of the block
    block: bytes | None  # the block (its first HEAD_BYTES when oversize); None: type not wanted
    oversize: bool = False  # the block is longer than max_block

    def header(self, name: str) -> str | None:
        value = self.headers.get_header(name)
        return None if value is None else str(value)


@dataclass(frozen=True)
class Damage:
    """A record (or a run of bytes) that could not be read, and why."""

    reason: str
    near: int  # raw file offset reached when it was noticed


class _Corrupt(Exception):
    """The gzip member being read is damaged; the source has moved to the next member."""


class _Source:
    """The decompressed bytes of a WARC file in order, with line and block reads.

    Gzip members are inflated one step at a time, never further than the reader needs, so when
    a member turns out to be damaged the buffered bytes all belong to the record being read,
    which is lost with it; the records before it were already handed out whole.
    """

    def __init__(self, fh: BinaryIO, gz: bool) -> None:
        self.fh = fh
        self.gz = gz
        self.buf = bytearray()
        self.pos = 0  # read position in buf
        self.raw_pos = 0  # file offset of the next raw byte to read
        self.pending = b""  # raw bytes read but not yet fed to the inflater
        self.pending_at = 0  # file offset of pending[0]
        self.member_start = 0
        self.inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        self.in_member = False  # the inflater has taken bytes of a member it has not finished
        self.done = False
        self.cut = False  # the file ended inside a gzip member

    # ------------------------------------------------------------------ filling
    def _fill(self) -> bool:
        """Append more decompressed bytes to the buffer; False when the file has no more."""
        if self.pos > RAW_CHUNK:
            del self.buf[: self.pos]
            self.pos = 0
        while not self.done:
            if not self.pending:
                raw = self.fh.read(RAW_CHUNK)
                if not raw:
                    if self.gz and self.in_member:
                        # The file ends inside a member.  If a member header follows where it
                        # began, damage (a corrupt length, say) made it swallow the members
                        # after it: resume at the first of them.  Else the file was cut.
                        found = self._scan(self.member_start + 1)
                        if found is not None:
                            self._restart(found, keep=False)
                            raise _Corrupt
                        self.cut = True
                    self.done = True
                    return False
                self.pending, self.pending_at = raw, self.raw_pos
                self.raw_pos += len(raw)
            if not self.gz:
                self.buf += self.pending
                self.pending = b""
                return True
            data = self.pending
            try:
                out = self.inflater.decompress(data, OUT_CHUNK)
            except zlib.error:
                if self._recover():
                    continue  # padding between members: nothing was lost
                raise _Corrupt from None
            if self.inflater.eof:
                rest = self.inflater.unused_data
                self.member_start = self.pending_at + len(data) - len(rest)
                self.pending, self.pending_at = rest, self.member_start
                self.inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
                self.in_member = False
            else:
                rest = self.inflater.unconsumed_tail
                self.pending_at += len(data) - len(rest)
                self.pending = rest
                self.in_member = True
            if out:
                self.buf += out
                return True
        return False

    def _recover(self) -> bool:
        """Move to the next gzip member header after the damaged member; True if what was
        passed over is only padding (then the buffered bytes are good and kept)."""
        found = self._scan(self.member_start + 1)
        end = found if found is not None else self._size()
        padding = end - self.member_start <= MAX_PADDING and not self._read_at(
            self.member_start, end - self.member_start
        ).strip(b"\0\r\n\t ")
        self._restart(found, keep=padding)
        return padding

    def _restart(self, at: int | None, keep: bool) -> None:
        """Inflate afresh from the member header at ``at`` (None: nothing more to read);
        unless ``keep``, the buffered bytes (the damaged record's) are dropped."""
        if not keep:
            del self.buf[:]
            self.pos = 0
        self.inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        self.in_member = False
        self.pending = b""
        if at is None:
            self.done = True
            self.raw_pos = self._size()
        else:
            self.fh.seek(at)
            self.raw_pos = self.pending_at = self.member_start = at

    def _scan(self, start: int) -> int | None:
        """File offset of the first gzip member at or after ``start`` that opens a record, or
        None.  The three magic bytes also occur by chance inside compressed data, so a
        candidate counts only if it inflates to the start of ``WARC/``."""
        at = start
        while (found := self._find_magic(at)) is not None:
            try:
                head = zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(
                    self._read_at(found, SNIFF_BYTES), len(b"\r\n\r\nWARC/")
                ).lstrip(b"\r\n")
            except zlib.error:
                head = b"-"
            if head.startswith(b"WARC/") or (  # or the file ends inside the member's start
                b"WARC/".startswith(head) and found + SNIFF_BYTES >= self._size()
            ):
                return found
            at = found + 1
        return None

    def _find_magic(self, start: int) -> int | None:
        self.fh.seek(start)
        base, carry = start, b""
        while chunk := self.fh.read(RAW_CHUNK):
            hay = carry + chunk
            i = hay.find(GZIP_MAGIC)
            if i >= 0:
                return base - len(carry) + i
            carry = hay[-(len(GZIP_MAGIC) - 1) :]
            base += len(chunk)
        return None

    def _size(self) -> int:
        return self.fh.seek(0, io.SEEK_END)

    def _read_at(self, offset: int, n: int) -> bytes:
        self.fh.seek(offset)
        return self.fh.read(n)

    @property
    def consumed(self) -> int:
        """How far into the file the bytes handed out (or being inflated) reach."""
        if self.gz:
            return self.raw_pos if self.done else self.pending_at
        return self.raw_pos - (len(self.buf) - self.pos)

    # ------------------------------------------------------------------ reading
    def readline(self, limit: int) -> bytes:
        """The next line with its newline (or up to ``limit`` bytes); b"" at the end."""
        while True:
            i = self.buf.find(b"\n", self.pos, self.pos + limit)
            if i >= 0:
                return self._take(i + 1 - self.pos)
            if len(self.buf) - self.pos >= limit or not self._fill():
                return self._take(min(limit, len(self.buf) - self.pos))

    def read(self, n: int) -> bytes:
        """``n`` bytes, fewer only at the end of the file."""
        while len(self.buf) - self.pos < n and self._fill():
            pass
        return self._take(min(n, len(self.buf) - self.pos))

    def skip(self, n: int, sink: Callable[[bytes], object] | None = None) -> int:
        """Pass over ``n`` bytes (handing them to ``sink``); returns how many there were."""
        left = n
        while left:
            if self.pos >= len(self.buf) and not self._fill():
                break
            piece = self._take(min(left, len(self.buf) - self.pos))
            if sink is not None:
                sink(piece)
            left -= len(piece)
        return n - left

    def _take(self, n: int) -> bytes:
        out = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return out


class WarcReader:
    """The records of one WARC file (``.warc`` or ``.warc.gz``) and the damage met on the way.

    Iterating yields :class:`WarcRecord` and :class:`Damage` in file order; ``raw_bytes`` says
    how far into the file it has got (for progress).
    """

    def __init__(
        self, path: Path, max_block: int, want: Callable[[str], bool] = lambda _type: True
    ) -> None:
        self.path = Path(path)
        self.max_block = max_block
        self.want = want
        self._src: _Source | None = None
        self._held: bytes | None = None  # a record's first line met while skipping damage

    @property
    def raw_bytes(self) -> int:
        """How many bytes of the file have been read (for progress)."""
        return 0 if self._src is None else self._src.consumed

    def __iter__(self) -> Iterator[WarcRecord | Damage]:
        with open(self.path, "rb") as fh:
            self._src = _Source(fh, fh.read(len(GZIP_MAGIC)) == GZIP_MAGIC)
            fh.seek(0)
            quiet = False  # inside a run of damage: counted once
            while True:
                try:
                    item = self._next()
                except _Corrupt:
                    self._held = None
                    item = Damage(CORRUPT_GZIP, self._src.raw_pos)
                if item is None:
                    return
                if isinstance(item, Damage):
                    if item.reason in (CORRUPT_GZIP, MALFORMED):
                        if quiet:
                            continue
                        quiet = True
                    yield item
                    continue
                quiet = False
                yield item

    # ------------------------------------------------------------------ one record
    def _next(self) -> WarcRecord | Damage | None:  # noqa: C901 - one record's states, damage named at each
        src = self._src
        assert src is not None
        line = self._held if self._held is not None else src.readline(MAX_HEADER_BYTES)
        self._held = None
        while line and not line.strip():  # the blank lines that end the record before
            line = src.readline(MAX_HEADER_BYTES)
        if not line:
            return self._truncated() if src.cut else None
        if not line.endswith(b"\n") and len(line) < MAX_HEADER_BYTES and (
            line.startswith(b"WARC/") or b"WARC/".startswith(line)
        ):
            return self._truncated()  # the file ends inside a record's first line
        if not line.startswith(b"WARC/"):
            return self._resync()
        head = bytearray(line)
        while True:
            line = src.readline(MAX_HEADER_BYTES)
            if not line.endswith(b"\n"):  # the end of the file, or a line too long for a header
                return self._resync() if len(line) >= MAX_HEADER_BYTES else self._truncated()
            head += line
            if len(head) > MAX_HEADER_BYTES:
                return self._resync()
            if not line.strip():
                break
        try:
            headers = StatusAndHeadersParser(WARC_VERSIONS, verify=False).parse(
                io.BytesIO(bytes(head))
            )
            length = int(headers.get_header("Content-Length") or "")
        except (StatusAndHeadersParserException, ValueError, EOFError):
            return self._resync()
        if length < 0:
            return self._resync()
        wtype = str(headers.get_header("WARC-Type") or "").strip().lower()
        uri = str(headers.get_header("WARC-Target-URI") or "").strip()
        if uri.startswith("<") and uri.endswith(">"):
            uri = uri[1:-1].strip()
        date = str(headers.get_header("WARC-Date") or "").strip()
        if not self.want(wtype):
            if src.skip(length) < length:
                return self._truncated()
            return WarcRecord(wtype, uri, date, headers, length, None)
        digest = _Digest.of(headers.get_header("WARC-Block-Digest"))
        oversize = length > self.max_block
        block = src.read(HEAD_BYTES if oversize else length)
        digest.update(block)
        got = len(block) + src.skip(length - len(block), digest.update)  # the rest, if oversize
        if got < length:
            return self._truncated()
        if not digest.matches():
            return Damage(DIGEST_MISMATCH, src.raw_pos)
        return WarcRecord(wtype, uri, date, headers, length, block, oversize)

    def _truncated(self) -> Damage:
        assert self._src is not None
        self._src.cut = False  # one cut, one count
        return Damage(TRUNCATED, self._src.raw_pos)

    def _resync(self) -> Damage:
        """Skip to the next line that opens a record (kept for the next call)."""
        src = self._src
        assert src is not None
        while line := src.readline(MAX_HEADER_BYTES):
            if line.startswith(b"WARC/"):
                self._held = line
                break
        return Damage(MALFORMED, src.raw_pos)


class _Digest:
    """``WARC-Block-Digest: <algorithm>:<base32 or hex>`` checked over a block's bytes."""

    def __init__(self, algorithm: str | None, expected: str) -> None:
        self._hash = hashlib.new(algorithm) if algorithm else None
        self.expected = expected

    @classmethod
    def of(cls, spec: str | None) -> _Digest:
        algorithm, _, value = str(spec or "").strip().partition(":")
        name = algorithm.lower().replace("-", "")
        if not value or name not in ("sha1", "sha256", "sha512", "md5"):
            return cls(None, "")  # none given, or an algorithm we do not know: unchecked
        return cls(name, value.strip())

    def update(self, data: bytes) -> None:
        if self._hash is not None:
            self._hash.update(data)

    def matches(self) -> bool:
        if self._hash is None:
            return True
        raw = self._hash.digest()
        return self.expected.upper() == base64.b32encode(raw).decode("ascii") or (
            self.expected.lower() == raw.hex()
        )


def check_warc(path: Path) -> None:
    """Raise :class:`NotAWarcFile` (one line naming the file) unless it opens as a WARC file."""
    with open(path, "rb") as fh:
        start = fh.read(RAW_CHUNK)
    if not start:
        raise NotAWarcFile(f"{path} is empty, not a WARC file")
    head = start
    if start.startswith(GZIP_MAGIC):
        try:
            head = zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(start, SNIFF_BYTES)
        except zlib.error:
            raise NotAWarcFile(
                f"{path} is not a WARC file (its gzip data is damaged at its start)"
            ) from None
    head = head.lstrip(b"\r\n")
    if head.startswith(b"WARC/"):
        return
    if head.startswith(b"filedesc://"):
        raise NotAWarcFile(f"{path} is an ARC file; websift imports WARC files only")
    raise NotAWarcFile(f"{path} is not a WARC file (it starts with {head[:24]!r})")
