"""A deployment's kind: ranks, their work per strategy, nodes, online fp8 (ranks alike share a row, "0-7"); summary."""

from __future__ import annotations

from dummyprof.reports.format import (
    contended_mark,
    contention_text,
    estimate_cell,
    estimate_range,
    fresh_text,
    projected,
)
from dummyprof.reports.kind import Kind
from dummyprof.reports.messages import say
from dummyprof.reports.summary import Clause, fit
from dummyprof.reports.tables.model import (
    BAD,
    BYTES,
    DIM,
    NAME,
    NUMBER,
    TIME,
    WORD,
    Block,
    Cell,
    Column,
    ColumnSpec,
    Field,
    Line,
    Table,
)
from dummyprof.results.common import MEASURED
from dummyprof.results.deployment import (
    FP16_SCRATCH,
    NO_CUDA_HERE,
    DeploymentResult,
    HostFill,
    RankEntry,
    RankStrategy,
    layout_text,
)
from dummyprof.units import format_bytes, format_seconds


def _key(r: RankEntry) -> tuple[object, ...]:
    figures = tuple((s.strategy, s.time, s.rank_time, s.host) for s in r.strategies)
    return (r.counted_as, r.filled_as, r.stage, r.node, r.device_fits, r.held_bytes, r.offloaded_bytes, figures)


def rank_groups(result: DeploymentResult) -> list[list[RankEntry]]:
    """Consecutive ranks with the same figures, as one row each."""
    groups: list[list[RankEntry]] = []
    for r in result.ranks:
        last = groups[-1][-1] if groups else None
        if last and last.copies == r.copies == 1 and _key(last) == _key(r) and last.rank == r.rank - 1:
            groups[-1].append(r)
        else:
            groups.append([r])
    return groups


def ranks_text(group: list[RankEntry], tp: int) -> str:
    """``0-3`` (consecutive ranks), ``1`` (one), ``1,3..15`` (one entry for dp ranks: every tp-th rank)."""
    first = group[0]
    if first.copies > 1:
        ranks = first.rank_numbers(tp)
        return f"{ranks[0]},{ranks[1]}" + (f"..{ranks[-1]}" if len(ranks) > 2 else "")
    return str(first.rank) if len(group) == 1 else f"{first.rank}-{group[-1].rank}"


def fill_text(s: RankStrategy | HostFill | None) -> str:
    """A fill's time (a rank's, or its host-resident part's on this host's CPU), ``~`` projected; "" if not timed."""
    return estimate_cell(s.time) if s is not None and s.seconds is not None else ""


def _room(r: RankEntry) -> Cell:
    if r.device_fits is None or r.device_room_bytes is None:
        return Cell("")
    if r.device_fits:
        return Cell(f"{format_bytes(r.device_room_bytes)} left")
    return Cell(f"short {format_bytes(-r.device_room_bytes)}", BAD)


def _peak(r: RankEntry) -> str:
    peaks = [s for s in r.strategies if s.peak_bytes is not None]
    if not peaks:
        return ""
    top = max(peaks, key=lambda s: s.peak_bytes or 0)
    return projected(format_bytes(top.peak_bytes), top.time is not None and top.time.is_projected)


def _nodes(r: RankEntry, result: DeploymentResult) -> str:
    """The node of an entry's ranks, or the first and last node of a group of dp ranks that spans nodes."""
    last = r.rank_numbers(result.tp)[-1] // result.ranks_per_node if result.ranks_per_node else r.node
    return str(r.node) if last == r.node else f"{r.node}-{last}"


DEVICE = "bytes on the device: held less offloaded, with the load buffers"
LOAD_BUFFERS = (
    "device bytes vLLM allocates at load that are not weights (rotary cos/sin cache, expert map, kv scales), in "
    "each rank's device bytes"
)
FILL_PEAK = (
    "the largest of the strategies' RSS growth over the RSS before the fill (~ projected: the bytes it writes + "
    "its largest temporary)"
)


def ranks_table(result: DeploymentResult) -> Table:
    heads = ("stage", "layers", "node")
    columns: list[ColumnSpec] = [("ranks", NAME), *((h, NUMBER) for h in heads), Column("held", NUMBER, unit=BYTES)]
    device = DEVICE if result.target != "cpu" else ""  # a CPU deployment's device bytes are its host bytes
    columns += [("replicated", NUMBER), ("offloaded", NUMBER), Column("device", NUMBER, legend=device)]
    room = f"{format_bytes(result.device_memory_bytes)} per rank less its device bytes"
    columns += [
        Column("load buffers", NUMBER, legend=LOAD_BUFFERS),
        Column("device room", WORD, legend=room if result.device_memory_bytes is not None else ""),
        Column("fill peak", NUMBER, legend=FILL_PEAK),
    ]
    table = Table.of("Ranks (each shard built on meta; bytes exact)", columns, [])
    for group in rank_groups(result):
        r = group[0]
        table.add(
            ranks_text(group, result.tp),
            str(r.stage) if result.pp > 1 else "",
            f"{r.layers[0]}-{r.layers[1] - 1}" if r.layers[1] > r.layers[0] else "",
            _nodes(r, result) if len(result.nodes) > 1 else "",
            Cell(format_bytes(r.held_bytes), value=r.held_bytes),
            format_bytes(r.replicated_bytes),
            format_bytes(r.offloaded_bytes) if r.offloaded_bytes else "",
            format_bytes(r.device_bytes) if device else "",
            format_bytes(r.engine_bytes) if r.engine_bytes else "",
            _room(r),
            _peak(r),
        )
    if result.target == "cuda":
        table.notes.append("a GPU deployment: held less offloaded is device-resident, offloaded is host-resident")
    elif result.target == "cpu":
        table.notes.append("a CPU deployment: every byte is host-resident")
    return table


def work_table(result: DeploymentResult) -> Table:
    timed = any(s.seconds is not None for r in result.ranks for s in r.strategies)
    host = any(s.host for r in result.ranks for s in r.strategies)
    fill = f"fill on {result.device}" if host and timed else "fill"  # each part's time names its device
    columns: list[tuple[str, str] | Column] = [("ranks", NAME), ("strategy", WORD), ("visits", NUMBER)]
    columns.append(Column("written", NUMBER, unit=BYTES))
    columns += [Column(fill, NUMBER, unit=TIME), ("range", NUMBER)]
    columns += [
        (h, NUMBER) for h in ("host visits", "host written", "host fill on cpu" if host and timed else "host fill")
    ]
    own = "own rank on cpu" if result.nproc else "own rank"  # real ranks fill on this host's CPU (gloo)
    table = Table.of("Work per rank", [*columns, (own, NUMBER)], [], keys=2)
    _add_work_rows(table, result)
    table.notes += ["counts exact; visits (n): n redundant", *_work_notes(result, host, timed)]
    return table


def _add_work_rows(table: Table, result: DeploymentResult) -> None:
    """A row per strategy of each group of ranks alike, the group named on its first row."""
    for group in rank_groups(result):
        for i, s in enumerate(group[0].strategies):
            table.add(
                Cell(ranks_text(group, result.tp) if i == 0 else ""),
                s.strategy,
                f"{s.visits:,} ({s.redundant_visits:,})",
                Cell(format_bytes(s.bytes_written), value=s.bytes_written),
                Cell(fill_text(s), value=s.time if s.seconds is not None else None),
                estimate_range(s.time),
                f"{s.host.visits:,}" if s.host else "",
                format_bytes(s.host.bytes_written) if s.host else "",
                fill_text(s.host),
                estimate_cell(s.rank_time) if s.rank_time is not None else "",
            )


def _work_notes(result: DeploymentResult, host: bool, timed: bool) -> list[str]:
    """What the host, own-rank and fill columns hold: how each was timed (or why not), the ranks that did not
    finish, and what disturbed the timing."""
    notes = [say("deployment.host-columns", device=host_device_text(result))] if host else []
    notes.append(contention_text(result.host_contention, "the host-resident part was filled on cpu") if host else "")
    if result.ranks_failure:
        finished = ", ".join(map(str, result.ranks_finished)) or "none"
        notes.append(say("deployment.ranks-failed", finished=finished, nproc=result.nproc, why=result.ranks_failure))
    if result.nproc:
        gpu = say("deployment.own-rank-gpu") if result.target == "cuda" else ""
        notes.append(say("deployment.own-rank", nproc=result.nproc, backend=result.backend, gpu=gpu))
    part = say("deployment.device-part") if host else ""
    if result.not_timed:
        notes.append(f"fill: {f'the {part} ' if part else ''}{say('not-timed.' + result.not_timed)}")
    if timed:
        filled = ", ".join(map(str, sorted({r.filled_as for r in result.ranks if r.filled_as is not None})))
        measured = any(s.time is not None and s.time.how == MEASURED for r in result.ranks for s in r.strategies)
        how = "filled" if measured else "calibrated"
        said = {"ranks": filled, "part": f"'s {part}" if part else "", "how": how, "device": result.device}
        notes.append(say("deployment.fill-timed", **said))
    notes.append(fresh_text(result.fresh_budget_s))
    notes.append(contention_text(result.contention, f"the shards were filled or calibrated on {result.device}"))
    return [note for note in notes if note]


FILL_KINDS = {"float": "unquantized weights", "declared": "declared values"}  # no column of the kinds table


def kinds_table(result: DeploymentResult) -> Table | None:
    """A quantized checkpoint: each rank's bytes by what vLLM 0.33's dummy initializer does to them."""
    if not any(r.fill_kinds for r in result.ranks):
        return None
    heads = ("fp8", "scales", "int8/uint8", "skipped", "fp16 scratch")
    table = Table.of(
        "Quantized tensors per rank (vLLM 0.33 fill rules)", [("ranks", NAME), *((h, NUMBER) for h in heads)], []
    )
    others = []  # the bytes of each group that no column holds
    for group in rank_groups(result):
        k = group[0].fill_kinds
        cells = [k.get(name, 0) for name in ("fp8", "scale", "integer", "skipped", FP16_SCRATCH)]
        table.add(Cell(ranks_text(group, result.tp)), *(format_bytes(n) for n in cells))
        kinds = [f"{words} {format_bytes(k[kind])}" for kind, words in FILL_KINDS.items() if k.get(kind)]
        others += [f"ranks {ranks_text(group, result.tp)} not quantized: {', '.join(kinds)}"] if kinds else []
    table.notes.append(
        "fp8: drawn uniform in [-1, 1] through a float16 scratch of the same shape, one tensor at a time "
        "(fp16 scratch: the largest, the most alive at once); scales: UE8M0/uint8 bytes set to 120, float scales "
        "drawn as floats; "
        "int8/uint8: random bytes (packed fp4 included); skipped: int32/int64 tensors (qweight, qzeros, "
        "weight_packed ...) vLLM visits but leaves as allocated off ROCm, so no strategy writes them"
    )
    table.notes += others
    return table


PINNED = "offloaded tables as the pinned allocator reserves them (next power of two each)"


def nodes_table(result: DeploymentResult) -> Table | None:
    if len(result.nodes) < 2 and not any(n.offloaded_bytes for n in result.nodes):
        return None
    fields: list[Field] = [
        (("node", NAME), lambda n: str(n.node)),
        (("ranks", NUMBER), lambda n: f"{n.ranks[0]}-{n.ranks[-1]}"),
        (("held", NUMBER), lambda n: format_bytes(n.held_bytes)),
        (("offloaded", NUMBER), lambda n: format_bytes(n.offloaded_bytes) if n.offloaded_bytes else ""),
        (Column("pinned", NUMBER, legend=PINNED), lambda n: format_bytes(n.pinned_bytes) if n.offloaded_bytes else ""),
        (("host", NUMBER), lambda n: format_bytes(n.host_memory_bytes)),
        (("fits", WORD), lambda n: "" if n.host_fits is None else "yes" if n.host_fits else Cell("no", BAD)),
    ]
    return Table.over("Nodes", fields, result.nodes)


def online_table(result: DeploymentResult) -> Table | None:
    if not result.online_quant:
        return None
    growth = (
        "the process's peak over its RSS before the pass, measured; pages freed by an earlier pass are reused by "
        "the next, so it is not the pass's own memory (peak is)"
    )
    figures: list[ColumnSpec] = [("peak", NUMBER), Column("B/param", NUMBER, legend="peak per 2-byte element")]
    figures += [Column("RSS growth", NUMBER, legend=growth), *((h, NUMBER) for h in ("fill", "quantize", "total"))]
    table = Table.of(
        f"Online fp8 ({result.online_quant_target}; peak by exact accounting)", [("path", NAME), *figures], []
    )
    for q in result.online_quant:
        elements = q.high_precision_bytes / 2 if q.high_precision_bytes else 0
        not_run = f"not run ({q.not_run})" if q.not_run else ""
        table.add(
            q.mode,
            format_bytes(q.peak_bytes),
            f"{q.peak_bytes / elements:.2f}" if elements else "",
            format_bytes(q.rss_growth_bytes) if q.rss_growth_bytes is not None else "",
            format_seconds(q.fill_s) if q.fill_s is not None else not_run,
            format_seconds(q.quantize_s) if q.quantize_s is not None else "",
            format_seconds(q.seconds) if q.seconds is not None else "",
        )
    first = result.online_quant[0]
    table.notes.append(
        f"{first.quantized} weights to fp8 ({first.scale} scales), {format_bytes(first.fp8_bytes)} fp8 + "
        f"{format_bytes(first.scale_bytes)} scales + {format_bytes(first.kept_bytes)} kept; largest layer "
        f"{first.largest_layer or 'root'} {format_bytes(first.largest_layer_bytes)}"
    )
    return table


def identity_line(result: DeploymentResult) -> Line:
    parts = [f"model {format_bytes(result.model_bytes)}", f"replicated {format_bytes(result.replicated_extra_bytes)}"]
    if result.padding_bytes:
        parts.append(f"padding {format_bytes(result.padding_bytes)}")
    if result.other_extra_bytes:
        parts.append(f"other copies {format_bytes(result.other_extra_bytes)}")
    return Line(
        f"{result.world} ranks hold {format_bytes(result.held_bytes)} in all = " + " + ".join(parts)
        + " (held more than once, beyond the first copy)",
        DIM,
    )  # fmt: skip


def host_part(result: DeploymentResult) -> tuple[RankEntry, RankStrategy] | None:
    """The rank whose host-resident part takes longest on this host (per-layer first), where one was timed."""
    timed = [r for r in result.ranks if any(s.host for s in r.strategies)]
    if not timed:
        return None
    names = [s.strategy for s in timed[0].strategies if s.host]
    name = "per-layer" if "per-layer" in names else names[0]
    rank = max(timed, key=lambda r: (_host_seconds(r.strategy(name)), -r.rank))
    return rank, rank.strategy(name)


def _host_seconds(s: RankStrategy) -> float:
    return (s.host.seconds or 0.0) if s.host else 0.0


def host_device_text(result: DeploymentResult) -> str:
    """Where the host-resident part was timed: "cpu", or "cpu (pinned memory)" where CUDA is present."""
    fills = [s.host for r in result.ranks for s in r.strategies if s.host]
    device = (fills[0].time.device or "cpu") if fills else "cpu"
    return f"{device} (pinned memory)" if any(h.pinned for h in fills) else device


def deployment_blocks(result: DeploymentResult, detail: bool = True) -> list[Block]:
    head = Line(
        f"{result.description}: {layout_text(result)} = {result.world} ranks, {result.layer_count} layers; "
        f"{result.shards_walked} distinct shard(s) counted in {format_seconds(result.count_s)}",
        DIM,
    )
    extras = (kinds_table(result), nodes_table(result), online_table(result))
    return [head, ranks_table(result), identity_line(result), work_table(result), *(b for b in extras if b is not None)]


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


KIND = Kind(
    "deployment",
    deployment_blocks,
    deployment_summary,
    headline_first=True,
    device=lambda result: result.device,
)
