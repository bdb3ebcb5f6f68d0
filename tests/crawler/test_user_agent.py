"""``--user-agent``: the identity a crawl sends, and the robots.txt group it obeys by its product
token (RFC 9309 2.2.1), checked from the server's side on a loopback site."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from testkit.testweb import TestWeb, html, words
from websift.crawler.identity import DEFAULT_USER_AGENT, agent_token
from websift.crawler.settings import ROBOTS_AGENT, USER_AGENT

# examplebot's own group forbids /mine/ and allows /theirs/; every other agent gets the * group,
# which forbids /theirs/ and allows /mine/: which pages are fetched says which group was obeyed.
ROBOTS = (
    "User-agent: otherbot\nDisallow: /\n\n"
    "User-agent: ExampleBot\nDisallow: /mine/\n\n"
    "User-agent: *\nDisallow: /theirs/\n"
)
AGENT = "ExampleBot/2.1 (+https://example.org/bot; ops@example.org)"

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def web() -> Iterator[TestWeb]:
    site_web = TestWeb()
    site = site_web.add_site("site", "127.0.0.9", ROBOTS)
    links = "".join(f"<a href='/{d}/{i}'>{d} {i}</a> " for d in ("mine", "theirs") for i in (1, 2))
    site.page("/", html("agents", f"<p>{words(3)}</p>{links}"))
    for n, d in enumerate(("mine", "theirs")):
        for i in (1, 2):
            site.page(f"/{d}/{i}", html(f"{d} {i}", f"<p>{words(70 + 10 * n + i)}</p>"))
    with site_web:
        yield site_web


def _crawl(run_websift: Run, web: TestWeb, data: Path, *agent: str) -> set[str]:
    site = web.sites["site"]
    done = run_websift("crawl", site.url("/"), "--data", str(data), "--allow-private",
                       "--delay", "0", "--quiet", *agent)
    assert done.returncode == 0, done.stderr
    return {e.path for e in web.entries("site")}


def test_a_group_for_the_product_token_is_obeyed(run_websift: Run, web: TestWeb,
                                                 tmp_path: Path) -> None:
    fetched = _crawl(run_websift, web, tmp_path / "d", "--user-agent", AGENT)
    assert {"/robots.txt", "/", "/theirs/1", "/theirs/2"} <= fetched
    assert not any(p.startswith("/mine/") for p in fetched)  # ExampleBot's own group
    assert {e.headers.get("user-agent") for e in web.entries("site")} == {AGENT}


def test_the_default_agent_obeys_the_star_group(run_websift: Run, web: TestWeb,
                                               tmp_path: Path) -> None:
    fetched = _crawl(run_websift, web, tmp_path / "d")
    assert {"/mine/1", "/mine/2"} <= fetched
    assert not any(p.startswith("/theirs/") for p in fetched)
    assert {e.headers.get("user-agent") for e in web.entries("site")} == {USER_AGENT}


def test_the_default_names_websift_its_version_and_a_url() -> None:
    from websift import __version__

    assert USER_AGENT == DEFAULT_USER_AGENT
    assert USER_AGENT.startswith(f"websift/{__version__} (+https://")
    assert ROBOTS_AGENT == "websift"


@pytest.mark.parametrize(("agent", "token"), [
    ("ExampleBot/2.1 (+https://example.org/bot)", "examplebot"),
    ("examplebot (+https://example.org/a/b)", "examplebot"),
    ("my_bot-x", "my_bot-x"),
])
def test_the_product_token_is_the_first_name_before_the_slash(agent: str, token: str) -> None:
    assert agent_token(agent) == token


@pytest.mark.parametrize("agent", ["", "/1.0", "bot2/1.0", "\u00e9t\u00e9bot/1"])
def test_an_agent_without_a_product_token_is_refused(agent: str) -> None:
    with pytest.raises(ValueError, match="product token"):
        agent_token(agent)


def test_a_bad_user_agent_is_one_line_and_exit_2(run_websift: Run, tmp_path: Path) -> None:
    done = run_websift("crawl", "http://127.0.0.9:1/", "--data", str(tmp_path / "d"),
                       "--user-agent", "bot2/1.0")
    assert done.returncode == 2
    assert "product token" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "d").exists()
