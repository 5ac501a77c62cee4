"""Sweep values on the command line: ``1:24`` (inclusive), ``1:24:2`` (a step), ``1,2,4,8,16`` (a list)."""

from __future__ import annotations

import re

from dummyprof.errors import UsageError
from dummyprof.units import parse_count

MAX_POINTS = 200
_RANGE = re.compile(r"^[^:,]+(:[^:,]+){1,2}$")


def is_sweep(text: str) -> bool:
    """A range or a list, rather than one value."""
    return bool(_RANGE.match(text.strip())) or "," in text


def parse_values(flag: str, text: str, *, example: str = "1:16") -> list[int]:
    """Every value of a range or list, each a whole number (``K``/``M``/``G`` suffixes allowed), increasing."""
    text = text.strip()
    hint = f"use START:STOP, START:STOP:STEP or a list A,B,C, e.g. {flag} {example}"
    if "," in text:
        values = [parse_count(flag, part, example=example.split(":")[0]) for part in text.split(",") if part.strip()]
    elif ":" in text:
        parts = text.split(":")
        if len(parts) > 3 or not all(p.strip() for p in parts):
            raise UsageError(flag, f"cannot read {text!r}; {hint}")
        start, stop = parse_count(flag, parts[0]), parse_count(flag, parts[1])
        step = parse_count(flag, parts[2]) if len(parts) == 3 else 1
        if stop <= start:
            raise UsageError(flag, f"the range {text!r} is empty: STOP must be above START; {hint}")
        if (stop - start) // step + 1 > MAX_POINTS:
            raise UsageError(flag, f"{text!r} has more than {MAX_POINTS} points; give a larger STEP or a list")
        values = list(range(start, stop + 1, step))
    else:
        values = [parse_count(flag, text)]
    if len(values) > MAX_POINTS:
        raise UsageError(flag, f"more than {MAX_POINTS} values; give fewer")
    return values
