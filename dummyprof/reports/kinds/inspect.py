"""The inspect kind: the module tree, a row per shown module (the terminal draws a tree), its summary and notice."""

from __future__ import annotations

from dummyprof.reports.kind import Kind
from dummyprof.reports.messages import say
from dummyprof.reports.tables.model import BAD, CODE, DIM, NAME, TEXT, WARN, WORD, Block, Cell, Line, Table
from dummyprof.results.inspect import InspectResult, ModuleNode
from dummyprof.units import format_bytes


def visit_counts(visits: dict[str, int], redundant: dict[str, int], strategies: list[str]) -> str:
    """``legacy 8 (+6), per-layer 2``: each strategy's visits; (+N): N of them redundant."""
    return ", ".join(
        f"{s} {visits.get(s, 0):,}" + (f" (+{redundant.get(s, 0):,})" if redundant.get(s, 0) else "")
        for s in strategies
    )


def _visits(node: ModuleNode, strategies: list[str]) -> Cell:
    """``visits: legacy 8 (+6), per-layer 2``: a module's subtree, a leaf's own tensors."""
    if not strategies or not (node.own_tensors or node.children):
        return Cell("")
    visits, redundant = (
        (node.subtree_visits, node.subtree_redundant) if node.children else (node.visits, node.redundant)
    )
    bad = any(redundant.get(s, 0) for s in strategies)
    return Cell("visits: " + visit_counts(visits, redundant, strategies), BAD if bad else "")


def tree_table(result: InspectResult) -> Table:
    """A row per module: name, type, own tensors, subtree bytes, visits per strategy, storages shared."""
    columns = [("module", NAME), ("type", WORD), ("own", TEXT), ("subtree", TEXT), ("visits", TEXT), ("shares", TEXT)]
    depths: list[int] = []
    table = Table.of("", columns, [], depths=depths)
    for n, node in enumerate(result.nodes):
        noun = "tensor" if node.own_tensors == 1 else "tensors"
        table.add(
            node.path.rpartition(".")[2] if n else "<root>",
            Cell(node.type, CODE),
            f"own {node.own_tensors:,} {noun} {format_bytes(node.own_bytes)}" if node.own_tensors else "",
            f"subtree {format_bytes(node.subtree_bytes)}" if node.children else "",
            _visits(node, result.strategies),
            Cell(f"shares {', '.join(node.shared)}", WARN) if node.shared else "",
        )
        # A node is as deep as its path's own levels: a depth read from an edited file could be 10**18.
        depths.append(min(node.depth, node.path.count(".") + 1 if node.path else 0))
    return table


def inspect_blocks(result: InspectResult) -> list[Block]:
    model = result.model
    blocks: list[Block] = [
        Line(f"model: {model.description or model.source}: {model.modules:,} modules, {model.tensors:,} tensors"),
        Line("visits: a module's subtree, a leaf's own tensors; (+N): N redundant", DIM),
        tree_table(result) if result.nodes else Line("empty model"),
    ]
    if result.hidden_modules:
        limits = []
        if result.max_depth is not None:
            limits.append(f"--max-depth {result.max_depth}")
        if result.min_bytes:
            limits.append(f"--min-bytes {format_bytes(result.min_bytes)}")
        blocks.append(
            Line(f"{result.hidden_modules:,} module(s) hidden by {' and '.join(limits)} (still counted above)", DIM)
        )
    return blocks


def inspect_summary(result: InspectResult) -> str:
    """Tensors, bytes and each strategy's visits with (+N) redundant: about 80 columns for three strategies."""
    root = result.nodes[0] if result.nodes else None
    if root is None:
        return "empty model"
    visits = visit_counts(root.subtree_visits, root.subtree_redundant, result.strategies)
    return f"{result.model.tensors:,} tensors, {format_bytes(root.subtree_bytes)}; visits: {visits}"


def meta_notices(result: InspectResult) -> list[str]:
    real = result.real_device_tensors
    allocated = say("notice.meta-real-tensors", real=real) if real else say("notice.meta-nothing")
    return [say("notice.meta-build", allocated=allocated)]


KIND = Kind("inspect", lambda result, detail: inspect_blocks(result), inspect_summary, notices=meta_notices)
