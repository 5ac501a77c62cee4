"""The spans of ``compare --trace`` as a Chrome trace (Perfetto, chrome://tracing) or a speedscope file.

Chrome's: a track per strategy, a complete event for the round, each module and each fill, nested by time.
Every track starts at 0 so the strategies line up side by side (the rounds ran one after another).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dummyprof.results.session import Results
from dummyprof.results.trace import Span, StrategyTrace

PID = 1
NOTE = (
    "One instrumented fill round per strategy, run on a fresh model after the timed rounds and apart from them; "
    "its durations include the tracer's own clock reads and are not the timed figures of the report."
)


def _traces(results: Results) -> list[StrategyTrace]:
    if results.compare is None or not results.compare.trace:
        raise ValueError("these results hold no trace; run dummyprof compare --trace PATH")
    return results.compare.trace


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def _module_label(span: Span) -> str:
    return span.name or "<root>"


def _fill_args(span: Span) -> dict[str, Any]:
    return {
        "tensor": span.name,
        "key": span.local_name,
        "dtype": span.dtype,
        "bytes": span.nbytes,
        "visit": span.visit,
        "bytes_written": span.bytes_written,
    }


def _meta(tid: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A metadata event: the process's or a track's name, or a track's place."""
    return {"ph": "M", "pid": PID, "tid": tid, "ts": 0, "name": name, "args": args}


def chrome_trace(results: Results) -> str:
    traces = _traces(results)
    events = [_meta(0, "process_name", {"name": "dummyprof compare"})]
    for tid, trace in enumerate(traces, start=1):
        label = f"{trace.strategy} ({trace.initializer})"
        events += [_meta(tid, "thread_name", {"name": label}), _meta(tid, "thread_sort_index", {"sort_index": tid})]
        fills = sum(1 for s in trace.spans if s.kind == "fill")
        events.append(
            {
                "ph": "X",
                "cat": "round",
                "name": f"{trace.strategy}: instrumented round",
                "pid": PID,
                "tid": tid,
                "ts": 0.0,
                "dur": _us(trace.total_s),
                "args": {"strategy": trace.strategy, "initializer": trace.initializer, "fills": fills},
            }
        )
        for span in trace.spans:
            event: dict[str, Any] = {
                "ph": "X",
                "pid": PID,
                "tid": tid,
                "ts": _us(span.start_s),
                "dur": _us(span.duration_s),
            }
            if span.kind == "module":
                event.update(cat="module", name=_module_label(span), args={"module": span.name})
            else:
                event.update(cat="fill", name=span.name, args=_fill_args(span))
            events.append(event)
    document = {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "tool": f"dummyprof {results.dummyprof_version}",
            "command": "compare",
            "instrumented_round": NOTE,
            "model": results.compare.model.description if results.compare else "",
            "created_at": results.created_at,
        },
    }
    return json.dumps(document, indent=None, separators=(",", ":")) + "\n"


def speedscope(results: Results) -> str:
    """speedscope's file format: an evented profile per strategy, in microseconds."""
    traces = _traces(results)
    frames: list[dict[str, str]] = []
    index: dict[str, int] = {}

    def frame(name: str) -> int:
        if name not in index:
            index[name] = len(frames)
            frames.append({"name": name})
        return index[name]

    profiles = []
    for trace in traces:
        end_of_round = _us(trace.total_s)
        root = frame(f"{trace.strategy}: instrumented round")
        events: list[dict[str, Any]] = [{"type": "O", "frame": root, "at": 0.0}]
        open_module: tuple[int, float] | None = None
        for span in trace.spans:
            start, end = _us(span.start_s), _us(span.start_s + span.duration_s)
            if span.kind == "module":
                if open_module is not None:
                    events.append({"type": "C", "frame": open_module[0], "at": open_module[1]})
                open_module = (frame(f"module {_module_label(span)}"), end)
                events.append({"type": "O", "frame": open_module[0], "at": start})
            else:
                fill = frame(f"fill {span.name}")
                events.append({"type": "O", "frame": fill, "at": start})
                events.append({"type": "C", "frame": fill, "at": end})
        if open_module is not None:
            events.append({"type": "C", "frame": open_module[0], "at": open_module[1]})
        events.append({"type": "C", "frame": root, "at": end_of_round})
        profiles.append(
            {
                "type": "evented",
                "name": f"{trace.strategy} ({trace.initializer})",
                "unit": "microseconds",
                "startValue": 0.0,
                "endValue": end_of_round,
                "events": events,
            }
        )
    document = {
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "name": f"dummyprof compare: {NOTE}",
        "exporter": f"dummyprof {results.dummyprof_version}",
        "activeProfileIndex": 0,
        "shared": {"frames": frames},
        "profiles": profiles,
    }
    return json.dumps(document, separators=(",", ":")) + "\n"


def trace_renderer(path: Path) -> Callable[[Results], str]:
    """speedscope for ``*.speedscope.json``, Chrome's Trace Event Format otherwise."""
    return speedscope if path.name.endswith(".speedscope.json") else chrome_trace
