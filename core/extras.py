"""Which optional extra a command needs, and the one line that says so when it is missing.

``pip install websift`` is the single-machine engine.  Two engines and one output are extras:
``websift[cluster]`` (Redis for a shared crawl frontier, Dask for link analysis on a cluster) and
``websift[plots]`` (matplotlib for ``websift graph plot``).  The modules that use them import
them at the top; the commands import those modules only when asked for, after :func:`require`.
"""

from __future__ import annotations

import importlib

from websift.core.errors import WebsiftError

# the modules of each extra, as pyproject.toml's [project.optional-dependencies] lists them
EXTRAS: dict[str, tuple[str, ...]] = {
    "cluster": ("redis", "dask", "distributed", "pyarrow"),
    "plots": ("matplotlib",),
}


class MissingExtra(WebsiftError):
    """A command needs an optional extra that is not installed."""


def require(extra: str, what: str, modules: tuple[str, ...] | None = None) -> None:
    """Raise :class:`MissingExtra` naming ``pip install 'websift[extra]'`` unless every module
    ``what`` needs from ``extra`` imports."""
    for name in modules if modules is not None else EXTRAS[extra]:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise MissingExtra(
                f"{what} needs the {extra!r} extra ({name} is not installed): "
                f"pip install 'websift[{extra}]'") from exc
