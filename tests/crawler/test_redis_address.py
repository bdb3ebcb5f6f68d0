"""crawler/redis_address.py through the commands that reach a Redis: an unreachable one, or a
password written in the URL, is one line on stderr naming what the Redis is for, and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.ports import free_port
from websift.api.cli import main
from websift.core.datadir import DataDir

EXIT_ERROR = 2


def _commands(url: str, tmp_path: Path) -> dict[str, list[str]]:
    """Each command's argv with the Redis at ``url``, and the name its Redis goes by."""
    data = DataDir.create(tmp_path / "data").root
    (tmp_path / "exchange").mkdir(exist_ok=True)
    return {
        "partition coordinator": ["exchange", "--data", str(data), "--exchange",
                                  str(tmp_path / "exchange"), "--partitioned", url, "--quiet"],
        "frontier": ["frontier", "status", "--frontier", url],
    }


@pytest.mark.parametrize("what", ["partition coordinator", "frontier"])
def test_a_redis_not_reachable_or_a_password_in_its_url_is_one_line_and_exit_2(
        what: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("WEBSIFT_REDIS_PASSWORD", "REDISCLI_AUTH"):
        monkeypatch.delenv(name, raising=False)
    port = free_port()  # nothing listens there
    argv = _commands(f"redis://127.0.0.1:{port}", tmp_path)[what]
    assert main(argv) == EXIT_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith(f"websift {argv[0]}: error: cannot use the {what} at "
                          f"redis://127.0.0.1:{port}/0: "), err

    argv = _commands(f"redis://:secret@127.0.0.1:{port}/0", tmp_path)[what]
    assert main(argv) == EXIT_ERROR
    err = capsys.readouterr().err
    assert err == (f"websift {argv[0]}: error: {what} URL: put the password in "
                   "$WEBSIFT_REDIS_PASSWORD (or $REDISCLI_AUTH), never on the command line\n")
