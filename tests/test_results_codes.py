"""Engram results carry codes and numbers (schema 3); the reporters write the words."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

import dummyprof
from dummyprof.reports.format import unavailable_text
from dummyprof.reports.kinds.engram import plan_notes, reason_text
from dummyprof.results.common import Estimate
from dummyprof.results.engram import BackingInfo, EngramResult, MethodResult
from dummyprof.scenarios.engram.run import EngramOptions, run


def _figures(value: Any, where: str = "$") -> list[tuple[str, Estimate]]:
    """Every Estimate in a Results tree, with its path."""
    if isinstance(value, Estimate):
        return [(where, value)]
    if isinstance(value, msgspec.Struct):
        return [x for n in value.__struct_fields__ for x in _figures(getattr(value, n), f"{where}.{n}")]
    if isinstance(value, list):
        return [x for i, v in enumerate(value) for x in _figures(v, f"{where}[{i}]")]
    return []


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("dry-run", "dry run: nothing allocated"),
        ("not-allocated", "full tables not allocated here"),
        ("not-allocated-computed", "full tables not allocated here (see the computed figure)"),
        ("not-allocated-projected", "full tables not allocated here (projected run)"),
        ("no-reserved-figure:pageable", "pageable memory: only torch's CUDA pinned allocator reports reserved bytes"),
        ("no-huge-pages-asked:shm", "shm memory: no huge pages asked"),
        ("no-host-memory-stats", "torch.cuda.host_memory_stats() reports no bytes"),
        ("no-anon-huge-pages", "/proc/self/smaps_rollup has no AnonHugePages"),
        ("no CUDA", "no CUDA"),  # a probe's own message passes as it is
        ("nvml: not found", "nvml: not found"),
    ],
)
def test_each_unavailable_code_has_its_words(code: str, words: str) -> None:
    assert unavailable_text(code) == words


def test_a_dry_run_stores_codes_and_renders_the_words() -> None:
    results = run(EngramOptions(rows=4096, dim=64, offload=True, backing="pageable", dry_run=True, device="cpu"))
    engram = results.engram
    assert engram is not None
    reasons = {f.reason for _, f in _figures(engram) if f.reason}
    assert {"dry-run", "no-reserved-figure:pageable", "no-huge-pages-asked:pageable"} <= reasons
    assert all(" " not in reason for reason in reasons), reasons  # codes, not sentences
    assert {m.reason for m in engram.methods} == {"fits"}
    text = dummyprof.render(results, width=1000)
    assert "fill and start-up times: unavailable: dry run: nothing allocated" in text
    assert "fits: measured in full unless the calibration at start-up says one round exceeds the time budget" in text
    assert "dry-run" not in text and "no-reserved-figure" not in text


def test_a_code_a_newer_version_wrote_is_shown_as_it_is() -> None:
    assert reason_text(MethodResult("m", mode="projected", reason="power")) == "power"


def test_the_backing_note_is_a_plan_note_only_when_that_backing_was_used_and_filled() -> None:
    note = "tables are files in /dev/shm, as vLLM shares them between DP replicas"
    used = BackingInfo("shm", "shm", note=note)
    assert plan_notes(EngramResult(backing=used)) == [note]
    assert plan_notes(EngramResult(backing=msgspec.structs.replace(used, used="pageable"))) == []  # a notice instead
    assert plan_notes(EngramResult(backing=used, huge_pages_from_sample=True)) == [
        "huge-page bytes were read back on the largest sample, not the full table",
        note,
    ]
