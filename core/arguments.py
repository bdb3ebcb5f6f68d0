"""Checked numeric command-line values, shared by every package's ``commands.py``.

``number(int, low=1)`` is a whole number >= 1, ``number(float, low=0, high=1, strict=True)`` a
number strictly between 0 and 1, and so on; ``seconds()`` a span of time (``90``, ``30m``,
``2h``), which help shows the way it is typed (:func:`format_duration`); a bad value is an ``argparse.ArgumentTypeError``
whose message says what was expected, which argparse prints as one line.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TypeVar

N = TypeVar("N", int, float)


def number(
    kind: type[N], low: float | None = None, high: float | None = None, strict: bool = False
) -> Callable[[str], N]:
    """An argparse ``type=`` for ``kind`` within [low, high] (or (low, high) when strict)."""
    what = "a whole number" if kind is int else "a number"

    def parse(text: str) -> N:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
        below = low is not None and (value <= low if strict else value < low)
        above = high is not None and (value >= high if strict else value > high)
        if below or above:
            op_low, op_high = (">", "<") if strict else (">=", "<=")
            bounds = [f"{op_low} {low:g}" if low is not None else "",
                      f"{op_high} {high:g}" if high is not None else ""]
            raise argparse.ArgumentTypeError(
                f"must be {' and '.join(b for b in bounds if b)}, got {text}"
            )
        return value

    return parse


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}


class Duration:
    """An argparse ``type=`` for a span of time: seconds (``90``, ``1.5``) or a number with a
    unit, ``s``, ``m``, ``h``, ``d`` or ``w`` (``30m``, ``2h``, ``1d``); at least ``low``
    (more than ``low`` when strict).  Made by :func:`seconds`; the help formatter knows it and
    shows the option's default as a duration (:func:`format_duration`: ``1h``, not ``3600.0``)."""

    def __init__(self, low: float = 0.0, strict: bool = False) -> None:
        self.low = low
        self.strict = strict

    def __call__(self, text: str) -> float:
        raw = text.strip().lower()
        scale = _UNITS.get(raw[-1:])
        digits = raw[:-1] if scale is not None else raw
        try:
            value = float(digits) * (scale or 1.0)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"not a duration: {text!r} (seconds, or a number with s, m, h, d or w: 30m, 2h)"
            ) from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"not a finite duration: {text!r}")
        if value < self.low or (self.strict and value <= self.low):
            raise argparse.ArgumentTypeError(
                f"must be {'>' if self.strict else '>='} {self.low:g} seconds, got {text}"
            )
        return value


def seconds(low: float = 0.0, strict: bool = False) -> Duration:
    """An argparse ``type=`` for a span of time (:class:`Duration`)."""
    return Duration(low, strict)


def format_duration(value: float) -> str:
    """``value`` seconds as :class:`Duration` reads it back, in the largest unit that holds it
    whole: ``1h``, ``15s``, ``90m``, ``0.5s``, ``1d``."""
    for unit, scale in sorted(_UNITS.items(), key=lambda item: -item[1]):
        count = value / scale
        if value and count >= 1 and count == int(count):
            return f"{int(count)}{unit}"
    return f"{value:g}s"
