"""Every string from outside is data in every medium (issue #17, item 2).

A hostile string goes into EVERY string field (and every string key) of a Results document of each
kind, found by walking the dataclasses, and every reporter in the registry renders it: the terminal
shows no raw control character and no interpreted markup, Markdown tables keep their cells, JUnit
stays well-formed XML, JSON stays JSON, and HTML carries no live tag from the payload.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dummyprof.reports.registry import render, reporter_names
from dummyprof.reports.reporter import RenderOptions
from dummyprof.reports.tables.escape import markdown_text, visible, xml_text
from dummyprof.results.session import Results
from dummyprof.results.store import load_results
from tests.test_terminal_widths import _compare, _ranks, _sweep

SAVED = Path(__file__).parent / "fixtures" / "results"
KEEP = {"command"}  # which reporter renders a document; not data shown to anyone

PAYLOADS = [
    "\x1b[2J\x1b]0;owned\x07",  # clear screen, set the window title
    "[red]x[/red]",
    "[link=https://evil.example]click[/link]",
    "<script>alert('dp')</script>",
    "<img src=x onerror=alert('dp')>",
    "a|b\nc`d`\\|",
    "\x00\x08\x0b\x7f\x9b\u202e",
    ":smile: &amp; **bold** _it_",
]


def _hostile(value: Any, payload: str) -> Any:
    """``value`` with every string (field, list item, dict key) replaced by ``payload``; numbers kept."""
    if isinstance(value, str):
        return payload
    if isinstance(value, msgspec.Struct):
        changes = {n: _hostile(getattr(value, n), payload) for n in value.__struct_fields__ if n not in KEEP}
        return msgspec.structs.replace(value, **changes)
    if isinstance(value, list):
        return [_hostile(v, payload) for v in value]
    if isinstance(value, dict):
        return {
            (f"{payload}{i}" if isinstance(k, str) else k): _hostile(v, payload)
            for i, (k, v) in enumerate(value.items())
        }
    return value


def _documents() -> dict[str, Results]:
    # the deployment's strategies and ranks must keep distinct names (results/whole.py): its own mutations are
    # tests/test_hostile_input.py's
    docs = {p.stem: load_results(p) for p in sorted(SAVED.glob("*.json")) if not p.stem.startswith("deployment")}
    docs.update({"sweep": _sweep(), "ranks": _ranks(2), "compare-projected": _compare()})
    return docs


DOCUMENTS = _documents()
SGR = re.compile(r"\x1b\[[0-9;]*m")  # Rich's own colours
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]")  # anything else is the payload's


def _cells(row: str) -> int:
    """Cells in a Markdown table row, split as GitHub splits them: a pipe after a backslash is escaped."""
    return len(re.findall(r"(?<!\\)\|", row)) - 1


def _check_markdown(out: str) -> None:
    assert not CONTROL.search(out)
    lines = out.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("| ") and i + 1 < len(lines) and re.fullmatch(r"\|( ---:? \|)+", lines[i + 1]):
            width = _cells(line)
            j = i + 1
            while j < len(lines) and lines[j]:
                assert lines[j].startswith("| ") and _cells(lines[j]) == width, (line, lines[j])
                j += 1


def _check(name: str, results: Results, payload: str) -> None:
    for fmt in reporter_names(results.command):
        if fmt == "html":
            continue  # slower (plotly): once per document, below
        out = render(results, fmt)
        if fmt == "terminal":
            for options in (RenderOptions(width=80), RenderOptions(width=400, color=True, detail=True)):
                text = render(results, fmt, options)
                assert not CONTROL.search(SGR.sub("", text)), (name, text)
                assert "\x1b]8;" not in text  # no OSC-8 hyperlink
            wide = render(results, fmt, RenderOptions(width=400, detail=True))
            if payload.startswith("["):  # markup shows as typed, wherever a whole name fits
                assert visible(payload) in wide, (name, wide)
        elif fmt == "markdown":
            _check_markdown(out)
        elif fmt == "junit":
            ET.fromstring(out)  # well-formed, control characters and all
        elif fmt in ("json", "benchmark-json", "pytorch-benchmark"):
            json.loads(out)


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_hostile_strings_in_every_field_render_as_data_in_every_format(name: str) -> None:
    original = DOCUMENTS[name]

    @settings(max_examples=5, deadline=None)
    @given(payload=st.sampled_from(PAYLOADS), extra=st.text(st.characters(max_codepoint=0x3000), max_size=6))
    def check(payload: str, extra: str) -> None:
        _check(name, _hostile(original, payload + extra), payload + extra)

    check()


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_hostile_strings_in_every_field_run_nothing_in_the_html_page(name: str) -> None:
    pytest.importorskip("plotly")
    out = render(_hostile(DOCUMENTS[name], " ".join(PAYLOADS)), "html")
    assert "<script>alert(" not in out and "onerror=alert(" not in out


def test_the_escapes_spell_out_what_a_medium_cannot_carry() -> None:
    assert visible("a\x1b[2Jb\n\u202e") == "a\\x1b[2Jb\\n\\u202e"
    assert markdown_text("a|b`c<x>[l](u)*e*&") == "a\\|b\\`c\\<x>\\[l\\](u)\\*e\\*&amp;"
    assert markdown_text("<= 2") == "<= 2"
    assert xml_text("a\x00b\x1bc\td") == "a\\x00b\\x1bc\td"


def test_html_table_escapes_every_cell_title_header_and_note() -> None:
    from dummyprof.reports.tables.model import BAD, NAME, NUMBER, Cell, Column, Table
    from dummyprof.reports.tables.to_html import html_table

    table = Table("<b>t</b>", [Column("<i>h</i>", NAME), Column("n", NUMBER)], notes=["<script>x</script>"])
    table.add("<img src=x onerror=alert(1)>\x1b", Cell("1", BAD))
    out = html_table(table)
    assert "<img" not in out and "<script" not in out and "<b>" not in out and "<i>" not in out
    # "=" too: no payload appears verbatim in the file
    assert "&lt;img src&#61;x onerror&#61;alert(1)&gt;\\x1b" in out and '<td class="num bad">1</td>' in out
    assert out.startswith('<table class="dp-table">') and out.endswith("</table>")


def test_the_cli_console_prints_a_path_as_typed(capsys: pytest.CaptureFixture[str]) -> None:
    from dummyprof.reports.console import make_console

    make_console().print("results written to [red]x[/red]:smile:\x1b[2J.json", style="dim")
    assert capsys.readouterr().out == "results written to [red]x[/red]:smile:\\x1b[2J.json\n"
