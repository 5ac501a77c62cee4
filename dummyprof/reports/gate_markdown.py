"""Markdown for ``baseline`` and ``gate`` results, e.g. for a CI step summary ($GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

from dummyprof.reports.gate_format import change_text, metric_text, value_text
from dummyprof.reports.tables.escape import markdown_text
from dummyprof.reports.tables.model import BAD, CODE, Cell
from dummyprof.reports.tables.to_markdown import md_table
from dummyprof.results.gate import REGRESSED
from dummyprof.results.session import Results


def gate_markdown(results: Results) -> list[str]:
    section = results.gate
    assert section is not None
    lines = [
        f"**Baseline:** {markdown_text(section.baseline_path)} · **config:** {markdown_text(section.config_path)} · "
        f"timing rule: slower than x{section.factor:g} and Mann-Whitney U p < {section.alpha:g}",
        "",
    ]
    rows: list[list[str | Cell]] = []
    for c in section.checks:
        verdict = Cell(c.verdict, BAD if c.verdict == REGRESSED else "")
        rows.append(
            [
                c.scenario,
                Cell(c.name, CODE),
                c.kind,
                value_text(c.baseline, c.unit),
                value_text(c.current, c.unit),
                change_text(c),
                c.threshold,
                verdict,
                c.detail,
            ]
        )
    lines += md_table(
        ["scenario", "check", "kind", "baseline", "current", "change", "rule", "verdict", "detail"],
        rows,
        align_right=(3, 4, 5),
    )
    return lines


def baseline_markdown(results: Results) -> list[str]:
    section = results.gate
    assert section is not None
    rows: list[list[str | Cell]] = []
    for run in section.scenarios:
        if run.error is not None:
            rows.append([run.name, "", "", f"could not measure: {run.error}"])
        rows += [[run.name, Cell(name, CODE), m.kind, metric_text(m)] for name, m in run.metrics.items()]
    return md_table(["scenario", "metric", "kind", "value"], rows, align_right=(3,))
