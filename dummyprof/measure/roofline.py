"""A fill's achieved rate as a share of the memset floor measured in the same run, on the same device.

A memset writes one byte value over every byte: nothing that writes the same bytes can be faster, so the
floor's rate is this machine's roofline for dummy fills. A fill far below it (under
GENERATOR_BOUND_SHARE) spends its time drawing random numbers, not moving memory: on CPU torch's
``uniform_`` draws on one thread behind the generator's lock, whatever the memory system could take.
"""

from __future__ import annotations

GENERATOR_BOUND_SHARE = 0.05  # under 5% of the floor: bound by the random generator, not by memory


def share_of_floor(bytes_written: float, seconds: float, floor_bytes: float, floor_seconds: float) -> float | None:
    if seconds <= 0 or floor_seconds <= 0 or floor_bytes <= 0:
        return None
    return (bytes_written / seconds) / (floor_bytes / floor_seconds)


def generator_bound(share: float | None) -> bool | None:
    return None if share is None else share < GENERATOR_BOUND_SHARE
