"""Terminal (Rich) rendering of ``audit`` results, sized for 80 columns (issue #13)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table as RichTable

from dummyprof.reports.audit_text import finding_subject, finding_text
from dummyprof.reports.format import format_bytes
from dummyprof.reports.narrow import narrow_table, text_column
from dummyprof.reports.tables.model import BAD, NAME, NUMBER, Block, Cell, Column, Table
from dummyprof.reports.tables.to_terminal import print_blocks
from dummyprof.results.audit import FINDING_KINDS, INFO_KINDS, AuditResult, Finding
from dummyprof.results.session import Results

MAX_ROWS = 40
GROUP_AFTER = 3  # more findings than this of one kind and filler are summarized in one row
NAMES_SHOWN = 4


def filler_table(result: AuditResult) -> Block:
    """One row per filler, in about 70 columns: short headers, explained in :func:`filler_note` under it.

    ``init`` says what a filler fills like: a strategy's initializer, ``loader`` for a loader's own values
    (compared with nothing), or ``v0.33 (loader)`` for a loader declared with --loader-initializer.
    """
    table = Table(
        "Fillers (each traced once on a fresh model)",
        [Column("filler", NAME), Column("init")]
        + [Column(h, NUMBER) for h in ("writes", "tensors", "repeated", "written", "other")],
        notes=[filler_note(result)],
    )
    for f in result.fillers:
        if f.kind == "loader":
            init = f"{f.initializer} (loader)" if f.initializer else "loader"
        else:
            init = f.initializer or f.kind
        table.add(
            f.name,
            init,
            f"{f.writes:,}",
            f"{f.tensors_written:,}/{len(result.tensors):,}",
            Cell(f"{f.repeated_tensors:,}", BAD) if f.repeated_tensors else "0",
            format_bytes(f.bytes_written),
            f"{f.outside_writes:,}",
        )
    return table


def filler_note(result: AuditResult) -> str:
    note = (
        "tensors: written of the model's; repeated: tensors written more than once; "
        "other: writes outside the model's tensors (temporaries, unregistered)"
    )
    if any(f.kind == "loader" and not f.initializer for f in result.fillers):
        note += "; init loader: a loader's own values (compared with no other filler)"
    return note


def findings_table(result: AuditResult, *, informational: bool) -> RichTable | None:
    rows = [f for f in result.findings if f.informational == informational]
    if not rows:
        return None
    title = "Notes (never fail the audit)" if informational else f"Findings ({len(result.failing)} failing)"
    table = narrow_table(title)
    text_column(table, "kind", style="yellow" if informational else "red")
    text_column(table, "detail")
    groups: dict[tuple[str, tuple[str, ...], bool], list[Finding]] = {}
    for f in rows:
        groups.setdefault((f.kind, tuple(f.fillers), f.ignored), []).append(f)
    shown = 0
    for (kind, _fillers, ignored), members in groups.items():
        label = f"{kind} (ignored)" if ignored else kind
        if shown >= MAX_ROWS:
            table.add_row("...", "more findings; see --json for all")
            break
        if len(members) <= GROUP_AFTER:
            for f in members:
                table.add_row(label, finding_text(f))
            shown += len(members)
            continue
        # One row per (kind, filler) once it repeats: a deep tree would otherwise print a row per tensor.
        others = [finding_subject(f) for f in members[1 : 1 + NAMES_SHOWN]]
        more = len(members) - 1 - len(others)
        tail = f" ... and {more} more (see --json)" if more else ""
        table.add_row(f"{label} x{len(members)}", f"{finding_text(members[0])}; also {', '.join(others)}{tail}")
        shown += 1
    return table


def legend(result: AuditResult) -> str:
    kinds = {f.kind for f in result.findings}
    described = {**FINDING_KINDS, **INFO_KINDS}
    return "; ".join(f"{k}: {described[k]}" for k in sorted(kinds) if k in described)


def render_audit(results: Results, console: Console) -> None:
    result = results.audit
    assert result is not None
    model = result.model
    console.print(
        f"model: {model.description or model.source} on {model.device}: {model.modules:,} modules, "
        f"{model.tensors:,} storages ({model.names:,} names), {format_bytes(model.bytes)}"
    )
    print_blocks(console, [filler_table(result)])
    for informational in (False, True):
        table = findings_table(result, informational=informational)
        if table is not None:
            console.print(table)
    if result.value_groups:
        groups = "; ".join(", ".join(g) for g in result.value_groups)
        console.print(f"final values compared bitwise within: {groups}", style="dim")
    else:
        console.print("final values compared: none (no two fillers share an initializer)", style="dim")
    if result.findings:
        console.print(legend(result), style="dim")
