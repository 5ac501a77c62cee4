"""The cyclic garbage collector, paused around work that allocates many objects and no cycles."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Without the collector's passes, which the allocations alone would trigger and which find nothing.

    Used around parsing a large results file (the passes were about half of the parse of a 259 MB file) and
    around timed fills (a pass inside a round would be timed as the strategy's).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
