"""Terminal and Markdown rendering details of compare results."""

from __future__ import annotations

import io

from rich.console import Console

from dummyprof.reports.compare_terminal import memory_table, short_name
from dummyprof.reports.markdown import md_table
from dummyprof.results import CompareResult, Figure, StrategyResult


def test_short_name_folds_repeated_segments_and_keeps_the_leaf() -> None:
    assert short_name("child0.child0.child0.weight") == "child0×3.weight"
    assert short_name("child0.child0.weight") == "child0.child0.weight"
    assert short_name("layers.0.mlp.experts.1.w") == "layers.0.mlp.experts.1.w"
    assert short_name("a" * 60 + ".weight", width=20) == "…" + ("a" * 60 + ".weight")[-19:]


def test_memory_columns_unavailable_everywhere_become_one_line() -> None:
    strategies = [StrategyResult(name="a"), StrategyResult(name="b")]
    for s in strategies:
        s.memory.pinned_bytes = Figure.missing("no CUDA")
        s.memory.gpu_used_bytes = Figure(1024.0)
        s.memory.gpu_allocator_peak_bytes = Figure.missing("no GPU")
    table, missing = memory_table(CompareResult(strategies=strategies))
    assert missing == ["pinned host: unavailable: no CUDA", "GPU allocator peak: unavailable: no GPU"]
    out = io.StringIO()
    Console(file=out, width=200).print(table)
    assert "GPU used (NVML)" in out.getvalue() and "1.00 KiB" in out.getvalue()
    assert "pinned host" not in out.getvalue()


def test_markdown_table_escapes_pipes() -> None:
    assert md_table(["a", "b"], [["x|y", "1"]], align_right=[1]) == ["| a | b |", "| --- | ---: |", "| x\\|y | 1 |"]
