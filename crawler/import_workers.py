"""``websift import``'s per-record work, made ready apart from the one writer (in worker processes).

Question: recording one response costs the import's writer about 8 ms of CPU on the 2-core
machine, most of it work that needs no store: the HTTP answer, Scrapy's type sniffing, the HTML
parse (links, anchors, robots directives, text), the SimHash of the text, the SHA-256 of the body
and the compressed WARC record; how does the import use both cores without changing what it
stores?

:func:`ready_response` is that store-independent part of :meth:`WarcImport._response
<websift.crawler.warc_import.WarcImport>`, a pure function of the record (but for the new WARC
record's random ID and date).  :class:`ImportWorkers` runs it in forked processes over chunks of
records; the writer takes the answers in file order and applies each (:meth:`WarcImport.apply`:
the newest-capture check, OPIC, duplicates, links, the group commit) exactly as it would have
applied its own, so the store holds the same rows whether workers ran or not.

Messages cross as ``core/process_messages`` frames (a JSON header and byte blobs, never
pickle): a chunk's records (their WARC headers, with each block a blob), and back one answer per
response (a skip reason, or the :class:`Ready` fields with the WARC record as a blob; the page's
text stays in the worker, which sends its SimHash and token count).  A worker that raises sends
the error and the import stops with it (a bug: bad records are skipped and counted); one that dies
ends its pipe and the import stops naming it.  Workers ignore SIGINT: the writer handles it and
their pipes close with it; they die with the writer (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import threading
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from typing import Any
from urllib.parse import urlsplit

from warcio.statusandheaders import StatusAndHeaders

from websift.core.lifetime import die_with_parent
from websift.core.process_messages import error_header, raise_remote, receive, send
from websift.crawler.archived_http import http_answer, sniff
from websift.crawler.dedup import TextFingerprint
from websift.crawler.extract import Extracted, RawLink
from websift.crawler.pipeline import Fetched, Prepared, prepare
from websift.crawler.robots import ROBOTS_PATH
from websift.crawler.urls import UrlError, canonicalize
from websift.crawler.warc_reader import WarcRecord

CHUNK_RECORDS = 64  # records per message to a worker, at most
CHUNK_BYTES = 4 << 20  # bytes of blocks per message, at most (a record's block beyond it alone)
IN_FLIGHT = 3  # chunks a worker holds (queued or being made ready) at most


def warc_time(value: str) -> float | None:
    """A WARC-Date (ISO 8601, UTC) as a Unix time, or None if it does not parse."""
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


@dataclass
class Ready:
    """A response record with everything worked out that does not need the store: what
    :meth:`WarcImport.apply` stores (the writer's part), made by :func:`ready_response` in the
    writer or in a worker process."""

    url: str  # canonical
    when: float | None  # the WARC-Date; None when it does not parse
    status: int
    headers: list[tuple[str, str]]
    failure: str | None  # the crawler's failure reason (too_large, data_loss), else None
    location: str | None  # the Location header of a 3xx
    looks_html: bool
    encoding: str | None
    prepared: Prepared | None  # a 2xx without failure: hash, WARC record, extraction, SimHash


def ready_response(record: WarcRecord, agent: str, gzip_level: int,
                   max_url_length: int) -> Ready | str:
    """The store-independent part of importing one response record (a pure function of the
    record but for the WARC record's ID and date), or the reason it is skipped."""
    try:
        url = canonicalize(record.target_uri)
    except UrlError:
        return "not_http_url"
    if len(url) > max_url_length:
        return "url_too_long"
    parts = urlsplit(url)
    if parts.path == ROBOTS_PATH and not parts.query:
        return "robots_txt"
    if record.header("WARC-Segment-Number") is not None:
        return "segmented"  # one part of a response split over continuation records
    answer = http_answer(record)
    if isinstance(answer, str):
        return answer
    if answer.status == 304:
        return "not_modified"  # the other tool's conditional request: no content here
    if not 200 <= answer.status < 600:
        return "bad_status"
    looks_html, encoding = sniff(url, answer) if answer.failure is None else (False, None)
    ready = Ready(url, warc_time(record.date), answer.status, answer.headers, answer.failure,
                  answer.header("Location") if 300 <= answer.status < 400 else None,
                  looks_html, encoding, None)
    if answer.failure is None and 200 <= answer.status < 300:
        fetched = Fetched(uid=0, url=url, status=answer.status, headers=answer.headers,
                          body=answer.body, encoding=encoding, looks_html=looks_html)
        ready.prepared = prepare(fetched, agent, gzip_level)
    return ready


# ---------------------------------------------------------------------- messages
# A chunk crosses as two frames, a header and one blob of its records' blocks (or of its answers'
# WARC records) end to end, its ``sizes`` in the header: a frame per record would make the
# worker's receiving thread wait for the interpreter lock once per record.
def _split(blob: bytes, sizes: list[int]) -> list[bytes]:
    if sum(sizes) != len(blob):
        raise ValueError(f"a chunk of {len(blob)} bytes is not the {sum(sizes)} its sizes say")
    out, at = [], 0
    for size in sizes:
        out.append(blob[at:at + size])
        at += size
    return out


def _record_header(record: WarcRecord) -> dict[str, Any]:
    return {"type": record.type, "uri": record.target_uri, "date": record.date,
            "headers": [list(h) for h in record.headers.headers], "length": record.length,
            "oversize": record.oversize}


def _record_of(head: dict[str, Any], block: bytes) -> WarcRecord:
    headers = StatusAndHeaders("", [(str(k), str(v)) for k, v in head["headers"]],
                               protocol="WARC/1.0")
    return WarcRecord(str(head["type"]), str(head["uri"]), str(head["date"]), headers,
                      int(head["length"]), block, bool(head["oversize"]))


def _answer_header(ready: Ready | str) -> tuple[dict[str, Any], list[bytes]]:
    if isinstance(ready, str):
        return {"skip": ready}, []
    out: dict[str, Any] = {
        "url": ready.url, "when": ready.when, "status": ready.status,
        "headers": [list(h) for h in ready.headers], "failure": ready.failure,
        "location": ready.location, "looks_html": ready.looks_html, "encoding": ready.encoding,
    }
    prep = ready.prepared
    if prep is None:
        return out, []
    out["digest"] = prep.digest
    if prep.fingerprint is not None:
        out["fingerprint"] = [prep.fingerprint.simhash, prep.fingerprint.tokens]
    ex = prep.extracted
    if ex is not None:  # all but the text (fingerprinted) and the title (not recorded)
        out["extracted"] = {
            "base": ex.base, "links": [[ln.href, ln.anchor, ln.nofollow] for ln in ex.links],
            "noindex": ex.noindex, "nofollow": ex.nofollow, "parse_error": ex.parse_error,
            "feeds": ex.feeds, "canonical": ex.canonical, "hreflang": ex.hreflang,
        }
    return out, [prep.member]


def _ready_of(head: dict[str, Any], blobs: list[bytes]) -> Ready | str:
    if "skip" in head:
        return str(head["skip"])
    prepared: Prepared | None = None
    if "digest" in head:
        ex: Extracted | None = None
        raw = head.get("extracted")
        if raw is not None:
            ex = Extracted(
                base=raw["base"], links=[RawLink(h, a, bool(n)) for h, a, n in raw["links"]],
                noindex=bool(raw["noindex"]), nofollow=bool(raw["nofollow"]),
                parse_error=raw["parse_error"], feeds=list(raw["feeds"]),
                canonical=raw["canonical"], hreflang=dict(raw["hreflang"]),
            )
        fp = head.get("fingerprint")
        prepared = Prepared(str(head["digest"]), blobs[0], ex,
                            None if fp is None else TextFingerprint(int(fp[0]), int(fp[1])))
    return Ready(str(head["url"]), head["when"], int(head["status"]),
                 [(str(k), str(v)) for k, v in head["headers"]], head["failure"],
                 head["location"], bool(head["looks_html"]), head["encoding"], prepared)


# ---------------------------------------------------------------------- the worker side
def _serve(conn: Connection, parent: int, agent: str, gzip_level: int,
           max_url_length: int) -> None:
    """A worker: make each chunk's responses ready, answer in order, until the pipe ends."""
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the writer stops the import, then us
    inbox: queue.SimpleQueue[tuple[dict[str, Any], list[bytes]] | None] = queue.SimpleQueue()

    def take() -> None:  # always drained: the writer never blocks sending to a busy worker
        try:
            while "stop" not in (message := receive(conn))[0]:
                inbox.put(message)
        except (EOFError, OSError):
            pass
        inbox.put(None)

    threading.Thread(target=take, daemon=True).start()
    while (message := inbox.get()) is not None:
        head, blobs = message
        try:
            blocks = _split(blobs[0], head["sizes"])
            answers = [_answer_header(ready_response(_record_of(h, b), agent, gzip_level,
                                                     max_url_length))
                       for h, b in zip(head["records"], blocks, strict=True)]
        except Exception as exc:  # noqa: BLE001 - a bug: sent to the writer, which stops with it
            reply: tuple[dict[str, Any], list[bytes]] = (error_header(exc), [])
        else:
            members = [blob for _, got in answers for blob in got]
            reply = ({"answers": [h for h, _ in answers], "sizes": [len(m) for m in members]},
                     [b"".join(members)])
        try:
            send(conn, *reply)
        except OSError:  # the writer closed the pipe (it stopped): nobody waits for this
            break
    conn.close()


# ---------------------------------------------------------------------- the writer side
class WorkerDied(RuntimeError):
    """An import worker ended without answering (killed, or out of memory)."""


class ImportWorkers:
    """``procs`` forked workers making chunks of response records ready, answers in order.

    :meth:`submit` a chunk (it goes to the next worker in turn; a worker holds at most
    ``IN_FLIGHT``), :meth:`take` the answers of the oldest chunk submitted."""

    def __init__(self, procs: int, agent: str, gzip_level: int, max_url_length: int) -> None:
        self.procs = procs
        ctx = multiprocessing.get_context("fork")
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        for _ in range(procs):
            mine, theirs = ctx.Pipe(duplex=True)
            p = ctx.Process(target=_serve, args=(theirs, os.getpid(), agent, gzip_level,
                                                 max_url_length), daemon=True)
            p.start()
            theirs.close()
            self._conns.append(mine)
            self._procs.append(p)
        self._next = 0
        self._order: deque[int] = deque()  # worker of each chunk submitted, oldest first
        self._held = [0] * procs

    def full(self) -> bool:
        """The next worker in turn holds IN_FLIGHT chunks: take before submitting more."""
        return self._held[self._next] >= IN_FLIGHT

    def pending(self) -> int:
        return len(self._order)

    def submit(self, records: list[WarcRecord]) -> None:
        w = self._next
        blocks = [r.block or b"" for r in records]
        send(self._conns[w], {"records": [_record_header(r) for r in records],
                              "sizes": [len(b) for b in blocks]}, [b"".join(blocks)])
        self._order.append(w)
        self._held[w] += 1
        self._next = (w + 1) % self.procs

    def take(self) -> list[Ready | str]:
        w = self._order.popleft()
        self._held[w] -= 1
        try:
            head, blobs = receive(self._conns[w])
        except (EOFError, OSError):
            code = self._procs[w].exitcode
            raise WorkerDied(
                f"import worker {w} ended without answering (exit code {code})") from None
        raise_remote(head, f"import worker {w}")
        members = iter(_split(blobs[0], head["sizes"]))
        return [_ready_of(answer, [next(members)] if "digest" in answer else [])
                for answer in head["answers"]]

    def close(self, abort: bool = False) -> None:
        """End the workers: each after the chunks it holds, or at once (``abort``: the import
        stopped, and answers nobody will read must not keep a worker waiting to send them).
        A stop message, not the pipe's end: a worker forked later holds a copy of this end
        of an earlier worker's pipe."""
        for conn, p in zip(self._conns, self._procs, strict=True):
            if abort:
                p.kill()
            else:
                with contextlib.suppress(OSError):
                    send(conn, {"stop": True})
        for conn, p in zip(self._conns, self._procs, strict=True):
            p.join(timeout=None if not abort else 10)
            conn.close()
