"""The Markdown table every Markdown section uses (its own module, so sections never import the dispatcher)."""

from __future__ import annotations

from collections.abc import Sequence


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]], align_right: Sequence[int] = ()) -> list[str]:
    def cell(text: str) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in header) + " |"]
    lines.append("| " + " | ".join("---:" if i in align_right else "---" for i in range(len(header))) + " |")
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines
