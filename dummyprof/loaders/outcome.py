"""What one fill wrote and the default seed, shared by ``initializers`` and the ``random_fast`` engine."""

from __future__ import annotations

from typing import NamedTuple

DEFAULT_SEED = 1234


class FillOutcome(NamedTuple):
    bytes_written: int
    scratch_bytes: int


NOT_WRITTEN = FillOutcome(0, 0)
