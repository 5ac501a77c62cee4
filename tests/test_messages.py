"""The message catalogue (every code has words), the summary builder (clauses dropped by importance) and column
legends (said under a table only where the column shows)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from dummyprof.reports.messages import MESSAGES, known, say
from dummyprof.reports.summary import ALWAYS, Clause, fit
from dummyprof.reports.tables.model import NUMBER, Column, Table
from dummyprof.results import common, deployment, engram, verdict

REPORTS = Path(__file__).resolve().parents[1] / "dummyprof" / "reports"


def _said_codes() -> list[str]:
    """Every code a reporter passes to ``say``/``known`` as a literal (a prefix where it is built: ``"noise." + x``)."""
    codes = []
    for path in REPORTS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("say", "known") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    codes.append(arg.value)
    return codes


def test_every_literal_code_a_reporter_says_is_in_the_catalogue() -> None:
    codes = _said_codes()
    assert len(codes) > 20
    assert [code for code in codes if code not in MESSAGES] == []


@pytest.mark.parametrize(
    ("area", "codes"),
    [
        ("unavailable", [engram.DRY_RUN, engram.NOT_ALLOCATED, engram.NO_RESERVED_FIGURE, engram.FASTER_THAN_FLOOR]),
        ("contention", [common.CPU_PRESSURE, common.LOAD_ABOVE_CORES, common.CPU_STEAL]),
        ("verdict", [verdict.MET, verdict.MISSED, verdict.UNCERTAIN, verdict.CONTENDED]),
        ("short", [verdict.MET, verdict.MISSED, verdict.UNCERTAIN, verdict.CONTENDED]),
        ("projected", [engram.FOR_MEMORY, engram.FOR_TIME]),
        ("planned", [engram.FITS, engram.FOR_MEMORY]),
        ("not-timed", [deployment.NO_CUDA_HERE]),
        ("noise", ["first-round-slow", "statistical-outliers", "speedup-uncertain", "faster-than-floor"]),
    ],
)
def test_every_code_the_results_carry_has_its_words(area: str, codes: list[str]) -> None:
    assert all(known(f"{area}.{code}") for code in codes)


def test_a_template_takes_its_fields_and_an_unknown_code_is_shown_as_it_is() -> None:
    assert say("unavailable.no-huge-pages-asked", kind="pinned") == "pinned memory: no huge pages asked"
    assert say("verdict.missed", limit="1.0 s deadline", gap="0.2 s") == "1.0 s deadline missed by 0.2 s"
    assert say("noise.a-newer-code") == "a-newer-code"  # a newer file's code: shown, never an error


def test_the_summary_builder_drops_the_least_important_clause_first_and_never_an_always_one() -> None:
    parts: list[Clause | str] = ["answer 1.0 s", Clause(" (detail)", 1), Clause("; more detail", 2), " on cpu"]
    assert fit(parts, 100) == "answer 1.0 s (detail); more detail on cpu"
    assert fit(parts, 34) == "answer 1.0 s; more detail on cpu"  # the least important went, the next fits
    assert fit(parts, 30) == "answer 1.0 s (detail) on cpu"  # both went, then the one that fits was put back
    assert fit(parts, 5) == "answer 1.0 s on cpu"  # never shorter than its ALWAYS clauses
    assert Clause("x").keep == ALWAYS


def test_a_stand_in_says_what_its_group_gave_up_and_a_list_stays_a_prefix() -> None:
    parts: list[Clause | str] = ["a 1 s", Clause(" of 3", stands_for="rest"), Clause("; b 2 s", 3, group="rest")]
    parts.append(Clause(", c 3 s", 3, group="rest"))
    assert fit(parts, 80) == "a 1 s; b 2 s, c 3 s"
    assert fit(parts, 17) == "a 1 s of 3; b 2 s"  # c went (the last of equals), so "of 3" stands for it
    assert fit(parts, 11) == "a 1 s of 3"  # c is never put back without b before it


def test_a_column_legend_is_said_where_the_column_shows_before_the_table_notes() -> None:
    columns = [Column("name"), Column("peak", NUMBER, legend="the largest RSS growth")]
    table = Table.of("t", columns, [["a", "1 GiB"]], notes=["a note"])
    assert table.explained() == ["peak: the largest RSS growth", "a note"]
    empty = Table.of("t", columns, [["a", ""]], notes=["a note"])  # the column is not shown: nor its legend
    assert empty.explained() == ["a note"]


def test_every_audit_finding_kind_has_its_sentence() -> None:
    from dummyprof.results.audit import FINDING_KINDS, INFO_KINDS

    assert [kind for kind in {**FINDING_KINDS, **INFO_KINDS} if not known(f"finding.{kind}")] == []
