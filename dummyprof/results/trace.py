"""Spans of one instrumented fill round per strategy (``compare --trace``), torch-free.

The instrumented round runs after the timed rounds, on a fresh model, with a clock
read around every module and every tensor fill: its durations include that
overhead and are never used for the timing figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Span:
    kind: str = "fill"  # "module" (the traversal's time at one module) or "fill" (one initializer call)
    name: str = ""  # module path ("" is the root) or the storage's qualified name
    start_s: float = 0.0  # from the start of this strategy's round
    duration_s: float = 0.0
    local_name: str = ""  # fill: the key the traversal handed over (e.g. a state_dict key)
    dtype: str = ""
    nbytes: int = 0
    visit: int = 0  # fill: this storage's visit number in the round (1 = first)
    bytes_written: int = 0


@dataclass
class StrategyTrace:
    strategy: str = ""
    initializer: str = ""
    total_s: float = 0.0
    spans: list[Span] = field(default_factory=list)  # in start order; fills nest inside their module
