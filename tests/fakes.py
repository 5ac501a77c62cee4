"""Test doubles: a fake clock that only moves when told to."""

from __future__ import annotations


class FakeClock:
    """A monotonic clock for tests; ``tick`` advances it, reading it does not."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += seconds
