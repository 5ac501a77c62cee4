"""The HTML report: one self-contained file per kind of results, checked as text and in headless Chromium."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from dummyprof.results.session import Results
from dummyprof.results.store import load_results
from tests.browser import find_chromium, open_page
from tests.conftest import CliResult

pytest.importorskip("plotly", reason="the HTML report needs the optional plotly package (pip install -e '.[html]')")

Cli = Callable[..., CliResult]
TINY = ("--hidden", "32", "--repeat", "2", "--warmup", "0", "--device", "cpu", "--quiet")
MAX_BYTES = 3 * 1024 * 1024
EXTERNAL = re.compile(r"""(src|href)\s*=\s*["']?(https?:)?//""", re.IGNORECASE)


def needs_chromium() -> str:
    path = find_chromium()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("CI must have chromium: .ci/run installs Debian's chromium")
        pytest.skip("no chromium on PATH (CI installs Debian's; apt-get install chromium to run this locally)")
    return path


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """compare (with a trace), sweep, engram, audit and gate HTML files from small real runs."""
    from dummyprof.cli.app import main

    out = tmp_path_factory.mktemp("html")
    runs = {
        "compare": ["compare", "--depth", "4", *TINY],
        "sweep": ["sweep", "--depth", "1:4", "-s", "legacy", "-s", "per-layer", *TINY],
        "engram": ["engram", "--rows", "200000", "--dim", "64", "--method", "constant", "--repeat", "2", "-q"],
        "audit": ["audit", "--model", "tests/fixtures/models.py:tied", "--quiet"],
    }
    config = out / "dummyprof.toml"
    config.write_text(
        "[scenarios.chain]\n"
        'command = "compare"\n'
        'options = { depth = 3, hidden = 32, repeat = 2, warmup = 0, device = "cpu" }\n'
        'counters = "all"\n'
        'ratios = [{ numerator = "per-layer.time", denominator = "legacy.time", max = 5.0 }]\n'
    )
    assert main(["baseline", "--config", str(config), "--output", str(out / "baseline.json"), "-q"]) == 0
    runs["gate"] = ["gate", "--config", str(config), "--baseline", str(out / "baseline.json"), "-q"]
    files = {}
    for name, args in runs.items():
        files[name] = out / f"{name}.html"
        code = main([*args, "--json", str(out / f"{name}.json"), "--html", str(files[name])])
        assert code in (0, 1), name  # audit exits 1 on findings
    return files


def test_every_command_writes_one_self_contained_file_under_3_mib(reports: dict[str, Path]) -> None:
    for name, path in reports.items():
        text = path.read_text()
        assert len(text.encode()) < MAX_BYTES, name
        assert text.startswith("<!DOCTYPE html>") and f"<title>dummyprof {name}</title>" in text
        assert not EXTERNAL.search(text), f"{name}: refers to the network"
        assert 'id="plotly-js-gzip"' in text and "DecompressionStream" in text


def test_figures_carry_the_measured_data(reports: dict[str, Path]) -> None:
    text = reports["sweep"].read_text()
    figures = json.loads(re.search(r'<script type="application/json" id="figures">(.*?)</script>', text, re.S)[1])
    results = load_results(reports["sweep"].with_suffix(".json"))
    assert results.sweep is not None
    visits = next(f for f in figures.values() if f["layout"]["title"]["text"].startswith("visits"))
    legacy = next(t for t in visits["data"] if t["name"] == "legacy")
    assert legacy["y"] == [p.series["legacy"].visits for p in results.sweep.points]
    assert visits["layout"]["xaxis"]["type"] == "log" and visits["layout"]["yaxis"]["type"] == "log"
    fit = results.sweep.fit("legacy", "visits")
    assert fit is not None
    assert any(t["name"].startswith(f"legacy fit: exponent {fit.exponent:.2f}") for t in visits["data"])


def test_compare_icicle_areas_are_bytes_and_colours_visits(reports: dict[str, Path]) -> None:
    text = reports["compare"].read_text()
    figures = json.loads(re.search(r'<script type="application/json" id="figures">(.*?)</script>', text, re.S)[1])
    icicles = [f for f in figures.values() if f["data"][0]["type"] == "icicle"]
    assert [f["layout"]["title"]["text"] for f in icicles] == ["legacy", "per-layer", "unique"]
    legacy = icicles[0]["data"][0]
    node = dict(zip(legacy["ids"], zip(legacy["values"], legacy["marker"]["colors"], strict=True), strict=True))
    deepest = "t:" + ".".join(["child0"] * 4) + ".weight"
    assert node[deepest] == (32 * 32 * 4, 5)  # bytes of the deepest weight, visited depth + 1 times by legacy
    results = load_results(reports["compare"].with_suffix(".json"))
    assert results.compare is not None
    assert node["m:"][0] == sum(t.nbytes for t in results.compare.tensors.values())


def test_report_needs_plotly_and_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import dummyprof.reports.html as html

    html._packed_plotly_js.cache_clear()
    monkeypatch.setitem(sys.modules, "plotly", None)
    from dummyprof.errors import UsageError

    with pytest.raises(UsageError, match=r"dummyprof\[html\]"):
        html.render_html(Results(command="compare"))
    html._packed_plotly_js.cache_clear()


def test_html_renders_from_a_saved_file_without_torch(reports: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from pathlib import Path\n"
        "from dummyprof.reports.html import render_html\n"
        "from dummyprof.results.store import load_results\n"
        f"Path({str(out)!r}).write_text(render_html(load_results(Path({str(reports['sweep'].with_suffix('.json'))!r}))))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert out.stat().st_size > 100_000


@pytest.mark.parametrize("name", ["compare", "sweep", "engram", "audit", "gate"])
def test_page_loads_in_headless_chromium_without_console_errors_and_draws_its_charts(
    reports: dict[str, Path], name: str
) -> None:
    needs_chromium()
    page = open_page(reports[name])
    assert page.errors == []
    assert page.charts == "drawn"
    assert page.chart_divs > 0 and page.svg_charts >= page.chart_divs  # every placeholder holds a drawn plot


def test_report_format_html_renders_a_saved_file(cli: Cli, reports: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "saved.html"
    result = cli("report", str(reports["compare"].with_suffix(".json")), "--format", "html", "--output", str(out))
    assert result.exit_code == 0, result.stderr
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_gate_page_shows_each_verdict_with_baseline_and_now(reports: dict[str, Path]) -> None:
    text = reports["gate"].read_text()
    assert "Gate verdicts" in text and "chain: counter per-layer.visits" in text
    assert "Now vs baseline" in text
