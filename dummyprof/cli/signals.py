"""SIGTERM (``kill``, a CI job's timeout, a container stopping) ends a run as Ctrl-C does, with its own exit code.

The handler raises :class:`TerminatedBySignal`, a ``KeyboardInterrupt``: every place that lets Ctrl-C
through user code (and cleans up on the way: temporary files, mapped backings) lets SIGTERM through too,
and no ``except Exception`` in a user's factory or loader swallows it. Typer turns a KeyboardInterrupt
into exit 130, so ``main`` asks :class:`Sigterm` whether one came, and says so in one line, exit 143.
``engram --nproc`` installs its own handler while its ranks run (they are stopped first).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass

EXIT_TERMINATED = 128 + signal.SIGTERM
TERMINATED_MESSAGE = "terminated (SIGTERM)"


class TerminatedBySignal(KeyboardInterrupt):
    """This process got SIGTERM."""


@dataclass
class Sigterm:
    received: bool = False


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[Sigterm]:
    """While inside, SIGTERM raises :class:`TerminatedBySignal` (main thread only; elsewhere nothing changes)."""
    seen = Sigterm()
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return

    def handler(signum: int, frame: object) -> None:
        seen.received = True
        raise TerminatedBySignal(TERMINATED_MESSAGE)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGTERM, previous)
