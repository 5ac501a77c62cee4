"""Terminal and Markdown rendering details of compare results."""

from __future__ import annotations

import pytest

from dummyprof.reports.kinds.compare import floor_share_cell, memory_table, roofline_line, short_name
from dummyprof.reports.tables.model import NUMBER, TEXT, Table
from dummyprof.reports.tables.to_markdown import table_lines
from dummyprof.reports.tables.to_terminal import elide_path
from dummyprof.results import CompareResult, Estimate, StrategyResult
from dummyprof.results.compare import FloorResult


def test_short_name_folds_repeated_segments_and_keeps_the_leaf() -> None:
    assert short_name("child0.child0.child0.weight") == "child0×3.weight"
    assert short_name("child0.child0.weight") == "child0.child0.weight"
    assert short_name("layers.0.mlp.experts.1.w") == "layers.0.mlp.experts.1.w"


def test_a_long_dotted_name_loses_middle_segments_never_part_of_a_word() -> None:
    name = "model.layers.0.mlp.down_proj.weight"
    assert elide_path(name, 80) == name
    assert elide_path(name, 30) == "model.….0.mlp.down_proj.weight"
    assert elide_path(name, 28) == "….0.mlp.down_proj.weight"  # the layer index is worth more than "model"
    assert elide_path(name, 18) == "….down_proj.weight"
    assert elide_path(name, 5) == name  # not even the last part fits: whole, for the column to fold


def test_memory_columns_unavailable_everywhere_become_one_line() -> None:
    strategies = [StrategyResult(name="a"), StrategyResult(name="b")]
    for s in strategies:
        s.memory.pinned_bytes = Estimate.missing("no CUDA")
        s.memory.gpu_used_bytes = Estimate(1024.0)
        s.memory.gpu_allocator_peak_bytes = Estimate.missing("no GPU")
    table = memory_table(CompareResult(strategies=strategies))
    assert table.explained()[:2] == ["growth: during the fill", "scratch: largest temporary"]  # the columns' legends
    missing = table.notes
    assert missing == ["pinned host: unavailable: no CUDA", "GPU allocator peak: unavailable: no GPU"]
    out = table_lines(table)
    assert "GPU used (NVML)" in out[2] and "1.00 KiB" in "\n".join(out)
    assert "pinned host" not in "\n".join(out[:-1])  # a note under the table, not a column
    assert out[-1] == "_growth: during the fill; scratch: largest temporary; " + "; ".join(missing) + "_"


def test_markdown_table_escapes_pipes() -> None:
    table = Table.of("", [("a", TEXT), ("b", NUMBER)], [["x|y", "1"]])
    assert table_lines(table) == ["| a | b |", "| --- | ---: |", "| x\\|y | 1 |"]
    assert table_lines(Table.of("", [("a", TEXT)], [["`x`\n<b>"]])) == ["| a |", "| --- |", "| \\`x\\`\\\\n\\<b> |"]


def test_share_of_floor_and_the_generator_bound_line() -> None:
    result = CompareResult(
        strategies=[
            StrategyResult(name="fast", bytes_written=8_000, time=Estimate.measured([1.0])),  # 8 kB/s
            StrategyResult(name="slow", bytes_written=100, time=Estimate.measured([1.0])),  # 100 B/s
        ],
        floor=FloorResult(bytes_written=4_000, time=Estimate.measured([0.5, 0.4, 0.6]), generator_bound_share=0.05),
    )
    # the floor's fastest round: 4 kB in 0.4 s, 10 kB/s
    assert result.share_of_floor("fast") == pytest.approx(0.8)
    assert result.share_of_floor("slow") == pytest.approx(0.01)
    assert result.generator_bound("fast") is False and result.generator_bound("slow") is True
    assert floor_share_cell(result, "fast").text == "80%" and floor_share_cell(result, "slow").emphasis == "warn"
    line = roofline_line(result)
    assert line is not None and line.startswith("roofline: slow 1.0% of memset: bound by the random generator")
    result.floor = None  # files written before the floor was measured
    assert result.share_of_floor("fast") is None and floor_share_cell(result, "fast").text == "n/a"
    assert roofline_line(result) is None


def test_markdown_shows_each_strategys_share_of_the_memset_floor_and_the_roofline_line() -> None:
    from dummyprof.reports.markdown import render_markdown
    from dummyprof.results.session import Results

    result = CompareResult(
        strategies=[
            StrategyResult(name="fast", bytes_written=8_000, time=Estimate.measured([1.0])),
            StrategyResult(name="slow", bytes_written=100, time=Estimate.measured([1.0])),
        ],
        floor=FloorResult(bytes_written=4_000, time=Estimate.measured([0.5, 0.4, 0.6]), generator_bound_share=0.05),
        baseline_strategy="slow",
    )
    lines = render_markdown(Results(command="compare", compare=result)).splitlines()
    start = lines.index("**Strategies: work**") + 2
    cells = [c.strip() for c in lines[start].strip("|").split("|")]
    column = cells.index("%memset")
    rows = {
        r.strip("|").split("|")[0].strip(): [c.strip() for c in r.strip("|").split("|")]
        for r in lines[start + 2 : start + 4]
    }
    assert rows["fast"][column] == "80%" and rows["slow"][column] == "1.0%"
    assert "%memset: rate over this run's memset floor (0.00 GB/s" in lines[start + 5]
    assert "roofline: slow 1.0% of memset: bound by the random generator" in "\n".join(lines)
