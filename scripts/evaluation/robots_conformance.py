"""robots.txt conformance: websift and Protego on the shared vectors, in the same run.

The vectors (``robots_vectors.json`` in shared/eval, read where it lies) are decisions from the
test suite of Google's open-source robots.txt matcher; ``google_only`` marks the ones that test
Google's own extensions rather than RFC 9309.  Prints every vector on which websift or Protego
disagrees with the expected answer, then, last, one line of totals:

    websift rfc=A/72 all=B/145 protego rfc=C/72 all=D/145

Run from the repository root:  .venv/bin/python -m scripts.evaluation.robots_conformance
With ``--bench N`` it also times N decisions of each on one robots.txt of 400 rules (the
crawler asks for every URL it meets) and prints the medians and their ratio before the totals.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from protego import Protego  # installed with Scrapy; used here only, as the peer

from websift.crawler.robots import RobotsPolicy

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_VECTORS = REPO_ROOT / ".." / "shared" / "eval" / "robots_vectors.json"


@dataclass(frozen=True)
class Vector:
    test: str
    robots: str
    agent: str
    url: str
    allowed: bool
    google_only: bool


def load_vectors(path: Path) -> list[Vector]:
    rows = json.loads(path.read_text(encoding="utf-8"))
    return [
        Vector(
            r["test"], r["robots"], r["agent"], r["url"], bool(r["allowed"]), bool(r["google_only"])
        )
        for r in rows
    ]


def websift_allows(vector: Vector) -> bool:
    return RobotsPolicy.parse(vector.robots).decide(vector.agent, vector.url).allowed


def protego_allows(vector: Vector) -> bool:
    return bool(Protego.parse(vector.robots).can_fetch(vector.url, vector.agent))


def run(matcher: Callable[[Vector], bool], vector: Vector) -> bool | str:
    """The matcher's answer, or the name of the exception it raised (counted as wrong)."""
    try:
        return matcher(vector)
    except Exception as exc:  # noqa: BLE001 - a peer crashing on a vector is a result to report, not to hide
        return type(exc).__name__


def _bench_case(count: int) -> tuple[str, list[str]]:
    """A robots.txt of 402 rules and ``count`` URLs on its site, the same on every run."""
    rng = random.Random(9309)
    lines = ["User-agent: *"]
    for section in range(200):
        lines.append(f"Disallow: /section{section}/private/")
        lines.append(f"Allow: /section{section}/private/public*.html$")
    lines += ["Disallow: /*?sessionid=", "Disallow: /*.pdf$"]
    urls = [
        f"https://www.example.com/section{rng.randrange(300)}/"
        f"{rng.choice(['private/', 'private/public-', '', 'docs/'])}page{n}"
        f"{rng.choice(['.html', '.pdf', '?sessionid=1', ''])}"
        for n in range(count)
    ]
    return "\n".join(lines), urls


def bench(count: int, rounds: int = 5) -> str:
    """Median time per decision of websift and Protego on the same robots.txt and URLs."""
    robots, urls = _bench_case(count)
    ours = RobotsPolicy.parse(robots)
    peer = Protego.parse(robots)
    checks = {
        "websift": lambda url: ours.decide("websift", url).allowed,
        "protego": lambda url: bool(peer.can_fetch(url, "websift")),
    }
    medians: dict[str, float] = {}
    answers: dict[str, list[bool]] = {}
    for name, check in checks.items():
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            answers[name] = [check(url) for url in urls]
            times.append((time.perf_counter() - start) / len(urls))
        medians[name] = statistics.median(times)
    agree = sum(a == b for a, b in zip(answers["websift"], answers["protego"], strict=True))
    return (
        f"decide, {len(urls)} URLs x {rounds} rounds, 402 rules: "
        f"websift {medians['websift'] * 1e6:.1f} us/url, protego {medians['protego'] * 1e6:.1f} "
        f"us/url, protego/websift = {medians['protego'] / medians['websift']:.1f}x "
        f"(answers agree on {agree}/{len(urls)})"
    )


def _short(text: str, width: int) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 3] + "..."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vectors", type=Path, default=DEFAULT_VECTORS, help="robots_vectors.json")
    parser.add_argument(
        "--bench", type=int, default=0, metavar="N", help="also time N decisions of each"
    )
    args = parser.parse_args(argv)
    path: Path = args.vectors
    if not path.is_file():
        print(f"robots_conformance: no vectors file at {path}", file=sys.stderr)
        return 2
    vectors = load_vectors(path)
    correct = {"websift": [0, 0], "protego": [0, 0]}  # [rfc, all]
    print(
        f"{'#':>3} {'kind':6} {'test':36} {'agent':8} {'url':34} {'want':5} {'websift':8} protego"
    )
    for index, vector in enumerate(vectors):
        answers = {"websift": run(websift_allows, vector), "protego": run(protego_allows, vector)}
        for name, answer in answers.items():
            if answer is vector.allowed:
                correct[name][1] += 1
                correct[name][0] += not vector.google_only
        if any(answer is not vector.allowed for answer in answers.values()):
            kind = "google" if vector.google_only else "rfc"
            print(
                f"{index:>3} {kind:6} {_short(vector.test, 36):36} {_short(vector.agent, 8):8} "
                f"{_short(vector.url, 34):34} {vector.allowed!s:5} {answers['websift']!s:8} "
                f"{answers['protego']!s}"
            )
    if args.bench > 0:
        print(bench(args.bench))
    rfc_total = sum(not v.google_only for v in vectors)
    print(
        " ".join(
            f"{name} rfc={rfc}/{rfc_total} all={every}/{len(vectors)}"
            for name, (rfc, every) in correct.items()
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
