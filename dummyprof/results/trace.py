"""Spans of one instrumented fill round per strategy (``compare --trace``): run after the timed rounds, on a
fresh model, with a clock read around every module and fill, so never used for the timing figures."""

from __future__ import annotations

from dummyprof.results.common import Count, Record


class Span(Record):
    kind: str = "fill"  # "module" (the traversal's time at one module) or "fill" (one initializer call)
    name: str = ""  # module path ("" is the root) or the storage's qualified name
    start_s: float = 0.0  # from the start of this strategy's round
    duration_s: float = 0.0
    local_name: str = ""  # fill: the key the traversal handed over (e.g. a state_dict key)
    dtype: str = ""
    nbytes: Count = 0
    visit: Count = 0  # fill: this storage's visit number in the round (1 = first)
    bytes_written: Count = 0


class StrategyTrace(Record):
    strategy: str = ""
    initializer: str = ""
    total_s: float = 0.0
    spans: list[Span] = []  # in start order; fills nest inside their module
