"""``websift ... --help`` for every subcommand: it exits 0, says what the command does, and shows
every option's default.

The commands run in-process through ``api.cli.main`` (exactly what the ``websift`` script calls),
plus one real process to check that the in-process verdict holds for an installed command line.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from websift import __version__
from websift.api.cli import DefaultsHelpFormatter, build_parser, main
from websift.api.settings import Settings
from websift.core.arguments import Duration, format_duration, seconds

REPO = Path(__file__).resolve().parent.parent
# Not a list to keep in step: a floor, so that a walk that finds nothing fails.
KNOWN = {"crawl", "recrawl", "robots", "index", "search", "rank", "graph", "graph stats",
         "graph page", "graph plot", "topics", "topics add", "topics list", "topics remove",
         "serve", "demo"}


def _commands(
    parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()
) -> dict[tuple[str, ...], argparse.ArgumentParser]:
    found: dict[tuple[str, ...], argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[(*prefix, name)] = sub
                found.update(_commands(sub, (*prefix, name)))
    return found


COMMANDS = _commands(build_parser())


def _squash(text: str) -> str:
    """Help text with all white space gone: argparse wraps lines wherever it likes."""
    return re.sub(r"\s+", "", text)


def _help_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--help"])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 0, err
    assert err == ""
    return out


def _shows_default(action: argparse.Action) -> bool:
    """Options that carry a default worth stating: not flags (off unless given), not None."""
    return (
        bool(action.option_strings)
        and action.nargs != 0
        and action.default is not None
        and action.default is not argparse.SUPPRESS
    )


def test_the_walk_finds_every_subcommand() -> None:
    assert not KNOWN - {" ".join(path) for path in COMMANDS}


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_help_exits_0_describes_the_command_and_shows_every_default(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    parser = COMMANDS[path]
    out = _help_of(list(path), capsys)
    assert out.startswith(f"usage: websift {' '.join(path)}")
    assert parser.description and parser.description.strip(), f"{path}: no description"
    assert _squash(parser.description) in _squash(out)
    assert "``" not in out, "reStructuredText markup in help meant for a terminal"

    formatter = parser._get_formatter()
    for action in parser._actions:
        if not _shows_default(action):
            continue
        shown = formatter._expand_help(action)  # the text printed beside the option
        option = action.option_strings[-1]
        assert _squash(shown) in _squash(out), f"{option}: help not printed"
        assert "default:" in shown, f"{' '.join(path)} {option}: default not shown: {shown!r}"
        if isinstance(action.type, Duration):  # shown as typed, with its unit
            said = format_duration(action.default)
            assert re.search(r"\(default: [0-9.]+[smhdw]\)", shown), f"{option}: {shown!r}"
            assert action.type(said) == action.default, f"{option}: {said} reads back wrong"
        elif isinstance(action.default, int | float | str):
            assert str(action.default) in shown, f"{option}: says {shown!r}, not its default"


def test_the_search_help_shows_k_and_the_rank_help_shows_dangling(
    capsys: pytest.CaptureFixture[str],
) -> None:
    search = _squash(_help_of(["search"], capsys))
    assert _squash(f"-k K number of hits to show (default: $WEBSIFT_DEFAULT_K, else "
                   f"{Settings().default_k})") in search
    rank = _squash(_help_of(["rank"], capsys))
    assert _squash("(default: teleport)") in rank
    assert _squash("(default: 0.85)") in rank


def test_the_search_help_says_how_it_follows_the_api(capsys: pytest.CaptureFixture[str]) -> None:
    """`websift search` takes /search's parameters, each with its default."""
    out = _squash(_help_of(["search"], capsys))
    for said in ("--offset N hits to skip, as /search's offset (default: 0)",
                 "--page P show page P of K hits (offset (P-1)*K; default: the first)",
                 "--topic NAME|auto", "(default: global PageRank)",
                 "--site HOST", "(default: every host)",
                 "--json print the /search JSON object", "Ranks as GET /search does"):
        assert _squash(said) in out, said


def test_levels_says_what_it_counts(capsys: pytest.CaptureFixture[str]) -> None:
    out = " ".join(_help_of(["graph", "stats"], capsys).split())
    assert "clicks from a root" in out
    assert "breadth-first" in out
    assert "the roots are level 0" in out


def test_top_level_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    out = _help_of([], capsys)
    for path in COMMANDS:
        if len(path) == 1:
            assert re.search(rf"^\s+{path[0]}\s", out, re.M), f"{path[0]} not listed"


def test_top_level_help_lists_the_pipeline_first(capsys: pytest.CaptureFixture[str]) -> None:
    out = _help_of([], capsys)
    listed = re.findall(r"^    (\w+)\s", out, re.M)
    assert listed[:5] == ["crawl", "index", "rank", "serve", "search"]
    assert sorted(listed) == sorted(path[0] for path in COMMANDS if len(path) == 1)


def test_durations_are_shown_as_typed(capsys: pytest.CaptureFixture[str]) -> None:
    out = _squash(_help_of(["crawl"], capsys))
    for option, default in (("--min-refetch-interval", "1h"), ("--frontier-lease", "15s"),
                            ("--delay", "1s")):
        assert re.search(rf"{option}T.*?\(default:{default}\)", out), option
    assert "3600.0" not in out and "15.0)" not in out


@pytest.mark.parametrize(
    ("value", "shown"),
    [(3600.0, "1h"), (15.0, "15s"), (0.5, "0.5s"), (90.0, "90s"), (5400.0, "90m"),
     (86400.0, "1d"), (7 * 86400.0, "1w"), (0.0, "0s"), (1.5, "1.5s")],
)
def test_format_duration_reads_back(value: float, shown: str) -> None:
    assert format_duration(value) == shown
    assert seconds()(shown) == value


def test_version_in_a_real_process() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "websift", "--version"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"websift {__version__}\n"
    assert __version__ and __version__[0].isdigit()


def test_the_formatter_keeps_a_percent_sign_and_names_an_empty_list() -> None:
    parser = argparse.ArgumentParser(prog="t", formatter_class=DefaultsHelpFormatter)
    parser.add_argument("--share", default="50%", help="a share")
    parser.add_argument("--tag", action="append", default=[], help="a tag")
    parser.add_argument("--said", default=3, help="said already (default: three)")
    parser.add_argument("--off", action="store_true", help="a flag")
    parser.add_argument("--unset", default=None, help="nothing to say")
    out = " ".join(parser.format_help().split())
    assert "a share (default: 50%)" in out
    assert "a tag (default: none)" in out
    assert "said already (default: three)" in out and "(default: 3)" not in out
    assert "a flag --unset" in out  # no default after the flag, nor after --unset
    assert out.endswith("nothing to say")


def test_help_in_a_real_process() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "websift.api.cli", "demo", "--help"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert _squash("(default: 127.0.0.2)") in _squash(done.stdout)
    assert "``" not in done.stdout
