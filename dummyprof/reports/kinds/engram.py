"""The engram report as blocks (a multi-rank run: kinds/ranks.py), its summary, and the words for its data's codes.

Sized for 80 columns: figures in short columns, the long words (how a projection was made, why a method was
projected) in lines under the tables instead of in cells.
"""

from __future__ import annotations

from collections.abc import Sequence

from dummyprof.reports.format import (
    contended_mark,
    contention_text,
    estimate_cell,
    estimate_range,
    figure_bytes,
    first_touch_notice,
    first_touch_text,
    no_verdict_text,
    projected,
    projected_note,
    same_unavailable,
    unavailable_text,
    verdict_text,
)
from dummyprof.reports.kind import Kind
from dummyprof.reports.kinds.ranks import ranks_blocks, ranks_summary
from dummyprof.reports.messages import known, say
from dummyprof.reports.summary import ALWAYS, Clause, fit
from dummyprof.reports.tables.model import (
    BAD,
    BYTES,
    DIM,
    NAME,
    NUMBER,
    TEXT,
    TIME,
    WARN,
    WORD,
    Block,
    Cell,
    Column,
    ColumnSpec,
    Field,
    Line,
    Table,
)
from dummyprof.results.common import Estimate
from dummyprof.results.engram import (
    FALLBACK_FLAT,
    FALLBACK_POOR_FIT,
    FASTER_THAN_FLOOR,
    FOR_TIME,
    PLANNED,
    PROJECTED,
    EngramResult,
    LinearFit,
    MethodResult,
    SampleGroupInfo,
    SamplePoint,
    TimeProjection,
)
from dummyprof.results.session import Results
from dummyprof.results.verdict import CONTENDED, MET, MISSED, Verdict, judge
from dummyprof.units import format_bytes, format_seconds

MAX_RANK_ROWS = 16
PLAN_WORDS = {True: "to measure", False: "to project"}  # a dry run: what a real run would do, by fits_in_memory


def projection_detail(p: TimeProjection, own: str = "") -> str:
    """How a projection was made: line or fallback, R², extrapolation, and the bound when it applied."""
    line = p.line
    r2 = f"R² {line.r_squared:.3f}" if line is not None else ""
    if p.fallback and not p.rate_bytes:
        how = f"no growth with size ({r2}): median reading"
    elif p.fallback == FALLBACK_POOR_FIT:
        how = f"{r2} under {p.min_r_squared:g}: rate of the largest sample ({format_bytes(p.rate_bytes)})"
    elif p.fallback == FALLBACK_FLAT:
        how = f"line not rising ({r2}): rate of the largest sample ({format_bytes(p.rate_bytes)})"
    else:
        how = f"line, {r2}, {line.points if line else 0} sizes"
    how += f", x{p.extrapolation:,.0f}"
    if p.fresh_bytes:
        how += f", plus {format_seconds(p.first_touch_s)} first touch of {format_bytes(p.fresh_bytes)} fresh scratch"
    if p.bounded and p.ceiling_bytes_per_s:
        whose = "its own fastest sample" if p.ceiling_name == own else f"the {p.ceiling_name} floor"
        how += f", raised to {whose} ({p.ceiling_bytes_per_s / 1e9:.2f} GB/s)"
    elif p.bounded:
        how += ", bounded"
    return how


def dominant_text(m: MethodResult) -> str:
    if not m.startup_dominant or m.startup_dominant_share is None:
        return ""
    return f"{m.startup_dominant} {m.startup_dominant_share:.0%}"


def recommended(result: EngramResult) -> MethodResult | None:
    """The method to use: the fastest start-up of those that fit in memory (of all, when none fits), floor left out."""
    timed = [m for m in result.methods if m.name != result.floor_method and m.startup.value is not None]
    fitting = [m for m in timed if m.fits_in_memory] or timed
    return min(fitting, key=lambda m: m.startup.value or 0.0, default=None)


def deadline_verdict(result: EngramResult, m: MethodResult) -> Verdict | None:
    """The start-up's verdict against ``--deadline``; None without a deadline or a start-up time. A file that
    stored none is judged here on its own figures, by the same rule."""
    deadline, value = result.budget.deadline_s, m.startup.value
    if deadline is None or value is None:
        return None
    if m.deadline is not None:
        return m.deadline
    busy = result.contention is not None and result.contention.contended
    return judge(*_ends(m), deadline, contended=busy)


def _ends(m: MethodResult) -> tuple[float, float]:
    """The interval a start-up is judged on: its low and high ends (a measured one's too), else the point alone."""
    value = m.startup.value or 0.0
    low, high = m.startup.low, m.startup.high
    return (min(low, high), max(low, high)) if low is not None and high is not None else (value, value)


def deadline_text(result: EngramResult, m: MethodResult) -> str:
    """The verdict of a start-up against ``--deadline``, judged on its interval (:func:`results.verdict.judge`)."""
    verdict = deadline_verdict(result, m)
    if verdict is None:
        return "no --deadline"
    limit = f"{format_seconds(verdict.limit)} deadline"
    return verdict_text(verdict, _ends(m), limit, lambda s: projected(format_seconds(s), m.startup))


def deadline_cell(result: EngramResult, m: MethodResult) -> str | Cell:
    """The short verdict for a table's deadline column: missed in red, uncertain and no verdict marked."""
    verdict = deadline_verdict(result, m)
    if verdict is None:
        return "" if result.budget.deadline_s is None else "n/a"
    word = say(f"short.{verdict.code}")
    return Cell(word, BAD) if verdict.code == MISSED else Cell(word, WARN) if verdict.code != MET else word


def verdict_lines(result: EngramResult) -> list[str]:
    """A contended run's missing deadline verdict: why, what was read, what to do."""
    deadline = result.budget.deadline_s
    if deadline is None or not any((v := deadline_verdict(result, m)) and v.code == CONTENDED for m in result.methods):
        return []
    return [no_verdict_text(f"{format_seconds(deadline)} deadline", result.contention)]


def generator_bound_line(methods: Sequence[MethodResult], floor: str) -> str | None:
    """One line naming the fills that reach under a few percent of the floor, and why."""
    flagged = [m for m in methods if m.generator_bound and m.name != floor]
    if not flagged:
        return None
    shares = ", ".join(
        f"{m.name} {m.percent_of_floor.value:.1f}%" for m in flagged if m.percent_of_floor.value is not None
    )
    return f"{shares} of {floor}: {say('fill.generator-bound')}"


def sample_group_note(group: SampleGroupInfo, part_rows: int) -> str:
    kind = "memory-bound" if group.memory_bound else "generator-bound"
    rounds = f", {group.rounds} readings each" if group.rounds > 1 else ""
    return (
        f"{kind} methods ({', '.join(group.methods)}) projected from {len(group.rows)} sample sizes of "
        f"{group.rows[0]:,} to {group.rows[-1]:,} rows per table{rounds} "
        f"({part_rows / group.rows[-1]:,.0f}x extrapolation to {part_rows:,} rows)"
    )


def reason_text(m: MethodResult) -> str:
    """Why a method was projected, or how a dry run plans it; empty when it was measured."""
    code = f"{'planned' if m.mode == PLANNED else 'projected'}.{m.reason}"
    if not m.reason or not known(code):
        return m.reason  # a code this version does not know (a newer file): shown as it is
    about = f"about {format_seconds(m.one_fill_s)}" if m.one_fill_s is not None else "longer than that"
    return say(code, about=about)


def plan_notes(result: EngramResult) -> list[str]:
    """What the plan changed, and the backing's own note when the backing asked for was the one used."""
    notes = [say("engram.huge-pages-sampled")] if result.huge_pages_from_sample else []
    if (cut := result.rounds_cut) is not None:
        round_s, budget = format_seconds(cut.round_s), format_seconds(cut.time_budget_s)
        said = {"rounds": cut.rounds, "repeat": cut.repeat, "methods": ", ".join(cut.methods)}
        notes.append(say("engram.rounds-cut", round=round_s, budget=budget, **said))
    if result.sample_sizes_cut:
        notes.append(say("engram.sizes-cut", rows=", ".join(f"{r:,}" for r in result.sample_sizes_cut)))
    over = result.sample_overrun
    if over is not None:
        when = ""
        if over.predicted_after_rows is not None and over.predicted_over_s is not None:
            when = (
                f" (predicted after the {over.predicted_after_rows:,}-row sample: "
                f"~{format_seconds(over.predicted_over_s)} over)"
            )
        over_s, budget = format_seconds(over.over_s), format_seconds(over.time_budget_s)
        notes.append(say("engram.over-budget", over=over_s, budget=budget, when=when))
    if result.first_touch is not None:
        probed, short = first_touch_text(result.first_touch), first_touch_notice(result.first_touch)
        if probed:
            notes.append(f"fresh scratch: {probed}")
        if short:
            notes.append(short)
    line = contention_text(result.contention, "this run calibrated, filled and sampled")
    if line and ((result.contention is not None and result.contention.contended) or result.sample_groups):
        notes.append(line)  # next to every projected time, and whenever the machine was contended
    backing = result.backing
    if backing.note and backing.used == backing.requested and not result.dry_run and backing.note not in notes:
        notes.append(backing.note)  # a different backing's note is a notice of the run instead
    return notes


def _rate(figure: Estimate) -> str:
    return estimate_cell(figure, lambda v: f"{v:.2f} GB/s")


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _percent(figure: Estimate) -> str:
    if figure.reason == FASTER_THAN_FLOOR:
        return "over!"
    return estimate_cell(figure, lambda v: f"{v:.1f}%" if v < 10 else f"{v:.0f}%")


def _fit(fit: LinearFit | None) -> str:
    if fit is None:
        return ""
    through = ", through 0" if fit.model == "b x" else ""
    return f"R² {fit.r_squared:.3f}, {fit.points} sizes{through}"


def layout_table(result: EngramResult) -> Table:
    lay = result.layout
    table = Table.of("Engram tables", [("what", NAME), ("value", TEXT)], [], show_header=False)
    table.add(
        "tables", f"{lay.tables} x {lay.rows:,} rows x dim {lay.dim} (fp8 e4m3 + uint8 scale per {lay.block_size})"
    )
    table.add("all ranks", format_bytes(lay.total_bytes))
    table.add(
        "sharding",
        f"{_plural(lay.heads, 'hash head')} over {_plural(lay.tp * lay.dp, 'rank')} "
        f"(tp {lay.tp} x dp {lay.dp}), whole heads per rank",
    )
    table.add("this rank", f"rank {lay.rank}: {lay.part_rows:,} rows per table")
    table.add("requested per rank", format_bytes(lay.table_bytes_per_rank))
    b = result.backing
    reserved = format_bytes(lay.reserved_bytes_per_rank) + f" (computed: {b.rounding})"
    table.add("reserved per rank", reserved)
    if b.reserved_measured_bytes.available or b.used in ("pinned", "pinned-copy"):
        table.add("reserved, measured", figure_bytes(b.reserved_measured_bytes))
    where = f"{b.used} host memory" if b.device == "cpu" else f"device memory on {b.device}"
    if b.requested not in (b.used, "device"):
        where += f" (asked for {b.requested})"
    table.add("memory", where)
    if b.used == "hugepages" or b.huge_page_bytes.available:
        table.add("huge-page backed", figure_bytes(b.huge_page_bytes))
    table.add("pinned allocator", figure_bytes(result.gpu.pinned_bytes))
    table.add("GPU used (NVML)", figure_bytes(result.gpu.gpu_used_bytes))
    table.add("GPU allocator peak", figure_bytes(result.gpu.gpu_allocator_peak_bytes))
    budget = result.budget
    table.add("memory budget", f"{format_bytes(budget.memory_bytes)} ({budget.memory_source})")
    time_text = f"{format_seconds(budget.time_s)}"
    if budget.deadline_s is not None:
        time_text += f"; deadline {format_seconds(budget.deadline_s)}"
    table.add("time budget", time_text)
    return table


def ranks_table(result: EngramResult) -> Table | None:
    parts = result.layout.ranks
    if len(parts) <= 1:
        return None
    fields: list[Field] = [
        (("rank", NUMBER), lambda p: str(p.rank)),
        (("heads", NUMBER), lambda p: f"{p.first_head}..{p.first_head + p.heads - 1}"),
        (("rows per table", NUMBER), lambda p: f"{p.part_rows:,}"),
        (("bytes (all tables)", NUMBER), lambda p: format_bytes(p.table_bytes)),
    ]
    shown = parts if len(parts) <= MAX_RANK_ROWS else parts[: MAX_RANK_ROWS // 2] + parts[-MAX_RANK_ROWS // 2 :]
    table = Table.over("Per rank", fields, shown)
    if len({(p.heads, p.part_rows) for p in parts}) > 1:
        table.notes.append(
            "uneven: each rank takes ceil(heads / ranks) whole heads, the last fewer (vLLM's rule), "
            "and the first heads one more row"
        )
    return table


def phase_table(result: EngramResult) -> Table | None:
    """Allocation and first touch of the full tables: time, its range, rate (how each was projected: lines below)."""
    if not result.phases:
        return None
    rows = []
    for p in result.phases:
        rate = (
            _rate(Estimate(p.bytes / p.time.value / 1e9, p.time.how))
            if p.time.value and p.name != "allocate"  # allocation maps address space; a rate means nothing
            else ""
        )
        rows.append([p.name, format_bytes(p.bytes), estimate_cell(p.time), estimate_range(p.time), rate])
    columns = [("phase", NAME), ("bytes", NUMBER), ("time", NUMBER), ("range", NUMBER), ("rate", NUMBER)]
    notes = projected_note(p.time for p in result.phases)
    if any(p.projection is not None for p in result.phases):
        notes.append("range: the projection's interval (see the note on intervals)")
    elif any(len(p.time.samples) > 1 for p in result.phases):
        notes.append("range: fastest–slowest round")
    return Table.of("Phases (full tables)", columns, rows, notes=notes)


def phase_lines(result: EngramResult) -> list[str]:
    """How each phase's time was had, where it was projected or fitted."""
    lines = []
    for p in result.phases:
        if p.projection is not None:
            lines.append(f"{p.name}: projected ({projection_detail(p.projection, p.name)})")
        elif p.time_fit is not None:
            lines.append(f"{p.name}: {_fit(p.time_fit)}")
    return lines


OF_FLOOR = "of the fastest memset round of this run"
STARTUP = "allocation + first touch + fill"


def method_table(result: EngramResult) -> Table:
    """Fill time per method: measured or projected, its range, rate and share of the memset floor."""
    fields: list[Field] = [
        (("method", NAME), lambda m: m.name),
        (("how", WORD), lambda m: PLAN_WORDS[m.fits_in_memory] if m.mode == PLANNED else m.mode),
        (("fill", NUMBER), lambda m: estimate_cell(m.time)),
        (("range", NUMBER), lambda m: estimate_range(m.time)),
        (Column("rate", NUMBER, legend="the bytes each method writes"), lambda m: _rate(m.gb_per_s)),
        (Column("%memset", NUMBER, legend=OF_FLOOR), lambda m: _percent(m.percent_of_floor)),
    ]
    notes = projected_note(f for m in result.methods for f in (m.time, m.gb_per_s))
    if any(m.projection is not None for m in result.methods):
        notes.append("range: the projected interval, or the fastest–slowest measured round")
    elif any(len(m.time.samples) > 1 for m in result.methods):
        notes.append("range: fastest–slowest round")
    if any(m.percent_of_floor.reason == FASTER_THAN_FLOOR for m in result.methods):
        notes.append(unavailable_text(FASTER_THAN_FLOOR))
    return Table.over("Fill methods (per rank)", fields, result.methods, notes=notes)


def startup_table(result: EngramResult, *, detail: bool = True) -> Table:
    """Start-up = allocation + first touch + fill: its value, its interval, the deadline's verdict; with ``detail``
    its largest term, else the fill and whether it fits (the glance: every other figure is behind --detail)."""
    deadline = result.budget.deadline_s
    title = "Start-up per rank" + (f" (deadline {format_seconds(deadline)})" if deadline is not None else "")
    fits = f"tables + scratch in {format_bytes(result.budget.memory_bytes)}"
    fields: list[Field] = [
        (("method", NAME), lambda m: m.name + (" (floor)" if m.name == result.floor_method and not detail else "")),
        (
            Column("start-up", NUMBER, unit=TIME, legend=STARTUP),
            lambda m: Cell(estimate_cell(m.startup), value=m.startup),
        ),
        (("range", NUMBER), lambda m: estimate_range(m.startup) or ("" if detail else estimate_range(m.time))),
        (("fill", NUMBER), lambda m: "" if detail else estimate_cell(m.time)),
        (Column("fits", WORD, legend=fits), lambda m: "" if detail else "yes" if m.fits_in_memory else Cell("no", BAD)),
        (("largest term", WORD), lambda m: dominant_text(m) if detail else ""),
        (("deadline", WORD), lambda m: deadline_cell(result, m)),
    ]
    table = Table.over(title, fields, result.methods)
    table.notes += projected_note(m.startup for m in result.methods)
    if detail and any(m.startup.span is not None for m in result.methods):
        table.notes.append("range: the sum of the terms' ranges")
    if not detail:
        table.notes.append("every table, fit, sample and interval: --detail")
    return table


def memory_table(result: EngramResult) -> Table:
    """Need, scratch, fit and peak RSS per method; a column unavailable for every method becomes a line instead."""
    budget = format_bytes(result.budget.memory_bytes)
    needs = Column("needs", NUMBER, unit=BYTES, legend="tables (allocator-rounded) + scratch")
    fields: list[Field] = [
        (("method", NAME), lambda m: m.name),
        (needs, lambda m: Cell(format_bytes(m.needed_bytes), value=m.needed_bytes)),
        (("scratch", NUMBER), lambda m: format_bytes(m.peak_scratch_bytes)),
        (("fits", WORD), lambda m: "yes" if m.fits_in_memory else Cell("no", BAD)),
    ]
    rss_reason = same_unavailable([m.peak_rss_bytes for m in result.methods])
    if rss_reason is None:
        rss = Column("peak RSS", NUMBER, legend="the whole process's; ~ projected: its RSS before the tables + needs")
        fields.append((rss, lambda m: estimate_cell(m.peak_rss_bytes, format_bytes)))
        notes = projected_note(m.peak_rss_bytes for m in result.methods)
    else:
        notes = [f"peak RSS: unavailable: {rss_reason}"]
    if any(m.memory_fit is not None for m in result.methods):
        slope = "slope of RSS growth against the need over n samples (R²: of that fit)"
        fields += [
            (Column("RSS/need", NUMBER, legend=slope), lambda m: f"x{m.memory_fit.slope:.3f}" if m.memory_fit else ""),
            (("n", NUMBER), lambda m: str(m.memory_fit.points) if m.memory_fit else ""),
            (("R²", NUMBER), lambda m: f"{m.memory_fit.r_squared:.3f}" if m.memory_fit else ""),
        ]
    return Table.over(f"Memory per rank (budget {budget})", fields, result.methods, notes=notes)


def _spread(low: float | None, high: float | None) -> str:
    """``±1`` for -1..1, ``1`` when every value is 1, else ``low..high``; '' when not recorded."""
    if low is None or high is None:
        return ""
    if low == high:
        return f"{low:g}"
    if low == -high:
        return f"±{high:g}"
    return f"{low:g}..{high:g}"


def values_table(result: EngramResult) -> Table:
    """Where each method comes from, and what it wrote (a sample of the filled tables)."""
    sampled = any(m.values is not None for m in result.methods)
    rows = []
    for m in result.methods:
        v = m.values
        if v is None:
            rows.append([m.name, m.origin] + ["n/a"] * 4 if sampled else [m.name, m.origin, "", "", "", ""])
            continue
        scale = "untouched" if m.name == "random-convert" else ",".join(str(x) for x in v.scale_values)
        spread = _spread(v.weight_min, v.weight_max)
        rows.append([m.name, m.origin, f"{v.weight_zero_share:.1%}", str(v.weight_distinct), spread, scale])
    columns: list[ColumnSpec] = [("method", NAME), ("as in", TEXT), ("zeros", NUMBER), ("distinct", NUMBER)]
    columns.append(Column("weights", NUMBER, legend="smallest and largest value sampled (±1: -1..1)"))
    columns.append(Column("scales", TEXT, legend="the scale bytes seen"))
    title = "Methods: as in, and the values written (sample)" if sampled else "Methods"
    return Table.of(title, columns, rows)


def _times_in_one_unit(seconds: list[float]) -> str:
    """``47.3 67.8 129.4 ms``: one unit per list, so a wrapped line never splits a number from its unit."""
    top = max(seconds, default=0.0)
    if top >= 1:
        return " ".join(f"{x:.2f}" for x in seconds) + " s"
    if top >= 1e-3:
        return " ".join(f"{x * 1e3:.1f}" if x >= 1e-3 else f"{x * 1e3:.3f}" for x in seconds) + " ms"
    return " ".join(f"{x * 1e6:.0f}" for x in seconds) + " µs"


def samples_table(result: EngramResult) -> Table | None:
    """The smaller sizes each projection was made from: rows per table and the median time at each."""
    projected_methods = [m for m in result.methods if m.samples]
    phases = [p for p in result.phases if p.samples]
    if not projected_methods:
        return None
    columns = [("what", NAME), ("rows per table", TEXT), ("median time", TEXT), ("n", NUMBER)]
    notes = ["samples: one figure per size, in order; n: readings at each size (the median is shown)"]
    table = Table.of("Samples behind the projections (measured)", columns, [], notes=notes)
    named: list[tuple[str, list[SamplePoint]]] = [(m.name, m.samples) for m in projected_methods]
    named += [(p.name, p.samples) for p in phases]
    for name, points in named:
        rounds = sorted({max(1, len(p.time.samples)) for p in points})
        table.add(
            name,
            " ".join(f"{p.part_rows:,}" for p in points),
            _times_in_one_unit([p.time.value or 0.0 for p in points]),
            str(rounds[0]) if len(rounds) == 1 else " ".join(str(max(1, len(p.time.samples))) for p in points),
        )
    return table


def method_lines(result: EngramResult) -> list[str]:
    """Why each method was projected (or will be), and how its time was projected."""
    lines = []
    planned: dict[str, list[str]] = {}  # a dry run: one line per reason, naming its methods
    for m in result.methods:
        if m.mode == PLANNED:
            if m.reason:
                planned.setdefault(reason_text(m), []).append(m.name)
            continue
        detail = ""
        if m.mode == PROJECTED:
            detail = projection_detail(m.projection, m.name) if m.projection is not None else _fit(m.time_fit)
        reason = reason_text(m)
        if reason:
            why = f"because it {reason}" if reason.startswith("does") else reason
            lines.append(f"{m.name}: {m.mode} {why}" + (f": {detail}" if detail else ""))
        elif detail:
            lines.append(f"{m.name}: {m.mode}: {detail}")
    return [f"{', '.join(names)}: {reason}" for reason, names in planned.items()] + lines


def glance_lines(result: EngramResult) -> list[str]:
    """Why methods were projected (one line per reason) and what the plan changed: the words, not the statistics."""
    why: dict[str, list[str]] = {}
    for m in result.methods:
        if m.mode != PROJECTED or not reason_text(m):
            continue
        if m.reason == FOR_TIME:  # one line for all: each with its calibrated fill
            one = f" (about {format_seconds(m.one_fill_s)})" if m.one_fill_s is not None else ""
            why.setdefault(
                f"one full-size fill would take over the {format_seconds(result.budget.time_s)} time budget", []
            ).append(m.name + one)
        else:
            why.setdefault(reason_text(m), []).append(m.name)
    lines = [f"projected, {reason}: {', '.join(names)}" for reason, names in why.items()]
    return verdict_lines(result) + lines + [f"note: {note}" for note in plan_notes(result)]


def engram_blocks(results: Results, detail: bool = True) -> list[Block]:
    result = results.engram
    assert result is not None
    if not detail and not results.ranks and same_unavailable([m.startup for m in result.methods]) is None:
        # the answer and a line per method; the statistics behind --detail
        return [startup_table(result, detail=False), *(Line(line, DIM) for line in glance_lines(result))]
    blocks: list[Block] = [layout_table(result)]
    if results.ranks:  # a multi-rank run: every rank's figures side by side instead of rank 0's alone
        return blocks + ranks_blocks(results) + [Line(f"note (rank 0): {note}", DIM) for note in plan_notes(result)]
    blocks += [t for t in (ranks_table(result), phase_table(result)) if t is not None]
    blocks += [Line(line, DIM) for line in phase_lines(result)]
    unmeasured = same_unavailable([m.time for m in result.methods])
    if unmeasured is None:
        blocks += [method_table(result), startup_table(result)]
    else:  # a dry run: nothing was filled, so no times at all
        blocks.append(Line(f"fill and start-up times: unavailable: {unmeasured}", DIM))
    blocks += [t for t in (memory_table(result), values_table(result), samples_table(result)) if t is not None]
    blocks += [Line(line, WARN) for line in verdict_lines(result)]
    blocks += [Line(line, DIM) for line in method_lines(result)]
    bound = generator_bound_line(result.methods, result.floor_method)
    if bound is not None:
        blocks.append(Line(f"roofline: {bound}"))
    if any(m.projection is not None for m in result.methods):
        blocks.append(Line(say("engram.intervals"), DIM))
    blocks += [
        Line(f"note: {sample_group_note(group, result.layout.part_rows)}", DIM)
        for group in result.sample_groups
        if group.rows
    ]
    blocks += [Line(f"note: {note}", DIM) for note in plan_notes(result)]
    if result.run_peak_rss_bytes is not None:
        rss, budget = format_bytes(result.run_peak_rss_bytes), format_bytes(result.budget.memory_bytes)
        blocks.append(Line(f"peak RSS of this run: {rss} (memory budget {budget})", DIM))
    return blocks


def engram_summary(result: EngramResult) -> str:
    """The method to use (the fastest start-up per rank of those that fit in memory), its start-up and the device
    the tables were filled on, the verdict against ``--deadline`` (met, or missed by how much; its word alone
    where the line is too long), then how many methods fit. ``~`` marks a projection. A dry run says what each
    method needs instead. The tables hold every method's figures.
    """
    methods = [m for m in result.methods if m.name != result.floor_method]
    if not methods:
        return _floor_summary(result)
    fitting = sum(1 for m in methods if m.fits_in_memory)
    n = len(methods)
    fits = f"all {n} fit" if fitting == n else "none fit" if fitting == 0 else f"{fitting} of {n} fit"
    best = recommended(result)
    if best is None:
        low, high = min(m.needed_bytes for m in methods), max(m.needed_bytes for m in methods)
        need = format_bytes(low) if low == high else f"{format_bytes(low)} to {format_bytes(high)}"
        head = "plan (dry run): " if result.dry_run else ""
        return head + f"need {need} per rank; {fits} in {format_bytes(result.budget.memory_bytes)}"
    verdict = deadline_verdict(result, best)
    short = f"; {say(f'short.{verdict.code}')}" if verdict is not None else ""
    said: list[Clause | str] = [
        Clause("recommended ", 4),
        f"{best.name}:",
        Clause(" start-up", 3),
        f" {estimate_cell(best.startup)}",
    ]
    said += [Clause(" per rank", 2), f" on {result.backing.device}"]
    said += [Clause(f"; {deadline_text(result, best)}", 5 if short else ALWAYS, group="verdict")]
    return fit([*said, Clause(short, stands_for="verdict"), Clause(f"; {fits}", 1), contended_mark(result.contention)])


def _floor_summary(result: EngramResult) -> str:
    """The floor's figure when it is the only method run (``--method memset``): there is none to recommend."""
    floor = next((m for m in result.methods if m.name == result.floor_method), None)
    if floor is None:
        return ""
    head = f"{floor.name} (the floor) only"
    if floor.startup.value is None:
        fits = "fits" if floor.fits_in_memory else "does not fit"
        plan = "plan (dry run): " if result.dry_run else ""
        need = format_bytes(floor.needed_bytes)
        return f"{plan}{head}: need {need} per rank; {fits} in {format_bytes(result.budget.memory_bytes)}"
    time = estimate_cell(floor.startup)
    return f"{head}: start-up {time} per rank on {result.backing.device}{contended_mark(result.contention)}"


def engram_text(results: Results) -> list[str]:
    """How each projection was made: its sample sizes and their spread, the fit, how far past the samples it reaches."""
    result = results.engram
    assert result is not None
    lines = []
    for m in result.methods:
        if m.time_fit is None or not m.samples:
            continue
        xs = [s.bytes_written for s in m.samples]
        spread = Estimate.measured([s.time.value or 0.0 for s in m.samples])
        full = m.projection is not None and m.time.value is not None
        interval = f", 95% interval {estimate_range(m.projection.time)}" if full and m.projection else ""
        p = m.projection
        fallback = f"; the line was not used ({p.fallback})" if p and p.fallback else ""
        bound = f"; raised to this run's {p.ceiling_name} bound" if p and p.bounded else ""
        lines.append(
            f"{m.name}: {len(m.samples)} sample sizes up to {format_bytes(max(xs))} "
            f"({format_seconds(spread.low)}–{format_seconds(spread.high)}); fit {m.time_fit.model}, "
            f"R² {m.time_fit.r_squared:.3f}, reaching {m.bytes_written / max(xs):,.1f}x past the largest sample"
            f"{interval}{fallback}{bound}."
        )
    return lines


def summary_of(results: Results) -> str:
    if results.ranks_aggregate is not None:
        return ranks_summary(results.ranks_aggregate)
    assert results.engram is not None
    return engram_summary(results.engram)


# A multi-rank run shows every rank's figures: each part takes the whole Results.
KIND = Kind("engram", engram_blocks, summary_of, headline_first=True, texts=engram_text, part=lambda results: results)
