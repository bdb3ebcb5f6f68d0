"""Checked numeric command-line values (core/arguments.py)."""

from __future__ import annotations

import argparse

import pytest

from websift.core.arguments import number


@pytest.mark.parametrize(
    ("parser", "text", "value"),
    [(number(int, low=1), "3", 3), (number(int, low=0), "0", 0),
     (number(float, low=0, high=1, strict=True), "0.85", 0.85), (number(float, low=0), "0", 0.0)],
)
def test_values_in_range_are_returned(parser, text: str, value: float) -> None:  # type: ignore[no-untyped-def]
    assert parser(text) == value


@pytest.mark.parametrize(
    ("parser", "text", "message"),
    [(number(int, low=1), "0", "must be >= 1"), (number(int, low=0), "1.5", "not a whole number"),
     (number(float, low=0, high=1, strict=True), "1", "must be > 0 and < 1"),
     (number(float, low=0, strict=True), "0", "must be > 0"),
     (number(float, low=0), "x", "not a number")],
)
def test_values_out_of_range_say_what_was_expected(parser, text: str, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parser(text)
