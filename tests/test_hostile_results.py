"""#17.5 (wave 2): numbers in a loaded results file: int64-bounded in every numeric field, safe to format."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from dummyprof.reports.registry import render, reporter_names
from dummyprof.reports.reporter import RenderOptions
from dummyprof.results.inspect import InspectResult, ModuleNode
from dummyprof.results.session import Results
from dummyprof.results.sweep import GrowthFit
from tests.conftest import CliResult

Cli = Callable[..., CliResult]


@pytest.mark.parametrize("literal", ["1" + "0" * 30, "-" + "9" * 20])
def test_an_int_literal_beyond_int64_in_a_float_field_is_refused(cli: Cli, tmp_path: Path, literal: str) -> None:
    """10**30 in a float field passed as 1e30 (an int literal beyond int64 is an edited or corrupt number)."""
    path = tmp_path / "r.json"
    path.write_text(
        '{"schema_version": 6, "command": "compare", "compare": {"strategies": [{"name": "a", '
        f'"recording_overhead_s": {literal}}}]}}}}'
    )
    result = cli("report", str(path), "-f", "json")
    assert result.exit_code == 2, result.stdout
    assert result.stderr.startswith(f"dummyprof: error: {path}: $.compare.strategies[0].recording_overhead_s: ")
    assert "beyond int64" in result.stderr and result.stderr.count("\n") == 1


def test_a_huge_module_depth_from_a_file_is_not_a_huge_indent() -> None:
    """'\\u00a0\\u00a0' * depth: a depth of 9e18 raised OverflowError (10**9 would have built gigabytes)."""

    def page(depth: int, name: str) -> str:
        node = ModuleNode(path="layers.0", type="Linear", depth=depth)
        return render(Results(command="inspect", inspect=InspectResult(nodes=[node])), name, RenderOptions(width=120))

    for name in reporter_names("inspect"):  # against depth 2: the HTML page carries plotly.js (~2 MB) either way
        assert len(page(2**63 - 1, name)) - len(page(2, name)) < 1_000


def test_a_fit_with_a_huge_exponent_predicts_infinity_not_an_error() -> None:
    assert GrowthFit(exponent=1e308, intercept=0.0).predict(10.0) == float("inf")
    assert json.dumps(GrowthFit(exponent=1.0).predict(2.0)) == "2.0"
