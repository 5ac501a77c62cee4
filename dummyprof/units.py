"""Parsers for numeric flags that turn bad input into UsageError naming the flag.

Torch-free: the CLI validates every flag before anything heavy is imported.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, DecimalException, Overflow

from dummyprof.errors import UsageError

_SUFFIXES = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "KI": 2**10, "MI": 2**20, "GI": 2**30, "TI": 2**40}
# Every count and size a flag can give must fit the int64 that torch, NumPy and the JSON readers of
# our results hold it in; bigger is refused at parse time (a scenario may bound it further).
INT64_MAX = 2**63 - 1
# The most ranks a parallel layout may have (tp x pp x dp, and ep): 65,536 GPUs is beyond any deployment
# dummyprof models, and bounds the per-node view and the rank groups before anything is built.
MAX_WORLD_RANKS = 65_536
# How deep a free-form value (a model's options, --model-arg, a config's model_args) may nest: a level or two is
# usual; the results reader refuses deeper (a corrupt or hostile file), so the options refuse it before a run.
MAX_NESTING = 64


def nesting_depth(value: object, limit: int = MAX_NESTING) -> int:
    """How many levels of lists and dicts ``value`` nests (0: a scalar, 1: ``[]``), counted up to ``limit + 1``."""
    level, depth = [value], 0
    while depth <= limit:
        containers = [item for item in level if isinstance(item, (dict, list, tuple))]
        if not containers:
            return depth
        depth += 1
        level = [v for item in containers for v in (item.values() if isinstance(item, dict) else item)]
    return depth


_COUNT_RE = re.compile(r"^\s*([+-]?[0-9_]*\.?[0-9_]*(?:[eE][+-]?[0-9]+)?)\s*([KMGT]I?)?\s*$", re.IGNORECASE)
_BYTES_RE = re.compile(r"^\s*([0-9_]*\.?[0-9_]*(?:[eE][+-]?[0-9]+)?)\s*([KMGT]I?)?B?\s*$", re.IGNORECASE)


def _too_big(flag: str, text: object, maximum: int, example: str) -> UsageError:
    limit = " (int64)" if maximum == INT64_MAX else ""
    hint = f"; try {flag} {example}" if example else ""
    return UsageError(flag, f"must be at most {maximum:,}{limit}, got {text!r}{hint}")


def _suffixed(
    flag: str, text: object, pattern: re.Pattern[str], maximum: int, example: str, expected: str, others: str
) -> Decimal:
    """The number ``text`` gives, its suffix multiplied out, at most ``maximum``; too large for Decimal is too
    large for a flag."""
    match = pattern.match(str(text))
    if not match or not match.group(1).strip("_.+-"):
        raise UsageError(flag, f"expected {expected} such as {example}, {others}, got {text!r}")
    suffix = (match.group(2) or "").upper()
    try:
        value = Decimal(match.group(1).replace("_", "")) * _SUFFIXES[suffix]
    except Overflow:
        raise _too_big(flag, text, maximum, example) from None
    except DecimalException:
        raise UsageError(flag, f"expected {expected} such as {example}, got {text!r}") from None
    if value > maximum:  # before to_integral_value: 1e999999 would take forever to expand
        raise _too_big(flag, text, maximum, example)
    return value


def parse_count(flag: str, text: str, *, example: str = "2e9", minimum: int = 1, maximum: int = INT64_MAX) -> int:
    """Parse an integral count such as ``2e9``, ``2_000_000_000``, ``384M`` or ``1.5G``.

    Suffixes K/M/G/T are powers of ten; Ki/Mi/Gi/Ti are powers of two.
    """
    value = _suffixed(flag, text, _COUNT_RE, maximum, example, "a whole number", "384M or 1_000_000")
    if value != value.to_integral_value():
        raise UsageError(flag, f"must be a whole number, got {text!r} = {value.normalize()}; try {example}")
    if value < minimum:
        raise UsageError(flag, f"must be at least {minimum}, got {text!r}; try {example}")
    return int(value)


def parse_int(flag: str, text: str | int, *, minimum: int = 1, maximum: int = INT64_MAX, example: str = "") -> int:
    hint = f"; try {flag} {example}" if example else ""
    if isinstance(text, bool):
        raise UsageError(flag, f"expected a whole number, got {text!r}{hint}")
    if isinstance(text, int):
        value = text
    else:
        cleaned = str(text).strip().replace("_", "")
        if not re.fullmatch(r"[+-]?[0-9]+", cleaned):
            raise UsageError(flag, f"expected a whole number, got {text!r}{hint}")
        if len(cleaned.lstrip("+-0")) > 19:  # more digits than int64 has; int() of 5000 digits raises
            if cleaned.startswith("-"):
                raise UsageError(flag, f"must be at least {minimum}, got {text!r}{hint}")
            raise _too_big(flag, text, maximum, example)
        value = int(cleaned)
    if value < minimum:
        raise UsageError(flag, f"must be at least {minimum}, got {value}{hint}")
    if value > maximum:
        raise _too_big(flag, text, maximum, example)
    return value


def parse_float(
    flag: str, text: str | float, *, minimum: float = 0.0, exclusive: bool = True, example: str = ""
) -> float:
    """Parse a finite float above (or at) a minimum."""
    hint = f"; try {flag} {example}" if example else ""
    try:
        value = float(str(text).replace("_", ""))
    except ValueError:
        raise UsageError(flag, f"expected a number, got {text!r}{hint}") from None
    if not math.isfinite(value):
        raise UsageError(flag, f"must be a finite number, got {text!r}{hint}")
    if value < minimum or (exclusive and value == minimum):
        bound = "greater than" if exclusive else "at least"
        raise UsageError(flag, f"must be {bound} {minimum:g}, got {text!r}{hint}")
    return value


_SECONDS = {"": 1.0, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_seconds(flag: str, text: str | float, *, example: str = "60s") -> float:
    """Parse a positive duration: ``60``, ``60s``, ``1.5m``, ``5min``, ``1h``."""
    raw = str(text).strip().lower()
    number = raw.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = raw[len(number) :]
    if unit not in _SECONDS:
        raise UsageError(flag, f"expected a duration such as {example}, 90 or 5m, got {text!r}")
    return parse_float(flag, number.strip(), example=example) * _SECONDS[unit]


def parse_bytes(flag: str, text: str, *, example: str = "16GiB", maximum: int = INT64_MAX) -> int:
    """Parse a size such as ``16GiB``, ``20G``, ``512MiB`` or ``1e9`` into bytes."""
    value = _suffixed(flag, text, _BYTES_RE, maximum, example, "a size", "20G or 512MiB")
    if value <= 0:
        raise UsageError(flag, f"must be positive, got {text!r}; try {flag} {example}")
    return int(value)


def format_bytes(n: float | int | None) -> str:
    """Human-readable bytes in binary units (GiB), the unit memory is sold in."""
    if n is None:
        return "n/a"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return f"{value:.2f} PiB"


def format_seconds(s: float | None) -> str:
    if s is None:
        return "n/a"
    if s >= 100:
        return f"{s:.0f} s"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} µs"
