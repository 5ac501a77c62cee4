"""The reporter registry: one table of formats used by every command, ``report`` and ``dummyprof.render``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import dummyprof
from dummyprof.errors import UsageError
from dummyprof.reports import registry
from dummyprof.reports.kinds import KINDS
from dummyprof.reports.registry import RenderOptions, Reporter, get_reporter, register_reporter, render, reporter_names
from dummyprof.results.session import Results
from dummyprof.results.store import load_results
from tests.conftest import CliResult

OLD = Path(__file__).resolve().parent / "fixtures" / "results"
FILES = sorted(OLD.glob("*.json"))


def test_each_results_kind_is_one_kind_keyed_alike_in_every_layer() -> None:
    """A kind of Results (its ``command``) is one ``Kind`` in its own module, under the name ``results/`` keys its
    section by; the whole-file checks and the gate's metrics use the same names."""
    from dummyprof.gate.commands import COMMANDS
    from dummyprof.reports.kinds import BUILTIN
    from dummyprof.results.session import SECTIONS
    from dummyprof.results.whole import CHECKS

    assert set(KINDS) == set(SECTIONS) and len(BUILTIN) == len(KINDS)
    assert all(kind.name == name and kind.blocks.__module__ == f"dummyprof.reports.kinds.{SECTIONS[name]}"
               for name, kind in KINDS.items()), "each kind's blocks are built in its own module"  # fmt: skip
    assert set(CHECKS) <= set(SECTIONS.values())
    assert set(COMMANDS) - {"engram-ranks"} <= set(KINDS)  # engram-ranks: the gate's name for a multi-rank engram
    assert get_reporter("html").kinds == get_reporter("terminal").kinds == frozenset(KINDS)


def test_builtin_reporters_and_the_kinds_they_render() -> None:
    assert reporter_names() == ["terminal", "json", "markdown", "junit", "benchmark-json", "pytorch-benchmark", "html"]
    assert get_reporter("terminal").kinds == get_reporter("markdown").kinds == frozenset(KINDS)
    assert set(KINDS) == {
        "compare",
        "audit",
        "inspect",
        "engram",
        "gate",
        "baseline",
        "sweep",
        "deployment",
    }
    assert get_reporter("json").kinds is None  # every kind
    assert reporter_names("compare") == ["terminal", "json", "markdown", "pytorch-benchmark", "html"]
    assert reporter_names("gate") == ["terminal", "json", "markdown", "junit", "benchmark-json", "html"]
    assert {r.name: r.suffix for r in registry.BUILTIN} == {
        "terminal": ".txt",
        "json": ".json",
        "markdown": ".md",
        "junit": ".xml",
        "benchmark-json": ".json",
        "pytorch-benchmark": ".json",
        "html": ".html",
    }


def test_unknown_format_and_unsupported_kind_are_refused_in_one_place() -> None:
    with pytest.raises(UsageError) as unknown:
        get_reporter("pdf")
    assert str(unknown.value) == (
        "--format: unknown format 'pdf'; choose one of: terminal, json, markdown, junit, benchmark-json, "
        "pytorch-benchmark, html"
    )
    with pytest.raises(UsageError) as kind:
        render(Results(command="compare"), "junit", flag="--junit")
    assert str(kind.value) == (
        "--junit: format 'junit' renders gate results, not compare; for these choose one of: terminal, json, "
        "markdown, pytorch-benchmark, html"
    )


def test_a_registered_reporter_is_offered_everywhere(
    monkeypatch: pytest.MonkeyPatch, cli: Callable[..., CliResult]
) -> None:
    monkeypatch.setattr(registry, "_REPORTERS", dict(registry._REPORTERS))  # leave the real table as it was
    seen: list[RenderOptions] = []

    def count_fillers(results: Results, options: RenderOptions) -> str:
        seen.append(options)
        assert results.audit is not None
        return f"{len(results.audit.fillers)} fillers\n"

    register_reporter(Reporter("fillers", ".txt", frozenset({"audit"}), count_fillers))
    with pytest.raises(ValueError, match="already registered"):
        register_reporter(Reporter("fillers", ".txt", None, count_fillers))
    audit = load_results(OLD / "audit.json")
    assert dummyprof.render(audit, "fillers", width=90) == "2 fillers\n"
    assert seen[-1].width == 90
    result = cli("report", str(OLD / "audit.json"), "--format", "fillers")
    assert result.exit_code == 0 and result.stdout == "2 fillers\n"
    refused = cli("report", str(OLD / "compare.json"), "--format", "fillers")
    assert refused.exit_code == 2
    assert "--format: format 'fillers' renders audit results, not compare" in refused.stderr


def test_terminal_width_and_colour() -> None:
    gate = load_results(OLD / "gate.json")
    plain = render(gate, "terminal", RenderOptions(width=250))
    assert "\x1b[" not in plain and max(len(line) for line in plain.splitlines()) <= 250
    narrow = render(gate, "terminal", RenderOptions(width=100))
    assert max(len(line) for line in narrow.splitlines()) <= 100
    quiet = render(gate, "terminal", RenderOptions(quiet=True))
    assert quiet.startswith("gate PASS (15 checks: ") and quiet.count("\n") == 1


def test_terminal_colour_codes_unless_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    gate = load_results(OLD / "gate.json")
    assert "\x1b[" in render(gate, "terminal", RenderOptions(color=True))
    assert dummyprof.render(gate, color=True) == render(gate, "terminal", RenderOptions(width=160, color=True))


def test_api_render_keeps_its_markdown_shorthand() -> None:
    audit = load_results(OLD / "audit.json")
    assert dummyprof.render(audit, markdown=True) == render(audit, "markdown") == dummyprof.render(audit, "markdown")
    assert json.loads(dummyprof.render(audit, "json"))["command"] == "audit"


def test_report_writes_any_format_to_a_file(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    out = tmp_path / "gate.xml"
    result = cli("report", str(OLD / "gate.json"), "--format", "junit", "--output", str(out))
    assert result.exit_code == 0, result.stderr
    assert out.read_text() == dummyprof.render(load_results(OLD / "gate.json"), "junit")
    assert out.read_text().startswith('<?xml version="1.0" encoding="utf-8"?>\n<testsuites name="dummyprof gate"')
    bench = cli("report", str(OLD / "baseline.json"), "--format", "benchmark-json")
    assert bench.exit_code == 0 and json.loads(bench.stdout)[0]["name"].startswith("tiny: ")
    refused = cli("report", str(OLD / "compare.json"), "--format", "junit", "--output", str(tmp_path / "c.xml"))
    assert refused.exit_code == 2 and "--format: format 'junit' renders gate results, not compare" in refused.stderr
    assert not (tmp_path / "c.xml").exists()


def test_saved_files_render_in_every_format_without_torch() -> None:
    """``dummyprof.render`` and ``dummyprof report`` with any import of torch failing."""
    code = f"""
import contextlib, io, sys
sys.modules['torch'] = None  # any import of torch now fails
import dummyprof
from dummyprof.cli.app import main
from dummyprof.reports.registry import reporter_names
from dummyprof.results.store import load_results
rendered = 0
for path in {[str(f) for f in FILES]!r}:
    results = load_results(path)
    for name in reporter_names(results.command):
        assert dummyprof.render(results, name).strip(), (path, name)
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert main(['report', path, '--format', name]) == 0, (path, name)
        assert out.getvalue().strip(), (path, name)
        rendered += 1
print(rendered)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    # gate adds junit and benchmark-json, baseline the latter, compare and deployment pytorch-benchmark;
    # html renders every kind
    assert int(proc.stdout) == 3 * len(FILES) + 2 + 1 + 2 + len(FILES)
