"""``dummyprof engram`` end to end: bad input, dry run, full measurement, projection, JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dummyprof.reports.kinds.engram import engram_summary
from dummyprof.results.store import load_results

Cli = Callable[..., Any]


@pytest.mark.parametrize(
    ("args", "flag", "needle"),
    [
        (["--rows", "1.5"], "--rows", "whole number"),
        (["--rows", "-5"], "--rows", "at least 1"),
        (["--rows", "lots"], "--rows", "expected a whole number"),
        (["--rows", "0"], "--rows", "at least 1"),
        (["--rows", "1000", "--dim", "250"], "--dim", "scale block (32 elements, one scale byte each); try --dim 224"),
        (["--rows", "1000", "--tp", "8", "--heads", "4"], "--heads", "use --heads 8 or a multiple of it"),
        (["--rows", "1000", "--tp", "8", "--rank", "8"], "--rank", "between 0 and 7"),
        (["--rows", "1000", "--backing", "shm"], "--backing", "only apply with --offload"),
        (["--rows", "1000", "--offload", "--backing", "floppy"], "--backing", "choose from"),
        (["--rows", "1000", "--method", "magic"], "--method", "choose from"),
        (["--rows", "1000", "--method", "constant", "--method", "constant"], "--method", "listed twice"),
        (["--rows", "1000", "--time-budget", "0"], "--time-budget", "greater than 0"),
        (["--rows", "1000", "--deadline", "-1"], "--deadline", "greater than 0"),
        (["--rows", "1000", "--max-memory", "lots"], "--max-memory", "expected a size"),
        (["--rows", "1000", "--repeat", "0"], "--repeat", "at least 1"),
        (["--rows", "1000", "--device", "tpu"], "--device", "unknown device"),
    ],
)
def test_bad_input_is_one_line_naming_the_flag(cli: Cli, args: list[str], flag: str, needle: str) -> None:
    result = cli("engram", *args)
    assert result.exit_code == 2
    line = result.stderr.strip()
    assert "\n" not in line and "Traceback" not in result.stderr
    assert line.startswith(f"dummyprof: error: {flag}: "), line
    assert needle in line


def test_existing_json_is_not_overwritten(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "e.json"
    out.write_text("keep")
    result = cli("engram", "--rows", "1000", "--dry-run", "--json", str(out))
    assert result.exit_code == 2 and "--force" in result.stderr
    assert out.read_text() == "keep"


def test_dry_run_plans_without_measuring(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    result = cli("engram", "--rows", "384M", "--tp", "8", "--offload", "--dry-run", "--json", str(out))
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())["engram"]
    rows = 48_000_000
    assert data["layout"]["part_rows"] == rows
    assert data["layout"]["table_bytes_per_rank"] == rows * 264
    assert data["dry_run"] is True and data["phases"] == []
    methods = {m["name"]: m for m in data["methods"]}
    assert set(methods) == {"random-convert", "random-scratch", "random-chunked", "random-fast", "constant", "memset"}
    assert all(m["mode"] == "planned" and m["time"]["samples"] == [] for m in methods.values())
    tables = data["layout"]["reserved_bytes_per_rank"]
    assert methods["random-convert"]["needed_bytes"] == tables + 3 * rows * 256
    assert methods["random-scratch"]["peak_scratch_bytes"] == 2 * rows * 256
    assert methods["random-chunked"]["peak_scratch_bytes"] == 2 * 64 * 1024 * 1024
    assert methods["random-fast"]["peak_scratch_bytes"] < 16 * 1024 * 1024  # a few lanes per worker, any size
    assert "plan (dry run)" in result.stdout
    assert "pinned memory needs CUDA" in result.stdout


def test_small_table_is_measured_in_full(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "small.json"
    result = cli("engram", "--rows", "4096", "--dim", "64", "--repeat", "2", "--deadline", "600", "--json", str(out))
    assert result.exit_code == 0, result.stderr
    results = load_results(out)
    engram = results.engram
    assert engram is not None and results.command == "engram"
    assert engram.layout.table_bytes_per_rank == 4096 * 66
    assert [p.mode for p in engram.phases] == ["measured", "measured"]
    for m in engram.methods:
        assert m.mode == "measured", m.name
        assert len(m.time.samples) == 2
        assert m.samples == [] and m.time_fit is None
        assert not m.time.is_projected and m.time.value is not None
        assert m.over_deadline is False
    constant = engram.method("constant")
    assert constant.values is not None
    assert (constant.values.weight_zero_share, constant.values.weight_distinct, constant.values.scale_values) == (
        0.0,
        1,
        [127],
    )
    assert engram.method("random-convert").values is not None
    assert engram.method("random-convert").measured_scratch_bytes == 3 * 4096 * 64
    assert engram.method("random-scratch").measured_scratch_bytes == engram.method("random-scratch").peak_scratch_bytes
    floor = engram.method("memset")  # %memset is of the floor's fastest round: its own median reads at most 100%
    assert floor.percent_of_floor.value == pytest.approx(100 * min(floor.time.samples) / (floor.time.value or 0))
    assert engram.run_peak_rss_bytes is not None
    # The answer first, a line per method; the fill table and the statistics behind --detail
    assert result.stdout.startswith("recommended ") and "600 s deadline met" in result.stdout.splitlines()[0]
    assert "Start-up per rank (deadline 600 s)" in result.stdout and "Fill methods" not in result.stdout
    assert "results written to" in result.stdout


def test_too_big_for_the_budget_is_projected_never_allocated(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "big.json"
    budget = 16 * 1024 * 1024
    result = cli(
        "engram", "--rows", "1M", "--dim", "64", "--offload", "--max-memory", "16MiB", "--time-budget", "4",
        "--json", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    engram = load_results(out).engram
    assert engram is not None
    assert engram.budget.memory_bytes == budget
    assert engram.layout.table_bytes_per_rank == 1_000_000 * 66 > budget
    assert all(p.mode == "projected" and p.time.is_projected for p in engram.phases), [
        (p.name, p.mode, p.time, p.samples) for p in engram.phases
    ]
    for m in engram.methods:
        assert m.mode == "projected" and not m.fits_in_memory, m.name
        assert m.reason == "memory" and m.one_fill_s is None
        assert len(m.samples) >= 3
        assert m.time_fit is not None and m.projection is not None and m.projection.line is not None
        assert m.projection.line.points == len(m.samples)
        assert m.projection.time.low <= m.time.value == m.projection.time.value <= m.projection.time.high
        assert m.time.is_projected and m.gb_per_s.is_projected and m.peak_rss_bytes.is_projected
        assert (m.percent_of_floor.value or 0) <= 100 + 1e-9  # never projected faster than the floor
        assert m.time.samples == []
        assert all(p.needed_bytes <= budget for p in m.samples), [
            (m.name, p.part_rows, p.needed_bytes) for p in m.samples
        ]
        assert len({p.part_rows for p in m.samples}) == len(m.samples)
    first = result.stdout.splitlines()[0]
    assert first == engram_summary(engram)
    # "none fit" ends the headline unless a slow (loaded) machine's projected time is wide enough to push the
    # line past 80 columns; then a shorter wording is chosen, still naming the method and the device.
    assert first.endswith("per rank on cpu; no --deadline; none fit") or (" on cpu" in first and len(first) <= 80)
    assert "start-up ~" in result.stdout
    assert "~: projected from smaller samples, not measured" in result.stdout
    markdown = cli("report", str(out), "--format", "markdown")
    assert markdown.exit_code == 0, markdown.stderr
    assert "| random-convert | projected |" in markdown.stdout
    terminal = cli("report", str(out), "--detail")
    assert terminal.exit_code == 0 and "Samples behind the projections" in terminal.stdout


def test_quiet_prints_only_the_summary(cli: Cli) -> None:
    result = cli("engram", "--rows", "2e9", "--offload", "--dry-run", "-q")
    assert result.exit_code == 0
    assert result.stdout.count("\n") == 1
    assert result.stdout.startswith("plan (dry run): need ") and "; none fit in " in result.stdout


def test_help_teaches_with_examples(cli: Cli) -> None:
    result = cli("engram", "--help")
    assert result.exit_code == 0
    assert "dummyprof engram --rows 2e9 --offload" in result.stdout


@pytest.mark.parametrize("flag", ["--tp-size", "--dp-size"])
def test_the_old_layout_flags_are_unknown(cli: Cli, flag: str) -> None:
    result = cli("engram", "--rows", "1000", "--dim", "32", flag, "2", "--dry-run")
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert flag in result.stderr and result.stdout == ""


def test_quiet_says_the_floor_when_it_is_the_only_method(cli: Cli) -> None:
    # before: -q printed nothing at all (exit 0): the summary had no method to recommend
    result = cli("engram", "--rows", "1000", "--dim", "32", "--method", "memset", "--dry-run", "-q")
    assert result.exit_code == 0
    assert result.stdout.startswith("plan (dry run): memset (the floor) only: need 36.00 KiB per rank; fits in ")
    assert result.stdout.count("\n") == 1
