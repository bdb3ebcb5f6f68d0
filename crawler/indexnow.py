"""A site owner's push (IndexNow) checked: is the key the site's, are the URLs its own and ours?

Question: someone submits URLs for a host with a key (``POST /indexnow``); may they speak for
that host, and which of the URLs may the crawl take?

The IndexNow protocol (indexnow.org, "Verifying ownership"): the site proves control by serving
the key as a text file on the host itself -- ``{scheme}://{host}/{key}.txt``, or at
``keyLocation`` on the same host -- whose body is the key (UTF-8, surrounding space ignored).
The key is 8 to 128 characters of ``a-z A-Z 0-9 -``.  Every submitted URL must be on the
submitted host.

The key file is fetched as a crawl would fetch it: every address of the host is judged by the
crawl's own :class:`~crawler.addresses.AddressRules` (the stored scope's ``--allow-private``,
``--allow-ip``, ``--deny-ip``), the connection goes to the address judged, the whole request has
``timeout`` seconds and the body is read up to :data:`MAX_KEY_FILE_BYTES`; redirects are not
followed (the file must be on the host).  A URL passes when it canonicalises, is on the host and
the crawl's scope (crawler/scope.py, removals included) takes it at depth 1, as a sitemap's URL.
"""

from __future__ import annotations

import http.client
import re
from dataclasses import dataclass

from websift.crawler.addresses import AddressRules
from websift.crawler.checked_get import (
    AddressRefused,
    checked_address,
    describe_fetch_error,
    get_at_address,
)
from websift.crawler.scope import Scope
from websift.crawler.urls import UrlError, canonicalize, host_of
from websift.store.schema import origin_of

KEY_PATTERN = re.compile(r"[a-zA-Z0-9-]{8,128}")
MAX_KEY_FILE_BYTES = 1024  # a key is at most 128 characters; a larger file is not a key file
MAX_URLS = 10_000  # the protocol's limit per request


@dataclass(frozen=True)
class Submission:
    """A push as checked: the origin of its URLs, where its key file is, the URLs kept
    (canonical) and those refused with why."""

    host: str
    origin: str
    key: str
    key_url: str
    urls: list[str]
    refused: list[tuple[str, str]]  # (URL as given, reason)


class SubmissionError(ValueError):
    """A push that cannot be taken; ``kind``: ``bad_request`` (400) or ``wrong_host`` (422)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _host_name(host: str) -> str:
    """The submitted ``host`` as ``host_of`` spells hosts (no port, lower case)."""
    try:
        return host_of(canonicalize(f"http://{host.strip()}/"))
    except UrlError as exc:
        raise SubmissionError("bad_request", f"bad host {host!r}: {exc}") from None


def check_submission(host: str, key: str, key_location: str | None, urls: list[str],
                     scope: Scope) -> Submission:
    """The push's URLs checked against its host and the crawl's scope; SubmissionError when the
    request is malformed (400) or a URL is not on the host (422, the protocol's answer)."""
    if not KEY_PATTERN.fullmatch(key):
        raise SubmissionError("bad_request", "key must be 8 to 128 characters of a-z A-Z 0-9 -")
    if not urls:
        raise SubmissionError("bad_request", "urlList is empty")
    if len(urls) > MAX_URLS:
        raise SubmissionError("bad_request", f"at most {MAX_URLS} URLs per request")
    name = _host_name(host)
    kept: list[str] = []
    refused: list[tuple[str, str]] = []
    origins: set[str] = set()
    for raw in urls:
        try:
            url = canonicalize(raw)
        except UrlError as exc:
            raise SubmissionError("bad_request", f"bad URL {raw!r}: {exc}") from None
        if host_of(url) != name:
            raise SubmissionError("wrong_host", f"{raw} is not on host {name}")
        origins.add(origin_of(url))
        reason = scope.check(url, 1)
        if reason is None:
            kept.append(url)
        else:
            refused.append((raw, reason))
    if len(origins) > 1:
        raise SubmissionError("wrong_host", "the URLs name more than one origin (scheme or port)")
    origin = origins.pop()
    if key_location:
        try:
            key_url = canonicalize(key_location)
        except UrlError as exc:
            raise SubmissionError("bad_request", f"bad keyLocation: {exc}") from None
        if origin_of(key_url) != origin:
            raise SubmissionError("wrong_host", f"keyLocation must be on {origin}")
    else:
        key_url = f"{origin}/{key}.txt"
    return Submission(name, origin, key, key_url, kept, refused)


def verify_key(key_url: str, key: str, rules: AddressRules, timeout: float) -> str | None:
    """None when ``key_url`` answers 200 with the key as its body; else why not (one line)."""
    try:
        address = checked_address(key_url, rules)
        status, _location, body = get_at_address(key_url, address, timeout, MAX_KEY_FILE_BYTES + 1)
    except AddressRefused as exc:
        return f"key file {key_url} refused: {exc}"
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return f"key file {key_url} unreachable: {describe_fetch_error(exc)}"
    if status != 200:
        return f"key file {key_url} answered HTTP {status}"
    if len(body) > MAX_KEY_FILE_BYTES:
        return f"key file {key_url} is over {MAX_KEY_FILE_BYTES} bytes"
    if body.decode("utf-8", "replace").strip() != key:
        return f"key file {key_url} does not hold the key"
    return None
