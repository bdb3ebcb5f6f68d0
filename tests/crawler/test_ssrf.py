"""Server-side request forgery: names that resolve into private space, and redirects into it.

There is no DNS here, and resolution is the boundary the guard defends, so the crawler runs
through ``hostileweb.launch``, which maps a few host names for that process only:

- ``intranet.example`` resolves to 127.0.0.21 (the "secret" server) for everyone;
- ``corp.example`` resolves to 10.0.0.5, and a connection to 10.0.0.5 is routed to 127.0.0.21,
  so a crawler that failed to refuse it would show up in the secret server's log instead of
  reaching a real 10.x host;
- ``public.example`` resolves to 93.184.216.34 (a global address), and connections to that
  address are routed to the public site on 127.0.0.20: a public site, for the crawl's purposes;
- ``rebind.example`` answers 93.184.216.35 to the scope check and 127.0.0.21 when Scrapy resolves
  it to connect (DNS rebinding): the connect-time guard (crawler/resolver.py) must refuse it.

Whatever the names, ``launch`` refuses every connection outside loopback and says so on
stderr; each test asserts that never happened.  The secret server's log must stay empty.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from testkit.hostileweb import HostileWeb, HostTable, Run, run_launched
from testkit.testweb import Answer, LogEntry, html, words
from websift.core.datadir import DataDir
from websift.store.views import StoreReader

pytestmark = pytest.mark.slow  # crawls in child processes

PUBLIC_CHECK = "93.184.216.34"
BLOCKED = "hostileweb: blocked"


@dataclass
class Webs:
    web: HostileWeb
    hosts: HostTable
    public_port: int
    secret_port: int

    def secret_log(self) -> list[LogEntry]:
        return self.web.entries("secret")


# The public site's redirects and links into private space: (path, target URL template)
INTO_PRIVATE = {
    "/to-loopback": "http://127.0.0.21:{secret}/secret/loopback",
    "/to-name": "http://intranet.example:{secret}/secret/name",
    "/to-corp": "http://corp.example:{secret}/secret/corp",
    "/to-ten": "http://10.0.0.1:{secret}/secret/ten",
    "/to-decimal": "http://2130706453:{secret}/secret/decimal",  # 127.0.0.21 as one number
    "/to-mapped": "http://[::ffff:127.0.0.21]:{secret}/secret/mapped",
    "/to-localhost": "http://localhost:{secret}/secret/localhost",
}
LINKED = "http://127.0.0.21:{secret}/secret/linked"


@pytest.fixture(scope="module")
def webs() -> Iterator[Webs]:
    web = HostileWeb()
    public = web.add_stream_site("public", "127.0.0.20")
    secret = web.add_stream_site("secret", "127.0.0.21")
    secret.prefix("/", lambda p, h, n: Answer(body=html("secret", "<p>internal only</p>")))
    public.page("/ok", html("ok", f"<p>{words(11)}</p>"))
    with web:
        sp = secret.server.server_address[1] if secret.server else 0
        pp = public.server.server_address[1] if public.server else 0
        for path, target in INTO_PRIVATE.items():
            public.page(path, Answer(302, b"", {"Location": target.format(secret=sp)}))
        links = "".join(f"<a href='{p}'>{p}</a> " for p in [*INTO_PRIVATE, "/ok"])
        links += f"<a href='{LINKED.format(secret=sp)}'>linked</a>"
        public.page("/", html("public", f"<p>{words(12)}</p>{links}"))
        hosts: HostTable = {
            "intranet.example": "127.0.0.21",
            "corp.example": {"address": "10.0.0.5", "served_by": "127.0.0.21"},
            "public.example": {"address": PUBLIC_CHECK, "served_by": "127.0.0.20"},
            "rebind.example": {"check": "93.184.216.35", "connect": "127.0.0.21"},
        }
        yield Webs(web, hosts, pp, sp)


def _crawl(webs: Webs, data: Path, seed: str, *extra: str) -> Run:
    webs.web.clear()
    return run_launched("crawl", seed, "--data", str(data), "--delay", "0", "--quiet", *extra,
                        hosts=webs.hosts, timeout=45)


@pytest.mark.parametrize(("name", "address"), [("intranet.example", "127.0.0.21"),
                                                ("corp.example", "10.0.0.5")])
def test_a_name_resolving_to_private_space_is_refused(
    webs: Webs, tmp_path: Path, name: str, address: str
) -> None:
    run = _crawl(webs, tmp_path / "data", f"http://{name}:{webs.secret_port}/")
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert address in lines[0] and name in lines[0] and "--allow-private" in lines[0]
    assert "Traceback" not in run.stderr
    assert webs.secret_log() == []


def test_the_same_name_is_crawled_when_private_addresses_are_allowed(
    webs: Webs, tmp_path: Path
) -> None:
    # proves the mapping reaches the crawler: the refusal above is the address check's doing
    run = _crawl(webs, tmp_path / "data", f"http://intranet.example:{webs.secret_port}/",
                 "--allow-private", "--no-signals")  # no /sitemap.xml asked: the log is exact
    assert run.returncode == 0, run.stderr
    assert [e.path for e in webs.secret_log()] == ["/robots.txt", "/"]
    assert BLOCKED not in run.stderr


def test_a_name_that_rebinds_to_private_space_is_refused_at_connect_time(
    webs: Webs, tmp_path: Path
) -> None:
    """The scope check hears a public address; the connection would go to loopback."""
    data = tmp_path / "data"
    run = _crawl(webs, data, f"http://rebind.example:{webs.secret_port}/")
    # the seed looked public, so the crawl ran; its one seed was refused at connect time, so it
    # ends as a crawl none of whose seeds could be fetched, naming why
    assert run.returncode == 1, run.stderr
    assert "no seed could be fetched" in run.stderr and "private address" in run.stderr
    assert webs.secret_log() == []  # but nothing reached the private server
    with StoreReader.open(DataDir.open(data).store_path) as store:
        last = store.last_crawl()
    assert last is not None and last[3] is not None
    counts = json.loads(last[3])["counts"]
    # robots.txt is the first request to the host: refused, so the site counts as unreachable
    assert counts.get("robots/private_address", 0) >= 1, counts


@pytest.fixture(scope="module")
def redirect_crawl(webs: Webs, tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, dict[str, Any], Path]:
    data = tmp_path_factory.mktemp("ssrf") / "data"
    # --any-domain: no domain list could refuse these targets first; only the address check can
    run = _crawl(webs, data, f"http://public.example:{webs.public_port}/", "--any-domain")
    assert run.returncode == 0, run.stderr
    with StoreReader.open(DataDir.open(data).store_path) as store:
        last = store.last_crawl()
    assert last is not None and last[3] is not None
    return run, json.loads(last[3]), data


def test_redirects_and_links_into_private_space_are_refused(
    webs: Webs, redirect_crawl: tuple[Run, dict[str, Any], Path]
) -> None:
    run, summary, _ = redirect_crawl
    assert webs.secret_log() == []
    assert BLOCKED not in run.stderr
    served = [e.path for e in webs.web.entries("public")]
    assert "/ok" in served  # the public site itself was crawled
    for path in INTO_PRIVATE:
        assert served.count(path) == 1  # each redirect asked once, its target refused
    assert summary["counts"].get("scope/private_address", 0) >= len(INTO_PRIVATE) + 1


@pytest.mark.parametrize("target", [*INTO_PRIVATE.values(), LINKED])
def test_each_private_target_is_recorded_with_its_reason(
    webs: Webs, redirect_crawl: tuple[Run, dict[str, Any], Path], target: str
) -> None:
    _, _, data = redirect_crawl
    conn = sqlite3.connect(DataDir.open(data).store_path)
    rows = conn.execute("SELECT url, status, error FROM urls WHERE url LIKE ?",
                        ("%/secret/" + target.rsplit("/", 1)[1],)).fetchall()
    conn.close()
    assert len(rows) == 1, rows
    _, status, error = rows[0]
    assert (status, error) == ("out_of_scope", "private_address")
