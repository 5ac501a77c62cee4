"""``dummyprof report`` reads a compare file's per-tensor rows only for the formats that show them.

The rows (``compare.tensors``, one per storage) are most of a large model's file: 400k of them
took ``report -q`` 20 s to convert for a one-line summary. Formats that show no row (``-q``,
markdown, pytorch-benchmark) now leave them out; the formats that show them (terminal tables,
json, html) read and check every row as before, so a corrupt row is still one line and exit 2 there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from dummyprof.api import save_results
from dummyprof.reports.registry import BUILTIN, RenderOptions, render
from dummyprof.results import (
    ModelSummary,
    Results,
    TensorResult,
    load_results,
    results_from_dict,
    store,
)
from tests.conftest import CliResult
from tests.fixtures.results import legacy_and_per_layer

Cli = Callable[..., CliResult]

ROWS = 3000
SUMMARY = "median fill on cpu, fastest per-layer 200.0 ms (2.0x legacy); legacy 400.0 ms\n"


def _rows(n: int) -> dict[str, TensorResult]:
    rows = {}
    for i in range(n):
        name = f"layers.{i // 8}.experts.{i % 8}.weight"
        rows[name] = TensorResult(
            names=[name],
            kinds=["parameter"],
            module=name.rsplit(".", 1)[0],
            depth=3,
            shape=[64, 32],
            dtype="bfloat16",
            nbytes=4096,
            visits={"legacy": 1 + i % 3, "per-layer": 1},
            bytes_written={"legacy": 4096 * (1 + i % 3), "per-layer": 4096},
        )
    return rows


def _compare(n: int = ROWS) -> Results:
    model = ModelSummary(description="many rows", tensors=n, names=n, bytes=4096 * n)
    return legacy_and_per_layer(model, _rows(n), [0.4] * 3, [0.2] * 3, visits=n, redundant=n)


@pytest.fixture
def big(tmp_path: Path) -> Path:
    path = tmp_path / "big.json"
    save_results(_compare(), path)
    return path


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the TensorResult rows in the Results loaded from here on (every load returns through ``_checked``)."""
    count = [0]
    original = store._checked

    def counting(results: Results, source: str) -> Results:
        count[0] += len(results.compare.tensors) if results.compare is not None else 0
        return original(results, source)

    monkeypatch.setattr(store, "_checked", counting)
    yield count


def _edit(path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    data = json.loads(path.read_text())
    change(data)
    out = path.with_name("edited.json")
    out.write_text(json.dumps(data))
    return out


def test_quiet_report_builds_no_tensor_row_and_prints_the_summary(cli: Cli, big: Path, built: list[int]) -> None:
    result = cli("report", "-q", str(big))
    assert (result.exit_code, result.stdout, result.stderr) == (0, SUMMARY, "")
    assert built[0] == 0


@pytest.mark.parametrize("fmt", ["pytorch-benchmark"])
def test_formats_without_rows_build_none_and_match_a_full_load(cli: Cli, big: Path, built: list[int], fmt: str) -> None:
    result = cli("report", "-f", fmt, str(big))
    assert result.exit_code == 0 and built[0] == 0
    assert result.stdout == render(load_results(big), fmt)  # the full load renders the same document


@pytest.mark.parametrize("args", [(), ("-f", "json"), ("-f", "markdown")])
def test_formats_with_rows_build_every_one(cli: Cli, big: Path, built: list[int], args: tuple[str, ...]) -> None:
    result = cli("report", *args, str(big))
    assert result.exit_code == 0
    assert built[0] == ROWS
    if args == ("-f", "json"):
        assert len(json.loads(result.stdout)["compare"]["tensors"]) == ROWS
    else:  # the summary leads the terminal report (issue #20); Markdown ranks the same tensors (issue #18)
        assert (
            "Most revisited tensors (top" in result.stdout
            and SUMMARY.strip() in result.stdout.splitlines()[2 if args else 0]
        )


BAD_ROW = "layers.3.experts.5.weight"


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (lambda row: row.update(depth=None), "depth", "Expected `int`, got `null`"),
        (lambda row: row.update(shape=[64, True]), "shape[1]", "Expected `int`, got `bool`"),
        (lambda row: row["visits"].update(legacy=2**63), "visits.legacy", "Expected `int` <= 9223372036854775807"),
        (lambda row: row.update(names="x"), "names", "Expected `array`, got `str`"),
    ],
)
def test_a_corrupt_row_is_one_line_and_exit_2_where_rows_are_read_and_ignored_where_not(
    cli: Cli, big: Path, change: Callable[[dict[str, Any]], None], field: str, message: str
) -> None:
    path = _edit(big, lambda d: change(d["compare"]["tensors"][BAD_ROW]))
    for args in [(), ("-f", "json"), ("-f", "html"), ("-f", "markdown")]:
        result = cli("report", *args, str(path))
        assert result.exit_code == 2, args
        assert result.stdout == ""
        assert result.stderr.startswith(f"dummyprof: error: {path}: $.compare.tensors.{BAD_ROW}.{field}: ")
        assert message in result.stderr and result.stderr.count("\n") == 1
    # Formats that show no row do not read them, so they do not check them either (docs/promises.md).
    result = cli("report", "-q", str(path))
    assert (result.exit_code, result.stdout, result.stderr) == (0, SUMMARY, "")


def test_a_rows_section_that_is_not_an_object_is_refused_by_the_full_report_only(cli: Cli, big: Path) -> None:
    path = _edit(big, lambda d: d["compare"].update(tensors=[1, 2]))
    result = cli("report", str(path))
    assert result.exit_code == 2
    assert result.stderr == f"dummyprof: error: {path}: $.compare.tensors: Expected `object`, got `array`\n"
    assert cli("report", "-q", str(path)).stdout == SUMMARY


def test_reporters_that_say_they_read_no_rows_render_the_same_without_them() -> None:
    """The guard on ``reads_tensor_rows``: a reporter that starts showing rows must say so, or this fails."""
    full = _compare(40)
    full.compare.tensors[BAD_ROW].visits["legacy"] = 7  # a row the terminal tables would rank first
    without = msgspec.structs.replace(full, compare=msgspec.structs.replace(full.compare, tensors={}))
    checked = []
    for reporter in BUILTIN:
        if not reporter.supports("compare"):
            continue
        for options in (RenderOptions(quiet=False), RenderOptions(quiet=True)):
            if reporter.reads_tensor_rows(options):
                continue
            assert reporter.render(full, options) == reporter.render(without, options), (reporter.name, options)
            checked.append((reporter.name, options.quiet))
    assert checked == [
        ("terminal", True),
        ("pytorch-benchmark", False),
        ("pytorch-benchmark", True),
    ]
    terminal = next(r for r in BUILTIN if r.name == "terminal")  # the tables do show rows: the check has teeth
    assert BAD_ROW in terminal.render(full, RenderOptions())
    assert BAD_ROW not in terminal.render(without, RenderOptions())


def test_load_without_rows_leaves_them_empty_and_the_rest_whole(big: Path) -> None:
    full = load_results(big)
    lean = load_results(big, tensor_rows=False)
    assert full.compare is not None and lean.compare is not None
    assert len(full.compare.tensors) == ROWS and lean.compare.tensors == {}
    assert msgspec.structs.replace(full.compare, tensors={}) == lean.compare
    data = json.loads(big.read_text())
    results_from_dict(data, tensor_rows=False)
    assert len(data["compare"]["tensors"]) == ROWS  # the caller's document is not changed
