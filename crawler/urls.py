"""URL canonicalisation: one spelling per resource, so the crawl store holds each page once.

Every link of every page goes through :func:`canonicalize`, so it is written for speed: a URL that
is already canonical (the common case) costs a handful of string operations and no regex
substitution.

What it does, in order (RFC 3986 section 6.2.2 "syntax-based normalisation", with the WHATWG URL
Standard's leniency where browsers and real pages need it):

1. strip leading/trailing spaces and C0 controls; drop tab, CR and LF anywhere (WHATWG);
2. resolve against ``base`` (RFC 3986 section 5.2.2, non-strict: ``http:foo`` against an http base
   is relative, as in browsers); ``\\`` counts as ``/`` before the query (WHATWG, special schemes);
3. only ``http`` and ``https`` are accepted; scheme and host are lower-cased;
4. userinfo (``user:pass@``) is dropped: the host is what follows the *last* ``@``, which is the
   host a browser would contact, so ``http://good.example@evil.example/`` is ``evil.example``;
   credentials never land in the store;
5. the host is percent-decoded and mapped with IDNA (UTS #46, non-transitional, as browsers do);
   numeric IPv4 spellings (``2130706433``, ``0x7f.1``, ``0177.0.0.1``) become dotted quads, so
   the scope's address checks and the store see one spelling; IPv6 literals are compressed;
6. default ports (80 for http, 443 for https) are dropped;
7. the fragment is dropped;
8. percent-encoding is normalised in path and query: escapes of unreserved characters are
   decoded, the rest upper-cased, and characters that must be escaped (space, controls,
   non-ASCII as UTF-8, ``"<>`` ...) are escaped; a ``%`` that starts no escape becomes ``%25``;
9. dot segments are removed (RFC 3986 section 5.2.4), ``%2e`` included, after step 8; an empty
   path becomes ``/``; an empty query (a bare ``?``) is dropped; query order is kept.

The result is idempotent: ``canonicalize(canonicalize(u)) == canonicalize(u)``.  Anything that
cannot be made into an http(s) URL raises :class:`UrlError` (and nothing else).
"""

from __future__ import annotations

import ipaddress
import re

import idna

from websift.crawler.errors import ScopeError

SCHEMES = {"http": 80, "https": 443}  # accepted schemes and their default ports

# Characters left as they are (RFC 3986 section 3.3 pchar and section 3.4 query).
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PATH_SAFE = r"A-Za-z0-9\-._~!$&'()*+,;=:@/"
_QUERY_SAFE = _PATH_SAFE + "?"

_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_STRIP = "".join(chr(c) for c in range(0x21))  # C0 controls and space
_TAB_NL_RE = re.compile(r"[\t\n\r]")
# One pass over a component: an escape, a run of characters needing escaping, or a stray '%'.
_PATH_WORK_RE = re.compile(rf"%([0-9A-Fa-f]{{2}})|([^{_PATH_SAFE}%]+)|%")
_QUERY_WORK_RE = re.compile(rf"%([0-9A-Fa-f]{{2}})|([^{_QUERY_SAFE}%]+)|%")
_PATH_CLEAN_RE = re.compile(rf"[^{_PATH_SAFE}]")
_QUERY_CLEAN_RE = re.compile(rf"[^{_QUERY_SAFE}]")
_HOST_OK_RE = re.compile(r"[a-z0-9_\-]+(?:\.[a-z0-9_\-]+)*\.?")
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_DOTTED_QUAD_RE = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")
_IPV4_PART_RE = re.compile(r"0[xX][0-9A-Fa-f]*|[0-9]+")
_HEX = [f"%{b:02X}" for b in range(256)]
# A URL that is already canonical but for a fragment, without '%' (checked further in
# _already_canonical): the common case, answered with one match.
_CANONICAL_RE = re.compile(
    r"(https?)://([a-z0-9_\-]+(?:\.[a-z0-9_\-]+)*\.?)(?::([1-9][0-9]{0,4}))?"
    rf"(/[{_PATH_SAFE}]*)(?:\?([{_QUERY_SAFE}]+))?(#.*)?",
    re.DOTALL,
)
_MAX_PORT = 65535


class UrlError(ScopeError):
    """A string that cannot be made into an http(s) URL; the message says what is wrong."""


def _short(text: str, limit: int = 80) -> str:
    """A URL as quoted in an error message: ``repr`` and cut to a readable length."""
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


# --------------------------------------------------------------------------- percent-encoding
def _fix_escape(match: re.Match[str]) -> str:
    hexpair = match.group(1)
    if hexpair is not None:
        char = chr(int(hexpair, 16))
        return char if char in _UNRESERVED else "%" + hexpair.upper()
    run = match.group(2)
    if run is not None:
        try:
            data = run.encode("utf-8")
        except UnicodeEncodeError:
            raise UrlError(f"URL contains a lone surrogate character: {_short(run)}") from None
        return "".join([_HEX[b] for b in data])
    return "%25"  # a '%' that starts no escape


def _normalize_path(path: str) -> str:
    """Percent-encoding normalised (RFC 3986 section 6.2.2.2), then dot segments removed."""
    if "%" in path or _PATH_CLEAN_RE.search(path) is not None:
        path = _PATH_WORK_RE.sub(_fix_escape, path)
    if not path:
        return "/"
    if path[0] != "/":  # only a merged relative path can lack the slash; RFC 3986 5.2.3
        path = "/" + path
    if "/." in path:
        path = remove_dot_segments(path)
    return path


def _normalize_query(query: str) -> str:
    if "%" in query or _QUERY_CLEAN_RE.search(query) is not None:
        query = _QUERY_WORK_RE.sub(_fix_escape, query)
    return query


def remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4 for an absolute path (one that starts with ``/``)."""
    segments = path.split("/")
    # segments[0] is the empty string before the leading slash.
    out: list[str] = []
    last = len(segments) - 1
    for i in range(1, last + 1):
        seg = segments[i]
        if seg == ".":
            if i == last:
                out.append("")
        elif seg == "..":
            if out:
                out.pop()
            if i == last:
                out.append("")
        else:
            out.append(seg)
    return "/" + "/".join(out)


# --------------------------------------------------------------------------- host
def _parse_ipv4_number(part: str, whole: str) -> int:
    if _IPV4_PART_RE.fullmatch(part) is None:
        raise UrlError(f"bad IPv4 address {whole!r}")
    if part[:2] in ("0x", "0X"):
        digits, radix = part[2:], 16
    elif len(part) > 1 and part[0] == "0":
        digits, radix = part[1:], 8
    else:
        digits, radix = part, 10
    digits = digits.lstrip("0")
    if len(digits) > 12:  # far beyond 2**32 in any radix; also keeps int() away from huge strings
        raise UrlError(f"IPv4 address {whole!r} is out of range")
    try:
        return int(digits, radix) if digits else 0
    except ValueError:  # an '8' or '9' in an octal part
        raise UrlError(f"bad IPv4 address {whole!r}") from None


def _parse_ipv4(host: str) -> str:
    """WHATWG IPv4 parser: 1 to 4 parts, each decimal, 0x-hex or 0-octal; the last fills the rest."""
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if len(parts) > 4 or "" in parts:
        raise UrlError(f"bad IPv4 address {host!r}")
    numbers = [_parse_ipv4_number(p, host) for p in parts]
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        raise UrlError(f"IPv4 address {host!r} is out of range")
    value = numbers[-1]
    for i, n in enumerate(numbers[:-1]):
        value += n << (8 * (3 - i))
    return str(ipaddress.IPv4Address(value))


def _ends_in_number(host: str) -> bool:
    """WHATWG "ends in a number": the last label (ignoring one trailing dot) is numeric."""
    last = host[:-1] if host.endswith(".") else host
    last = last.rpartition(".")[2]
    if not last:
        return False
    if last.isdigit() and last.isascii():
        return True
    return last[:2] in ("0x", "0X") and all(c in "0123456789abcdefABCDEF" for c in last[2:])


def _percent_decode_host(host: str) -> str:
    raw = bytearray()
    i, n = 0, len(host)
    while i < n:
        c = host[i]
        if c == "%" and i + 2 < n and _is_hex(host[i + 1 : i + 3]):
            raw.append(int(host[i + 1 : i + 3], 16))
            i += 3
            continue
        try:
            raw += c.encode("utf-8")
        except UnicodeEncodeError:
            raise UrlError(f"host contains a lone surrogate character: {_short(host)}") from None
        i += 1
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UrlError(f"host {_short(host)} does not percent-decode to UTF-8") from None


def _is_hex(pair: str) -> bool:
    return len(pair) == 2 and all(c in "0123456789abcdefABCDEF" for c in pair)


def normalize_host(host: str) -> str:
    """The canonical spelling of a host (no port): lower case, IDNA, dotted-quad IPv4, [IPv6]."""
    if not host:
        raise UrlError("URL has no host")
    if host[0] == "[":
        if host[-1] != "]":
            raise UrlError(f"bad IPv6 address {_short(host)}")
        literal = host[1:-1]
        if "%" in literal:
            raise UrlError(f"IPv6 zone identifiers are not allowed in URLs: {_short(host)}")
        try:
            return f"[{ipaddress.IPv6Address(literal).compressed}]"
        except ValueError:
            raise UrlError(f"bad IPv6 address {_short(host)}") from None
    if "%" in host:
        host = _percent_decode_host(host)
    if host.isascii():
        host = host.lower()
    else:
        try:
            host = idna.encode(host, uts46=True, transitional=False).decode("ascii")
        except (idna.IDNAError, UnicodeError, ValueError, IndexError):
            raise UrlError(f"host {_short(host)} is not a valid internationalised name") from None
    if _DOTTED_QUAD_RE.fullmatch(host) is not None:
        return host
    if _ends_in_number(host):
        return _parse_ipv4(host)
    if _HOST_OK_RE.fullmatch(host) is None:
        raise UrlError(f"host {_short(host)} is not a valid host name")
    return host


def _split_hostport(hostport: str, scheme: str, url: str) -> str:
    """``host[:port]`` normalised, the default port dropped; userinfo already removed."""
    if hostport.startswith("["):
        close = hostport.find("]")
        if close < 0:
            raise UrlError(f"unclosed IPv6 bracket in {_short(url)}")
        host, rest = hostport[: close + 1], hostport[close + 1 :]
        if rest and rest[0] != ":":
            raise UrlError(f"junk after IPv6 address in {_short(url)}")
        port = rest[1:]
    else:
        host, _, port = hostport.partition(":")
        if ":" in port:
            raise UrlError(f"host {_short(hostport)} has more than one ':' (IPv6 needs brackets)")
    host = normalize_host(host)
    if not port:
        return host
    if not (port.isdigit() and port.isascii()) or len(port.lstrip("0")) > 5:
        raise UrlError(f"bad port {port!r} in {_short(url)}")
    number = int(port)
    if number > _MAX_PORT:
        raise UrlError(f"port {number} is out of range in {_short(url)}")
    if number == SCHEMES[scheme]:
        return host
    return f"{host}:{number}"


# --------------------------------------------------------------------------- parsing
def _clean(url: str) -> str:
    url = url.strip(_STRIP)
    if "\t" in url or "\n" in url or "\r" in url:
        url = _TAB_NL_RE.sub("", url)
    return url


def _split_rest(rest: str) -> tuple[str, str | None]:
    """Cut the fragment, split off the query; backslashes before the query become slashes."""
    hash_at = rest.find("#")
    if hash_at >= 0:
        rest = rest[:hash_at]
    before, sep, query = rest.partition("?")
    if "\\" in before:
        before = before.replace("\\", "/")
    return before, (query if sep else None)


def _absolute(scheme: str, rest: str, url: str) -> tuple[str, str, str, str | None]:
    """``rest`` is what follows ``scheme:`` of an absolute URL; WHATWG ignores extra slashes."""
    before, query = _split_rest(rest)
    before = before.lstrip("/")
    slash = before.find("/")
    if slash < 0:
        authority, path = before, ""
    else:
        authority, path = before[:slash], before[slash:]
    hostport = authority.rpartition("@")[2]
    if not hostport:
        raise UrlError(f"URL has no host: {_short(url)}")
    return scheme, _split_hostport(hostport, scheme, url), path, query


def _parts(url: str, base: str | None) -> tuple[str, str, str, str | None]:
    """(scheme, canonical host[:port], raw path, raw query or None) of the resolved URL."""
    m = _SCHEME_RE.match(url)
    if m is not None:
        scheme = m.group(1).lower()
        rest = url[m.end() :]
        if scheme not in SCHEMES:
            raise UrlError(f"unsupported scheme {scheme!r} (only http and https): {_short(url)}")
        if base is None or rest[:2].replace("\\", "/") == "//":
            return _absolute(scheme, rest, url)
        parsed_base = _base_parts(base)
        if parsed_base[0] != scheme:
            return _absolute(scheme, rest, url)
        # WHATWG: "http:foo" or "http:/foo" against an http base is relative to it.
        return _resolve(parsed_base, rest, url)
    if base is None:
        raise UrlError(f"relative URL {_short(url)} needs a base URL")
    return _resolve(_base_parts(base), url, url)


def _already_canonical(m: re.Match[str]) -> bool:
    """Whether a :data:`_CANONICAL_RE` match is a URL :func:`canonicalize` returns unchanged."""
    scheme, host, port, path = m.group(1, 2, 3, 4)
    if "/." in path:
        return False
    if port is not None and (int(port) > _MAX_PORT or int(port) == SCHEMES[scheme]):
        return False
    last = host[:-1] if host.endswith(".") else host
    last = last.rpartition(".")[2]
    if last[:1].isdigit():  # maybe an IPv4 spelling: only the dotted quad is canonical
        return _DOTTED_QUAD_RE.fullmatch(host) is not None
    return True


def _base_parts(base: str) -> tuple[str, str, str, str | None]:
    m = _CANONICAL_RE.fullmatch(base)
    if m is not None and _already_canonical(m):
        scheme, host, port, path, query, _ = m.groups()
        return scheme, (host if port is None else f"{host}:{port}"), path, query
    try:
        scheme, hostport, path, query = _parts(_clean(base), None)
    except UrlError as exc:
        raise UrlError(f"bad base URL: {exc}") from None
    return scheme, hostport, _normalize_path(path), query


def _resolve(
    base: tuple[str, str, str, str | None], ref: str, url: str
) -> tuple[str, str, str, str | None]:
    """RFC 3986 section 5.2.2 for a reference without a scheme (or a same-scheme one)."""
    scheme, host, bpath, bquery = base
    path, query = _split_rest(ref)
    if path.startswith("//"):  # network-path reference: a new authority
        return _absolute(scheme, ref, url)
    if not path:
        return scheme, host, bpath, (bquery if query is None else query)
    if path[0] == "/":
        return scheme, host, path, query
    # RFC 3986 section 5.2.3: merge with the base path up to its last slash.
    return scheme, host, bpath[: bpath.rfind("/") + 1] + path, query


# --------------------------------------------------------------------------- public
def canonicalize(url: str, base: str | None = None) -> str:
    """The canonical form of ``url`` (resolved against ``base`` if relative); see the module doc.

    Raises :class:`UrlError` for anything that is not an http(s) URL, and for nothing else.
    """
    if not isinstance(url, str):
        raise UrlError(f"URL must be text, not {type(url).__name__}")
    m = _CANONICAL_RE.fullmatch(url)
    if m is not None and _already_canonical(m):
        return url if m.start(6) < 0 else url[: m.start(6)]
    return canonicalize_full(url, base)


def canonicalize_full(url: str, base: str | None = None) -> str:
    """:func:`canonicalize` without the already-canonical shortcut (the tests compare them)."""
    scheme, hostport, path, query = _parts(_clean(url), base)
    path = _normalize_path(path)
    if query:
        return f"{scheme}://{hostport}{path}?{_normalize_query(query)}"
    return f"{scheme}://{hostport}{path}"


def host_of(url: str) -> str:
    """The lower-case host of a URL, without port (IPv6 without brackets, ready for DNS)."""
    _, sep, rest = url.partition("://")
    if not sep:
        raise UrlError(f"not an absolute URL: {_short(url)}")
    end = len(rest)
    for ch in "/?#":
        at = rest.find(ch)
        if 0 <= at < end:
            end = at
    authority = rest[:end].rpartition("@")[2]
    if authority.startswith("["):
        return authority[1 : authority.find("]")].lower()
    return authority.partition(":")[0].lower()


def port_of(url: str) -> int:
    """The port a canonical URL connects to (explicit, else the scheme's default)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        raise UrlError(f"not an http(s) URL: {_short(url)}")
    authority = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].rpartition("@")[2]
    if authority.startswith("["):
        authority = authority[authority.find("]") + 1 :]
    _, colon, port = authority.rpartition(":")
    if colon and port.isdigit():
        return int(port)
    return SCHEMES[scheme.lower()]
