"""A verdict against a limit (a deadline in seconds, a device's memory in bytes), judged on an interval.

One rule for every command: ``met`` only when the interval's high end is within the limit, ``missed`` only when
its low end is past it, else ``uncertain``; a time taken on a contended machine gets no verdict at all. Data only:
a code and the two ends (reporters write the words, ``reports/format.py``).
"""

from __future__ import annotations

from dummyprof.results.common import Record

MET = "met"  # the interval's high end is within the limit
MISSED = "missed"  # the interval's low end is past the limit
UNCERTAIN = "uncertain"  # the limit lies inside the interval: this run cannot say
CONTENDED = "contended"  # no verdict: the figures were taken on a busy machine and another run will not repeat them


class Verdict(Record):
    """How a figure stands against ``limit``, in the figure's own unit; the interval it was judged on is the
    figure's own (an ``Estimate``'s ``low``/``high``), not repeated here."""

    code: str = ""
    limit: float = 0.0


def judge(low: float, high: float, limit: float, *, contended: bool = False) -> Verdict:
    """The verdict on an interval against ``limit``; an exact figure (a byte count) gives ``low == high``."""
    if low > high:
        raise ValueError(f"an interval's low end {low!r} is above its high end {high!r}")
    if contended:
        code = CONTENDED
    elif high <= limit:
        code = MET
    elif low > limit:
        code = MISSED
    else:
        code = UNCERTAIN
    return Verdict(code, limit)


def fits(nbytes: int, limit: int) -> bool:
    """An exact byte count against a memory: :func:`judge` on the one-point interval (met or missed, never
    uncertain; bytes are counted, not timed, so no machine's business makes them contended)."""
    return judge(nbytes, nbytes, limit).code == MET
