"""Older files load at the current schema: schema 1 (words stored in Results), schema 2 (engram sentences) and
schema 3 (engram's layout said tp_size and dp_size)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import dummyprof
from dummyprof.errors import ResultsFileError
from dummyprof.reports.notices import DRY_RUN_INSTEAD, MEASURED_INSTEAD, notices
from dummyprof.reports.summary import summary_line
from dummyprof.reports.tables.audit import SENTENCES, finding_text
from dummyprof.reports.tables.engram import layout_table, plan_notes, reason_text
from dummyprof.reports.tables.kinds import HEADLINE_FIRST
from dummyprof.results.audit import FINDING_KINDS, INFO_KINDS
from dummyprof.results.engram import EngramResult, RoundsCut
from dummyprof.results.session import SCHEMA_VERSION
from dummyprof.results.store import load_results, results_from_dict, results_to_json

OLD = Path(__file__).resolve().parent / "fixtures" / "results_v1"
FILES = sorted(OLD.glob("*.json"))
M = str(Path(__file__).resolve().parent / "fixtures" / "models.py")


def old(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((OLD / name).read_text())
    assert data["schema_version"] == 1
    return data


# Lines whose words changed on purpose since schema 1: each fits 80 columns (issue #13).
REWORDED = {
    "compare.json": "median fill on cpu: unique 192 µs (5.2x), per-layer 356 µs (2.8x), legacy 993 µs",
    "engram-plan.json": "plan (dry run): need 11.80 GiB to 46.13 GiB per rank; 2 of 4 fit in 18.09 GiB",
    "engram-projected.json": "recommended constant: start-up ~5.75 s per rank on cpu; no --deadline; none fit",
    "engram.json": "recommended constant: start-up 2.7 ms per rank on cpu; no --deadline; all 4 fit",
    "inspect.json": "21 tensors, 21.81 KiB; visits: legacy 49 (+30), per-layer 20 (+1), unique 19",
}


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_a_schema_1_file_loads_and_its_words_come_back_from_the_data(path: Path) -> None:
    data = old(path.name)
    data["summary"] = REWORDED.get(path.name, data["summary"])
    results = load_results(path)
    assert results.schema_version == SCHEMA_VERSION == 4
    assert summary_line(results) == data["summary"]  # the same line, now written by the reporter
    said = data["notices"]
    if results.engram is not None and results.engram.dry_run:  # a dry run measured nothing (issue #20)
        said = [n.replace(MEASURED_INSTEAD, DRY_RUN_INSTEAD) for n in said]
    assert notices(results) == said
    text = dummyprof.render(results, width=1000)
    lines = text.rstrip("\n").splitlines()
    assert (lines[0] if results.command in HEADLINE_FIRST else lines[-1]) == data["summary"]  # the answer first
    assert dummyprof.render(results, "markdown").count(data["summary"]) == 1
    again = json.loads(results_to_json(results))
    assert again["schema_version"] == 4 and "summary" not in again


def test_schema_1_audit_findings_keep_their_sentences() -> None:
    data = old("audit.json")
    results = load_results(OLD / "audit.json")
    assert results.audit is not None
    written = [f["message"] for f in data["audit"]["findings"]]
    assert [finding_text(f) for f in results.audit.findings] == written
    assert [f.legacy_message for f in results.audit.findings] == written


def test_a_new_audit_writes_the_sentences_schema_1_stored() -> None:
    """The same model audited today: findings hold data, and the reporter writes what version 1 stored."""
    data = old("audit.json")
    results = dummyprof.audit(dummyprof.AuditOptions(model=f"{M}:tied"))
    assert results.audit is not None
    assert [finding_text(f) for f in results.audit.findings] == [f["message"] for f in data["audit"]["findings"]]
    assert summary_line(results) == data["summary"]
    repeated = next(f for f in results.audit.findings if f.kind == "repeated")
    assert (repeated.tensor, repeated.fillers, repeated.count, repeated.legacy_message) == (
        "embed.weight",
        ["per-layer"],
        2,
        "",
    )
    shared = next(f for f in results.audit.findings if f.kind == "shared-storage")
    assert shared.names == ["embed.weight", "lm_head.weight"] and shared.tied
    saved = json.loads(results_to_json(results))
    assert "message" not in saved["audit"]["findings"][0] and "summary" not in saved
    assert results_from_dict(saved).audit == results.audit


def test_derived_notices_of_schema_1_are_not_shown_twice() -> None:
    """A loader notice (audit), a crashed scenario and an unwritten report (gate): derived once, not kept too."""
    loader_notice = (
        "loaders are traced (every operator that writes in place is seen); a visit that writes nothing cannot be "
        "seen; their final bytes are compared with every filler using v0.33, as declared by --loader-initializer"
    )
    audit = {
        "schema_version": 1,
        "command": "audit",
        "summary": "audit clean: 1 filler(s), 0 tensors, no findings",
        "notices": ["model materialized from meta", loader_notice],
        "audit": {"fillers": [{"name": "fill_once", "kind": "loader", "initializer": "v0.33"}]},
    }
    results = results_from_dict(audit)
    assert notices(results) == ["model materialized from meta", loader_notice]
    assert results.notices == ["model materialized from meta"]
    assert summary_line(results) == audit["summary"]
    gate = old("gate.json")
    gate["gate"]["scenarios"].append({"name": "gone", "command": "compare", "error": "RuntimeError: boom"})
    gate["gate"]["exit_code"] = 3
    gate["notices"] = [
        "scenario 'gone' could not be measured: RuntimeError: boom",
        "could not record: --junit: j.xml: disk full; --markdown: m.md: read-only",
    ]
    results = results_from_dict(gate)
    assert results.notices == []
    assert results.gate is not None and results.gate.unrecorded == [
        "--junit: j.xml: disk full",
        "--markdown: m.md: read-only",
    ]
    assert notices(results) == gate["notices"]
    assert summary_line(results).startswith("gate COULD NOT RECORD: measured but a report could not be written (")


def test_schema_1_inspect_notice_becomes_its_count() -> None:
    data = old("inspect.json")
    notice = (
        "built on the meta device: sizes come from shapes and dtypes, visits from walking each strategy with a "
        "no-op initializer; nothing was written, but the callable put 3 tensor(s) on a real device itself (an "
        "explicit device=)"
    )
    data["notices"] = ["from the model source", notice]
    results = results_from_dict(data)
    assert results.inspect is not None and results.inspect.real_device_tensors == 3
    assert results.notices == ["from the model source"]
    said = data["notices"]
    if results.engram is not None and results.engram.dry_run:  # a dry run measured nothing (issue #20)
        said = [n.replace(MEASURED_INSTEAD, DRY_RUN_INSTEAD) for n in said]
    assert notices(results) == said


def test_every_finding_kind_has_a_sentence() -> None:
    assert set(SENTENCES) == set(FINDING_KINDS) | set(INFO_KINDS)


def test_the_committed_perf_baseline_still_loads() -> None:
    results = load_results(Path(__file__).resolve().parent.parent / "perf" / "baseline.json")
    assert results.command == "baseline" and results.gate is not None and results.gate.scenarios
    assert summary_line(results).startswith(f"baseline: {len(results.gate.scenarios)} scenarios, ")


V2 = Path(__file__).resolve().parent / "fixtures" / "results_v2"
V2_FILES = sorted(V2.glob("*.json"))


def _seconds(text: str) -> float:
    """A time as format_seconds wrote it ("679.3 ms", "6.43 s"), back to seconds."""
    number, unit = text.split()
    return float(number) * {"s": 1.0, "ms": 1e-3, "µs": 1e-6}[unit]


@pytest.mark.parametrize("path", V2_FILES, ids=[f.stem for f in V2_FILES])
def test_a_schema_2_engram_file_keeps_its_sentences_and_renders_as_it_did(path: Path) -> None:
    data = json.loads(path.read_text())
    assert data["schema_version"] == 2
    results = load_results(path)
    engram = results.engram
    assert results.schema_version == 4 and engram is not None
    assert engram.legacy_plan_notes == data["engram"]["plan_notes"]
    assert [m.legacy_reason for m in engram.methods] == [m["reason"] for m in data["engram"]["methods"]]
    terminal = dummyprof.render(results, width=1000)
    for sentence in engram.legacy_plan_notes + [m.legacy_reason for m in engram.methods]:
        assert sentence in terminal
    again = json.loads(results_to_json(results))
    assert again["schema_version"] == 4 and "plan_notes" not in again["engram"]
    assert dummyprof.render(results_from_dict(again), width=1000) == terminal  # saved again at schema 4: the same


def test_schema_2_reasons_become_codes_whose_words_are_the_stored_sentences() -> None:
    """The codes (and numbers) schema 3 stores give back, through the reporter, the sentences schema 2 stored."""
    for path in V2_FILES:
        for method in load_results(path).engram.methods:  # type: ignore[union-attr]
            stored = method.legacy_reason
            assert method.reason == {"d": "memory", "f": "fits", "o": "time", "": ""}[stored[:1]], stored
            if method.reason == "time":
                method.one_fill_s = _seconds(stored.split("about ")[1].split(",")[0])
            method.legacy_reason = ""
            assert reason_text(method) == stored


def test_schema_2_plan_notes_are_what_schema_3_writes_from_its_fields() -> None:
    rounds = load_results(V2 / "engram-rounds.json").engram
    assert rounds is not None and rounds.legacy_plan_notes == [
        "measured 2 of 20 rounds at full size for random-convert: one round takes about 679.3 ms "
        "and the time budget is 4.00 s"
    ]
    native = EngramResult(rounds_cut=RoundsCut(2, 20, ["random-convert"], 0.6793, 4.0), backing=rounds.backing)
    assert plan_notes(native) == plan_notes(rounds) == rounds.legacy_plan_notes
    shm = load_results(V2 / "engram-shm.json").engram
    assert shm is not None and shm.backing.used == shm.backing.requested == "shm"
    assert plan_notes(EngramResult(backing=shm.backing)) == plan_notes(shm) == shm.legacy_plan_notes
    assert plan_notes(EngramResult(backing=shm.backing, dry_run=True)) == []  # a dry run allocated nothing


ENGRAM_V3 = Path(__file__).resolve().parent.parent / "docs" / "img" / "engram-html.json"
ENGRAM_OLDER = [ENGRAM_V3, *(OLD / n for n in ("engram.json", "engram-plan.json")), *V2_FILES]


@pytest.mark.parametrize("path", ENGRAM_OLDER, ids=[f"{p.parent.name}/{p.stem}" for p in ENGRAM_OLDER])
def test_an_older_engram_layout_says_tp_and_dp(path: Path) -> None:
    """Schemas 1 to 3 stored the layout's tp_size and dp_size: they load as tp and dp, and are written so."""
    stored = json.loads(path.read_text())["engram"]["layout"]
    results = load_results(path)
    assert results.engram is not None
    layout = results.engram.layout
    assert (layout.tp, layout.dp) == (stored["tp_size"], stored["dp_size"])
    sharding = next(row[1].text for row in layout_table(results.engram).rows if row[0].text == "sharding")
    assert f"(tp {layout.tp} x dp {layout.dp})" in sharding and str(stored["tp_size"] * stored["dp_size"]) in sharding
    again = json.loads(results_to_json(results))["engram"]["layout"]
    assert (again["tp"], again["dp"]) == (layout.tp, layout.dp) and "tp_size" not in again and "dp_size" not in again


def test_a_schema_3_layout_with_both_names_is_refused_naming_the_old_key() -> None:
    data = json.loads(ENGRAM_V3.read_text())
    assert data["schema_version"] == 3
    data["engram"]["layout"]["tp"] = 1
    with pytest.raises(ResultsFileError, match="tp_size"):
        results_from_dict(data)


def test_a_schema_3_fingerprint_of_an_engram_scenario_says_tp_and_dp() -> None:
    """Engram's, engram-ranks' and a rows sweep's fingerprint options (the sweep's nested): the new names, so an
    older baseline stays comparable; compare's options are its own (its tp was always tp) and left as they are."""

    def run(command: str, options: dict[str, Any]) -> dict[str, Any]:
        return {"name": command, "command": command, "fingerprint": {"command": command, "options": options}}

    old = {"tp_size": 2, "dp_size": 1, "rank": 1}
    data = {
        "schema_version": 3,
        "command": "baseline",
        "gate": {
            "scenarios": [
                run("engram", dict(old)),
                run("engram-ranks", dict(old)),
                run("sweep", {"parameter": "rows", "engram": dict(old)}),
                run("compare", {"tp": 2, "tp_size": 3}),
            ]
        },
    }
    gate = results_from_dict(data).gate
    assert gate is not None
    new = {"tp": 2, "dp": 1, "rank": 1}
    assert [s.fingerprint.options for s in gate.scenarios] == [
        new,
        new,
        {"parameter": "rows", "engram": new},
        {"tp": 2, "tp_size": 3},
    ]
    assert data["gate"]["scenarios"][0]["fingerprint"]["options"] == old  # the caller's values are not changed
