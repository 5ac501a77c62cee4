"""Help text as click prints it: plain text (no Rich markup), paragraphs reflowed, tables and examples kept.

``rich_markup_mode=None`` on the Typer app makes click format ``--help``: nothing in square
brackets is taken for markup (``[part_rows, dim]`` stays), boolean flags show no metavar,
and prose paragraphs are reflowed to the terminal instead of being cut mid-sentence.
Here, once for every command: a paragraph with indented lines (a list of methods,
``Examples:``) is marked ``\\b`` so click keeps its lines. (Every option names its metavar,
``TEXT`` by default: ``cli/schema_command.py``; typer would show ``<str>``.)
"""

from __future__ import annotations

from typing import Any

NO_REWRAP = "\b"  # click's marker: print the next paragraph's lines as they are


def keep_preformatted(text: str | None) -> str | None:
    """Mark each paragraph that has an indented line (a table, examples) so click does not reflow it."""
    if not text:
        return text
    kept = []
    for paragraph in text.split("\n\n"):
        lines = paragraph.split("\n")
        if any(line.startswith(" ") for line in lines) and lines[0] != NO_REWRAP:
            paragraph = NO_REWRAP + "\n" + paragraph
        kept.append(paragraph)
    return "\n\n".join(kept)


def tidy(command: Any) -> Any:
    """Keep the preformatted paragraphs of ``command`` and every subcommand; returns ``command``."""
    command.help = keep_preformatted(command.help)
    for param in command.params:
        # duck-typed: typer vendors its own click, whose classes differ from the click package's
        if param.param_type_name == "argument" and param.metavar:
            param.display_type_rich = lambda ctx: ""  # its metavar names it; typer would add "<path>"
    for sub in getattr(command, "commands", {}).values():
        tidy(sub)
    return command
