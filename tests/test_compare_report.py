"""Terminal and Markdown rendering details of compare results."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from dummyprof.reports.compare_terminal import floor_share_cell, memory_table, roofline_line, short_name
from dummyprof.reports.markdown import md_table
from dummyprof.results import CompareResult, Figure, StrategyResult
from dummyprof.results.common import Timing
from dummyprof.results.compare import FloorResult


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


def test_share_of_floor_and_the_generator_bound_line() -> None:
    result = CompareResult(
        strategies=[
            StrategyResult(name="fast", bytes_written=8_000, timing=Timing([1.0])),  # 8 kB/s
            StrategyResult(name="slow", bytes_written=100, timing=Timing([1.0])),  # 100 B/s
        ],
        floor=FloorResult(bytes_written=4_000, timing=Timing([0.5, 0.4, 0.6]), generator_bound_share=0.05),
    )
    # the floor's fastest round: 4 kB in 0.4 s, 10 kB/s
    assert result.share_of_floor("fast") == pytest.approx(0.8)
    assert result.share_of_floor("slow") == pytest.approx(0.01)
    assert result.generator_bound("fast") is False and result.generator_bound("slow") is True
    assert floor_share_cell(result, "fast") == "80%"
    line = roofline_line(result)
    assert line is not None and line.startswith("roofline: slow 1.0% of memset: bound by the random generator")
    result.floor = None  # files written before the floor was measured
    assert result.share_of_floor("fast") is None and floor_share_cell(result, "fast") == "n/a"
    assert roofline_line(result) is None


def test_markdown_shows_each_strategys_share_of_the_memset_floor_and_the_roofline_line() -> None:
    from dummyprof.reports.compare_markdown import compare_markdown
    from dummyprof.results.session import Results

    result = CompareResult(
        strategies=[
            StrategyResult(name="fast", bytes_written=8_000, timing=Timing([1.0])),
            StrategyResult(name="slow", bytes_written=100, timing=Timing([1.0])),
        ],
        floor=FloorResult(bytes_written=4_000, timing=Timing([0.5, 0.4, 0.6]), generator_bound_share=0.05),
        baseline_strategy="slow",
    )
    lines = compare_markdown(Results(command="compare", compare=result))
    header = next(line for line in lines if line.startswith("| strategy"))
    cells = [c.strip() for c in header.strip("|").split("|")]
    column = cells.index("% of memset")
    rows = {r.strip("|").split("|")[0].strip(): [c.strip() for c in r.strip("|").split("|")] for r in lines[2:]}
    assert rows["fast"][column] == "80%" and rows["slow"][column] == "1.0%"
    assert any(line.startswith("% of memset: rate over this run's memset floor (0.00 GB/s") for line in lines)
    assert "> roofline: slow 1.0% of memset: bound by the random generator" in "\n".join(lines)
