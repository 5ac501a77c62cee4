"""``compare``'s blocks. Without ``detail`` (the terminal's default) the calibration, the projection check, the
recording cost and most revisited tensors are left out, so the answer fits one 50-line screen; files carry all."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

from dummyprof.reports.format import (
    GENERATOR_BOUND_WHY,
    PROJECTED_MARK,
    PROJECTED_NOTE,
    contention_text,
    estimate_cell,
    estimate_range,
    estimate_spread,
    figure_bytes,
    fresh_text,
    projected,
    rate,
    same_unavailable,
    short_dtype,
)
from dummyprof.reports.tables.model import (
    BAD,
    BYTES,
    DIM,
    NAME,
    NUMBER,
    PATH,
    TIME,
    WARN,
    WORD,
    Block,
    Cell,
    Column,
    Line,
    Table,
)
from dummyprof.results.common import Estimate, FirstTouch, NoiseWarning
from dummyprof.results.compare import CompareResult, StrategyResult
from dummyprof.units import format_bytes, format_seconds

PAGE = 4096  # the page size the first-touch cost is quoted per

TOP_TENSORS = 10  # the most revisited tensors a file shows
TOP_TENSORS_SHORT = 5  # ... and the terminal by default
WORK_NOTE = "redund.: visits beyond the first; max/t: most visits of one tensor"
RANGE_NOTE = "range: every visit at its fastest–slowest calibration trial, first touch at its cheapest–dearest pages"
FLOOR_NOTE = "floor: its bytes at this run's memset rate, first touched at the cheapest pages (no projection is faster)"
WALK_NOTE = "walk: the traversal alone, timed on the meta model"
TOUCH_NOTE = (
    "touch: of the time, the first write to every page it fills (page faults, probed on fresh pages in this run, "
    "as the engine's worker writes its weights at start-up); the rest is the fill on touched memory"
)

REASONS = {
    "memory": "one model plus its largest temporary does not fit the memory budget",
    "time": "the measured rounds are predicted to overrun the time budget",
    "fits": "the model fits the memory and time budgets",
    "reduced": "fewer measured rounds than --repeat asked for fit the time budget",
}


PROMISED_ROUNDS = 3  # what --time-budget promises to measure (fewer are projected instead, when known in time)
AUTO_STOPS = {
    "tight": "stopped once every speedup's 95% interval was within 5% of it",
    "budget": "stopped because one more round would overrun the time budget (intervals may still be wide)",
    "max": "stopped at the most rounds it takes",
}


def size_lines(result: CompareResult, *, detail: bool = True) -> list[str]:
    """What was measured and what was projected, and why: one line each. Without ``detail``, a measured run
    leaves out the lines that only confirm it (exact counts, measured fill times)."""
    size = result.size
    lines = []
    confirm = detail or size.mode == "projected"
    if confirm and result.counts == "exact-meta":
        lines.append(
            "counts: exact for the full model (each strategy's traversal run on the meta device; nothing allocated)"
        )
    elif confirm and result.counts == "exact":
        lines.append("counts: exact (recorded in the real fills; equal to the counting pass on the meta device)")
    need = f"needs {format_bytes(size.needed_bytes)} of {format_bytes(size.budget_bytes)} allowed"
    predicted = f", measured rounds predicted at {format_seconds(size.predicted_s)}" if size.predicted_s else ""
    budget = f" (time budget {format_seconds(size.time_budget_s)})"
    if size.mode == "projected":
        lines.append(
            f"fill times and memory: PROJECTED, not measured: {REASONS.get(size.reason, size.reason)} "
            f"({need}{predicted}{budget}); projected from calibration fills made in this run"
        )
    elif size.reason == "reduced":
        lines.append(
            f"repeats REDUCED from {result.repeats_requested} to {result.repeat} to fit the time budget: "
            f"measured rounds predicted at {format_seconds(size.predicted_s)}{budget}; raise --time-budget "
            "for all of them"
        )
    elif size.calibration and confirm:
        lines.append(f"fill times and memory: measured ({need}{predicted}{budget})")
    if result.auto_stop:
        asked = f"--repeat {result.repeats_requested}" if result.repeats_requested else "--repeat auto"
        lines.append(f"{asked}: {result.repeat} measured rounds; {AUTO_STOPS.get(result.auto_stop, result.auto_stop)}")
        if result.auto_stop == "budget" and result.repeat < PROMISED_ROUNDS:
            lines.append(
                f"FEWER ROUNDS THAN PROMISED: --time-budget promises {PROMISED_ROUNDS} measured rounds, and "
                f"{result.repeat} fit: the rounds took longer than calibrated (a slower or busier machine); no speedup "
                f"interval from under {PROMISED_ROUNDS} rounds; raise --time-budget"
            )
    if size.mode == "projected" and size.first_touch is not None:
        lines.append(fresh_text(size.first_touch.budget_s))
    if size.mode == "projected" and result.calibration_contention is not None:
        lines.append(contention_text(result.calibration_contention, f"calibrating on {result.model.device}"))
    elif result.contention is not None and (detail or result.contention.contended):
        lines.append(contention_text(result.contention, f"the rounds ran on {result.model.device}"))
    return lines


NOTHING_TO_FILL = (
    "speedup: n/a: nothing was filled (the model has no tensor with bytes to write), so each time is only the "
    "walk's overhead and a ratio of them says nothing about filling"
)


def speedup_cell(result: CompareResult, name: str) -> str:
    speedup = result.speedup(name)
    return "n/a" if speedup is None else f"{speedup:.2f}x"


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
    if warning.code == "first-round-slow":
        times = f" ({warning.value:.1f}x its median)" if warning.value else ""
        return (
            f"warning: {warning.subject}: the first measured round was significantly slower than the rest{times}: "
            "a cold start (caches, page faults, lazy initialization) that warm-up did not absorb; "
            "raise --warmup"
        )
    if warning.code == "statistical-outliers":
        moved = f"; with them the median is {warning.value:.2f}x the median without" if warning.value else ""
        return (
            f"warning: {warning.subject}: statistical outliers were detected ({warning.count} outside 1.5 IQR of "
            f"the quartiles{moved}); consider re-running on a quiet machine without other programs competing"
        )
    if warning.code == "speedup-uncertain":
        return (
            f"warning: {warning.subject}: the speedup vs {baseline} is uncertain: its 95% interval "
            f"{warning.low:.2f}–{warning.high:.2f}x includes 1.0 (no difference); raise --repeat or quiet the machine"
        )
    if warning.code == "faster-than-floor":
        share = f" ({100 * warning.value:.0f}% of it)" if warning.value else ""
        return (
            f"warning: {warning.subject}: filled faster than the memset floor measured in this run{share}, which "
            "no fill can: the floor's readings were slowed (contention), so its %memset is not shown; rerun quiet"
        )
    return f"warning: {warning.subject}: {warning.code}"


def noise_lines(result: CompareResult) -> list[str]:
    lines = [noise_line(w, result.baseline_strategy) for w in result.noise]
    if result.nothing_to_fill:
        lines.append(NOTHING_TO_FILL)
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


def scenario_line(result: CompareResult) -> Line:
    model = result.model
    rounds = (
        "no rounds at full size (projected)"
        if result.size.mode == "projected"
        else f"{result.repeat} rounds, interleaved, after {result.warmup} warm-up"
    )
    return Line(
        f"model: {model.description or model.source} on {model.device}: {model.modules:,} modules, "
        f"{model.tensors:,} storages ({model.names:,} registered names), {format_bytes(model.bytes)}; {rounds}"
    )


def scenario_table(result: CompareResult) -> Table:
    model = result.model
    table = Table("Scenario", [Column("what", NAME), Column("value")], show_header=False)
    table.add("model", model.description or model.source)
    for key in ("depth", "width", "hidden", "dtype"):
        if key in model.options:
            table.add(key, str(model.options[key]))
    table.add("device", model.device)
    table.add("modules", f"{model.modules:,}")
    table.add("tensors", f"{model.tensors:,} storages ({model.names:,} registered names)")
    table.add("bytes", format_bytes(model.bytes))
    if result.size.mode == "projected":
        table.add("rounds", "none at full size (projected)")
    else:
        table.add("rounds", f"{result.repeat} measured, interleaved, after {result.warmup} warm-up")
    return table


def _per_strategy(title: str, *figures: str) -> Table:
    """A row per strategy; its first figure a time (charted on the HTML page)."""
    first, *rest = figures
    return Table(
        title, [Column("strategy", NAME), Column(first, NUMBER, unit=TIME), *(Column(h, NUMBER) for h in rest)]
    )


def strategy_table(result: CompareResult) -> Table:
    """Times: median, spread, range, speedup and its interval (about 75 columns)."""
    title = f"Strategies: time (speedup vs {result.baseline_strategy}, 95% bootstrap interval)"
    table = _per_strategy(title, "median", "CV", "min–max", "speedup", "interval")
    for s in result.strategies:
        table.add(
            s.name,
            Cell(estimate_cell(s.time), value=s.time),
            estimate_spread(s.time),
            estimate_range(s.time),
            speedup_cell(result, s.name),
            interval_cell(result, s.name),
        )
    return table


def floor_share_text(result: CompareResult, name: str) -> str:
    share = result.share_of_floor(name)
    if share is None:
        return "n/a"
    if share > 1.0:
        return "over!"  # faster than the floor cannot be: flagged (a faster-than-floor warning says why)
    return f"{100 * share:.1f}%" if share < 0.1 else f"{100 * share:.0f}%"


def floor_share_cell(result: CompareResult, name: str) -> Cell:
    share = result.share_of_floor(name)
    flagged = BAD if share is not None and share > 1.0 else WARN if result.generator_bound(name) else ""
    return Cell(floor_share_text(result, name), flagged)


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


def _work(title: str, *figures: str) -> Table:
    """A row per strategy: its name, initializer and exact counts (:func:`_work_cells`), then ``figures``."""
    counts = ("visits", "redund.", "max/t", "written", *figures)
    columns = [Column(h, NUMBER, unit=BYTES if h == "written" else "") for h in counts]
    return Table(title, [Column("strategy", NAME), Column("init", WORD), *columns])


def _work_cells(s: StrategyResult) -> list[str | Cell]:
    written = Cell(format_bytes(s.bytes_written), value=s.bytes_written)
    return [s.name, s.initializer, f"{s.visits:,}", _count(s.redundant_visits), str(s.max_visits), written]


def work_table(result: CompareResult) -> Table:
    """What each strategy did: visits, bytes, rate against this run's memset floor (about 75 columns)."""
    table = _work("Strategies: work", "rate", "%memset")
    for s in result.strategies:
        table.add(*_work_cells(s), rate(s.bytes_written, s.time.value), floor_share_cell(result, s.name))
    table.notes.append(WORK_NOTE)
    floor = floor_words(result)
    if floor:
        table.notes.append(f"%memset: {floor}")
    return table


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
    table = Table(
        f"Most revisited tensors (top {len(ranked)}; visits per strategy)",
        [Column("tensor", PATH), Column("+names", NUMBER), Column("depth", NUMBER), Column("dtype", WORD)]
        + [Column(h, NUMBER) for h in ("bytes", *names)],
    )
    for key, t in ranked:
        visits = [t.visits.get(n, 0) for n in names]
        table.add(
            short_name(key),
            f"+{len(t.names) - 1}" if len(t.names) > 1 else "",
            str(t.depth) if detail else "",
            short_dtype(t.dtype) if detail else "",
            format_bytes(t.nbytes) if detail else "",
            *(Cell(str(v), BAD if v > 1 else "") for v in visits),
        )
    if any(len(t.names) > 1 for _, t in ranked):
        table.notes.append("+names: other names registered for the same storage")
    return table


MEMORY_COLUMNS: list[tuple[str, Callable[[StrategyResult], Estimate]]] = [
    ("pinned host", lambda s: s.memory.pinned_bytes),
    ("GPU used (NVML)", lambda s: s.memory.gpu_used_bytes),
    ("GPU allocator peak", lambda s: s.memory.gpu_allocator_peak_bytes),
]


def memory_table(result: CompareResult) -> Table:
    """The memory table; what is unavailable for every strategy is a note under it instead of a column."""
    shown, missing = [], []
    for title, get in MEMORY_COLUMNS:
        reason = same_unavailable([get(s) for s in result.strategies])
        if reason is None:
            shown.append((title, get))
        else:
            missing.append(f"{title}: unavailable: {reason}")
    table = Table(
        "Memory (worst measured round)",
        [Column("strategy", NAME)]
        + [Column(h, NUMBER) for h in ("RSS before", "RSS peak", "growth", "scratch")]
        + [Column(title) for title, _ in shown],
    )
    for s in result.strategies:
        m = s.memory
        table.add(
            s.name,
            format_bytes(m.rss_before_bytes),
            format_bytes(m.rss_peak_bytes),
            format_bytes(m.rss_growth_bytes),
            format_bytes(s.peak_scratch_bytes),
            *[figure_bytes(get(s)) for _, get in shown],
        )
    table.notes += ["growth: during the fill; scratch: largest temporary", *missing]
    return table


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
    return f"roofline: {shares} of memset: {GENERATOR_BOUND_WHY}"


def _projection_table(
    result: CompareResult, title: str, headers: tuple[str, str], third: Callable[[StrategyResult], str]
) -> Table:
    """A row per strategy with a projection: its time, its interval, ``third``, the memset floor, the first touch
    (where probed) and the walk."""
    touched = result.size.first_touch is not None
    table = _per_strategy(title, headers[0], "range", headers[1], "floor", *(["touch"] if touched else []), "walk")
    for s in result.strategies:
        if (p := s.projection) is not None:
            floor = format_seconds(p.time.floor) if p.time.floor is not None else "n/a"
            touch = [format_seconds(p.first_touch_s)] if touched else []
            time = Cell(estimate_cell(p.time), value=p.time)
            table.add(s.name, time, estimate_range(p.time), third(s), floor, *touch, format_seconds(p.walk_s))
    table.notes += [PROJECTED_NOTE, RANGE_NOTE, FLOOR_NOTE, *([TOUCH_NOTE] if touched else []), WALK_NOTE]
    bound = [s.name for s in result.strategies if s.projection is not None and s.projection.floor_bound]
    if bound:
        table.notes.append(f"at the floor: {', '.join(bound)} (calibrated faster than memset)")
    return table


def projected_time_table(result: CompareResult) -> Table:
    """Projected mode: each strategy's time, its interval, speedup, memset floor and walk (about 70 columns)."""

    def speedup(s: StrategyResult) -> str:
        ratio = result.speedup(s.name)
        return f"{PROJECTED_MARK}{ratio:.2f}x" if ratio is not None else "n/a"

    title = f"Strategies: projected time (speedup vs {result.baseline_strategy})"
    return _projection_table(result, title, ("time", "speedup"), speedup)


def projected_work_table(result: CompareResult) -> Table:
    """Projected mode: exact counts for the full model, and the projected peak RSS (about 70 columns)."""
    table = _work("Strategies: work (exact counts, full model)", "peak RSS")
    for s in result.strategies:
        if s.projection is not None:
            table.add(*_work_cells(s), projected(format_bytes(s.projection.peak_rss_bytes), True))
    table.notes += [
        WORK_NOTE,
        f"peak RSS ({PROJECTED_MARK}: projected): RSS now + the pages its writes touch + its largest temporary",
    ]
    return table


def projection_check_table(result: CompareResult) -> Table:
    """Measured mode with a calibration: the projection next to the measured median (about 70 columns)."""
    table = _projection_table(
        result,
        "Projected vs measured",
        ("projected", "measured"),
        lambda s: estimate_cell(s.time) if s.time.samples else "n/a",
    )
    table.notes.insert(1, "measured: the median round (its min–max: Strategies: time)")
    rss = [
        (s.name, projected(format_bytes(s.projection.peak_rss_bytes), True)) for s in result.strategies if s.projection
    ]
    if len({text for _, text in rss}) == 1:
        table.notes.append(f"projected peak RSS: {rss[0][1]}, every strategy (measured: the Memory table's RSS peak)")
    elif rss:
        each = ", ".join(f"{name} {text}" for name, text in rss)
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


def calibration_table(result: CompareResult) -> Table | None:
    """One row per (initializer, rule, dtype) the visits use: sizes, trials, fitted rate, R², tiny fill."""
    size = result.size
    if not size.calibration:
        return None
    table = Table(
        "Calibration fills (touched tensors, real initializer, this run)",
        [Column("init", WORD), Column("rule, dtype")]
        + [Column(h, NUMBER) for h in ("sizes", "trials", "GB/s", "R²", "tiny")],
    )
    for c in size.calibration:
        table.add(
            c.initializer,
            f"{c.rule} {short_dtype(c.dtype)}",
            _sizes(c.sizes_bytes),
            str(sum(len(t.samples) for t in c.trials)),
            f"{1 / c.fit.slope / 1e9:.2f}" if c.fit.slope > 0 else "n/a",
            f"{c.fit.r_squared:.3f}",
            format_seconds(c.small_call_s),
        )
    table.notes += [
        "GB/s: the rate of a line fitted to the median trial per size, on touched memory (R²: of that fit)",
        "tiny: one fill of a tiny tensor, the cost of a visit before its bytes",
    ]
    return table


def calibration_line(result: CompareResult) -> str | None:
    size = result.size
    if not size.calibration or size.memset_bytes_per_s is None:
        return None
    return (
        f"memset floor {size.memset_bytes_per_s / 1e9:.2f} GB/s (fill_ on touched memory, this run)"
        f"{first_touch_text(size.first_touch)}; calibration took {format_seconds(size.calibration_s)}, "
        f"meta build and counting {format_seconds(size.counting_s)}"
    )


def first_touch_text(pages: FirstTouch | None) -> str:
    """The probe of fresh pages, in a clause: how much it covered and what a page's first write cost."""
    if pages is None or not pages.fresh_s:
        return ""
    costs = [c / (pages.chunk_bytes / PAGE) * 1e6 for c in pages.chunk_costs()]
    covered = f"{format_bytes(pages.sampled_bytes)} of {format_bytes(pages.needed_bytes)}"
    return f"; first touch {min(costs):.1f}-{max(costs):.1f} µs per 4 KiB page (fresh pages, {covered} probed)"


def _lines(texts: Sequence[str | None], emphasis: str = "") -> list[Block]:
    return [Line(text, emphasis) for text in texts if text]


def _size_lines(result: CompareResult, detail: bool) -> list[Line]:
    """What was measured and what was projected: a warning where a figure is not what was asked for."""
    lines = size_lines(result, detail=detail)
    return [Line(text, WARN if "PROJECTED" in text or "REDUCED" in text else DIM) for text in lines]


def compare_blocks(result: CompareResult, *, detail: bool = True) -> list[Block]:
    """The answer first (times, speedups, visits, the floor), then what explains it, then the detail."""
    projected = result.size.mode == "projected"
    blocks: list[Block] = [scenario_table(result)] if detail else [scenario_line(result)]
    if projected:
        blocks += _size_lines(result, detail)
        blocks += [projected_time_table(result), projected_work_table(result)]
    else:
        blocks += [strategy_table(result), work_table(result)]
        blocks += _lines(noise_lines(result), WARN)
        blocks += _size_lines(result, detail)
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
