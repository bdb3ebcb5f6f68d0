"""The ``websift`` command line: one entry point, a subcommand per job.

Each package registers its own subcommands (``crawler/commands.py``, ``indexer/commands.py``,
``ranking/commands.py``, ``api/commands.py``): a ``register(subparsers)`` function that adds
parsers whose ``func`` default takes the parsed arguments and returns an exit code.  This module
only builds the parser (``--version``; the subcommands listed in pipeline order, ``HELP_ORDER``),
adds ``--data`` to every subcommand, makes every option's help end with its
default (:class:`DefaultsHelpFormatter`) and turns websift's own errors into one clear line on
stderr and a non-zero exit, with no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import websift
from websift.core.arguments import Duration, format_duration
from websift.core.datadir import default_data_dir
from websift.core.errors import StageFailed, WebsiftError, describe_os_error, is_out_of_space

EXIT_FAILURE = 1  # the command failed (a full disk, an I/O error): what it committed is kept
EXIT_ERROR = 2  # bad input, usage or setup
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # the output's reader went away (128 + SIGPIPE, as a Unix tool stopped by it)
# `websift --help` lists the subcommands in the order a new user runs them (the pipeline), then
# the others; one not named here follows in the order its package registers it
HELP_ORDER = ("crawl", "index", "rank", "serve", "search", "up", "status",
              "recrawl", "import", "graph", "topics", "robots", "frontier", "demo")


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Ends an option's help with ``(default: X)``, taken from the option itself.

    So a help string never repeats a settings constant by hand (and never goes stale when the
    constant changes).  A duration (``core.arguments.seconds``) is shown as one is typed,
    ``1h`` rather than ``3600.0``.  Left as written: help that already says ``default: ...`` in words (a
    default decided later, e.g. from the environment, or one that needs explaining), flags
    (``store_true``: off unless given) and options whose default is None (not given: not used).
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        takes_default = bool(action.option_strings) or action.nargs in ("?", "*")
        if (
            "default:" in text
            or "%(default)" in text
            or default is None
            or default is argparse.SUPPRESS
            or action.nargs == 0
            or not takes_default
        ):
            return action.help
        if isinstance(action.type, Duration) and isinstance(default, int | float):
            shown = format_duration(default)  # as typed: 1h, not 3600.0
        elif isinstance(default, list | tuple):
            shown = ", ".join(map(str, default)) or "none"
        else:
            shown = str(default)
        # The help is %-formatted afterwards: a literal % in the default must survive that.
        return f"{text} (default: {shown.replace('%', '%%')})".lstrip()


class _VersionAction(argparse.Action):
    """``--version``: the version is read from the package metadata only when asked for."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0,
                         help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        print(f"websift {websift.__version__}")  # on stdout, as argparse's "version" action
        parser.exit()


# The module registering each subcommand, in registration order: `websift COMMAND ...` imports
# the one module it runs (`websift index` does not import the crawler, the HTTP server or the
# operator's supervisor); `websift`, `websift --help` and a name not here build them all.
COMMAND_MODULES = {
    "robots": "websift.crawler.commands", "frontier": "websift.crawler.commands",
    "import": "websift.crawler.commands", "crawl": "websift.crawler.commands",
    "recrawl": "websift.crawler.commands",
    "index": "websift.indexer.commands",
    "anchors": "websift.indexer.commands",
    "rank": "websift.ranking.commands", "graph": "websift.ranking.commands",
    "topics": "websift.ranking.commands", "exchange": "websift.api.exchange_command",
    "search": "websift.api.commands", "serve": "websift.api.commands",
    "demo": "websift.api.demo",
    "remove": "websift.api.operator_commands", "removed": "websift.api.operator_commands",
    "backup": "websift.api.operator_commands", "restore": "websift.api.operator_commands",
    "up": "websift.api.up_command", "status": "websift.api.up_command",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``websift`` parser: every subcommand, or ``command``'s module's alone (see
    :data:`COMMAND_MODULES`) when it names one."""
    names = [COMMAND_MODULES[command]] if command in COMMAND_MODULES \
        else list(dict.fromkeys(COMMAND_MODULES.values()))
    parser = argparse.ArgumentParser(
        prog="websift",
        description="websift: crawl, index, rank and search the web you choose.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument("--version", action=_VersionAction, help="print websift's version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in names:
        importlib.import_module(name).register(sub)
    _help_order(sub)
    for nested in subcommands(parser):
        nested.formatter_class = DefaultsHelpFormatter
        _add_data_option(nested)
    return parser


def _help_order(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """List the subcommands in :data:`HELP_ORDER`, then the others as registered."""

    def rank(name: str) -> int:
        return HELP_ORDER.index(name) if name in HELP_ORDER else len(HELP_ORDER)

    sub._choices_actions.sort(key=lambda action: rank(action.dest))
    sub.choices = dict(sorted(sub.choices.items(), key=lambda item: rank(item[0])))


def subcommands(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every parser below ``parser``: subcommands, their sub-subcommands (``graph stats``)..."""
    found: list[argparse.ArgumentParser] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for nested in dict.fromkeys(action.choices.values()):  # aliases: one parser
                found.append(nested)
                found.extend(subcommands(nested))
    return found


def _add_data_option(command: argparse.ArgumentParser) -> None:
    """Every runnable subcommand (not a group like ``graph``) takes ``--data DIR``."""
    if any(isinstance(a, argparse._SubParsersAction) for a in command._actions):
        return
    if "--data" not in command._option_string_actions:
        command.add_argument(
            "--data",
            type=Path,
            default=None,
            metavar="DIR",
            help="data directory (default: $WEBSIFT_DATA or ./websift-data)",
        )


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv and not argv[0].startswith("-") else None)
    args = parser.parse_args(argv)
    if getattr(args, "data", None) is None:
        args.data = default_data_dir()
    try:
        code = args.func(args)
    except StageFailed as exc:
        print(f"websift {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except WebsiftError as exc:
        print(f"websift {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        # The reader of the output went away (`websift search ... | head`): stop quietly, as
        # Unix tools do, and keep the interpreter's last flush from failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        # Disk full (ENOSPC), file too large (EFBIG, RLIMIT_FSIZE), permissions: the stage names
        # itself and what failed; what it had committed before stays intact (atomic writes, and
        # a failed run removes what it had half written).
        advice = ": stopped; free space and rerun" if is_out_of_space(exc) else ": stopped"
        print(f"websift {args.command}: error: {describe_os_error(exc, doing='at')}{advice}",
              file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print(f"websift {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
