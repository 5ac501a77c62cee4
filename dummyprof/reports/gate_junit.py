"""JUnit XML for ``gate`` results: one test case per check, so CI systems list each failure by name."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from dummyprof.reports.kinds.gate import change_text, value_text
from dummyprof.reports.reporter import RenderOptions, Reporter
from dummyprof.reports.tables.escape import xml_text
from dummyprof.results.gate import NOT_COMPARABLE, NOT_JUDGED, NOT_MEASURED, REGRESSED, CheckResult
from dummyprof.results.session import Results


def _message(check: CheckResult) -> str:
    parts = [f"{check.verdict}: current {value_text(check.current, check.unit)}"]
    if check.baseline is not None:
        parts.append(f"baseline {value_text(check.baseline, check.unit)} ({change_text(check)})")
    parts.append(f"rule {check.threshold}")
    if check.detail:
        parts.append(check.detail)
    return "; ".join(parts)


def _element(parent: ET.Element | None, tag: str, text: str | None = None, **attributes: str) -> ET.Element:
    """An element whose attributes and text XML 1.0 can carry (names from a config are data)."""
    clean = {key: xml_text(value) for key, value in attributes.items()}
    element = ET.Element(tag, clean) if parent is None else ET.SubElement(parent, tag, clean)
    if text is not None:
        element.text = xml_text(text)
    return element


def _incomplete(strict: bool) -> tuple[str, ...]:
    """The verdicts that are errors (exit code 3): a timing not judged on a busy machine only under --strict;
    otherwise it is skipped, as a test that could not run here."""
    return (NOT_COMPARABLE, NOT_MEASURED, NOT_JUDGED) if strict else (NOT_COMPARABLE, NOT_MEASURED)


def _tally(checks: list[CheckResult], strict: bool) -> dict[str, str]:
    """Regressions are failures; checks that could not be measured or compared are errors (exit code 3)."""
    failures = sum(1 for c in checks if c.verdict == REGRESSED)
    errors = sum(1 for c in checks if c.verdict in _incomplete(strict))
    skipped = sum(1 for c in checks if c.verdict == NOT_JUDGED and not strict)
    return {"tests": str(len(checks)), "failures": str(failures), "errors": str(errors), "skipped": str(skipped)}


def gate_junit(results: Results, options: RenderOptions | None = None) -> str:
    section = results.gate
    assert section is not None
    strict = section.strict
    suites = _element(None, "testsuites", name="dummyprof gate", **_tally(section.checks, strict))
    by_scenario: dict[str, list[CheckResult]] = {}
    for check in section.checks:
        by_scenario.setdefault(check.scenario, []).append(check)
    for scenario, checks in by_scenario.items():
        suite = _element(
            suites,
            "testsuite",
            name=f"dummyprof gate: {scenario}",
            **_tally(checks, strict),
            timestamp=results.created_at[:19],  # JUnit timestamps carry no time zone
        )
        for check in checks:
            case = _element(
                suite, "testcase", classname=f"dummyprof.gate.{scenario}", name=f"{check.kind} {check.name}"
            )
            message = _message(check)
            if check.verdict == REGRESSED:
                _element(case, "failure", message, message=message, type="regression")
            elif check.verdict in _incomplete(strict):
                _element(case, "error", message, message=message, type=check.verdict.replace(" ", "-"))
            elif check.verdict == NOT_JUDGED:
                _element(case, "skipped", message, message=message)
            else:
                _element(case, "system-out", message)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


REPORTER = Reporter("junit", ".xml", frozenset({"gate"}), gate_junit, "JUnit XML, one test case per gate check")
