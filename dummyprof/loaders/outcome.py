"""What one fill wrote, as every initializer and fill engine returns it, and the seed they share by default.

Its own module so that ``random_fast`` (an engine) and ``initializers`` (which picks engines) need not import
each other.
"""

from __future__ import annotations

from typing import NamedTuple

DEFAULT_SEED = 1234


class FillOutcome(NamedTuple):
    bytes_written: int
    scratch_bytes: int


NOT_WRITTEN = FillOutcome(0, 0)
