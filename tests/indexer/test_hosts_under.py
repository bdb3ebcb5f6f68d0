"""indexer/segment.py ``hosts_under``: the hosts ``site:`` takes, by binary search of the
reversed names, are those the rule "equal, or ends with '.' + domain" picks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from websift.indexer.segment import hosts_under

LABEL = st.sampled_from(["a", "b", "ab", "docs", "python", "org", "x-y", "0", "-", "ba"])
HOST = st.lists(LABEL, min_size=1, max_size=4).map(".".join)


@settings(max_examples=50)
@given(st.sets(HOST, max_size=40), HOST)
def test_hosts_under_is_the_suffix_rule(hosts: set[str], domain: str) -> None:
    got = hosts_under(sorted(h[::-1] for h in hosts), domain)
    assert sorted(got) == sorted(h for h in hosts if h == domain or h.endswith("." + domain))
    assert len(got) == len(set(got))


def test_a_name_that_only_ends_alike_is_not_a_subdomain() -> None:
    hosts = ["python.org", "docs.python.org", "cpython.org", "python.org.evil", "a.docs.python.org"]
    assert sorted(hosts_under(sorted(h[::-1] for h in hosts), "python.org")) == [
        "a.docs.python.org", "docs.python.org", "python.org"]
    assert hosts_under([], "python.org") == []
