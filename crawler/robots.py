"""robots.txt decisions, exactly per RFC 9309 (the Robots Exclusion Protocol).

Question: may the agent ``websift`` fetch this URL, and which line of robots.txt says so?

- ``RobotsPolicy.from_response(status, body)`` applies the access results of RFC 9309 2.3.1:
  2xx is parsed (only the first ``MAX_ROBOTS_BYTES``, 2.5); 4xx means everything is allowed
  (2.3.1.3); 5xx or no answer at all means everything is disallowed for now (2.3.1.4).
  Redirects (3xx, 2.3.1.2) are the caller's job: the fetcher follows up to five of them, even
  across hosts, and hands the final status here.  A 3xx that still reaches this function (more
  than five redirects, or one without a Location) counts as "unavailable": all allowed.
- ``decide(agent, url)`` picks the groups that name the agent's product token (2.2.1, case
  insensitive, several such groups merged), else the ``*`` groups, and applies the longest
  matching rule; an Allow wins a tie (2.2.2); ``*`` and a final ``$`` are wildcards (2.2.3).

Matching is on the canonical form of both sides:

- percent-escapes get upper-case hex digits (``%e3`` and ``%E3`` are one octet);
- in a rule, octets that cannot stand raw in a URI (non-ASCII, controls, space) are
  percent-encoded from their UTF-8 bytes, so ``Allow: /ツ`` matches ``/%E3%83%84`` (2.2.2);
- a literal ``*`` or ``$`` in the URL is compared as ``%2A`` / ``%24``, so that the
  encoded rule ``/file-%2A.html`` matches ``/file-*.html`` (2.2.3);
- escapes of unreserved characters are *not* decoded and raw non-ASCII in the URL is *not*
  encoded: the URL is taken as the URI it is on the wire (Scrapy's ``Request.url`` is already
  encoded).  This is what Google's reference matcher does and what the ID_Encoding conformance
  vectors expect (``Allow: /%62%61%7A`` does not allow ``/baz``; a raw ``/ツ`` in the URL does
  not match ``Allow: /ツ``).  ``websift robots`` encodes a typed IRI before asking.

Parsing follows the RFC's ABNF where a line fits it and recovers the rest the way Google's
reference parser does where the RFC leaves room (2.3.1.5: parse every line you can):
a UTF-8 BOM is skipped; CR, LF and CRLF all end a line; keys are case-insensitive; a line with
no colon but exactly two words ("Disallow /x") is read as key and value; a user-agent value is
cut to its product token ("FOO BAR" names ``foo``, "Googlebot/2.1" names ``googlebot``); only an
Allow/Disallow line closes the run of user-agent lines that starts a group, so Sitemap,
Crawl-delay and unknown lines never split or end a group (2.2.4); rules before the first
user-agent line are ignored (2.2.2); empty rule values match nothing.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from urllib.parse import quote

from websift.core.cache import Cache

# RFC 9309 2.5: a crawler must parse at least 500 KiB of robots.txt.
MAX_ROBOTS_BYTES = 500 * 1024
# A longer line is cut to this many octets (Google's reference parser keeps 8 x 2,083 - 1:
# eight times the longest URL browsers accept).  Only absurd lines are affected.
MAX_ROBOTS_LINE_BYTES = 2083 * 8 - 1

ROBOTS_PATH = "/robots.txt"
# Agents whose merged rules one policy remembers (a crawl asks for one; a caller could ask for
# any number, so bounded).
RULESETS_CACHED = 8

_BOM = b"\xef\xbb\xbf"
_NEWLINE = re.compile(rb"\r\n|\r|\n")
_TOKEN = re.compile(r"[A-Za-z_-]*")
_WORD_SPLIT = re.compile(r"[ \t]+")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_SCHEME_AUTHORITY = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:)?//[^/?]*")
# Characters a rule keeps as written: printable ASCII (quote() encodes the rest from UTF-8).
_RULE_SAFE = "".join(chr(c) for c in range(0x21, 0x7F))

REASON_LONGEST = "longest matching rule"
REASON_TIE = "longest matching rules tie: Allow wins"
REASON_NO_RULE = "no rule matches"
REASON_NO_GROUP = "no group names this agent and there is no * group: all allowed"
REASON_ROBOTS_TXT = "/robots.txt is always allowed"


@dataclass(frozen=True)
class RobotsDecision:
    """Whether a URL may be fetched, and the line of robots.txt (or the status) that decided."""

    allowed: bool
    rule: str | None  # the deciding line as written, e.g. "Disallow: /private/"
    line: int | None  # its 1-based line number in robots.txt
    reason: str


@dataclass(frozen=True)
class _Rule:
    """One Allow/Disallow line, compiled to a matcher (RFC 9309 2.2.2 and 2.2.3)."""

    allow: bool
    pattern: str  # canonical form, wildcards kept
    text: str  # the line as written
    line: int
    literal: str | None  # the whole pattern when it has no wildcard: a prefix test suffices
    parts: tuple[str, ...]  # the pattern split at '*'
    anchored: bool  # ends with '$': the path must end where the pattern ends

    def matches(self, path: str) -> bool:
        if self.literal is not None:
            return path.startswith(self.literal)
        return _glob_match(self.parts, self.anchored, path)


def _glob_match(parts: tuple[str, ...], anchored: bool, path: str) -> bool:
    """Match ``parts[0]*parts[1]*...`` from the start of path, greedily (no backtracking).

    Taking the leftmost occurrence of each middle part is optimal for a pattern whose only
    wildcard is ``*``, so this runs in linear time whatever robots.txt contains.
    """
    first, last = parts[0], parts[-1]
    if not path.startswith(first):
        return False
    pos = len(first)
    if len(parts) == 1:  # anchored literal: "/exact$"
        return pos == len(path) or not anchored
    for part in parts[1:-1]:
        found = path.find(part, pos)
        if found < 0:
            return False
        pos = found + len(part)
    if anchored:
        return len(path) - pos >= len(last) and path.endswith(last)
    return path.find(last, pos) >= 0


def _upper_escapes(text: str) -> str:
    if "%" not in text:
        return text
    return _ESCAPE.sub(lambda m: "%" + m.group(1).upper(), text)


def _compile_rule(allow: bool, value: str, text: str, line: int) -> _Rule:
    anchored = value.endswith("$")
    body = value[:-1] if anchored else value
    # Octets that cannot stand raw in a URI are encoded from UTF-8 (2.2.2); the surrogates of
    # undecodable bytes turn back into those bytes.
    body = quote(body.encode("utf-8", "surrogateescape"), safe=_RULE_SAFE)
    body = _upper_escapes(body).replace("$", "%24")  # a '$' before the end is literal
    body = re.sub(r"\*+", "*", body)
    pattern = body + ("$" if anchored else "")
    parts = tuple(body.split("*"))
    literal = body if len(parts) == 1 and not anchored else None
    return _Rule(allow, pattern, text, line, literal, parts, anchored)


def request_path(url: str) -> str:
    """The part of a URL that rules are matched against: path, params and query, canonical.

    Accepts an absolute URL, a scheme-relative ``//host/...`` or a path; never raises.
    """
    url = url.split("#", 1)[0]
    authority = _SCHEME_AUTHORITY.match(url)
    path = url[authority.end() :] if authority else url
    if not path.startswith("/"):
        path = "/" + path
    path = _upper_escapes(path)
    if "*" in path or "$" in path:
        path = path.replace("*", "%2A").replace("$", "%24")
    return path


def product_token(value: str) -> str:
    """The product token a user-agent line names: ``*``, or its leading run of [A-Za-z_-]."""
    if value == "*" or value.startswith(("* ", "*\t")):
        return "*"
    match = _TOKEN.match(value)
    return match.group(0).lower() if match else ""


@dataclass
class _Group:
    agents: list[str] = field(default_factory=list)
    rules: list[_Rule] = field(default_factory=list)
    crawl_delay: float | None = None


@dataclass(frozen=True)
class _Ruleset:
    """The merged rules one agent obeys, indexed by the literal text each rule starts with.

    Every rule can only match a path that begins with its leading literal (the pattern up to
    the first ``*``), so ``decide`` looks up the path's prefixes of the few lengths that occur
    instead of trying every rule: a few dict probes per URL however long robots.txt is.
    """

    by_prefix: dict[str, tuple[_Rule, ...]]
    prefix_lengths: tuple[int, ...]  # ascending
    crawl_delay: float | None
    has_group: bool

    @classmethod
    def build(cls, rules: list[_Rule], crawl_delay: float | None, has_group: bool) -> _Ruleset:
        by_prefix: dict[str, list[_Rule]] = {}
        for rule in rules:
            by_prefix.setdefault(rule.parts[0], []).append(rule)
        lengths = tuple(sorted({len(prefix) for prefix in by_prefix}))
        frozen = {prefix: tuple(group) for prefix, group in by_prefix.items()}
        return cls(frozen, lengths, crawl_delay, has_group)

    def best(self, path: str) -> tuple[_Rule | None, _Rule | None]:
        """The longest matching Allow and the longest matching Disallow (first line on a tie)."""
        best_allow: _Rule | None = None
        best_disallow: _Rule | None = None
        for length in self.prefix_lengths:
            if length > len(path):
                break
            for rule in self.by_prefix.get(path[:length], ()):
                current = best_allow if rule.allow else best_disallow
                if current is not None and (
                    len(current.pattern),
                    -current.line,
                ) >= (len(rule.pattern), -rule.line):
                    continue
                if rule.matches(path):
                    if rule.allow:
                        best_allow = rule
                    else:
                        best_disallow = rule
        return best_allow, best_disallow


def _split_line(raw: str) -> tuple[str, str] | None:
    """Key (lower case) and value of one line without its comment, or None when it has none."""
    line = raw.split("#", 1)[0].strip()
    if not line:
        return None
    key, colon, value = line.partition(":")
    if not colon:
        # No colon: accept "key value" when the line is exactly two words, as Google does.
        words = _WORD_SPLIT.split(line)
        if len(words) != 2:
            return None
        key, value = words
    return key.strip().lower(), value.strip()


class RobotsPolicy:
    """What one robots.txt (or its absence) allows, for any agent and URL."""

    def __init__(
        self,
        groups: list[_Group],
        sitemaps: list[str],
        *,
        blanket: RobotsDecision | None = None,
        skipped: list[tuple[int, str]] | None = None,
    ) -> None:
        self._groups = groups
        self._sitemaps = sitemaps
        self._blanket = blanket  # set when a status decided for every URL
        self.skipped: list[tuple[int, str]] = skipped or []  # (line, why) for ignored lines
        self._rulesets: Cache[str, _Ruleset] = Cache(RULESETS_CACHED)  # agent -> its rules

    # --- construction -------------------------------------------------------------------

    @classmethod
    def from_response(cls, status: int | None, body: bytes | None) -> RobotsPolicy:
        """The policy an HTTP answer for /robots.txt implies (RFC 9309 2.3.1).

        ``status`` is the final status after the caller followed up to five redirects; None or
        0 means no answer (DNS, connection, timeout).
        """
        if status is not None and 200 <= status < 300:
            return cls.parse(body or b"")
        if status is not None and 400 <= status < 500:
            return cls._everything(True, f"robots.txt answered {status}: all allowed")
        if status is not None and 300 <= status < 400:
            return cls._everything(
                True, f"robots.txt answered {status} after the redirects followed: all allowed"
            )
        if status is not None and 500 <= status < 600:
            why = f"robots.txt answered {status}: site disallowed for now"
        elif status:
            why = f"robots.txt answered an invalid status {status}: site disallowed for now"
        else:
            why = "robots.txt unreachable: site disallowed for now"
        return cls._everything(False, why)

    @classmethod
    def _everything(cls, allowed: bool, reason: str) -> RobotsPolicy:
        return cls([], [], blanket=RobotsDecision(allowed, None, None, reason))

    @classmethod
    def parse(cls, body: bytes | str) -> RobotsPolicy:  # noqa: C901 - RFC 9309's line grammar in one pass, as the RFC reads
        """Parse robots.txt content; only the first ``MAX_ROBOTS_BYTES`` count (2.5)."""
        data = body.encode("utf-8", "surrogateescape") if isinstance(body, str) else body
        if len(data) >= MAX_ROBOTS_BYTES:  # maybe cut by the fetcher: drop a partial line
            data = data[:MAX_ROBOTS_BYTES]
            cut = max(data.rfind(b"\n"), data.rfind(b"\r"))
            data = data[: cut + 1]  # a line cut in half could widen an Allow: drop it
        if data.startswith(_BOM):
            data = data[len(_BOM) :]
        groups: list[_Group] = []
        sitemaps: list[str] = []
        skipped: list[tuple[int, str]] = []
        current: _Group | None = None
        in_agent_run = False  # the last user-agent-or-rule line was a user-agent line
        for number, raw_bytes in enumerate(_NEWLINE.split(data), start=1):
            raw = raw_bytes[:MAX_ROBOTS_LINE_BYTES].decode("utf-8", "surrogateescape")
            parsed = _split_line(raw)
            if parsed is None:
                if raw.split("#", 1)[0].strip():
                    skipped.append((number, "neither key: value nor two words"))
                continue
            key, value = parsed
            text = raw.strip()
            if key == "user-agent":
                if current is None or not in_agent_run:
                    current = _Group()
                    groups.append(current)
                in_agent_run = True
                token = product_token(value)
                if token:
                    current.agents.append(token)
                else:
                    skipped.append((number, "user-agent value is no product token"))
            elif key in ("allow", "disallow"):
                in_agent_run = False
                if current is None:
                    skipped.append((number, "rule before any user-agent line"))
                elif value:
                    current.rules.append(_compile_rule(key == "allow", value, text, number))
            elif key == "crawl-delay":
                delay = _parse_delay(value)
                if current is None or delay is None:
                    skipped.append((number, "crawl-delay outside a group or not a number"))
                else:
                    current.crawl_delay = max(delay, current.crawl_delay or 0.0)
            elif key in ("sitemap", "site-map"):
                if value and value not in sitemaps:
                    sitemaps.append(value)
            else:
                skipped.append((number, f"unknown key {key!r}"))
        return cls(groups, sitemaps, skipped=skipped)

    # --- questions ------------------------------------------------------------------------

    def decide(self, agent: str, url: str) -> RobotsDecision:
        """May ``agent`` (a product token) fetch ``url`` (absolute, or path and query)?"""
        path = request_path(url)
        if path == ROBOTS_PATH:  # 2.2.2: "/robots.txt" is implicitly allowed
            return RobotsDecision(True, None, None, REASON_ROBOTS_TXT)
        if self._blanket is not None:
            return self._blanket
        ruleset = self._ruleset(agent)
        if not ruleset.has_group:
            return RobotsDecision(True, None, None, REASON_NO_GROUP)
        best_allow, best_disallow = ruleset.best(path)
        if best_allow is None and best_disallow is None:
            return RobotsDecision(True, None, None, REASON_NO_RULE)
        # 2.2.2: the most octets win; an Allow wins a tie with a Disallow.
        allow_length = len(best_allow.pattern) if best_allow else -1
        disallow_length = len(best_disallow.pattern) if best_disallow else -1
        if best_allow is not None and allow_length >= disallow_length:
            reason = REASON_TIE if allow_length == disallow_length else REASON_LONGEST
            return RobotsDecision(True, best_allow.text, best_allow.line, reason)
        assert best_disallow is not None
        return RobotsDecision(False, best_disallow.text, best_disallow.line, REASON_LONGEST)

    def crawl_delay(self, agent: str) -> float | None:
        """Crawl-delay of the agent's group (the largest, when merged groups give several)."""
        if self._blanket is not None:
            return None
        return self._ruleset(agent).crawl_delay

    def sitemaps(self) -> list[str]:
        """Sitemap URLs named anywhere in the file, in order, without repeats."""
        return list(self._sitemaps)

    @property
    def blanket(self) -> RobotsDecision | None:
        """The decision for every URL when the status, not a file, decided (else None)."""
        return self._blanket

    def _ruleset(self, agent: str) -> _Ruleset:
        key = agent.strip().lower()
        return self._rulesets.get_or_make(key, lambda: self._merge(key))

    def _merge(self, key: str) -> _Ruleset:
        chosen = [g for g in self._groups if key and key != "*" and key in g.agents]
        if not chosen:  # 2.2.1: no group names the agent -> the "*" groups, merged
            chosen = [g for g in self._groups if "*" in g.agents]
        rules = [rule for group in chosen for rule in group.rules]
        delays = [g.crawl_delay for g in chosen if g.crawl_delay is not None]
        return _Ruleset.build(rules, max(delays) if delays else None, bool(chosen))


def _parse_delay(value: str) -> float | None:
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if math.isfinite(delay) and delay >= 0 else None
