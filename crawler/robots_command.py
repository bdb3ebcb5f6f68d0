"""``websift robots URL``: may websift fetch this URL, and which line of robots.txt says so.

Without ``--robots-file`` the site's ``<origin>/robots.txt`` is fetched over HTTP with a plain
stdlib client (``fetch_robots``), and its status and body go through the same
``RobotsPolicy.from_response`` the crawler uses, so the command answers as the crawler would.

It goes only where a crawl would: every address of each host it is about to contact (the URL's
and each redirect's) is judged by the crawler's own :class:`~crawler.addresses.AddressRules`
(``--allow-private``, ``--allow-ip``, ``--deny-ip``), and the connection goes to the address
judged, not to a second lookup.  A URL into private space is refused with one line; a redirect
into it ends the fetch as unreachable (so: disallowed).  Each request, connecting included, has
the crawler's ``DOWNLOAD_TIMEOUT`` in all, so a server trickling bytes cannot hold it longer.
"""

from __future__ import annotations

import argparse
import http.client
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urljoin, urlsplit

from websift.core.errors import WebsiftError
from websift.crawler import settings
from websift.crawler.addresses import AddressRules
from websift.crawler.checked_get import (
    AddressRefused,
    checked_address,
    describe_fetch_error,
    get_at_address,
)
from websift.crawler.robots import MAX_ROBOTS_BYTES, ROBOTS_PATH, RobotsPolicy

ROBOTS_MAX_REDIRECTS = 5  # RFC 9309 2.3.1.2: follow at least five consecutive redirects
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_PRODUCT_TOKEN = re.compile(r"[A-Za-z_-]+")
# Characters left as typed when a URL given on the command line is made a URI: the printable
# ASCII ones (an IRI's non-ASCII characters and spaces get encoded from UTF-8, as a browser does).
_URI_SAFE = "".join(chr(c) for c in range(0x21, 0x7F))

log = logging.getLogger(__name__)


class RobotsInputError(WebsiftError):
    """A URL, agent or robots.txt file given to ``websift robots`` cannot be used."""


@dataclass(frozen=True)
class RobotsFetch:
    """What fetching /robots.txt gave: final status and body, or why there was no answer."""

    url: str  # the last URL asked
    status: int | None  # None: no HTTP answer at all
    body: bytes | None
    error: str | None = None  # why there was no answer ("connection refused", "timed out")


def fetch_robots(origin: str, rules: AddressRules | None = None) -> tuple[int | None, bytes | None]:
    """(status, body) of ``<origin>/robots.txt``; (None, None) when the site is unreachable or
    refused by ``rules`` (default: public addresses only, as a crawl's default).

    Follows up to five redirects, even to other hosts (RFC 9309 2.3.1.2); past that the last
    3xx status is returned.  Reads at most ``MAX_ROBOTS_BYTES`` of the body (2.5).
    """
    result = fetch_robots_detailed(origin, rules=rules)
    return result.status, result.body


def fetch_robots_detailed(origin: str, timeout: float | None = None,
                          rules: AddressRules | None = None) -> RobotsFetch:
    """``fetch_robots`` that also says which URL answered and why none did.  ``timeout``: each
    request's whole time, connecting included (default: the crawler's ``DOWNLOAD_TIMEOUT``)."""
    rules = rules if rules is not None else AddressRules()
    timeout = settings.DOWNLOAD_TIMEOUT if timeout is None else timeout
    url = origin.rstrip("/") + ROBOTS_PATH
    for _ in range(ROBOTS_MAX_REDIRECTS + 1):
        try:
            address = checked_address(url, rules)
            status, location, body = get_at_address(url, address, timeout, MAX_ROBOTS_BYTES)
        except AddressRefused as exc:
            log.info("robots.txt at %s refused: %s", url, exc)
            return RobotsFetch(url, None, None, f"refused: {exc}")
        except (OSError, http.client.HTTPException, ValueError) as exc:
            log.info("robots.txt at %s unreachable: %s", url, describe_fetch_error(exc))
            return RobotsFetch(url, None, None, describe_fetch_error(exc))
        if status not in _REDIRECTS or not location:
            return RobotsFetch(url, status, body)
        target = urljoin(url, location)
        if urlsplit(target).scheme not in ("http", "https"):
            return RobotsFetch(url, status, body)
        url = target
    return RobotsFetch(url, status, body)


def _as_uri(url: str) -> str:
    """A URL as typed, made a URI: non-ASCII and spaces percent-encoded from UTF-8."""
    return quote(url, safe=_URI_SAFE)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _check_url(url: str, *, need_origin: bool) -> None:
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError on a port that is not a number
    except ValueError as exc:
        raise RobotsInputError(f"bad URL {url!r}: {exc}") from exc
    if parts.scheme in ("http", "https") and parts.hostname:
        return
    if not need_origin and url.startswith("/") and not url.startswith("//"):
        return
    wanted = "an absolute http(s) URL" if need_origin else "an absolute http(s) URL or a /path"
    raise RobotsInputError(f"bad URL {url!r}: give {wanted}")


def _load_policy(args: argparse.Namespace, url: str) -> tuple[RobotsPolicy, str]:
    """The policy to ask, and a line that says where it came from."""
    if args.robots_file is not None:
        path: Path = args.robots_file
        try:
            body = path.read_bytes()
        except OSError as exc:
            raise RobotsInputError(
                f"cannot read robots file {path}: {exc.strerror or exc}"
            ) from exc
        return RobotsPolicy.parse(body), f"robots.txt: {path}"
    rules = AddressRules(args.allow_private, args.allow_ip, args.deny_ip)
    try:
        checked_address(url, rules)
    except AddressRefused as exc:
        raise RobotsInputError(f"{exc} (refused as a crawl would; --allow-private or --allow-ip "
                               "to check it)") from None
    except OSError:
        pass  # unresolvable: said below as an unreachable robots.txt
    fetched = fetch_robots_detailed(_origin(url), rules=rules)
    if fetched.status is None:
        source = f"robots.txt: {fetched.url} unreachable ({fetched.error})"
    else:
        size = len(fetched.body or b"")
        source = f"robots.txt: {fetched.url} answered {fetched.status} ({size} bytes)"
    return RobotsPolicy.from_response(fetched.status, fetched.body), source


def run(args: argparse.Namespace) -> int:
    agent: str = args.agent
    if not _PRODUCT_TOKEN.fullmatch(agent):
        raise RobotsInputError(
            f"bad agent {agent!r}: give a product token (letters, '_' and '-' only)"
        )
    url = _as_uri(args.url.strip())
    _check_url(url, need_origin=args.robots_file is None)
    policy, source = _load_policy(args, url)
    decision = policy.decide(agent, url)
    print("allowed" if decision.allowed else "disallowed")
    if decision.rule is not None:
        print(f"line {decision.line}: {decision.rule} ({decision.reason})")
    else:
        print(decision.reason)
    print(source)
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``robots`` subcommand."""
    parser = sub.add_parser(
        "robots",
        help="may websift fetch a URL? (robots.txt per RFC 9309, with the deciding line)",
        description=(
            "Print 'allowed' or 'disallowed' for URL, then the robots.txt line that decided "
            "(with its line number) or the reason, then where robots.txt came from. "
            "Without --robots-file, <origin>/robots.txt is fetched over HTTP (20 s per request "
            "in all, up to 5 redirects, first 500 KiB), only from addresses a crawl may "
            "contact (private ones refused, as by 'websift crawl'); an unreachable or refused "
            "site or a 5xx answer means disallowed, a 4xx answer means allowed. Exit code 0 "
            "either way."
        ),
    )
    parser.add_argument("url", metavar="URL", help="the URL to check (absolute http(s) URL)")
    parser.add_argument(
        "--agent",
        default=settings.ROBOTS_AGENT,
        help=f"product token to match groups against (default: {settings.ROBOTS_AGENT})",
    )
    parser.add_argument(
        "--robots-file",
        type=Path,
        default=None,
        metavar="F",
        help="read robots.txt from this file instead of fetching it (URL may then be a /path)",
    )
    parser.add_argument("--allow-private", action="store_true",
                        help="also contact private, loopback and link-local addresses (as "
                        "'websift crawl --allow-private')")
    parser.add_argument("--allow-ip", action="append", default=[], metavar="CIDR",
                        help="contact only addresses in these ranges (repeatable; as 'websift "
                        "crawl')")
    parser.add_argument("--deny-ip", action="append", default=[], metavar="CIDR",
                        help="never contact addresses in these ranges (repeatable)")
    parser.set_defaults(func=run)
