"""host_of parses each scheme://netloc once: for any URL it gives what parsing the whole URL
gives (userinfo, ports, IPv6, query or fragment right after the host, no path, upper case)."""

from __future__ import annotations

from urllib.parse import urlsplit

from hypothesis import given, settings
from hypothesis import strategies as st

from websift.indexer.docbatch import host_of

HOSTS = st.sampled_from(["a.example", "B.Example", "127.0.0.5", "[::1]", "xn--bcher-kva.example",
                         "h"])
URL = st.builds(
    lambda scheme, user, host, port, rest: f"{scheme}://{user}{host}{port}{rest}",
    st.sampled_from(["http", "https", "HTTP"]),
    st.sampled_from(["", "u@", "u:p@"]),
    HOSTS,
    st.sampled_from(["", ":80", ":8080"]),
    st.sampled_from(["", "/", "/a/b.html", "?q=/x", "#/frag", "/p?q#f", "?a#b/c"]),
)


@given(urls=st.lists(URL, min_size=1, max_size=20))
@settings(max_examples=200, deadline=None)
def test_the_host_is_the_one_the_whole_url_gives(urls: list[str]) -> None:
    for url in urls:  # twice: parsed, then from the memo
        want = (urlsplit(url).hostname or "").lower()
        assert host_of(url) == want, url
        assert host_of(url) == want, url


def test_urls_without_a_netloc() -> None:
    for url in ["", "mailto:x@a.example", "a.example/x", "file:///tmp/x"]:
        assert host_of(url) == (urlsplit(url).hostname or "").lower(), url
