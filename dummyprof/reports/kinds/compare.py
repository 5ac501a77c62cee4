"""``compare``'s kind: blocks, summary, icicle. Without ``detail`` (the terminal's default) the calibration, the
projection check, the recording cost and most revisited tensors are left out, so the answer fits 50 lines."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

from dummyprof.reports.format import (
    PROJECTED_MARK,
    contended_mark,
    contention_text,
    estimate_cell,
    estimate_range,
    estimate_spread,
    figure_bytes,
    first_touch_notice,
    first_touch_text,
    projected,
    rate,
    same_unavailable,
    short_dtype,
)
from dummyprof.reports.html_figures import compare_sections
from dummyprof.reports.kind import Kind
from dummyprof.reports.messages import known, say
from dummyprof.reports.summary import Clause, fit
from dummyprof.reports.tables.model import (
    BAD,
    BYTES,
    DIM,
    NAME,
    NUMBER,
    PATH,
    TEXT,
    TIME,
    WARN,
    WORD,
    Block,
    Cell,
    Column,
    Field,
    Line,
    Table,
)
from dummyprof.results.common import Estimate, NoiseWarning
from dummyprof.results.compare import CompareResult, StrategyResult, TensorResult
from dummyprof.units import format_bytes, format_seconds

TOP_TENSORS = 10  # the most revisited tensors a file shows
TOP_TENSORS_SHORT = 5  # ... and the terminal by default
RANGE_LEGEND = "every visit at its fastest–slowest calibration trial, first touch at its cheapest–dearest pages"
WALK_LEGEND = "the traversal alone, timed on the meta model"
FLOOR_LEGEND = "its bytes at this run's memset rate, first touched at the cheapest pages (no projection is faster)"
TOUCH_LEGEND = (
    "of the time, the first write to every page it fills (page faults, probed on fresh pages in this run, as the "
    "engine's worker writes its weights at start-up); the rest is the fill on touched memory"
)
PROMISED_ROUNDS = 3  # what --time-budget promises to measure (fewer are projected instead, when known in time)


def size_lines(result: CompareResult, detail: bool) -> list[Line]:
    """What was measured and what was projected, and why: one line each, a warning where a figure is not what was
    asked for. Without ``detail``, a measured run leaves out the lines that only confirm it (exact counts, measured
    fill times)."""
    size = result.size
    lines = []
    confirm = detail or size.mode == "projected"
    if confirm and result.counts in ("exact-meta", "exact"):
        lines.append(say("size.counts-meta" if result.counts == "exact-meta" else "size.counts-exact"))
    need = f"needs {format_bytes(size.needed_bytes)} of {format_bytes(size.budget_bytes)} allowed"
    predicted = f", measured rounds predicted at {format_seconds(size.predicted_s)}" if size.predicted_s else ""
    budget = f" (time budget {format_seconds(size.time_budget_s)})"
    if size.mode == "projected":
        lines.append(say("size.projected", reason=say(f"size.{size.reason}"), need=need + predicted + budget))
    elif size.reason == "reduced":
        asked, repeat = result.repeats_requested, result.repeat
        predicted = format_seconds(size.predicted_s)
        lines.append(say("size.repeats-reduced", asked=asked, repeat=repeat, predicted=predicted, budget=budget))
    elif size.calibration and confirm:
        lines.append(say("size.measured", need=need + predicted + budget))
    if result.auto_stop:
        repeat_flag = f"--repeat {result.repeats_requested}" if result.repeats_requested else "--repeat auto"
        lines.append(f"{repeat_flag}: {result.repeat} measured rounds; {say('auto-stop.' + result.auto_stop)}")
        if result.auto_stop == "budget" and result.repeat < PROMISED_ROUNDS:
            lines.append(say("auto-stop.fewer-rounds", promised=PROMISED_ROUNDS, repeat=result.repeat))
    if size.mode == "projected" and size.first_touch is not None:
        lines.append(first_touch_notice(size.first_touch))
    if size.mode == "projected" and result.calibration_contention is not None:
        lines.append(contention_text(result.calibration_contention, f"calibrating on {result.model.device}"))
    elif result.contention is not None and (detail or result.contention.contended):
        lines.append(contention_text(result.contention, f"the rounds ran on {result.model.device}"))
    return [Line(text, WARN if "PROJECTED" in text or "REDUCED" in text else DIM) for text in lines]


def speedup_cell(result: CompareResult, name: str) -> str:
    speedup = result.speedup(name)
    return "n/a" if speedup is None else projected(f"{speedup:.2f}x", result.size.mode == "projected")


def interval_cell(result: CompareResult, name: str) -> str:
    """The speedup's 95% bootstrap interval, e.g. '2.1–3.4x'; '' for the baseline, 'n/a' when unknown."""
    if name == result.baseline_strategy:
        return ""
    interval = result.strategy(name).speedup_interval
    if len(interval) != 2:
        return "n/a"
    return f"{interval[0]:.2f}–{interval[1]:.2f}x"


def noise_line(warning: NoiseWarning, baseline: str) -> str:
    """hyperfine's warnings, adapted: what was seen and what to do about it."""
    value = warning.value
    fields = {
        "times": f" ({value:.1f}x its median)" if value else "",
        "moved": f"; with them the median is {value:.2f}x the median without" if value else "",
        "share": f" ({100 * value:.0f}% of it)" if value else "",
    }
    code = f"noise.{warning.code}"
    if not known(code):
        return f"warning: {warning.subject}: {warning.code}"
    ends = {"low": warning.low or 0.0, "high": warning.high or 0.0}
    return say(code, subject=warning.subject, count=warning.count, baseline=baseline, **fields, **ends)


def noise_lines(result: CompareResult) -> list[str]:
    lines = [noise_line(w, result.baseline_strategy) for w in result.noise]
    if result.nothing_to_fill:
        lines.append(say("compare.nothing-to-fill"))
    return lines


def short_name(name: str) -> str:
    """Fold runs of a repeated path segment (``child0×12``); the JSON output keeps full names."""
    parts: list[str] = []
    run = 0
    segments = name.split(".")
    for i, segment in enumerate(segments):
        run += 1
        if i + 1 < len(segments) and segments[i + 1] == segment:
            continue
        parts.append(f"{segment}×{run}" if run >= 3 else ".".join([segment] * run))
        run = 0
    return ".".join(parts)


def _count(value: int) -> Cell:
    return Cell(f"{value:,}", BAD) if value else Cell("0")


def scenario_rows(result: CompareResult) -> list[tuple[str, str]]:
    """What was filled and how often: the Scenario table's rows, and (less the model's options, which its
    description holds) the line that stands for it without the detail."""
    model = result.model
    rows = [("model", model.description or model.source)]
    rows += [(key, str(model.options[key])) for key in ("depth", "width", "hidden", "dtype") if key in model.options]
    rows += [("device", model.device), ("modules", f"{model.modules:,}")]
    rows += [("tensors", f"{model.tensors:,} storages ({model.names:,} registered names)")]
    rows += [("bytes", format_bytes(model.bytes))]
    if result.size.mode == "projected":
        rows.append(("rounds", "none at full size (projected)"))
    else:
        rows.append(("rounds", f"{result.repeat} measured, interleaved, after {result.warmup} warm-up"))
    return rows


def scenario_line(result: CompareResult) -> Line:
    return Line("; ".join(f"{key}: {value}" for key, value in scenario_rows(result) if key not in result.model.options))


def scenario_table(result: CompareResult) -> Table:
    return Table.of("Scenario", [("what", NAME), ("value", TEXT)], scenario_rows(result), show_header=False)


STRATEGY: Field = (("strategy", NAME), lambda s: s.name)


def strategy_table(result: CompareResult) -> Table:
    """Times: median, spread, range, speedup and its interval (about 75 columns)."""
    title = f"Strategies: time (speedup vs {result.baseline_strategy}, 95% bootstrap interval)"
    fields: list[Field] = [
        STRATEGY,
        (Column("median", NUMBER, unit=TIME), lambda s: Cell(estimate_cell(s.time), value=s.time)),
        (("CV", NUMBER), lambda s: estimate_spread(s.time)),
        (("min–max", NUMBER), lambda s: estimate_range(s.time)),
        (("speedup", NUMBER), lambda s: speedup_cell(result, s.name)),
        (("interval", NUMBER), lambda s: interval_cell(result, s.name)),
    ]
    return Table.over(title, fields, result.strategies)


def floor_share_cell(result: CompareResult, name: str) -> Cell:
    share = result.share_of_floor(name)
    flagged = WARN if result.generator_bound(name) else ""
    if share is None:
        return Cell("n/a", flagged)
    if share > 1.0:
        return Cell("over!", BAD)  # faster than the floor cannot be: flagged (a faster-than-floor warning says why)
    return Cell(f"{100 * share:.1f}%" if share < 0.1 else f"{100 * share:.0f}%", flagged)


def floor_words(result: CompareResult) -> str | None:
    """What the memset floor was in this run, for the line under a table; None when it was not measured."""
    if result.floor is None or not result.floor.bytes_per_s:
        return None
    floor, rate_ = result.floor, result.floor.bytes_per_s
    touched = floor.touched_bytes
    pages = ""
    if touched:  # the fills find memory under glibc's mmap threshold touched or not, run to run: touched, always
        under = "under glibc's mmap threshold"
        which = f"each {under}" if touched >= floor.bytes_written else f"the {format_bytes(touched)} {under}"
        pages = f", {which} touched first (glibc reuses memory there)"
    return (
        f"rate over this run's memset floor ({rate_ / 1e9:.2f} GB/s: "
        f"{format_bytes(floor.bytes_written)} of a fresh model's storages zeroed once{pages}, fastest of "
        f"{len(floor.time.samples)} readings interleaved with the fills)"
    )


# A strategy's name, initializer and exact counts: the first columns of both work tables.
WORK: list[Field] = [
    STRATEGY,
    (("init", WORD), lambda s: s.initializer),
    (("visits", NUMBER), lambda s: f"{s.visits:,}"),
    (Column("redund.", NUMBER, legend="visits beyond the first"), lambda s: _count(s.redundant_visits)),
    (Column("max/t", NUMBER, legend="most visits of one tensor"), lambda s: str(s.max_visits)),
    (Column("written", NUMBER, unit=BYTES), lambda s: Cell(format_bytes(s.bytes_written), value=s.bytes_written)),
]


def work_table(result: CompareResult) -> Table:
    """What each strategy did: visits, bytes, rate against this run's memset floor (about 75 columns)."""
    share = Column("%memset", NUMBER, legend=floor_words(result) or "")
    fields = [*WORK, (("rate", NUMBER), lambda s: rate(s.bytes_written, s.time.value))]
    fields.append((share, lambda s: floor_share_cell(result, s.name)))
    return Table.over("Strategies: work", fields, result.strategies)


def top_tensor_table(result: CompareResult, limit: int = TOP_TENSORS, *, detail: bool = True) -> Table | None:
    """The most revisited tensors and each strategy's visits; ``detail`` adds their depth, dtype and bytes."""
    names = [s.name for s in result.strategies]
    zeros = [0] * len(names)
    # Most redundant visits (most visits, less one), deepest, then by name: the top few of many, by a heap.
    most = ((max(map(t.visits.get, names, zeros), default=0), key, t) for key, t in result.tensors.items())
    top = heapq.nsmallest(limit, ((-visits, -t.depth, key, t) for visits, key, t in most if visits > 1))
    ranked = [(key, t) for _, _, key, t in top]
    if not ranked:
        return None
    fields: list[Field] = [
        (("tensor", PATH), lambda kt: short_name(kt[0])),
        (("+names", NUMBER), lambda kt: f"+{len(kt[1].names) - 1}" if len(kt[1].names) > 1 else ""),
        (("depth", NUMBER), lambda kt: str(kt[1].depth) if detail else ""),
        (("dtype", WORD), lambda kt: short_dtype(kt[1].dtype) if detail else ""),
        (("bytes", NUMBER), lambda kt: format_bytes(kt[1].nbytes) if detail else ""),
    ]
    fields += [_visits_field(n) for n in names]
    table = Table.over(f"Most revisited tensors (top {len(ranked)}; visits per strategy)", fields, ranked)
    if any(len(t.names) > 1 for _, t in ranked):
        table.notes.append("+names: other names registered for the same storage")
    return table


def _visits_field(strategy: str) -> Field:
    """A strategy's visits of each tensor, flagged where more than one."""

    def cell(item: tuple[str, TensorResult]) -> Cell:
        visits = item[1].visits.get(strategy, 0)
        return Cell(str(visits), BAD if visits > 1 else "")

    return (strategy, NUMBER), cell


MEMORY_COLUMNS: list[tuple[str, Callable[[StrategyResult], Estimate]]] = [
    ("pinned host", lambda s: s.memory.pinned_bytes),
    ("GPU used (NVML)", lambda s: s.memory.gpu_used_bytes),
    ("GPU allocator peak", lambda s: s.memory.gpu_allocator_peak_bytes),
]


def _memory_field(title: str, get: Callable[[StrategyResult], Estimate]) -> Field:
    return (title, TEXT), lambda s: figure_bytes(get(s))


def memory_table(result: CompareResult) -> Table:
    """The memory table; what is unavailable for every strategy is a note under it instead of a column."""
    fields: list[Field] = [
        STRATEGY,
        (("RSS before", NUMBER), lambda s: format_bytes(s.memory.rss_before_bytes)),
        (("RSS peak", NUMBER), lambda s: format_bytes(s.memory.rss_peak_bytes)),
        (Column("growth", NUMBER, legend="during the fill"), lambda s: format_bytes(s.memory.rss_growth_bytes)),
        (Column("scratch", NUMBER, legend="largest temporary"), lambda s: format_bytes(s.peak_scratch_bytes)),
    ]
    missing = []
    for title, get in MEMORY_COLUMNS:
        reason = same_unavailable([get(s) for s in result.strategies])
        if reason is None:
            fields.append(_memory_field(title, get))
        else:
            missing.append(f"{title}: unavailable: {reason}")
    return Table.over("Memory (worst measured round)", fields, result.strategies, notes=missing)


def overhead_line(result: CompareResult) -> str | None:
    parts = []
    for s in result.strategies:
        if s.recording_overhead_s is None or not s.time.samples or not s.time.value:
            continue
        share = 100 * s.recording_overhead_s / s.time.value
        parts.append(f"{s.name} {format_seconds(s.recording_overhead_s)} ({share:.2f}% of its fill)")
    return "visit recording cost (no-op fill, measured): " + ", ".join(parts) if parts else None


def roofline_line(result: CompareResult) -> str | None:
    """One line naming the strategies far under the floor, and why (words shared with engram)."""
    flagged = [s.name for s in result.strategies if result.generator_bound(s.name)]
    if not flagged:
        return None
    shares = ", ".join(f"{name} {100 * (result.share_of_floor(name) or 0):.1f}%" for name in flagged)
    return f"roofline: {shares} of memset: {say('fill.generator-bound')}"


def _projection_table(result: CompareResult, title: str, header: str, third: Field) -> Table:
    """A row per strategy with a projection: its time, its interval, ``third``, the memset floor, the first touch
    (where probed) and the walk."""
    fields: list[Field] = [
        STRATEGY,
        (Column(header, NUMBER, unit=TIME), lambda s: Cell(estimate_cell(s.projection.time), value=s.projection.time)),
        (Column("range", NUMBER, legend=RANGE_LEGEND), lambda s: estimate_range(s.projection.time)),
        third,
        (Column("floor", NUMBER, legend=FLOOR_LEGEND), lambda s: format_seconds(s.projection.time.floor)),
        (Column("touch", NUMBER, legend=TOUCH_LEGEND), lambda s: format_seconds(s.projection.first_touch_s)),
        (Column("walk", NUMBER, legend=WALK_LEGEND), lambda s: format_seconds(s.projection.walk_s)),
    ]
    if result.size.first_touch is None:  # no probe: no touch column
        del fields[5]
    projected = [s for s in result.strategies if s.projection is not None]
    table = Table.over(title, fields, projected, notes=[say("fill.projected-mark")])
    bound = [s.name for s in projected if s.projection is not None and s.projection.floor_bound]
    if bound:
        table.notes.append(f"at the floor: {', '.join(bound)} (calibrated faster than memset)")
    return table


def projected_time_table(result: CompareResult) -> Table:
    """Projected mode: each strategy's time, its interval, speedup, memset floor and walk (about 70 columns)."""
    title = f"Strategies: projected time (speedup vs {result.baseline_strategy})"
    return _projection_table(result, title, "time", (("speedup", NUMBER), lambda s: speedup_cell(result, s.name)))


def projected_work_table(result: CompareResult) -> Table:
    """Projected mode: exact counts for the full model, and the projected peak RSS (about 70 columns)."""
    note = f"peak RSS ({PROJECTED_MARK}: projected): RSS now + the pages its writes touch + its largest temporary"
    fields = [*WORK, (("peak RSS", NUMBER), lambda s: projected(format_bytes(s.projection.peak_rss_bytes), True))]
    projected_ = [s for s in result.strategies if s.projection is not None]
    return Table.over("Strategies: work (exact counts, full model)", fields, projected_, notes=[note])


def projection_check_table(result: CompareResult) -> Table:
    """Measured mode with a calibration: the projection next to the measured median (about 70 columns)."""
    measured: Field = (("measured", NUMBER), lambda s: estimate_cell(s.time) if s.time.samples else "n/a")
    table = _projection_table(result, "Projected vs measured", "projected", measured)
    table.notes.append("measured: the median round (its min–max: Strategies: time)")
    rss = [
        (s.name, projected(format_bytes(s.projection.peak_rss_bytes), True)) for s in result.strategies if s.projection
    ]
    if rss:
        alike = len({text for _, text in rss}) == 1
        each = f"{rss[0][1]}, every strategy" if alike else ", ".join(f"{name} {text}" for name, text in rss)
        table.notes.append(f"projected peak RSS: {each} (measured: the Memory table's RSS peak)")
    return table


def _sizes(sizes: list[int]) -> str:
    """``256.00–768.00 KiB``: the smallest and largest calibration size, the unit once when they share it."""
    if not sizes:
        return "-"
    low, high = format_bytes(sizes[0]), format_bytes(sizes[-1])
    if low == high:
        return low
    low_number, _, low_unit = low.partition(" ")
    high_number, _, high_unit = high.partition(" ")
    return f"{low_number}–{high_number} {high_unit}" if low_unit == high_unit else f"{low}–{high}"


CALIBRATED_RATE = "the rate of a line fitted to the median trial per size, on touched memory (R²: of that fit)"
TINY = "one fill of a tiny tensor, the cost of a visit before its bytes"


def calibration_table(result: CompareResult) -> Table | None:
    """One row per operation and dtype the visits use: sizes, trials, fitted rate, R², tiny fill."""
    fields: list[Field] = [
        (("init", WORD), lambda c: c.initializer),
        (("rule, dtype", TEXT), lambda c: f"{c.rule} {short_dtype(c.dtype)}"),
        (("sizes", NUMBER), lambda c: _sizes(c.sizes_bytes)),
        (("trials", NUMBER), lambda c: str(sum(len(t.samples) for t in c.trials))),
        (
            Column("GB/s", NUMBER, legend=CALIBRATED_RATE),
            lambda c: f"{1 / c.fit.slope / 1e9:.2f}" if c.fit.slope > 0 else "n/a",
        ),
        (("R²", NUMBER), lambda c: f"{c.fit.r_squared:.3f}"),
        (Column("tiny", NUMBER, legend=TINY), lambda c: format_seconds(c.small_call_s)),
    ]
    title = "Calibration fills (touched tensors, real initializer, this run)"
    return Table.over(title, fields, result.size.calibration) if result.size.calibration else None


def calibration_line(result: CompareResult) -> str | None:
    size = result.size
    if not size.calibration or size.memset_bytes_per_s is None:
        return None
    pages = first_touch_text(size.first_touch)
    return (
        f"memset floor {size.memset_bytes_per_s / 1e9:.2f} GB/s (fill_ on touched memory, this run)"
        f"{'; ' + pages if pages else ''}; calibration took {format_seconds(size.calibration_s)}, "
        f"meta build and counting {format_seconds(size.counting_s)}"
    )


def _lines(texts: Sequence[str | None], emphasis: str = "") -> list[Block]:
    return [Line(text, emphasis) for text in texts if text]


def compare_blocks(result: CompareResult, detail: bool = True) -> list[Block]:
    """The answer first (times, speedups, visits, the floor), then what explains it, then the detail."""
    projected = result.size.mode == "projected"
    blocks: list[Block] = [scenario_table(result)] if detail else [scenario_line(result)]
    if projected:
        blocks += size_lines(result, detail)
        blocks += [projected_time_table(result), projected_work_table(result)]
    else:
        blocks += [strategy_table(result), work_table(result)]
        blocks += _lines(noise_lines(result), WARN)
        blocks += size_lines(result, detail)
    top = top_tensor_table(result, TOP_TENSORS if detail else TOP_TENSORS_SHORT, detail=detail)
    if top is not None:
        blocks.append(top)
    if not projected:
        blocks.append(memory_table(result))
        blocks += _lines([roofline_line(result)])
        if detail and any(s.projection is not None for s in result.strategies):
            blocks.append(projection_check_table(result))
    if detail or projected:
        calibration = calibration_table(result)
        if calibration is not None:
            blocks.append(calibration)
        blocks += _lines([calibration_line(result)], DIM)
    if detail:
        blocks += _lines([overhead_line(result)], DIM)
    blocks += _lines([f"note: {note}" for note in result.model.notes], WARN)
    return blocks


def compare_summary(result: CompareResult) -> str:
    """The answer first: where the times were taken, the fastest strategy, its time and its speedup over the
    baseline; then the others' times and speedups, the slowest given way first ("of N strategies" then says how
    many there were). CONTENDED ends it when the machine was busy while the times were taken."""
    kind = "projected" if result.size.mode == "projected" else "median"  # measured there, or calibrated there
    busy = contended_mark(result.calibration_contention if result.size.mode == "projected" else result.contention)
    timed = sorted((s for s in result.strategies if s.seconds is not None), key=lambda s: s.seconds or 0.0)
    head: list[Clause | str] = [kind, Clause(" fill", 0), f" on {result.model.device}"]
    if not timed:
        return fit([*head, ": no strategy timed", busy])
    best, others = timed[0], timed[1:]
    clauses = [*head, Clause(", fastest ", 2, group="fastest") if others else ": "]
    clauses += [Clause(": ", stands_for="fastest"), f"{best.name} {format_seconds(best.seconds)}"]
    clauses += _speedup_words(result, best.name)
    clauses.append(Clause(f" of {len(timed)} strategies", stands_for="others"))
    for i, s in enumerate(others):
        ratio = result.speedup(s.name) if s.name != result.baseline_strategy else None
        said = f"{s.name} {format_seconds(s.seconds)}" + (f" ({ratio:.1f}x)" if ratio else "")
        clauses.append(Clause(("; " if i == 0 else ", ") + said, 4, group="others"))
    return fit([*clauses, busy])


def _speedup_words(result: CompareResult, name: str) -> list[Clause | str]:
    """' (5.2x legacy)': a strategy's speedup over the baseline (the baseline's name the first to go); what stands
    instead where there is none."""
    if result.nothing_to_fill:
        return [" (nothing to fill", Clause(": no speedup", 3), ")"]
    if name == result.baseline_strategy:
        return [" (the baseline)"]
    ratio = result.speedup(name)
    return [f" ({ratio:.1f}x", Clause(f" {result.baseline_strategy}", 3), ")"] if ratio else []


KIND = Kind(
    "compare",
    compare_blocks,
    compare_summary,
    headline_first=True,
    pictures=compare_sections,
    device=lambda result: result.model.device,
)
