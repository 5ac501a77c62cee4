"""The HTML report: one self-contained file per kind of results, checked as text and in headless Chromium."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from dummyprof.results.gate import CheckResult, GateResult
from dummyprof.results.session import Results
from dummyprof.results.store import load_results
from tests.browser import Browser, PageReport, find_chromium
from tests.conftest import CliResult

pytest.importorskip("plotly", reason="the HTML report needs the optional plotly package (pip install -e '.[html]')")

Cli = Callable[..., CliResult]
TINY = ("--hidden", "32", "--repeat", "2", "--warmup", "0", "--device", "cpu", "--quiet")
MAX_BYTES = 6 * 1024 * 1024  # plotly.js as it ships (4.8 MB) and the figures
EXTERNAL = re.compile(r"""(src|href)\s*=\s*["']?(https?:)?//""", re.IGNORECASE)


def needs_chromium() -> str:
    path = find_chromium()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("CI must have chromium: .ci/run installs Debian's chromium")
        pytest.skip("no chromium on PATH (CI installs Debian's; apt-get install chromium to run this locally)")
    return path


@pytest.fixture(scope="module")
def browser() -> typing.Iterator[Browser]:
    """One headless Chromium for the module's pages (a tab each): starting it is most of a page's cost."""
    needs_chromium()
    with Browser() as opened:
        yield opened


@pytest.fixture(scope="module")
def opened(browser: Browser) -> Callable[[Path], PageReport]:
    """Each page loaded once for every test of the module that reads it (a load is most of such a test's time):
    a ``PageReport`` is what the page held once drawn, read-only here."""
    pages: dict[Path, PageReport] = {}

    def open_once(path: Path) -> PageReport:
        if path not in pages:
            pages[path] = browser.open(path)
        return pages[path]

    return open_once


@pytest.fixture(scope="module")
def deployment_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two-rank deployment's page, written once for the tests that read it."""
    from dummyprof.reports.html import render_html

    page = tmp_path_factory.mktemp("deployment") / "deployment.html"
    page.write_text(render_html(_deployment()))
    return page


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """compare (with a trace), sweep, engram, audit and gate HTML files from small real runs."""
    from dummyprof.cli.app import main

    out = tmp_path_factory.mktemp("html")
    runs = {
        "compare": ["compare", "--depth", "4", *TINY],
        "sweep": ["sweep", "--depth", "1:4", "-s", "legacy", "-s", "per-layer", *TINY],
        "engram": [
            "engram",
            "--rows",
            "200000",
            "--dim",
            "64",
            "--method",
            "constant",
            "--repeat",
            "2",
            "--deadline",
            "600",
        ],
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
        assert code in (0, 1, 3), name  # audit: 1 on findings; gate: 3 when a busy machine leaves a time not judged
    return files


def test_every_command_writes_one_self_contained_file_under_6_mib(reports: dict[str, Path]) -> None:
    for name, path in reports.items():
        text = path.read_text()
        assert len(text.encode()) < MAX_BYTES, name
        assert text.startswith("<!DOCTYPE html>") and f"<title>dummyprof {name}</title>" in text
        start = text.index('<script id="plotly-js">')
        ours = text[:start] + text[text.index("</script>", start) :]
        assert not EXTERNAL.search(ours), f"{name}: refers to the network"  # plotly.js itself holds link strings
        # plotly.js inlined as it ships, run by the parser: no decoder of ours, nothing asynchronous before drawing
        assert '<script id="plotly-js">' in text and "inflateRaw" not in text and "DecompressionStream" not in text


def _figures(path: Path) -> dict[str, Any]:
    text = path.read_text()
    found = re.search(r'<script type="application/json" id="figures">(.*?)</script>', text, re.S)
    assert found is not None
    figures: dict[str, Any] = json.loads(found[1])
    return figures


def test_figures_carry_the_measured_data(reports: dict[str, Path]) -> None:
    figures = _figures(reports["sweep"])
    results = load_results(reports["sweep"].with_suffix(".json"))
    assert results.sweep is not None
    visits = next(f for f in figures.values() if f["layout"]["title"]["text"].startswith("visits"))
    legacy = next(t for t in visits["data"] if t["name"] == "legacy")
    assert legacy["y"] == [p.series["legacy"].visits for p in results.sweep.points]
    assert visits["layout"]["xaxis"]["type"] == "log" and visits["layout"]["yaxis"]["type"] == "log"
    fit = results.sweep.fit("legacy", "visits")
    assert fit is not None
    assert any(t["name"].startswith(f"legacy fit: exponent {fit.exponent:.2f}") for t in visits["data"])
    # Log-axis ticks say their unit, and never in SI or e-notation ("100M", "2e+04")
    axes = {f["layout"]["title"]["text"].split(" vs ")[0]: f["layout"]["yaxis"] for f in figures.values()}
    assert all(re.fullmatch(r"[\d,.]+ (µs|ms|s)", tick) for tick in axes["median time"]["ticktext"])
    assert all(re.fullmatch(r"[\d,.]+ (B|KiB|MiB|GiB)", tick) for tick in axes["bytes written"]["ticktext"])
    assert all(re.fullmatch(r"[\d,]+", tick) for tick in axes["visits"]["ticktext"])


def _engram_spread(reports: dict[str, Path]) -> Results:
    """The small engram run with its start-ups made to span 1,000x: 10 ms to 10 s, under a 600 s deadline."""
    results = load_results(reports["engram"].with_suffix(".json"))
    assert results.engram is not None and results.engram.budget.deadline_s == 600
    for m, seconds in zip(results.engram.methods, (10.0, 0.01), strict=True):
        m.startup.value = seconds
    return results


def test_engram_start_up_chart_leads_on_a_log_axis_and_names_its_table_and_device(
    reports: dict[str, Path], browser: Browser, tmp_path: Path
) -> None:
    from dummyprof.reports.html import render_html

    page = tmp_path / "engram.html"
    page.write_text(render_html(_engram_spread(reports)))
    first = next(iter(_figures(page).values()))  # the start-up table's column, the first charted one
    assert first["layout"]["title"]["text"] == "start-up by method on cpu"
    assert first["layout"]["title"]["subtitle"]["text"].startswith("Start-up per rank (deadline 600 s)")
    axis = first["layout"]["xaxis"]
    assert axis["type"] == "log" and axis["ticktext"][0] == "10 ms" and axis["ticktext"][-1] == "10 s"
    assert first["data"][0]["x"] == [10.0, 0.01] and first["data"][0]["y"][0] == "constant · 10.00 s"
    text = page.read_text()
    assert text.index("<h2>Charts</h2>") < text.index("Every figure: the terminal report")  # charts first
    figures = text[text.index('id="figures"') : text.index('<script id="plotly-js">')]
    assert not re.search(r"\de[+-]\d", figures)  # no 2.68e+04 anywhere in the charts
    drawn = browser.open(page)
    assert drawn.errors == [] and drawn.at_load["drawn"] == drawn.chart_divs
    assert any("deadline 600 s" in t for t in drawn.svg_text) and "10 s" in drawn.svg_text


def _deployment() -> Results:
    """Two alike ranks holding 6 GiB on the device (1 GiB replicated) and 2 GiB offloaded, under 8 GiB each."""
    from dummyprof.results.common import Estimate
    from dummyprof.results.deployment import DeploymentResult, RankEntry, RankStrategy

    gib = 1024**3

    def rank(index: int) -> RankEntry:
        strategies = [
            RankStrategy(
                "legacy", visits=40, redundant_visits=30, time=Estimate(2.0, samples=[1.5, 2.0], low=1.5, high=2.0)
            ),
            RankStrategy("per-layer", visits=10, time=Estimate(0.5, samples=[0.5, 0.6], low=0.5, high=0.6)),
        ]
        return RankEntry(
            rank=index, tp_rank=index, layers=[0, 4], held_bytes=8 * gib, replicated_bytes=gib, offloaded_bytes=2 * gib,
            strategies=strategies, device_fits=True, device_room_bytes=2 * gib,
        )  # fmt: skip

    result = DeploymentResult(
        description="tiny <b>model</b>", tp=2, world=2, layer_count=4, ranks=[rank(0), rank(1)],
        device_memory_bytes=8 * gib,
    )  # fmt: skip
    return Results(command="deployment", deployment=result)


def test_deployment_page_charts_its_ranks_and_work_tables(
    opened: Callable[[Path], PageReport], deployment_page: Path
) -> None:
    from dummyprof.reports.html_figures import COLOURS

    page = deployment_page
    held, written, fill = _figures(page).values()
    # ranks 0-1 share a row, as in the table: its held bytes, in GiB
    assert held["layout"]["title"]["text"] == "held by ranks"
    assert held["data"][0]["y"] == ["0-1 · 8.00 GiB"] and held["data"][0]["x"] == [8.0]
    assert written["layout"]["title"]["text"] == "written by ranks and strategy"  # bytes: no device
    assert written["data"][0]["y"] == ["0-1 · legacy · 0 B", "0-1 · per-layer · 0 B"]
    assert fill["layout"]["title"]["text"] == "fill by ranks and strategy on cpu"
    assert fill["data"][0]["y"] == ["0-1 · legacy · 2.00 s", "0-1 · per-layer · 500.0 ms"]
    assert fill["data"][0]["x"] == [2.0, 0.5]
    assert fill["data"][0]["marker"]["color"] == [COLOURS["legacy"], COLOURS["per-layer"]]  # one palette
    whiskers = fill["data"][0]["error_x"]  # each fill's fastest and slowest round
    assert whiskers["arrayminus"] == [0.5, 0.0] and whiskers["array"] == pytest.approx([0.0, 0.1])
    drawn = opened(page)
    assert drawn.errors == [] and drawn.at_load["drawn"] == drawn.chart_divs == 3
    assert "tiny <b>model</b>" in drawn.text
    assert re.search(r"0-1\s.*\s6\.00 GiB\s", drawn.text)  # the ranks table's device bytes: held less offloaded


def test_the_deployment_page_holds_every_figure_of_its_terminal_report(
    opened: Callable[[Path], PageReport], deployment_page: Path
) -> None:
    drawn = opened(deployment_page)
    figures = _terminal_figures(_deployment())
    assert len(figures) > 10 and [f for f in figures if f not in drawn.text] == []


def test_a_quantized_ranks_device_bytes_and_unquantized_weights_are_on_the_page(tmp_path: Path) -> None:
    from dummyprof.reports.html import render_html
    from dummyprof.reports.kinds.deployment import kinds_table, ranks_table

    results = _deployment()
    assert results.deployment is not None
    gib = 1024**3
    for r in results.deployment.ranks:  # 6 GiB on the device: 4 GiB fp8, 1 GiB scales, 1 GiB unquantized
        r.fill_kinds = {"fp8": 4 * gib, "scale": gib, "float": gib, "fp16-scratch": 8 * gib}
        r.rotary_cache_bytes = gib // 2  # a load buffer, not a weight: on the device too
    page = render_html(results)
    ranks, kinds = (ranks_table(results.deployment), kinds_table(results.deployment))
    device = next(i for i, c in enumerate(ranks.columns) if c.header == "device")
    assert ranks.rows[0][device].text == "6.50 GiB" and '<td class="num">6.50 GiB</td>' in page
    # the kinds table has no column for unquantized weights: a note under it says them
    assert kinds is not None and kinds.notes[-1] == "ranks 0-1 not quantized: unquantized weights 1.00 GiB"
    assert "ranks 0-1 not quantized: unquantized weights 1.00 GiB" in page


def test_icicles_collapse_alike_numbered_modules_into_one_block_with_a_count() -> None:
    from dummyprof.reports.html_figures import collapse_repeats

    tensors = [
        (f"layers.{i}.experts.{e}", f"layers.{i}.experts.{e}.w", 100 if i < 4 else 50, 1)
        for i in range(5)
        for e in range(3)
    ]
    tensors += [(f"layers.{i}.attn", f"layers.{i}.attn.q", 10, 2) for i in range(5)] + [("", "embed", 7, 1)]
    own, repeats = collapse_repeats(tensors)
    assert own == {
        "layers.0-3.experts.0-2": [("layers.0-3.experts.0-2.w", 1200, 1)],  # 4 layers x 3 experts x 100 B
        "layers.0-3.attn": [("layers.0-3.attn.q", 40, 2)],  # visits as each had them
        "layers.4.experts.0-2": [("layers.4.experts.0-2.w", 150, 1)],  # layer 4 differs: a block of its own
        "layers.4.attn": [("layers.4.attn.q", 10, 2)],
        "": [("embed", 7, 1)],
    }
    assert repeats == {"layers.0-3": 4, "layers.0-3.experts.0-2": 3, "layers.4.experts.0-2": 3}


def test_icicles_collapse_the_repeated_layers_of_a_real_model() -> None:
    import torch

    from dummyprof.reports.html_figures import collapse_repeats

    model = torch.nn.Sequential(*(torch.nn.Linear(4, 4) for _ in range(3)), torch.nn.Linear(4, 2))
    tensors = [(name.rpartition(".")[0], name, p.nbytes, 1) for name, p in model.named_parameters()]
    own, repeats = collapse_repeats(tensors)
    assert repeats == {"0-2": 3}  # three alike layers; the fourth, narrower, stands alone
    assert own == {
        "0-2": [("0-2.weight", 3 * 64, 1), ("0-2.bias", 3 * 16, 1)],
        "3": [("3.weight", 32, 1), ("3.bias", 8, 1)],
    }


def test_compare_icicle_areas_are_bytes_and_colours_visits(reports: dict[str, Path]) -> None:
    figures = _figures(reports["compare"])
    icicles = [f for f in figures.values() if f["data"][0]["type"] == "icicle"]
    assert [f["layout"]["title"]["text"] for f in icicles] == ["legacy", "per-layer", "unique"]
    legacy = icicles[0]["data"][0]
    node = dict(zip(legacy["ids"], zip(legacy["values"], legacy["marker"]["colors"], strict=True), strict=True))
    deepest = "t:" + ".".join(["child0"] * 4) + ".weight"
    assert node[deepest] == (32 * 32 * 4, 5)  # bytes of the deepest weight, visited depth + 1 times by legacy
    # Labels say where a node is: the path's last parts, and a module's depth.
    label = dict(zip(legacy["ids"], legacy["labels"], strict=True))
    assert label[deepest] == "…child0.child0.weight"
    assert label["m:" + ".".join(["child0"] * 4)] == "…child0.child0.child0 · depth 4"
    assert label["m:child0"] == "child0 · depth 1"
    # legacy fills the deepest weight 5 times: full size; per-layer and unique (at most twice) are compact.
    assert [f["layout"]["height"] for f in icicles] == [520, 280, 280]
    results = load_results(reports["compare"].with_suffix(".json"))
    assert results.compare is not None
    assert node["m:"][0] == sum(t.nbytes for t in results.compare.tensors.values())


def test_report_needs_plotly_and_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import dummyprof.reports.html as html

    html._plotly_js.cache_clear()
    monkeypatch.setitem(sys.modules, "plotly", None)
    from dummyprof.errors import UsageError

    with pytest.raises(UsageError, match=r"pip install -e \"\.\[html\]\""):
        html.render_html(Results(command="compare"))
    html._plotly_js.cache_clear()


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
    reports: dict[str, Path], opened: Callable[[Path], PageReport], name: str
) -> None:
    page = opened(reports[name])
    assert page.errors == []
    assert page.charts == "drawn"
    # every placeholder holds a drawn plot; a gate whose checks all equal the baseline says so instead of a chart
    assert page.chart_divs > 0 or name == "gate"  # a gate's checks mix units: no column of them is charted
    assert page.svg_charts >= page.chart_divs
    # In real time, no virtual time: every chart holds drawn traces when the load event fires, so a plain
    # `chromium --headless --screenshot` shows them (the page used to draw after load, asynchronously).
    assert page.at_load == {"charts": "drawn", "divs": page.chart_divs, "drawn": page.chart_divs}


def test_report_format_html_renders_a_saved_file(cli: Cli, reports: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "saved.html"
    result = cli("report", str(reports["compare"].with_suffix(".json")), "--format", "html", "--output", str(out))
    assert result.exit_code == 0, result.stderr
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_gate_page_shows_each_verdict_with_baseline_and_now(reports: dict[str, Path]) -> None:
    text = reports["gate"].read_text()
    assert "per-layer.visits" in text  # every check in the table
    rule = r"timing rule: slower than x1\.1 and Mann-Whitney U p &lt; [\d.]+"  # < escaped on the page
    assert re.search(rf"{rule}; \d+ of \d+ checks equal their baselines", text)


# -- colours, labels, the gate's figures --------------------------------------------------------------


def test_each_strategy_has_the_same_colour_on_every_chart_of_every_page(reports: dict[str, Path]) -> None:
    from dummyprof.reports.html_figures import COLOURS

    compare = _figures(reports["compare"])
    time_bars = next(f for f in compare.values() if f["layout"]["title"]["text"] == "median by strategy on cpu")
    assert time_bars["data"][0]["marker"]["color"] == [COLOURS[n] for n in ("legacy", "per-layer", "unique")]
    written = next(f for f in compare.values() if f["layout"]["title"]["text"] == "written by strategy")
    assert written["data"][0]["marker"]["color"] == time_bars["data"][0]["marker"]["color"]
    for figure in _figures(reports["sweep"]).values():
        lines = {t["name"]: t["line"]["color"] for t in figure["data"] if "fit" not in t["name"]}
        assert lines == {"legacy": COLOURS["legacy"], "per-layer": COLOURS["per-layer"]}
    audit = next(iter(_figures(reports["audit"]).values()))
    assert audit["layout"]["title"]["text"] == "written by filler"
    assert audit["data"][0]["marker"]["color"] == [COLOURS[n] for n in ("per-layer", "unique")]


def test_every_built_in_strategy_loader_and_fill_method_has_a_colour_of_its_own() -> None:
    from dummyprof.loaders.fp8_methods import METHODS
    from dummyprof.loaders.named import NAMED
    from dummyprof.loaders.strategies import STRATEGIES
    from dummyprof.reports.html_figures import COLOURS, colour

    names = [*STRATEGIES, *NAMED, *METHODS]
    assert sorted(names) == sorted(COLOURS)
    assert len(set(COLOURS.values())) == len(COLOURS)
    # Any other name: a colour from its name alone, so the same on every page.
    assert colour("./my_loader.py:fill") == colour("./my_loader.py:fill") != colour("./my_loader.py:fill2")
    assert re.fullmatch(r"#[0-9a-f]{6}", colour("./my_loader.py:fill"))


def test_a_time_bar_carries_its_figure_as_the_table_writes_it_and_whiskers_from_its_estimate(
    reports: dict[str, Path],
) -> None:
    from dummyprof.reports.format import estimate_cell

    results = load_results(reports["compare"].with_suffix(".json"))
    assert results.compare is not None
    time_bars = next(f for f in _figures(reports["compare"]).values() if f["data"][0]["type"] == "bar")
    bars = time_bars["data"][0]
    strategies = results.compare.strategies
    assert bars["x"] == [s.time.value for s in strategies]
    assert bars["y"] == [f"{s.name} · {estimate_cell(s.time)}" for s in strategies]  # the table's cell, beside it
    assert bars["error_x"]["array"] == [s.time.high - s.time.value for s in strategies]  # type: ignore[operator]
    assert bars["error_x"]["arrayminus"] == [s.time.value - s.time.low for s in strategies]  # type: ignore[operator]
    axis = time_bars["layout"]["xaxis"]  # the whiskers' tops inside the plot
    top = max(s.time.high for s in strategies)  # type: ignore[type-var]
    assert (10 ** axis["range"][1] if axis.get("type") == "log" else axis["range"][1]) > top


def test_a_time_column_is_a_bar_per_row_with_a_figure_hatched_when_projected_on_the_device_it_was_taken_on() -> None:
    from dummyprof.reports.html_figures import table_charts
    from dummyprof.reports.tables.escape import html_text
    from dummyprof.reports.tables.model import NAME, NUMBER, TIME, Cell, Column, Table
    from dummyprof.results.common import Estimate

    table = Table("Fills", [Column("method", NAME), Column("fill", NUMBER, unit=TIME), Column("rounds", NUMBER)])
    table.add("constant", Cell("~2.00 s", value=Estimate.projected(2.0, 1.5, 3.0, device="cuda:0")), "")
    table.add("memset", Cell("n/a", value=Estimate.missing("dry-run")), "")  # no figure: no bar
    table.add("<b>mine</b>", Cell("1.00 s", value=Estimate.measured([0.9, 1.0, 1.2])), "3")
    untimed = Table("Counts", [Column("method", NAME), Column("visits", NUMBER)], [[Cell("constant"), Cell("3")]])
    (chart,) = table_charts([untimed, table], "cpu")  # a column without a unit is not charted
    figure = json.loads(chart.figure)
    bars = figure["data"][0]
    assert figure["layout"]["title"]["text"] == "fill by method on cuda:0"  # the Estimate's device, not the run's
    assert figure["layout"]["title"]["subtitle"]["text"] == "Fills; hatched: projected, whiskers its interval"
    assert bars["x"] == [2.0, 1.0] and bars["y"] == ["constant · ~2.00 s", html_text("<b>mine</b> · 1.00 s")]
    assert bars["marker"]["pattern"]["shape"] == ["/", ""]
    assert bars["error_x"]["arrayminus"] == pytest.approx([0.5, 0.1]) and bars["error_x"]["array"] == pytest.approx(
        [1.0, 0.2]
    )


def _gate_results() -> Results:
    def check(name: str, unit: str, baseline: float, current: float, verdict: str = "pass") -> CheckResult:
        return CheckResult("chain", name, "counter", unit, baseline, current, None, "== baseline", None, verdict, "")

    checks = [
        check("legacy.bytes_written", "bytes", 9602048, 9602048),
        check("unique.redundant_visits", "visits", 0, 0),
        check("per-layer.redundant_visits", "visits", 0, 3, "regressed"),
        check("per-layer.visits", "visits", 110, 0, "regressed"),
    ]
    return Results(command="gate", gate=GateResult(config_path="dummyprof.toml", checks=checks))


def test_gate_page_prints_whole_counters_and_says_how_many_checks_moved() -> None:
    from dummyprof.reports.html import render_html

    page = render_html(_gate_results())
    tables = page[: page.index('<script type="application/json"')]
    assert "9,602,048 B" in tables and not re.search(r"\de[+-]\d", tables)  # was 9.60205e+06
    # 0 -> 3 and 110 -> 0 moved; the two others equal their baselines
    assert "2 of 4 checks equal their baselines" in tables and "); exit 0</strong>" in tables


# -- hostile strings: every string field of a results file is data on the page --------------------------

PAYLOAD = "<img src=x onerror=window.__pwned=1></script><script>window.__pwned=1</script><!--\u2028"
SHOWN = "<img src=x onerror=window.__pwned=1>"  # what a reader must see, as text


def _field_names(cls: type, seen: set[type]) -> set[str]:
    names: set[str] = set()
    for f in msgspec.structs.fields(cls):
        names.add(f.name)
        stack = [f.type]
        while stack:
            tp = stack.pop()
            stack += typing.get_args(tp)
            if isinstance(tp, type) and issubclass(tp, msgspec.Struct) and tp not in seen:
                seen.add(tp)
                names |= _field_names(tp, seen)
    return names


FIELD_NAMES = _field_names(Results, set())


def _poison(value: Any, key: str = "") -> Any:
    """The payload after every string value and every name used as a key (tensors, strategies, metrics...)."""
    if isinstance(value, str):  # command and an Estimate's how: closed sets, any other value refused on load
        return value if key in ("command", "how") else value + PAYLOAD
    if isinstance(value, list):
        return [_poison(v, key) for v in value]
    if isinstance(value, dict):
        return {(k if k in FIELD_NAMES else k + PAYLOAD): _poison(v, k) for k, v in value.items()}
    return value


@pytest.fixture(scope="module")
def hostile(reports: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each kind of results with the payload in every string field, rendered by `report --format html`."""
    from dummyprof.cli.app import main

    out = tmp_path_factory.mktemp("hostile")
    sources = {name: path.with_suffix(".json") for name, path in reports.items()}
    sources["baseline"] = reports["gate"].parent / "baseline.json"
    pages = {}
    for name, source in sources.items():
        poisoned = out / f"{name}.json"
        poisoned.write_text(json.dumps(_poison(json.loads(source.read_text()))))
        pages[name] = out / f"{name}.html"
        assert main(["report", str(poisoned), "--format", "html", "--output", str(pages[name])]) == 0, name
    return pages


def test_hostile_strings_reach_the_page_escaped_in_markup_charts_and_scripts(hostile: dict[str, Path]) -> None:
    for name, path in hostile.items():
        page = path.read_text()
        ours = page[: page.index('<script id="plotly-js">')]  # all but plotly.js itself
        assert "<img" not in ours and "window.__pwned=1</script>" not in ours and "<!--" not in ours, name
        assert "&lt;img src&#61;x onerror&#61;window.__pwned&#61;1&gt;" in ours, name  # shown as text
        assert "onerror=" not in ours, name  # no payload appears verbatim, even escaped
        figures = re.search(r'id="figures">(.*?)</script>', ours, re.S)
        assert figures is not None and not re.search("[<>&\u2028\u2029]", figures[1]), name
        assert json.loads(figures[1]) is not None


@pytest.mark.parametrize("name", ["compare", "sweep", "engram", "audit", "gate", "baseline"])
def test_a_payload_in_every_field_runs_no_script_and_shows_as_text(
    hostile: dict[str, Path], browser: Browser, name: str
) -> None:
    page = browser.open(hostile[name])
    assert not page.pwned
    assert page.errors == []  # no <img src=x> was ever requested
    assert page.at_load["charts"] == "drawn" and page.at_load["drawn"] == page.chart_divs
    assert SHOWN in page.text  # the title, paragraphs and tables show it as typed
    if page.chart_divs:
        assert any(SHOWN in t for t in page.svg_text)  # so do the charts (plotly reads tags in its text)


# -- the page holds every figure of the terminal report ---------------------------------------------------

# A figure as the terminal prints it: a whitespace-separated word with a digit, less the punctuation around it.
FIGURE = re.compile(r"\S*\d\S*")
EDGES = ",;:()[]"


def _terminal_figures(results: Results) -> list[str]:
    from dummyprof.reports.registry import render
    from dummyprof.reports.reporter import RenderOptions

    text = render(results, "terminal", RenderOptions(width=400, detail=True))  # wide: nothing wraps or is elided
    return sorted({word.strip(EDGES) for word in FIGURE.findall(text)} - {""})


def _built_as_blocks() -> list[str]:
    """The report kinds the table model builds (reports/kinds/): their pages hold the terminal's blocks."""
    from dummyprof.reports.kinds import KINDS

    return [name for name in ("compare", "sweep", "engram", "audit", "gate") if name in KINDS]


@pytest.mark.parametrize("name", _built_as_blocks())
def test_the_page_shows_every_figure_and_warning_of_the_terminal_report_drawn_at_load(
    reports: dict[str, Path], opened: Callable[[Path], PageReport], name: str
) -> None:
    from dummyprof.reports.registry import render
    from dummyprof.reports.reporter import RenderOptions

    results = load_results(reports[name].with_suffix(".json"))
    page = opened(reports[name])  # real time, no virtual time budget
    assert page.errors == [] and page.at_load == {"charts": "drawn", "divs": page.chart_divs, "drawn": page.chart_divs}
    figures = _terminal_figures(results)
    assert len(figures) > 10  # times, CVs, ranges, speedups, intervals, %memset, bytes, visits, the environment
    assert [f for f in figures if f not in page.text] == []
    terminal = render(results, "terminal", RenderOptions(width=400, detail=True)).splitlines()
    sentences = [line.strip() for line in terminal if line.startswith(("warning:", "notice:", "note:", "roofline:"))]
    assert [line for line in sentences if line not in page.text] == []


def test_the_compare_page_carries_the_detail_and_the_most_revisited_tensors(reports: dict[str, Path]) -> None:
    results = load_results(reports["compare"].with_suffix(".json"))
    assert results.compare is not None
    page = reports["compare"].read_text()
    for caption in ("Scenario", "Strategies: time", "Strategies: work", "Most revisited tensors", "Memory"):
        assert f"<caption>{caption}" in page, caption
    assert "child0×4.weight" in page  # the deepest weight, refilled depth + 1 times by legacy
    assert "max visits/tensor" not in page  # the charts' own table, a duplicate of the blocks, is gone


def test_the_page_renders_whatever_the_table_model_holds_for_its_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind's blocks (its ``Kind`` in reports/kinds/) are on the page as they are, in place of the charts' own
    tables."""
    import dataclasses

    from dummyprof.reports.html import render_html
    from dummyprof.reports.kinds import KINDS
    from dummyprof.reports.tables.model import BYTES, NUMBER, Cell, Column, Line, Table

    table = Table("From the blocks", [Column("check"), Column("now", NUMBER, unit=BYTES)])
    table.add("per-layer.visits", Cell("1,234,567", value=1234567))
    asked: list[bool] = []

    def blocks(section: Any, detail: bool) -> list[Table | Line]:
        asked.append(detail)
        return [Line("a line <b>of</b> the report"), table]

    monkeypatch.setitem(KINDS, "gate", dataclasses.replace(KINDS["gate"], blocks=blocks))
    page = render_html(_gate_results())
    assert asked == [True]  # files carry the detail
    assert "<caption>From the blocks</caption>" in page and '<td class="num">1,234,567</td>' in page
    assert "<p>a line &lt;b&gt;of&lt;/b&gt; the report</p>" in page
    assert page.index('<div class="chart"') < page.index("From the blocks") < page.index('id="figures"')
    assert "<th>verdict</th>" not in page  # the charts' own table
    figures = json.loads(re.search(r'id="figures">(.*?)</script>', page, re.S)[1])  # type: ignore[index]
    chart = next(iter(figures.values()))  # its charted column, drawn from the block
    assert chart["layout"]["title"]["text"] == "now by check" and chart["data"][0]["y"] == [
        "per-layer.visits · 1,234,567"
    ]


def test_the_deployment_pages_fill_times_name_the_device_they_were_taken_on(tmp_path: Path) -> None:
    from dummyprof.reports.html import render_html

    results = _deployment()
    assert results.deployment is not None
    results.deployment.device = "cuda:0"
    page = tmp_path / "deployment.html"
    page.write_text(render_html(results))
    titles = [f["layout"]["title"]["text"] for f in _figures(page).values()]
    assert "fill by ranks and strategy on cuda:0" in titles
