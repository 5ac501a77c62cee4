"""The one-line summary of each kind of Results, written from its data (``--quiet`` prints only this line)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dummyprof.reports.format import contended_mark, estimate_cell
from dummyprof.reports.messages import known, say
from dummyprof.reports.tables.deployment import fill_text, host_device_text, host_part
from dummyprof.reports.tables.engram import deadline_text, deadline_verdict, recommended
from dummyprof.reports.tables.inspect import visit_counts
from dummyprof.results.audit import AuditResult
from dummyprof.results.compare import CompareResult
from dummyprof.results.deployment import NO_CUDA_HERE, DeploymentResult, layout_text
from dummyprof.results.engram import EngramResult
from dummyprof.results.gate import EXIT_INCOMPLETE, NOT_COMPARABLE, NOT_JUDGED, NOT_MEASURED, REGRESSED, GateResult
from dummyprof.results.inspect import InspectResult
from dummyprof.results.ranks import RanksAggregate
from dummyprof.results.session import Results
from dummyprof.results.sweep import SweepResult
from dummyprof.units import format_bytes, format_seconds

SUMMARY_WIDTH = 80  # -q prints one line; a line too long drops its least important clauses to fit
ALWAYS = 9  # a clause no line drops: the answer (the fastest, does it fit, the verdict), the device, CONTENDED


@dataclass(frozen=True, eq=False)
class Clause:
    """A piece of a summary line, its separator included. ``keep``: how much it matters (the lowest goes first,
    the last of equals first). ``group``/``stands_for``: a stand-in (" of 3 strategies") shown only once a clause
    of the group it stands for was dropped."""

    text: str
    keep: int = ALWAYS
    group: str = ""
    stands_for: str = ""


def fit(parts: list[Clause | str], width: int = SUMMARY_WIDTH) -> str:
    """The clauses (a string: one kept ``ALWAYS``) as one line of at most ``width`` columns: the least important
    dropped until it fits, then each dropped one put back, the most important first, where it fits after all (a
    group's only after those before it). The clauses kept ``ALWAYS`` stay whatever the width."""
    clauses = [p if isinstance(p, Clause) else Clause(p) for p in parts]
    kept = [c for c in clauses if c.text]
    while len(_joined(clauses, kept)) > width and any(c.keep < ALWAYS for c in kept):
        droppable = [i for i, c in enumerate(kept) if c.keep < ALWAYS]
        del kept[min(droppable, key=lambda i: (kept[i].keep, -i))]
    for back in sorted((c for c in clauses if c.text and c not in kept), key=lambda c: -c.keep):
        tried = [c for c in clauses if c in kept or c is back]
        before = clauses[: clauses.index(back)]
        whole = all(c in kept for c in before if back.group and c.group == back.group)  # a list stays a prefix
        if whole and len(_joined(clauses, tried)) <= width:
            kept = tried
    return _joined(clauses, kept)


def _joined(clauses: list[Clause], kept: list[Clause]) -> str:
    dropped = {c.group for c in clauses if c.group and c not in kept}
    return "".join(c.text for c in kept if not c.stands_for or c.stands_for in dropped)


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
    short = f"; {deadline_text(result, best, short=True)}" if verdict is not None else ""
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
    """The outcome and its exit code, the checks' verdicts: those that did not pass kept, the others given way."""
    counts = section.counts()
    code = section.exit_code
    label = say(f"gate.{code}") if known(f"gate.{code}") else str(code)
    if counts.get(NOT_JUDGED):  # measured on a busy machine; the reason is each check's detail
        only = not counts.get(NOT_MEASURED) and not counts.get(NOT_COMPARABLE)
        label = (
            say("gate.not-judged") if code == EXIT_INCOMPLETE and only else say("gate.skipped") if code == 0 else label
        )
    if section.unrecorded:
        verdict = "regressions found" if any(c.verdict == REGRESSED for c in section.checks) else "measured"
        label = say("gate.unrecorded", verdict=verdict)
    outcome, _, why = label.partition(":")
    failing = [f"{n} {verdict}" for verdict, n in counts.items() if n and verdict in FAILING]
    passing = [f"{n} {verdict}" for verdict, n in counts.items() if n and verdict not in FAILING]
    said: list[Clause | str] = [
        Clause(text if i == 0 else f", {text}", ALWAYS if i < len(failing) else 2)
        for i, text in enumerate(failing + passing)
    ]
    why_kept = ALWAYS if section.unrecorded else 3
    head: list[Clause | str] = [
        f"gate {outcome}",
        Clause(f":{why}" if why else "", why_kept),
        f" ({len(section.checks)} checks: ",
    ]
    return fit([*head, *(said or ["none"]), f"); exit {code}"])


def sweep_summary(result: SweepResult) -> str:
    """Exponents of the headline metric per series: exact visits for compare, time for engram (about 80 columns)."""
    metric = "visits" if result.scenario == "compare" else "time"
    fits = [result.fit(s, metric) for s in result.series]
    shown = [f"{f.series} {f.exponent:.2f}" for f in fits if f is not None]
    if not shown:
        return f"sweep over {result.parameter}: too few points to fit"
    word = "visit" if metric == "visits" else metric
    return f"{word} exponents over {result.parameter} {result.fit_from:,}–{result.values[-1]:,}: " + ", ".join(shown)


def deployment_summary(result: DeploymentResult) -> str:
    """Layout, the largest rank's bytes, whether ranks fit, the slowest rank's fill, its strategy and the device
    it was timed on (each part's where a GPU deployment's tables were timed on the host); where too long, online
    fp8 gives way first, then the bytes per rank, whether ranks fit, the strategy's name."""
    largest = max(result.ranks, key=lambda r: r.held_bytes, default=None)
    short = sum(r.copies for r in result.ranks if r.device_fits is False)
    fit_text = (
        f", {short} over device memory" if short else ", all fit the device" if result.device_memory_bytes else ""
    )
    held = Clause(f", up to {format_bytes(largest.held_bytes)}/rank" if largest else "", 2)
    clauses: list[Clause | str] = [f"{layout_text(result)}: {result.world} ranks", held, Clause(fit_text, 3)]
    host = host_part(result)
    if result.not_timed:  # the host-resident part timed here where there is one; the device-resident rest not
        clauses.append(f"; host {fill_text(host[1].host)} on cpu, device not timed" if host else "; not timed")
        clauses.append(Clause(": no CUDA device here" if result.not_timed == NO_CUDA_HERE else "", 4))
    elif result.slowest_rank is not None:
        s = result.rank(result.slowest_rank).strategy(result.slowest_strategy)
        who = "ranks within noise" if result.slowest_within_noise else f"slowest rank {result.slowest_rank}"
        clauses += [f"; {who}", Clause(f" {result.slowest_strategy}", 4), f" {fill_text(s)} on {result.device}"]
        if host and host[1].host:  # each part on the device it lives on
            clauses.append(f", host {fill_text(host[1].host)} on {host_device_text(result)}")
    fp8 = " vs ".join(format_bytes(q.peak_bytes) for q in result.online_quant)
    clauses.append(Clause(f"; online fp8 peak {fp8}" if fp8 else "", 1))
    return fit([*clauses, contended_mark(result.contention, result.host_contention)])


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
    """A multi-rank run: ranks and hosts, the range of contention ratios, the hosts that cannot hold their ranks.
    Where that is too long the byte counts give way first, then the hosts short of memory (how many stays), then
    the contention's methods, then the backend."""
    hosts = len(agg.nodes)
    clauses: list[Clause | str] = [f"{agg.world_size} ranks on {hosts} host{'s' if hosts != 1 else ''}"]
    clauses.append(Clause(f" ({agg.backend})", 3))
    checked = [c for c in agg.contention if c.ratio.value is not None]
    if checked:
        low = min(checked, key=lambda c: c.ratio.value or 0.0)
        high = max(checked, key=lambda c: c.ratio.value or 0.0)
        clauses += [f"; contention x{low.ratio.value:.2f}", Clause(f" ({low.method})", 2)]
        if f"{high.ratio.value:.2f}" != f"{low.ratio.value:.2f}":
            clauses += [f" to x{high.ratio.value:.2f}", Clause(f" ({high.method})", 2)]
    short = [(node, [name for name, ok in node.fits.items() if not ok]) for node in agg.nodes]
    short = [(node, missing) for node, missing in short if missing]
    for node, missing in short:
        need = f"{format_bytes(max(node.needed_bytes[n] for n in missing))} > {format_bytes(node.available_bytes)}"
        clauses.append(Clause(f"; {node.host} cannot hold {', '.join(missing)}", 1, group="hosts"))
        clauses.append(Clause(f" on all {len(node.ranks)} ranks ({need})", 0))
    clauses.append(Clause(f"; {len(short)} host{'s' if len(short) != 1 else ''} short of memory", stands_for="hosts"))
    return fit(clauses)


def summary_line(results: Results) -> str:
    """The summary line of any Results the registry renders (its kind has blocks); empty for an empty section."""
    if results.ranks_aggregate is not None:
        return ranks_summary(results.ranks_aggregate)
    writer = SUMMARIES[results.command]
    section = results.gate if results.command in ("baseline", "gate") else getattr(results, results.command)
    return writer(section) if section is not None else ""
