"""Markdown rendering of ``inspect`` results: the module tree as an indented table."""

from __future__ import annotations

from dummyprof.reports.format import format_bytes
from dummyprof.reports.tables.to_markdown import md_table
from dummyprof.results.session import Results


def inspect_markdown(results: Results) -> list[str]:
    result = results.inspect
    assert result is not None
    rows = []
    for node in result.nodes:
        name = node.path.rpartition(".")[2] if node.path else "(root)"
        rows.append(
            [
                # Indented by the path's own levels: a depth read from an edited file could be 10**18.
                "\u00a0\u00a0" * min(node.depth, node.path.count(".") + 1 if node.path else 0) + name,
                node.type,
                format_bytes(node.subtree_bytes),
                *[
                    f"{node.subtree_visits.get(s, 0):,} (+{node.subtree_redundant.get(s, 0):,})"
                    for s in result.strategies
                ],
            ]
        )
    return md_table(
        ["module", "type", "bytes", *[f"{s} visits (+redundant)" for s in result.strategies]],
        rows,
        align_right=range(2, 3 + len(result.strategies)),
    )
