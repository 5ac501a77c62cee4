"""Terminal (Rich) rendering of ``inspect`` results: the module tree."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from dummyprof.reports.format import format_bytes
from dummyprof.reports.tables.escape import visible
from dummyprof.reports.tables.to_terminal import styled
from dummyprof.results.inspect import InspectResult, ModuleNode
from dummyprof.results.session import Results


def node_label(node: ModuleNode, strategies: list[str]) -> Text:
    """``name Type · own 2 tensors 1.03 MiB · visits: legacy 8 (+6), per-layer 2``: (+N) counts redundant visits."""
    name = node.path.rpartition(".")[2] if node.path else "<root>"
    parts = [Text.assemble(styled(name, "strong"), " ", Text(visible(node.type), style="cyan"))]
    if node.own_tensors:
        noun = "tensor" if node.own_tensors == 1 else "tensors"
        parts.append(Text(f"own {node.own_tensors:,} {noun} {format_bytes(node.own_bytes)}"))
    if node.children:
        parts.append(Text(f"subtree {format_bytes(node.subtree_bytes)}"))
    visits = []
    for s in strategies:
        count = node.subtree_visits.get(s, 0) if node.children else node.visits.get(s, 0)
        redundant = node.subtree_redundant.get(s, 0) if node.children else node.redundant.get(s, 0)
        text = f"{s} {count:,}"
        visits.append(styled(f"{text} (+{redundant:,})", "bad") if redundant else styled(text))
    if visits and (node.own_tensors or node.children):
        parts.append(Text.assemble("visits: ", Text(", ").join(visits)))
    if node.shared:
        parts.append(styled(f"shares {', '.join(node.shared)}", "warn"))
    return Text(" · ").join(parts)


def module_tree(result: InspectResult) -> Tree:
    nodes = result.nodes
    root = Tree(node_label(nodes[0], result.strategies)) if nodes else Tree(Text("empty model"))
    branches: dict[str, Tree] = {nodes[0].path: root} if nodes else {}
    for node in nodes[1:]:
        parent_path = node.path.rpartition(".")[0]
        parent = branches.get(parent_path, root)
        branches[node.path] = parent.add(node_label(node, result.strategies))
    return root


def render_inspect(results: Results, console: Console) -> None:
    result = results.inspect
    assert result is not None
    model = result.model
    console.print(f"model: {model.description or model.source}: {model.modules:,} modules, {model.tensors:,} tensors")
    console.print("visits: a module's subtree, a leaf's own tensors; (+N): N redundant", style="dim")
    console.print(module_tree(result))
    if result.hidden_modules:
        limits = []
        if result.max_depth is not None:
            limits.append(f"--max-depth {result.max_depth}")
        if result.min_bytes:
            limits.append(f"--min-bytes {format_bytes(result.min_bytes)}")
        console.print(
            f"{result.hidden_modules:,} module(s) hidden by {' and '.join(limits)} (still counted above)", style="dim"
        )
