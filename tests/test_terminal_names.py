"""Issue #20 at 80 columns: long real names stay whole or are shortened the known way, figures are never cut,
and the default compare report answers on its first line and fits a 50-line screen.

Names are Hugging Face tensor paths and long loader names; every report is rendered from Results built here
or saved files, no run.
"""

from __future__ import annotations

import re
from pathlib import Path

from dummyprof.reports.kinds import summary_line
from dummyprof.reports.registry import render
from dummyprof.reports.reporter import RenderOptions
from dummyprof.results.common import Estimate, NoiseWarning
from dummyprof.results.compare import CompareResult, FloorResult, ModelSummary, StrategyResult, TensorResult
from dummyprof.results.session import Results
from dummyprof.results.store import load_results
from dummyprof.results.sweep import GrowthFit, SeriesPoint, SweepPoint, SweepResult

SAVED = Path(__file__).parent / "fixtures" / "results"
FILLERS = ["legacy", "per-layer", "unique", "fill_everything", "fill_like_vllm_033_loader"]
TENSORS = [
    "model.layers.0.mlp.down_proj.weight",
    "model.layers.17.self_attn.q_proj.weight",
    "model.layers.31.post_attention_layernorm.weight",
    "model.embed_tokens.weight",
    "lm_head.weight",
    "model.layers.5.mlp.experts.127.gate_up_proj.weight_scale_inv",
]


def _compare(warnings: int = 3, fillers: list[str] = FILLERS) -> Results:
    strategies = [
        StrategyResult(
            name=name, initializer="v0.33" if i else "v0.29", visits=210_566 * (i + 1), redundant_visits=i * 1_024,
            max_visits=i + 1, bytes_written=(i + 1) * 16_063_000_000,
            time=Estimate.measured([0.9 / (i + 1), 1.0 / (i + 1)] * 3),
        )
        for i, name in enumerate(fillers)
    ]  # fmt: skip
    tensors = {
        name: TensorResult(names=[name], depth=name.count("."), dtype="bfloat16", nbytes=117_440_512,
                           visits={s: 1 + (i + j) % 3 for j, s in enumerate(fillers)})
        for i, name in enumerate(TENSORS)
    }  # fmt: skip
    result = CompareResult(
        model=ModelSummary("hf:Llama-3.1-8B", "hf: LlamaForCausalLM", modules=291, tensors=291, names=292),
        strategies=strategies,
        tensors=tensors,
        floor=FloorResult(bytes_written=16_063_000_000, time=Estimate.measured([0.07, 0.069, 0.071])),
        baseline_strategy="legacy",
        repeat=6,
        warmup=1,
    )
    codes = ["first-round-slow", "statistical-outliers", "speedup-uncertain"]
    result.noise = [
        NoiseWarning(codes[i % 3], fillers[i % len(fillers)], value=2.5, count=2, low=0.9, high=1.2)
        for i in range(warnings)
    ]
    return Results(command="compare", compare=result)


def _cut(out: str) -> list[str]:
    """Marks of a cut: Rich's '…' at the end of a cell (an elided path has '…' as a whole segment)."""
    return re.findall(r"\S*…(?!\.)\S*", out)


def _whole(word: str, out: str) -> bool:
    return re.search(rf"(^| ){re.escape(word)}( |$)", out, re.M) is not None


def test_compare_at_80_keeps_every_name_and_figure_whole() -> None:
    results = _compare()
    out = render(results, "terminal", RenderOptions(width=80, detail=True))
    assert max(len(line) for line in out.splitlines()) <= 80
    assert _cut(out) == []
    for name in FILLERS:  # in the time, work and memory tables, and as a column of the most revisited
        assert len(re.findall(rf"(^| ){re.escape(name)}( |$)", out, re.M)) >= 4, name
    ranked = out[out.index("Most revisited") : out.index("Memory")]
    labels = re.findall(r"^ ((?:…|model|lm_head)\S*) ", ranked, re.M)
    parts = ranked.count("Most revisited")
    assert len(labels) == len(TENSORS) * parts  # each part of the table keeps the tensor column
    for label in labels:  # a whole name, or one with middle segments elided: its end is a real name's end
        tail = label.split("…")[-1]
        assert any(name.endswith(tail) and (tail == name or tail.startswith(".")) for name in TENSORS), label
        assert tail == label or tail.count(".") >= 2, label  # at least the last two parts of the name
    for s in results.compare.strategies if results.compare else []:
        assert _whole(f"{s.visits:,}", out) and _whole(f"{s.redundant_visits:,}", out)


def test_default_compare_leads_with_the_answer_and_fits_a_50_line_screen() -> None:
    results = _compare(warnings=4, fillers=FILLERS[:3])  # compare's default strategies, every kind of warning
    out = render(results, "terminal", RenderOptions(width=80))
    lines = out.splitlines()
    assert lines[0] == summary_line(results)
    assert len(lines) <= 50, out
    assert (
        "speedup" in out and "visits" in out and "%memset: rate over this run's memset floor" in " ".join(out.split())
    )
    saved = render(load_results(SAVED / "compare.json"), "terminal", RenderOptions(width=80))
    assert re.match(r"median (fill )?on cpu[:,] ", saved) and len(saved.splitlines()) <= 50
    full = render(results, "terminal", RenderOptions(width=80, detail=True))
    assert len(full.splitlines()) > len(lines) and "Scenario" in full  # the detail is one option away


def test_sweep_of_engram_over_rows_cuts_no_header_and_no_figure() -> None:
    methods = ["random-convert", "random-scratch", "random-chunked", "random-fast", "constant"]
    values = [1_024, 32_768, 1_048_576]
    points = [
        SweepPoint(v, v * 4096, {m: SeriesPoint(Estimate(v * 1e-6 * (i + 1), samples=[v * 1e-6, v * 1.2e-6],
                                                         low=v * 1e-6, high=v * 1.2e-6), v, v * 4096, v * 8192)
                                 for i, m in enumerate(methods)})
        for v in values
    ]  # fmt: skip
    fits = [
        GrowthFit(m, metric, 0.9812 + i, 0.0, 0.99871, 0.9654, 0.99871, 3, 1_024, 1_048_576)
        for i, m in enumerate(methods)
        for metric in ("time", "bytes")
    ]
    sweep = SweepResult("engram", "rows", values, methods, points, fits, fit_from=1_024, repeat=2)
    out = render(Results(command="sweep", sweep=sweep), "terminal", RenderOptions(width=80))
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out
    for header in ("exponent", "95% interval", "R²", "points", "trend", "median", "min–max", "peak RSS"):
        assert _whole(header, out), header
    assert re.search(r"random-convert +time +0\.98 +\[0\.97, 1\.00\] +0\.9987 ", out), out
    assert re.search(r"random-convert +time +3 \(1,024–1,048,576\) ", out), out  # the table in two parts
    for m in methods:
        assert _whole(m, out)


def test_a_dry_run_says_what_a_run_would_measure_not_what_was_measured() -> None:
    plan = load_results(SAVED / "engram-plan.json")
    assert plan.engram is not None and plan.engram.dry_run
    for fmt in ("terminal", "markdown"):
        out = " ".join(render(plan, fmt, RenderOptions(width=200)).split())
        assert "measured pageable instead" not in out
        assert "a run would measure pageable instead (dry run: nothing was measured)" in out


def test_audit_keeps_a_long_loader_name_whole() -> None:
    from dummyprof.results.audit import FillerSummary

    results = load_results(SAVED / "audit.json")
    assert results.audit is not None
    name = "fill_everything_with_a_very_long_loader_name"
    results.audit.fillers.append(FillerSummary(name, "loader", None, 12_345, 6, 1_234_567_890, 3, 17))
    out = render(results, "terminal", RenderOptions(width=80))
    assert max(len(line) for line in out.splitlines()) <= 80 and "…" not in out
    assert re.search(rf"^ {name} +loader +12,345 +6/7 ", out, re.M) and re.search(
        rf"^ {name} +3 +1\.15 GiB +17 ", out, re.M
    )
