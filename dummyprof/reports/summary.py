"""The one-line summary of each kind of Results, written from its data (``--quiet`` prints only this line)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from dummyprof.reports.format import contended_mark, estimate_cell
from dummyprof.reports.tables.deployment import deployment_summary
from dummyprof.reports.tables.engram import deadline_text, recommended
from dummyprof.reports.tables.inspect import visit_counts
from dummyprof.results.audit import AuditResult
from dummyprof.results.compare import CompareResult, StrategyResult
from dummyprof.results.engram import EngramResult
from dummyprof.results.gate import EXIT_INCOMPLETE, NOT_COMPARABLE, NOT_JUDGED, NOT_MEASURED, REGRESSED, GateResult
from dummyprof.results.inspect import InspectResult
from dummyprof.results.ranks import RanksAggregate
from dummyprof.results.session import Results
from dummyprof.results.sweep import SweepResult
from dummyprof.units import format_bytes, format_seconds

SUMMARY_WIDTH = 80  # -q prints one line; where a line can choose its words, it keeps to this


def compare_summary(result: CompareResult) -> str:
    """One line of at most 80 columns (``-q``), the answer first: where the times were taken, the fastest
    strategy, its time and its speedup over the baseline, then the others' times and speedups; fewer words where
    that is too long (every strategy fastest first, speedups unnamed; then "fill" left out; then the others named
    by their count). The fastest strategy, its speedup and the device stay in every wording, and so does
    CONTENDED when the machine was busy while the times were taken. The tables hold the rest.
    """
    kind = "projected" if result.size.mode == "projected" else "median"  # measured there, or calibrated there
    busy = contended_mark(result.calibration_contention if result.size.mode == "projected" else result.contention)
    timed = sorted((s for s in result.strategies if s.seconds is not None), key=lambda s: s.seconds or 0.0)
    if not timed:
        return f"{kind} fill on {result.model.device}: no strategy timed{busy}"
    best, others = timed[0], timed[1:]
    answer = f"{best.name} {format_seconds(best.seconds)}{_speedup_words(result, best.name)}"
    if others:
        heads = [f"{kind} fill on {result.model.device}, fastest ", f"{kind} on {result.model.device}, fastest "]
    else:
        heads = [f"{kind} fill on {result.model.device}: ", f"{kind} on {result.model.device}: "]

    def listed(strategies: list[StrategyResult]) -> str:
        parts = []
        for s in strategies:
            ratio = result.speedup(s.name) if s.name != result.baseline_strategy else None
            parts.append(f"{s.name} {format_seconds(s.seconds)}" + (f" ({ratio:.1f}x)" if ratio else ""))
        return ", ".join(parts)

    lines = [heads[0] + answer + ("; " + listed(others) if others else "")]
    if others:  # every strategy, fastest first: the first named is the answer
        empty = " (nothing to fill: no speedup)" if result.nothing_to_fill else ""
        lines += [f"{kind}{fill} on {result.model.device}: {listed(timed)}{empty}" for fill in (" fill", "")]
        lines += [head + answer + f" of {len(timed)} strategies" for head in heads]
    lines.append(heads[1] + answer)
    return _first_that_fits([line + busy for line in lines])


def _speedup_words(result: CompareResult, name: str) -> str:
    """' (5.2x legacy)': a strategy's speedup over the baseline; what stands instead where there is none."""
    if result.nothing_to_fill:
        return " (nothing to fill: no speedup)"
    if name == result.baseline_strategy:
        return " (the baseline)"
    ratio = result.speedup(name)
    return f" ({ratio:.1f}x {result.baseline_strategy})" if ratio else ""


def _first_that_fits(lines: list[str]) -> str:
    """The first line of at most SUMMARY_WIDTH columns, else the shortest."""
    return next((line for line in lines if len(line) <= SUMMARY_WIDTH), min(lines, key=len))


def audit_summary(result: AuditResult) -> str:
    failing = result.failing
    if not failing:
        ignored = sum(1 for f in result.findings if f.ignored)
        tail = f" ({ignored} ignored)" if ignored else ""
        restored = sum(1 for f in result.findings if f.kind == "non-persistent-restored")
        tail += f"; {restored} non-persistent buffer write(s) restore construction values" if restored else ""
        return f"audit clean: {len(result.fillers)} filler(s), {len(result.tensors)} tensors, no findings{tail}"
    parts = ", ".join(f"{n} {kind}" for kind, n in Counter(f.kind for f in failing).items())
    return f"audit found {len(failing)} problem(s): {parts}"


def inspect_summary(result: InspectResult) -> str:
    """Tensors, bytes and each strategy's visits with (+N) redundant: about 80 columns for three strategies."""
    root = result.nodes[0] if result.nodes else None
    if root is None:
        return "empty model"
    visits = visit_counts(root.subtree_visits, root.subtree_redundant, result.strategies)
    return f"{result.model.tensors:,} tensors, {format_bytes(root.subtree_bytes)}; visits: {visits}"


def engram_summary(result: EngramResult) -> str:
    """One line of at most 80 columns: the method to use (the fastest start-up per rank of those that fit in
    memory), its start-up and the device the tables were filled on, the verdict against ``--deadline`` (met,
    or missed by how much), then how many methods fit; shorter words where that is too long, the device in
    every wording. ``~`` marks a projection. A dry run says what each method needs instead. The tables hold
    every method's figures.
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
    time = estimate_cell(best.startup)
    verdict, short = deadline_text(result, best), deadline_text(result, best, short=True)
    where = f" on {result.backing.device}"
    heads = [f"recommended {best.name}: start-up {time}{per}{where}" for per in (" per rank", "")]
    time += where
    lines = [f"{heads[0]}; {verdict}; {fits}", *(f"{head}; {verdict}" for head in heads)]
    lines += [f"recommended {best.name}: {time}; {verdict}", f"{best.name} {time}; {verdict}"]
    lines.append("; ".join(part for part in (f"{best.name} {time}", short) if part))
    mark = contended_mark(result.contention)
    return _first_that_fits([line + mark for line in lines])


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


def baseline_summary(section: GateResult) -> str:
    failed = [r.name for r in section.scenarios if r.error is not None]
    if failed:
        return f"baseline NOT written: could not measure {', '.join(failed)}"
    if section.unrecorded:
        return f"baseline NOT written: {'; '.join(section.unrecorded)}; exit {EXIT_INCOMPLETE}"
    counters = sum(1 for r in section.scenarios for m in r.metrics.values() if m.kind == "counter")
    times = sum(1 for r in section.scenarios for m in r.metrics.values() if m.kind == "time")
    return f"baseline: {len(section.scenarios)} scenarios, {counters} counters, {times} timings"


FAILING = (REGRESSED, NOT_COMPARABLE, NOT_MEASURED, NOT_JUDGED)  # the verdicts that make the gate's exit code not 0


def gate_summary(section: GateResult) -> str:
    counts = section.counts()
    parts = [f"{n} {verdict}" for verdict, n in counts.items() if n]
    outcome = {0: "PASS", 1: "FAIL: regression", 3: "INCOMPLETE: could not measure or not comparable"}
    if counts.get(NOT_JUDGED) and not counts.get(NOT_MEASURED) and not counts.get(NOT_COMPARABLE):
        outcome[3] = "INCOMPLETE: times not judged (--strict)"
    if counts.get(NOT_JUDGED):
        outcome[0] = "PASS, timings skipped"  # measured on a busy machine; the reason is each check's detail
    label = outcome.get(section.exit_code, str(section.exit_code))
    if section.unrecorded:
        verdict = "regressions found" if any(c.verdict == REGRESSED for c in section.checks) else "measured"
        label = f"COULD NOT RECORD: {verdict} but a report could not be written"
    line = f"gate {label} ({len(section.checks)} checks: {', '.join(parts)}); exit {section.exit_code}"
    if len(line) <= SUMMARY_WIDTH or section.unrecorded:
        return line
    # Too long for one line: the outcome's first word, and only the verdicts that did not pass.
    failing = [f"{n} {verdict}" for verdict, n in counts.items() if n and verdict in FAILING]
    tail = f"({len(section.checks)} checks: {', '.join(failing)}); exit {section.exit_code}"
    line = f"gate {label} {tail}"
    return line if len(line) <= SUMMARY_WIDTH else f"gate {label.split(':')[0]} {tail}"


def sweep_summary(result: SweepResult) -> str:
    """Exponents of the headline metric per series: exact visits for compare, time for engram (about 80 columns)."""
    metric = "visits" if result.scenario == "compare" else "time"
    fits = [result.fit(s, metric) for s in result.series]
    shown = [f"{f.series} {f.exponent:.2f}" for f in fits if f is not None]
    if not shown:
        return f"sweep over {result.parameter}: too few points to fit"
    word = "visit" if metric == "visits" else metric
    return f"{word} exponents over {result.parameter} {result.fit_from:,}–{result.values[-1]:,}: " + ", ".join(shown)


# One writer per kind of Results, keyed by command; baseline and gate share the gate section.
SUMMARIES: dict[str, Callable[[Any], str]] = {
    "compare": compare_summary,
    "audit": audit_summary,
    "inspect": inspect_summary,
    "engram": engram_summary,
    "baseline": baseline_summary,
    "gate": gate_summary,
    "sweep": sweep_summary,
    "deployment": deployment_summary,
}


def ranks_summary(agg: RanksAggregate) -> str:
    """A multi-rank run in at most 80 columns: ranks and hosts, the range of contention ratios, the hosts that
    cannot hold their ranks. Where that is too long: the byte counts are left out, then the contention's methods,
    then the names of the methods a host cannot hold (how many are kept), then the hosts' names (how many hosts
    are short of memory is kept), then the backend.
    """
    hosts = len(agg.nodes)
    ranks = f"{agg.world_size} ranks on {hosts} host{'s' if hosts != 1 else ''} ({agg.backend})"
    named: list[str] = []
    plain: list[str] = []
    checked = [c for c in agg.contention if c.ratio.value is not None]
    if checked:
        low = min(checked, key=lambda c: c.ratio.value or 0.0)
        high = max(checked, key=lambda c: c.ratio.value or 0.0)
        lowest, highest = f"contention x{low.ratio.value:.2f}", f"x{high.ratio.value:.2f}"
        differ = highest != f"x{low.ratio.value:.2f}"
        named.append(f"{lowest} ({low.method})" + (f" to {highest} ({high.method})" if differ else ""))
        plain.append(lowest + (f" to {highest}" if differ else ""))
    full, names, counts = [], [], []
    for node in agg.nodes:
        missing = [name for name, ok in node.fits.items() if not ok]
        if missing:
            need = format_bytes(max(node.needed_bytes[n] for n in missing))
            full.append(
                f"{node.host} cannot hold {', '.join(missing)} on all {len(node.ranks)} ranks "
                f"({need} > {format_bytes(node.available_bytes)})"
            )
            names.append(f"{node.host} cannot hold {', '.join(missing)}")
            some = "any method" if len(missing) == len(node.fits) else f"{len(missing)} of {len(node.fits)} methods"
            counts.append(f"{node.host} cannot hold {some}")
    hosts_short = [f"{len(full)} host{'s' if len(full) != 1 else ''} short of memory"] if full else []
    lines = [
        "; ".join([ranks, *named, *full]),
        "; ".join([ranks, *named, *names]),
        "; ".join([ranks, *plain, *names]),
        "; ".join([ranks, *plain, *counts]),
        "; ".join([ranks, *plain, *hosts_short]),
        "; ".join([ranks.removesuffix(f" ({agg.backend})"), *plain, *hosts_short]),
    ]
    return _first_that_fits(lines)


def summary_line(results: Results) -> str:
    """The summary line of any Results the registry renders (its kind has blocks); empty for an empty section."""
    if results.ranks_aggregate is not None:
        return ranks_summary(results.ranks_aggregate)
    writer = SUMMARIES[results.command]
    section = results.gate if results.command in ("baseline", "gate") else getattr(results, results.command)
    return writer(section) if section is not None else ""
