"""Gate reports from a synthetic result: JUnit XML, Markdown, github-action-benchmark JSON, terminal."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from dummyprof.api import save_results
from dummyprof.reports.gate_benchmark import benchmark_entries
from dummyprof.reports.gate_junit import gate_junit
from dummyprof.reports.markdown import render_markdown
from dummyprof.reports.terminal import render
from dummyprof.results.gate import NOT_JUDGED, VERDICTS, CheckResult, gate_exit_code
from dummyprof.results.store import load_results
from tests.conftest import CliResult
from tests.fixtures.results import gate_results


def test_junit_is_xml_with_one_testcase_per_check() -> None:
    root = ET.fromstring(gate_junit(gate_results()))
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("7", "2", "2")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["dummyprof gate: tree", "dummyprof gate: gone"]
    assert suites[0].get("timestamp") == "2026-01-02T03:04:05"
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == 7
    assert cases[1].get("name") == "limit per-layer.max_visits"
    assert cases[1].get("classname") == "dummyprof.gate.tree"
    failure = cases[1].find("failure")
    assert failure is not None and failure.get("type") == "regression"
    assert failure.get("message") == "regressed: current 13; baseline 2 (+11); rule <= 2; 13 is over the limit 2"
    error = cases[5].find("error")
    assert error is not None and error.get("type") == "not-comparable"
    assert "'B <&> \"quoted\"'" in (error.get("message") or "")  # escaped in the file, intact once parsed
    assert cases[6].find("error") is not None and cases[6].find("error").get("type") == "could-not-measure"  # type: ignore[union-attr]
    assert cases[0].find("failure") is None and cases[0].find("error") is None
    assert cases[4].find("failure") is None  # not significant is not a failure


def test_markdown_renders_a_table_row_per_check() -> None:
    text = render_markdown(gate_results())
    lines = text.splitlines()
    header = lines.index("| check | baseline | current | change | verdict |")
    assert lines[header + 1] == "| --- | ---: | ---: | ---: | --- |"
    rows = lines[header + 2 : header + 11]  # a row per scenario, then its checks, as on the terminal
    assert all(r.startswith("| ") and r.endswith(" |") and r.count(" | ") == 4 for r in rows)
    assert rows[0] == "| **tree** |  |  |  |  |" and rows[7] == "| **gone** |  |  |  |  |"
    assert rows[2] == "| per-layer.max_visits<br>_limit <= 2; 13 is over the limit 2_ | 2 | 13 | +11 | **regressed** |"
    assert rows[4].startswith("| unique.bytes_written | 2,048 B | 1,024 B | -1,024 |")
    assert lines[0] == "## dummyprof gate"
    rule = "timing rule: slower than x1.1 and Mann-Whitney U p < 0.05"
    assert f"config: dummyprof.toml; {rule}; 1 of 5 checks equal their baselines" in lines


def test_benchmark_export_is_custom_smaller_is_better() -> None:
    entries = benchmark_entries(gate_results())
    assert entries[0] == {"name": "tree: per-layer.visits", "unit": "visits", "value": 110.0}
    assert entries[1]["name"] == "tree: legacy.time" and entries[1]["value"] == 1.2 and entries[1]["range"] == "± 0.1"
    assert entries[2]["name"] == "tree: per-layer.time / legacy.time" and entries[2]["value"] == 0.97
    assert len(entries) == 3  # the crashed scenario exports nothing: no fake zeros
    json.dumps(entries, allow_nan=False)


def test_terminal_table_shows_every_verdict() -> None:
    buffer = io.StringIO()
    render(gate_results(), Console(file=buffer, width=250, no_color=True))
    text = buffer.getvalue()
    for verdict in VERDICTS:
        assert verdict in text or verdict == NOT_JUDGED  # the fixture has none; the test below renders one
    # every kind of verdict at once: the summary keeps to 80 columns with the outcome's word and what failed
    assert "gate FAIL (7 checks: 2 regressed, 1 not comparable, 1 could not measure); exit 1" in text


def test_gate_results_round_trip_and_render_without_measuring(tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    path = tmp_path / "gate.json"
    save_results(gate_results(), path)
    loaded = load_results(path)
    assert loaded.gate == gate_results().gate
    result = cli("report", str(path), "--format", "markdown")
    assert result.exit_code == 0
    assert "| per-layer.visits | 110 | 110 | = | pass |" in result.stdout


def test_a_time_not_judged_under_contention_is_skipped_in_every_report_and_incomplete_under_strict() -> None:
    results = gate_results()
    assert results.gate is not None
    busy = "timed on a busy machine (CPU pressure 36% over the rounds: cpu-pressure), so not judged: skipped"
    results.gate.checks = [CheckResult("tree", "per-layer.time", "timing", "s", current=1.5, verdict=NOT_JUDGED,
                                       detail=busy)]  # fmt: skip
    results.gate.exit_code = gate_exit_code(results.gate.checks)
    buffer = io.StringIO()
    render(results, Console(file=buffer, width=250, no_color=True))
    text = buffer.getvalue()
    assert busy in text
    assert "gate PASS, timings skipped (1 checks: 1 not judged); exit 0" in text
    junit = ET.fromstring(gate_junit(results))
    skipped = junit.find("./testsuite/testcase/skipped")
    assert skipped is not None and busy in (skipped.get("message") or "")
    assert (junit.get("skipped"), junit.get("errors"), junit.find("./testsuite").get("skipped")) == ("1", "0", "1")
    markdown = render_markdown(results)
    assert "gate PASS, timings skipped" in markdown and busy in markdown

    results.gate.strict = True
    results.gate.exit_code = gate_exit_code(results.gate.checks, strict=True)
    buffer = io.StringIO()
    render(results, Console(file=buffer, width=250, no_color=True))
    assert "gate INCOMPLETE: times not judged (--strict) (1 checks: 1 not judged); exit 3" in buffer.getvalue()
    error = ET.fromstring(gate_junit(results)).find("./testsuite/testcase/error")
    assert error is not None and error.get("type") == "not-judged"
