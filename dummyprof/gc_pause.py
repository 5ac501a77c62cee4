"""The cyclic garbage collector, paused around work that allocates many objects and no cycles."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Without the passes the allocations would trigger and that find nothing: half of a 259 MB file's parse, or
    time inside a timed round."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
