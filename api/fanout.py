"""Remote shards: one query fanned out to other ``websift serve`` processes, answers merged.

``websift serve --shard http://HOST:PORT ...`` makes a *front server*: it holds no index and
answers ``GET /search`` and the search page by asking each *shard server* (a plain ``websift
serve`` over its own data directory or local shards) in three rounds
(``api/shard_protocol.py``, Elasticsearch's "dfs_query_then_fetch"):

1. statistics: every shard's live documents, field length sums, pages per language and df
   of the query's terms, summed here into the statistics of the whole collection (the query
   analysed as the languages of the whole collection say);
2. scoring: every shard that answered returns its top ``offset + k`` scored with those sums,
   without snippets; each shard's hits are its exact top of text + importance over every
   match (indexer/topk.py), ties by URL, so the merge by (score desc, URL) is the order one
   index over all the shards would give (URL IDs are each shard's own: a partitioned
   crawl's shards number their URLs apart);
3. snippets: only the pages of the final result page, each from the shard holding it (making a
   snippet reads and scans the page's stored text, the costliest part of a hit: asking for
   ``k`` per shard would do that work for ``shards * k`` pages to show ``k``).

A first page that found few pages, or whose rarest word is in a page or two (the summed
statistics say), is offered a spelling correction as one index over every shard would offer it
(indexer/spelling.py): each shard that answered says, per query word, the df of its term and
the terms near it with theirs (``/shard/spell``); the sums choose each word's replacement, shown
as the titles of the shard holding it most write it, else as a page of a shard holding it does
(``/shard/surfaces``, only for such terms).  A term held by fewer than MIN_DF pages in every
shard is never offered, where one index might offer it.

The search box's completions (``/suggest``) are each shard's heaviest ``KEPT`` candidates
(``/shard/complete``), their weights summed per key (indexer/completion.py ``summed``): a key
that is among no shard's heaviest is not offered, though its sum might rank it.

Importance (PageRank, OPIC, topics) is added by each shard from its own ranks generation: for
scores to compare, every shard server serves the same ranks generation (one ``websift rank``
over the whole link graph, copied to each).  Each call to a shard must answer within
``shard_timeout_ms``; a shard that fails or is late is left out of that query: the answer says
``shards: {answered, total}`` and the failure is counted by shard and reason (``/stats``).
Each call carries the shard secret (``$WEBSIFT_SHARD_TOKEN``) as a bearer token: a shard server
(``websift serve --shard-server``) answers no one else.  No
shard answering is a 503; one left out is never an error.  The front keeps no result cache: it
would not know when a shard's generation moves.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio
import httpx
from pydantic import BaseModel, ValidationError

from websift.api.errors import ApiError, InvalidParameter
from websift.api.retrieval import (
    Outcome,
    RankedHit,
    SearchRequest,
    ShardCount,
    wants_suggestion,
)
from websift.api.settings import Settings
from websift.api.shard_protocol import (
    CompleteAnswer,
    CompleteAsk,
    SearchAnswer,
    SearchAsk,
    ShardHit,
    SnippetsAnswer,
    SnippetsAsk,
    SpellAnswer,
    SpellAsk,
    Statistics,
    StatsAnswer,
    StatsAsk,
    SurfacesAnswer,
    SurfacesAsk,
)
from websift.indexer.analysis import Analyzer
from websift.indexer.completion import KEPT, completions, summed
from websift.indexer.folding import fold_text
from websift.indexer.query import parse_query
from websift.indexer.searcher import CollectionStats, Hit
from websift.indexer.spelling import Near, correct_query

log = logging.getLogger("websift.api")

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
# Connections kept open to the shards, shared by all queries (one AsyncClient per process).
KEEPALIVE_CONNECTIONS = 64
MAX_CONNECTIONS = 256


class BadShard(ApiError):
    """A ``--shard`` value that names neither a directory nor an http(s) server."""

    status = 400
    code = "bad_shard"


class ShardsUnavailable(ApiError):
    """No shard answered in time: there is nothing to show."""

    status = 503
    code = "shards_unavailable"


class ShardRefused(ApiError):
    """Every shard refused the query the same way (an unknown topic...): said as they said it."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def is_remote(shard: str) -> bool:
    return shard.lower().startswith(("http://", "https://"))


def split_shards(shards: Sequence[str]) -> tuple[list[Path], list[str]]:
    """The ``--shard`` values as (local data directories, remote base URLs); one kind only."""
    if len(set(shards)) != len(shards):
        twice = next(s for s in shards if shards.count(s) > 1)
        raise BadShard(f"--shard {twice} is given twice")
    remote = [s for s in shards if is_remote(s)]
    local = [Path(s) for s in shards if not is_remote(s)]
    if remote and local:
        raise BadShard("--shard: give data directories or URLs of 'websift serve' processes, "
                       "not both (serve the directories with their own 'websift serve' and "
                       "name its URL)")
    for url in remote:
        parts = urlsplit(url)
        if not parts.hostname or parts.query or parts.fragment or parts.path not in ("", "/"):
            raise BadShard(f"--shard {url}: expected http://HOST:PORT of a 'websift serve'")
    return local, [u.rstrip("/") for u in remote]


class ShardTokenMissing(ApiError):
    """A shard server with no shard secret, bound to an address other machines can reach."""

    code = "shard_token_missing"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a --host value) is an address of this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_shard_server(settings: Settings, front: bool) -> None:
    """Refuse a shard server that cannot be one: a front server (it holds no index), or one
    without ``$WEBSIFT_SHARD_TOKEN`` on an address other machines reach (its /shard/* calls
    would answer anyone there)."""
    if not settings.shard_server:
        return
    if front:
        raise BadShard("--shard-server: a front server (--shard URL) holds no index to serve "
                       "to another front; start the shard servers over data directories")
    token = settings.shard_token
    if (token is None or not token.get_secret_value()) and not is_loopback(settings.host):
        raise ShardTokenMissing(f"--shard-server on {settings.host} needs a shard secret: set "
                                "WEBSIFT_SHARD_TOKEN (the same on the front server), or bind "
                                "to 127.0.0.1")


@dataclass
class Failure:
    """Why one call to a shard gave nothing: a reason key, and what a 4xx answer said."""

    reason: str  # timeout, connect, transport, http_<status>, bad_answer
    status: int | None = None
    code: str = ""
    message: str = ""


@dataclass
class ShardFigures:
    """One remote shard's counters, for ``/stats``."""

    calls: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    index_generation: int | None = None
    ranks_generation: int | None = None
    answering: bool = True  # as of its last call; a change is logged once


class RemoteShard:
    """One shard server, called through the front's shared client with a deadline per call."""

    def __init__(self, url: str, client: httpx.AsyncClient, timeout_s: float,
                 headers: dict[str, str]) -> None:
        self.url = url
        self.client = client
        self.timeout_s = timeout_s
        self.headers = headers
        self.figures = ShardFigures()

    async def call(self, path: str, ask: BaseModel, answer: type[M]) -> M | Failure:
        self.figures.calls += 1
        result = await self._call(path, ask, answer)
        if isinstance(result, Failure):
            self.figures.failures[result.reason] += 1
            if self.figures.answering:
                log.warning("shard %s stopped answering (%s%s)", self.url, result.reason,
                            f": {result.message}" if result.message else "")
            self.figures.answering = False
        elif not self.figures.answering:
            log.warning("shard %s answers again", self.url)
            self.figures.answering = True
        return result

    async def _call(self, path: str, ask: BaseModel, answer: type[M]) -> M | Failure:
        try:
            with anyio.fail_after(self.timeout_s):
                response = await self.client.post(self.url + path, content=ask.model_dump_json(),
                                                  headers=self.headers)
        except (TimeoutError, httpx.TimeoutException):
            return Failure("timeout")
        except httpx.ConnectError as exc:
            return Failure("connect", message=str(exc))
        except httpx.TransportError as exc:
            return Failure("transport", message=f"{type(exc).__name__}: {exc}")
        if response.status_code != 200:
            return _http_failure(response)
        try:
            return answer.model_validate_json(response.content)
        except ValidationError as exc:
            return Failure("bad_answer", message=f"{path}: {exc.error_count()} invalid fields")


def _http_failure(response: httpx.Response) -> Failure:
    code, message = "", ""
    try:
        error = response.json().get("error") or {}
        code, message = str(error.get("code", "")), str(error.get("message", ""))
    except (ValueError, AttributeError):
        message = response.text[:200]
    return Failure(f"http_{response.status_code}", response.status_code, code, message)


async def gather_calls(calls: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run the calls concurrently; their results in order."""
    out: list[T | None] = [None] * len(calls)

    async def run(i: int) -> None:
        out[i] = await calls[i]()

    async with anyio.create_task_group() as tg:
        for i in range(len(calls)):
            tg.start_soon(run, i)
    return out  # type: ignore[return-value]  # every slot filled once the group ends


class FanOut:
    """The search engine of a front server (``api.retrieval.SearchEngine``)."""

    def __init__(self, urls: Sequence[str], settings: Settings) -> None:
        self.settings = settings
        self.analyzer = Analyzer()  # to refuse a bad query here, as a shard would
        timeout_s = settings.shard_timeout_ms / 1000.0
        self.client = httpx.AsyncClient(
            timeout=timeout_s,
            limits=httpx.Limits(max_keepalive_connections=KEEPALIVE_CONNECTIONS,
                                max_connections=MAX_CONNECTIONS))
        headers = {"content-type": "application/json"}
        token = settings.shard_token
        if token is not None and token.get_secret_value():  # the shard servers' secret
            headers["authorization"] = f"Bearer {token.get_secret_value()}"
        self.shards = [RemoteShard(u, self.client, timeout_s, headers) for u in urls]
        self.queries = 0
        self.partial = 0  # answered by some shards only
        self.unanswered = 0  # by none: a 503 or a shard's own refusal
        self.snippet_failures = 0  # shards that answered but did not send their snippets
        # pages per language over every shard, as last summed (None: not yet)
        self.langs: dict[str, int] | None = None

    async def aclose(self) -> None:
        await self.client.aclose()

    async def search(self, req: SearchRequest) -> Outcome:
        if not req.q.strip():
            raise InvalidParameter("q: the query is empty; type some words")
        parse_query(req.q, self.analyzer)  # QueryError (400) here, not a failure per shard
        started = time.perf_counter()
        self.queries += 1
        shards = list(self.shards)
        failures, parts, total = await self._statistics(req, shards)
        ask = SearchAsk(q=req.q, k=req.offset + req.k, topic=req.topic, site=req.site,
                        explain=req.explain, stats=Statistics.of(total), lang=req.lang,
                        lang_hint=req.lang_hint)
        second = await gather_calls([partial(s.call, "/shard/search", ask, SearchAnswer)
                                     for s, _ in parts])
        failures += [a for a in second if isinstance(a, Failure)]
        answers = [(s, a) for (s, _), a in zip(parts, second, strict=True)
                   if isinstance(a, SearchAnswer)]
        if not answers:
            self.unanswered += 1
            raise _no_answer(failures, len(shards), self.settings.shard_timeout_ms)
        for s, a in answers:
            s.figures.index_generation, s.figures.ranks_generation = (
                a.index_generation, a.ranks_generation)
        if len(answers) < len(shards):
            self.partial += 1
        page = merge_hits([a.hits for _, a in answers])[req.offset: req.offset + req.k]
        snippets = await self._snippets(req, page, answers) if req.snippets else {}
        head = answers[0][1]
        outcome = Outcome(
            query=req.q,
            total=sum(a.total for _, a in answers),
            took_ms=0.0,
            topic=req.topic,
            topic_weights=head.topic_weights,
            static_score=head.static_score,
            hits=[_ranked(h, snippets.get((i, h.doc_id))) for h, i in page],
            explain=head.fusion,
            shards=ShardCount(len(answers), len(shards)),
            rarest_df=min(total.df.values(), default=None),
            lang=head.lang,
            index_outdated=next((a.index_outdated for _, a in answers if a.index_outdated),
                                None),
        )
        if wants_suggestion(outcome, req):
            outcome = await self._did_you_mean(req, outcome, [s for s, _ in answers])
        return replace(outcome, took_ms=round((time.perf_counter() - started) * 1000.0, 3))

    async def _did_you_mean(self, req: SearchRequest, outcome: Outcome,
                            shards: list[RemoteShard]) -> Outcome:
        """``outcome`` of ``req`` with the spelling correction one index over ``shards`` would
        offer (the module doc); a shard that fails is left out of it."""
        ask = SpellAsk(q=outcome.query, langs=self.langs, lang=req.lang, lang_hint=req.lang_hint)
        got = await gather_calls([partial(s.call, "/shard/spell", ask, SpellAnswer)
                                  for s in shards])
        near: dict[str, Near] = {}
        # term -> (its df, the shard's place in ``shards``, how its titles write it) per shard
        holders: dict[str, list[tuple[int, int, str | None]]] = {}
        for place, answer in enumerate(got):
            if isinstance(answer, Failure):
                continue
            for w in answer.words:
                part = Near(w.df, tuple((t.term, t.edits, t.df) for t in w.terms))
                near[w.word] = near[w.word].plus(part) if w.word in near else part
                for t in w.terms:
                    holders.setdefault(t.term, []).append((t.df, place, t.surface))
        best = {w: term for w, n in near.items() if (term := n.best()) is not None}
        if not best:
            return outcome
        shown: dict[str, str] = {}
        untitled: list[str] = []
        for term in dict.fromkeys(best.values()):
            holders[term].sort(key=lambda h: (-h[0], h[1]))
            titled = next((h[2] for h in holders[term] if h[2]), None)
            if titled is not None:
                shown[term] = titled
            else:
                untitled.append(term)
        if untitled:
            shown.update(await self._surfaces(untitled, holders, shards))
        fix = correct_query(outcome.query,
                            lambda w: shown.get(best[w], best[w]) if w in best else None)
        if fix is None:
            return outcome
        unfound = all(near[fold_text(typed)].df == 0 for typed, _ in fix.words)
        return replace(outcome, did_you_mean=fix.query, corrects_unfound=unfound)

    async def complete(self, q: str, k: int) -> list[str]:
        """Up to ``k`` completions of ``q`` from the shards that answer (the module doc)."""
        ask = CompleteAsk(q=q, n=KEPT)
        got = await gather_calls([partial(s.call, "/shard/complete", ask, CompleteAnswer)
                                  for s in self.shards])
        answers = [a for a in got if not isinstance(a, Failure)]
        return completions(q, k, summed((a.whole for a in answers), KEPT),
                           summed((a.words for a in answers), KEPT))

    async def _surfaces(self, terms: list[str],
                        holders: dict[str, list[tuple[int, int, str | None]]],
                        shards: list[RemoteShard]) -> dict[str, str]:
        """How a page writes each of ``terms``: the answer of the shard holding it most
        that has one (each shard of ``shards`` asked once, for its terms)."""
        asked: dict[int, list[str]] = {}
        for term in terms:
            for _, place, _ in holders[term]:
                asked.setdefault(place, []).append(term)
        order = sorted(asked)
        got = await gather_calls([
            partial(shards[p].call, "/shard/surfaces", SurfacesAsk(terms=asked[p]),
                    SurfacesAnswer) for p in order])
        said = {p: a.surfaces for p, a in zip(order, got, strict=True)
                if not isinstance(a, Failure)}
        out: dict[str, str] = {}
        for term in terms:
            for _, place, _ in holders[term]:  # the shard holding it most first
                surface = said.get(place, {}).get(term)
                if surface:
                    out[term] = surface
                    break
        return out

    async def _statistics(self, req: SearchRequest, shards: list[RemoteShard]
                          ) -> tuple[list[Failure], list[tuple[RemoteShard, StatsAnswer]],
                                     CollectionStats]:
        """Round 1: every shard's statistics of ``req``'s query and their sums.  The query is
        analysed in the language asked, else as the whole collection's languages say (which
        languages a query may be in, and whether the language prior applies), with the
        reader's languages as a hint: the sums of the last answers, asked again
        once when the answers' sums differ (the first query, or a shard's index moved).  The
        statistics returned say the languages the shards analysed the query with."""
        for _ in range(2):
            ask = StatsAsk(q=req.q, langs=self.langs, lang=req.lang, lang_hint=req.lang_hint)
            got = await gather_calls([partial(s.call, "/shard/stats", ask, StatsAnswer)
                                      for s in shards])
            failures = [a for a in got if isinstance(a, Failure)]
            parts = [(s, a) for s, a in zip(shards, got, strict=True)
                     if isinstance(a, StatsAnswer)]
            total = CollectionStats.total([a.stats.collection_stats() for _, a in parts])
            # a shard left out: the sums lack its pages, the last whole ones stay
            if failures or total.langs is None or total.langs == ask.langs:
                break
            self.langs = dict(total.langs)
        return failures, parts, replace(total, langs=ask.langs)

    async def _snippets(self, req: SearchRequest, page: list[tuple[ShardHit, int]],
                        answers: list[tuple[RemoteShard, SearchAnswer]]
                        ) -> dict[tuple[int, int], tuple[str, list[tuple[int, int]]]]:
        """(answer index, URL ID) -> (snippet, highlights) of the pages shown, asked of the
        shards holding them; a shard that fails leaves its pages without snippets."""
        wanted: dict[int, list[int]] = {}
        for h, i in page:
            wanted.setdefault(i, []).append(h.doc_id)
        order = sorted(wanted)
        got = await gather_calls([
            partial(answers[i][0].call, "/shard/snippets",
                    SnippetsAsk(q=req.q, doc_ids=wanted[i]), SnippetsAnswer)
            for i in order])
        out: dict[tuple[int, int], tuple[str, list[tuple[int, int]]]] = {}
        for i, a in zip(order, got, strict=True):
            if isinstance(a, Failure):
                self.snippet_failures += 1
                continue
            for sn in a.snippets:
                out[(i, sn.doc_id)] = (sn.snippet, list(sn.highlights))
        return out

    def figures(self) -> dict[str, Any]:
        """Counters for ``/stats``."""
        return {
            "queries": self.queries,
            "partial": self.partial,
            "unanswered": self.unanswered,
            "snippet_failures": self.snippet_failures,
            "timeout_ms": self.settings.shard_timeout_ms,
            "shards": {s.url: {"calls": s.figures.calls, "failures": dict(s.figures.failures),
                               "answering": s.figures.answering,
                               "index_generation": s.figures.index_generation,
                               "ranks_generation": s.figures.ranks_generation}
                       for s in self.shards},
        }


def merge_hits(lists: Sequence[Sequence[ShardHit]]) -> list[tuple[ShardHit, int]]:
    """Every shard's hits (with the index of its list) in the order one index over all the
    shards gives: score descending, ties by URL (URL IDs differ between shards); a URL two
    shards hold is shown once, at its better place."""
    merged = sorted(((h, i) for i, hits in enumerate(lists) for h in hits),
                    key=lambda hi: (-hi[0].score, hi[0].url, hi[1]))
    seen: set[str] = set()
    out: list[tuple[ShardHit, int]] = []
    for h, i in merged:
        if h.url not in seen:
            seen.add(h.url)
            out.append((h, i))
    return out


def _ranked(h: ShardHit, snippet: tuple[str, list[tuple[int, int]]] | None) -> RankedHit:
    text, spans = snippet if snippet is not None else ("", [])
    hit = Hit(doc_id=h.doc_id, url=h.url, title=h.title, snippet=text, highlights=spans,
              score=h.score, text_score=h.text, prior_score=h.prior, explain=h.explain,
              fragment=h.fragment, fetched=h.fetched, lang=h.lang)
    return RankedHit(hit=hit, pagerank=h.pagerank, opic=h.opic, topic=h.topic, prior=h.prior)


def _no_answer(failures: list[Failure], total: int, timeout_ms: int) -> ApiError:
    """The error when no shard answered: a refusal they all gave (4xx), else a 503."""
    refusals = [f for f in failures if f.status is not None and 400 <= f.status < 500]
    if refusals and len(refusals) == len(failures):
        f = refusals[0]
        return ShardRefused(f.status or 400, f.code or "bad_request", f.message)
    reasons = Counter(f.reason for f in failures)
    said = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
    return ShardsUnavailable(f"no shard answered (of {total}, within {timeout_ms} ms a call: "
                             f"{said})")
