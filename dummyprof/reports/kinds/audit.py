"""The audit kind: a row per filler, the findings grouped by kind (sentences: reports/messages.py), summary, notices."""

from __future__ import annotations

from collections import Counter

from dummyprof.reports.kind import Kind
from dummyprof.reports.messages import known, say
from dummyprof.reports.tables.model import (
    BAD,
    BYTES,
    DIM,
    NAME,
    NUMBER,
    TEXT,
    WARN,
    WORD,
    Block,
    Cell,
    Column,
    Line,
    Table,
)
from dummyprof.results.audit import FINDING_KINDS, INFO_KINDS, AuditResult, Finding
from dummyprof.units import format_bytes

MAX_ROWS = 40
GROUP_AFTER = 3  # more findings than this of one kind and filler are summarized in one row
NAMES_SHOWN = 4
UNTOUCHED_SHOWN = 6


def _filler(f: Finding) -> str:
    return f.fillers[0] if f.fillers else "?"


def untouched_names(f: Finding) -> str:
    shown = ", ".join(f.names[:UNTOUCHED_SHOWN])
    more = len(f.names) - UNTOUCHED_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def finding_text(f: Finding) -> str:
    """What the finding says: its kind's template (``finding.KIND`` in reports/messages.py) with its data."""
    if not known(f"finding.{f.kind}"):
        return f"{f.kind}: {f.tensor}"
    fields = {
        "tensor": f.tensor,
        "dtype": f.dtype,
        "shape": f.shape,
        "nbytes": f.nbytes,
        "count": f.count,
        "filler": _filler(f),
        "fillers": ", ".join(f.fillers),
        # No filler wrote it: vLLM's per-layer fill is the reference (a lone --loader that skips a tensor).
        "written_by": ", ".join(f.written_by) or "vLLM's per-layer fill",
        "groups": " vs ".join(" = ".join(g) for g in f.groups),
        "names": ", ".join(f.names),
        "count_names": len(f.names),
        "untouched": untouched_names(f),
        "recorded": f.recorded_bytes,
        "traced": f.traced_bytes,
        "detail": f.detail,
        "shared": "tied (one tensor, several owners)" if f.tied else "aliased (views of one storage)",
    }
    return say(f"finding.{f.kind}", **fields)


def finding_subject(f: Finding) -> str:
    """The tensor a row of findings names (untouched: the list, as shown)."""
    return untouched_names(f) if f.kind == "untouched" else f.tensor


REPEATED = "tensors written more than once"
OTHER = "writes outside the model's tensors (temporaries, unregistered)"


def filler_table(result: AuditResult) -> Table:
    """One row per filler, in about 70 columns: short headers, each with its legend.

    ``init`` says what a filler fills like: a strategy's initializer, ``loader`` for a loader's own values
    (compared with nothing), or ``v0.33 (loader)`` for a loader declared with --loader-initializer.
    """
    columns = [Column("filler", NAME), Column("init", WORD), Column("writes", NUMBER)]
    columns += [Column("tensors", NUMBER, legend="written of the model's"), Column("repeated", NUMBER, legend=REPEATED)]
    columns += [Column("written", NUMBER, unit=BYTES), Column("other", NUMBER, legend=OTHER)]
    table = Table("Fillers (each traced once on a fresh model)", columns)
    if any(f.kind == "loader" and not f.initializer for f in result.fillers):
        table.notes.append("init loader: a loader's own values (compared with no other filler)")
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
            Cell(format_bytes(f.bytes_written), value=f.bytes_written),
            f"{f.outside_writes:,}",
        )
    return table


def findings_table(result: AuditResult, *, informational: bool) -> Table | None:
    rows = [f for f in result.findings if f.informational == informational]
    if not rows:
        return None
    title = "Notes (never fail the audit)" if informational else f"Findings ({len(result.failing)} failing)"
    table = Table(title, [Column("kind", TEXT), Column("detail", TEXT)])
    emphasis = WARN if informational else BAD
    groups: dict[tuple[str, tuple[str, ...], bool], list[Finding]] = {}
    for f in rows:
        groups.setdefault((f.kind, tuple(f.fillers), f.ignored), []).append(f)
    shown = 0
    for (kind, _fillers, ignored), members in groups.items():
        label = f"{kind} (ignored)" if ignored else kind
        if shown >= MAX_ROWS:
            table.add(Cell("...", emphasis), "more findings; see --json for all")
            break
        if len(members) <= GROUP_AFTER:
            for f in members:
                table.add(Cell(label, emphasis), finding_text(f))
            shown += len(members)
            continue
        # One row per (kind, filler) once it repeats: a deep tree would otherwise print a row per tensor.
        others = [finding_subject(f) for f in members[1 : 1 + NAMES_SHOWN]]
        more = len(members) - 1 - len(others)
        tail = f" ... and {more} more (see --json)" if more else ""
        table.add(
            Cell(f"{label} x{len(members)}", emphasis), f"{finding_text(members[0])}; also {', '.join(others)}{tail}"
        )
        shown += 1
    return table


def legend(result: AuditResult) -> str:
    kinds = {f.kind for f in result.findings}
    described = {**FINDING_KINDS, **INFO_KINDS}
    return "; ".join(f"{k}: {described[k]}" for k in sorted(kinds) if k in described)


def audit_blocks(result: AuditResult) -> list[Block]:
    model = result.model
    blocks: list[Block] = [
        Line(
            f"model: {model.description or model.source} on {model.device}: {model.modules:,} modules, "
            f"{model.tensors:,} storages ({model.names:,} names), {format_bytes(model.bytes)}"
        ),
        filler_table(result),
    ]
    blocks += [t for t in (findings_table(result, informational=i) for i in (False, True)) if t is not None]
    if result.value_groups:
        groups = "; ".join(", ".join(g) for g in result.value_groups)
        blocks.append(Line(f"final values compared bitwise within: {groups}", DIM))
    else:
        blocks.append(Line("final values compared: none (no two fillers share an initializer)", DIM))
    if result.findings:
        blocks.append(Line(legend(result), DIM))
    return blocks


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


def loader_notices(result: AuditResult) -> list[str]:
    loaders = [f for f in result.fillers if f.kind == "loader"]
    if not loaders:
        return []
    declared = loaders[0].initializer  # every loader carries the one --loader-initializer declared
    values = say("notice.loader-initializer", declared=declared) if declared else say("notice.no-loader-initializer")
    return [say("notice.loaders-traced", values=values)]


KIND = Kind("audit", lambda result, detail: audit_blocks(result), audit_summary, notices=loader_notices)
