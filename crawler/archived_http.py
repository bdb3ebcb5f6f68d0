"""The HTTP response inside a WARC ``response`` record, as Scrapy would hand it to the crawler.

Question: a record holds an HTTP response as it came over the wire (status line, headers, a body
perhaps chunked and compressed); what would the crawler have seen had it fetched the URL itself?

The crawler gets bodies from Scrapy decoded (``Transfer-Encoding: chunked`` by Twisted,
``Content-Encoding`` gzip / deflate / br by ``HttpCompressionMiddleware``), capped at
``DOWNLOAD_MAXSIZE`` (a body that inflates past it is ``too_large``), and typed by
``scrapy.responsetypes`` (whether it looks like HTML, its text encoding).  :func:`http_answer`
and :func:`sniff` do the same to an archived response, with the same libraries and limits, so
that an imported page is recorded exactly as a fetched one.  What differs: a content coding
Scrapy would leave encoded is refused here (``content_encoding``) rather than stored as bytes
nobody can read, and a body the archiving tool cut short (``WARC-Truncated``) counts as the
crawler's ``too_large`` (cut for length) or ``data_loss`` (any other reason).
"""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass

from warcio.statusandheaders import StatusAndHeadersParser, StatusAndHeadersParserException

from websift.crawler import settings as S
from websift.crawler.warc_reader import WarcRecord

_INFLATE_CHUNK = 1 << 16
_HTTP_VERSIONS = ["HTTP/1.1", "HTTP/1.0", "HTTP/2", "HTTP/2.0"]


@dataclass(frozen=True)
class HttpAnswer:
    """The HTTP response a record holds, decoded as Scrapy would hand it to the crawler."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    failure: str | None = None  # the crawler's reason when no usable body came (too_large, ...)

    def header(self, name: str) -> str | None:
        lname = name.lower()
        return next((v for k, v in self.headers if k.lower() == lname), None)


def http_answer(record: WarcRecord, cap: int = S.DOWNLOAD_MAXSIZE) -> HttpAnswer | str:
    """The record's HTTP response, or the reason it cannot be used (a ``skipped/`` key)."""
    block = record.block or b""
    if not block.startswith(b"HTTP/"):
        return "not_http"  # dns: records, FTP, screenshots...
    stream = io.BytesIO(block)
    try:
        http = StatusAndHeadersParser(_HTTP_VERSIONS, verify=False).parse(stream)
        status = int(http.get_statuscode() or "")
    except (StatusAndHeadersParserException, ValueError, EOFError):
        return "malformed_http"
    headers = [(str(k), str(v)) for k, v in http.headers]
    truncated = (record.header("WARC-Truncated") or "").strip().lower()
    if record.oversize or truncated == "length":
        return HttpAnswer(status, headers, b"", failure="too_large")
    if truncated:  # the writer lost the rest (time, disconnect): the crawler's data loss
        return HttpAnswer(status, headers, b"", failure="data_loss")
    raw = stream.read()
    kept = headers
    if "chunked" in (http.get_header("Transfer-Encoding") or "").lower():
        raw = _dechunk(raw)
        kept = [(k, v) for k, v in kept if k.lower() != "transfer-encoding"]
    codings = [
        c.strip().lower()
        for value in (v for k, v in headers if k.lower() == "content-encoding")
        for c in value.split(",")
        if c.strip() and c.strip().lower() != "identity"
    ]
    try:
        body = _decode(raw, codings, cap)
    except _Unsupported:
        return "content_encoding"
    except _BadCoding:
        return "bad_content_encoding"
    if codings:
        kept = [(k, v) for k, v in kept if k.lower() != "content-encoding"]
    if len(body) > cap:
        return HttpAnswer(status, kept, b"", failure="too_large")
    return HttpAnswer(status, kept, body)


def _dechunk(raw: bytes) -> bytes:
    """Undo ``Transfer-Encoding: chunked``; a body that is not really chunked (writers that
    stored the decoded body but kept the header) is taken as it is, as warcio does."""
    out = bytearray()
    pos = 0
    while True:
        eol = raw.find(b"\n", pos)
        if eol < 0:
            return raw
        try:
            size = int(raw[pos:eol].split(b";", 1)[0].strip(), 16)
        except ValueError:
            return raw
        pos = eol + 1
        if size == 0:
            return bytes(out)
        if size < 0 or pos + size > len(raw):
            return raw if not out else bytes(out) + raw[pos:]  # cut short: keep what is there
        out += raw[pos : pos + size]
        pos += size
        pos += 2 if raw[pos : pos + 2] == b"\r\n" else 1 if raw[pos : pos + 1] == b"\n" else 0


class _Unsupported(Exception):
    """A content coding the crawler does not decode."""


class _BadCoding(Exception):
    """A body that does not decode in the coding its header names."""


def _decode(body: bytes, codings: list[str], cap: int) -> bytes:
    """Undo the content codings (last applied first), at most ``cap + 1`` bytes out."""
    import brotli  # Scrapy's own brotli decoder; loaded only by an import that needs it

    for coding in reversed(codings):
        try:
            if coding in ("gzip", "x-gzip"):
                body = _inflate(body, zlib.MAX_WBITS | 16, cap)
            elif coding == "deflate":
                try:
                    body = _inflate(body, zlib.MAX_WBITS, cap)
                except zlib.error:  # raw deflate, as some servers send it (as Scrapy does)
                    body = _inflate(body, -zlib.MAX_WBITS, cap)
            elif coding == "br":
                body = brotli.Decompressor().process(body, output_buffer_limit=cap + 1)
            else:
                raise _Unsupported(coding)
        except (zlib.error, brotli.error) as exc:
            raise _BadCoding(f"{coding}: {exc}") from None
    return body


def _inflate(data: bytes, wbits: int, cap: int) -> bytes:
    """zlib/gzip data inflated to at most ``cap + 1`` bytes; like Scrapy's ``gunzip``, a bad
    trailer after some output keeps that output."""
    inflater = zlib.decompressobj(wbits)
    out = bytearray()
    view = memoryview(data)
    for start in range(0, len(data), _INFLATE_CHUNK):
        try:
            out += inflater.decompress(view[start : start + _INFLATE_CHUNK], cap + 1 - len(out))
        except zlib.error:
            if out:
                break
            raise
        if len(out) > cap or inflater.eof:
            break
    return bytes(out)


def sniff(url: str, answer: HttpAnswer) -> tuple[bool, str | None]:
    """(looks like HTML, text encoding) as Scrapy judges a downloaded response."""
    # Scrapy is loaded here, not with the module: `websift --help` and the other commands
    # register this one without paying for it
    from scrapy.http import Headers, HtmlResponse, TextResponse
    from scrapy.responsetypes import responsetypes

    headers = Headers()
    for key, value in answer.headers:
        headers.appendlist(key, value)
    cls = responsetypes.from_args(headers=headers, url=url, body=answer.body)
    response = cls(url=url, status=answer.status, headers=headers, body=answer.body)
    encoding = response.encoding if isinstance(response, TextResponse) else None
    return isinstance(response, HtmlResponse), encoding
