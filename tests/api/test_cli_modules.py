"""`websift COMMAND` builds only the parser of the module that registers COMMAND (api/cli.py
COMMAND_MODULES): the table names each module's commands exactly, and `websift index` does
not import the crawler, the HTTP server or the supervisor."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

from websift.api.cli import COMMAND_MODULES, build_parser, subcommands


def test_the_table_names_every_module_s_commands_exactly() -> None:
    for module in dict.fromkeys(COMMAND_MODULES.values()):
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module).register(sub)
        assert set(sub.choices) == {c for c, m in COMMAND_MODULES.items() if m == module}


def test_one_command_s_parser_matches_the_full_one() -> None:
    full = build_parser()
    for command in COMMAND_MODULES:
        one = build_parser(command)
        a = next(p for p in subcommands(full) if p.prog == f"websift {command}")
        b = next(p for p in subcommands(one) if p.prog == f"websift {command}")
        assert a.format_help() == b.format_help()


def test_index_imports_neither_the_crawler_nor_the_http_server() -> None:
    code = ("import sys\n"
            "from websift.api.cli import main\n"
            "try:\n    main(['index', '--help'])\nexcept SystemExit:\n    pass\n"
            "print(' '.join(sorted(sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert "websift.indexer.commands" in out
    for heavy in ("scrapy", "fastapi", "uvicorn", "websift.crawler.commands",
                  "websift.api.up_command", "websift.api.commands", "warcio"):
        assert heavy not in out, heavy
