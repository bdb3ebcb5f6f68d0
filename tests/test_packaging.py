"""What ``pip install websift`` puts on a machine: one import package, ``websift``, and the
``websift`` command; Redis, Dask and matplotlib only with the extras that name them.

The wheel is built from a copy of the checkout (symlinks kept, as git checks them out), installed
into a fresh virtual environment without its dependencies (those are read from this environment's
site-packages through a ``.pth`` line, so no network is needed) and run from outside the source
tree, so nothing can be imported from the checkout by accident.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

import websift
from testkit.websift_process import REPO

pytestmark = pytest.mark.slow

# The fresh environment must import only what it installed: no source tree on its path.
_CLEAN_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _tracked_tree(dest: Path) -> Path:
    """The checkout's tracked files (and the working copy's edits) copied to ``dest``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True, check=True).stdout.decode()
    for name in filter(None, listed.split("\0")):
        src, out = REPO / name, dest / name
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            out.symlink_to(src.readlink())
        elif src.is_file():
            shutil.copy2(src, out)
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = _tracked_tree(tmp_path_factory.mktemp("tree"))
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(out), str(tree)],
                   check=True, capture_output=True, cwd=out)
    (found,) = out.glob("websift-*.whl")
    return found


def test_the_wheel_holds_one_import_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"websift", f"websift-{websift.__version__}.dist-info"}, tops
    for part in ("api", "core", "crawler", "indexer", "ranking", "store"):
        assert f"websift/{part}/__init__.py" in names
    # package data: the search page's templates and static files, the frontier's Lua scripts
    assert any(n.startswith("websift/api/templates/") and n.endswith(".html") for n in names)
    assert any(n.startswith("websift/api/static/") for n in names)
    assert any(n.startswith("websift/crawler/redis_lua/") and n.endswith(".lua") for n in names)
    assert "websift/py.typed" in names
    entry = zipfile.ZipFile(wheel).read(
        f"websift-{websift.__version__}.dist-info/entry_points.txt").decode()
    assert "websift = websift.api.cli:main" in entry


def test_the_wheel_installs_and_runs(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)  # no ensurepip: this pip installs into it
    python = env_dir / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                    "--no-deps", "--no-index", str(wheel)], check=True, capture_output=True)
    site = Path(subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, env=_CLEAN_ENV).stdout.strip())
    # the dependencies from this environment, after the fresh site-packages on sys.path
    (site / "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    ours = {p.name for p in site.iterdir()} - {"zz_dependencies.pth"}
    new = {n for n in ours if not n.startswith(("pip", "setuptools", "_distutils_hack",
                                                 "distutils-precedence.pth", "pkg_resources",
                                                 "__pycache__"))}
    assert new == {"websift", f"websift-{websift.__version__}.dist-info"}, new

    help_run = subprocess.run([env_dir / "bin" / "websift", "--help"], capture_output=True,
                              text=True, cwd=tmp_path, env=_CLEAN_ENV, check=False)
    assert help_run.returncode == 0, help_run.stderr
    assert "crawl" in help_run.stdout and "serve" in help_run.stdout
    where = subprocess.run(
        [python, "-c", "import websift.crawler, websift.api.app; print(websift.crawler.__file__)"],
        capture_output=True, text=True, cwd=tmp_path, env=_CLEAN_ENV, check=False)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(site)


_WITHOUT_EXTRAS = ("import sys\n"
                   "for name in ('redis', 'dask', 'distributed', 'matplotlib'):\n"
                   "    sys.modules[name] = None  # as if not installed\n"
                   "from websift.api.cli import main\n"
                   "sys.exit(main(sys.argv[1:]))\n")


def _without_extras(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _WITHOUT_EXTRAS, *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120, check=False)


@pytest.mark.parametrize(("args", "extra"), [
    (("frontier", "status", "--frontier", "redis://127.0.0.1:9/0"), "cluster"),
    (("rank", "--engine", "dask"), "cluster"),
    (("crawl", "http://127.0.0.1:9/", "--allow-private", "--frontier", "redis://127.0.0.1:9/0"),
     "cluster"),
    (("serve", "--frontier", "redis://127.0.0.1:9/0", "--port", "9"), "cluster"),
    (("graph", "plot", "--out", "plots"), "plots"),
])
def test_a_missing_extra_is_named_in_one_line(args: tuple[str, ...], extra: str,
                                              tmp_path: Path) -> None:
    run = _without_extras(*args, "--data", str(tmp_path / "data"), cwd=tmp_path)
    assert run.returncode == 2, (run.stdout, run.stderr)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert f"pip install 'websift[{extra}]'" in lines[0]


def test_the_single_machine_engine_needs_no_extra(tmp_path: Path) -> None:
    run = _without_extras("--help", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    checked = subprocess.run(
        [sys.executable, "-c", _WITHOUT_EXTRAS.replace(
            "from websift.api.cli import main\nsys.exit(main(sys.argv[1:]))\n",
            "import websift.api.app, websift.crawler.session, websift.ranking.rank_job, "
            "websift.indexer.build\n")],
        capture_output=True, text=True, cwd=tmp_path, check=False)
    assert checked.returncode == 0, checked.stderr
