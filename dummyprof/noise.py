"""The margin a value offered from a noisy measurement needs to hold when it is followed on the same machine."""

from __future__ import annotations

from collections.abc import Iterable


def spread(readings: Iterable[float]) -> float:
    """The slowest of a run's readings of one quantity over its fastest (at least 1): how far one more reading, taken
    the same way on the same machine, may land from any of them. An offer computed from the fastest reading and
    multiplied by this (or one computed from the slowest and divided by it) holds when the next run reads anywhere
    in that range; 1 with fewer than two positive readings (no spread measured, none assumed)."""
    positive = [r for r in readings if r > 0]
    return max(positive) / min(positive) if len(positive) > 1 else 1.0
