"""The docs' commands, read from the docs: parsed here in the suite, run by ``.ci/run``.

Running every example takes minutes (they measure), so the suite checks what is fast:
each documented command names a real command and only flags it has, each with as
many values as it takes. ``python -m tests.docs_examples`` (a step of ``.ci/run``) runs them all.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests import docs_examples
from tests.docs_examples import Example, check, examples_in, fold

EXAMPLES = docs_examples.all_examples()


def test_the_docs_show_commands() -> None:
    docs = {example.doc for example in EXAMPLES}
    assert {"README.md", "docs/engram.md", "docs/gate.md", "docs/sweep-html-trace.md"} <= docs
    assert len([e for e in EXAMPLES if e.skip is None]) >= 30


def test_a_skip_names_its_reason_and_only_its_command(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Intro `dummyprof compare` in prose is not run.\n\n"
        '<!-- docs-check: skip "hf:org/name" needs the network -->\n'
        "```bash\n"
        "dummyprof inspect --model hf:org/name   # a hub id\n"
        "dummyprof audit --model m.py:build \\\n"
        "    --json a.json       # findings: exit 1\n"
        "```\n\n"
        "```\n"
        "$ dummyprof compare --depth 0\n"
        "dummyprof: error: --depth: must be at least 1, got 0; try --depth 12\n"
        "$ dummyprof compare -q\n"
        "dummyprof 0.1.0, torch 2.13.0+cpu, cpu\n"
        "```\n",
        encoding="utf-8",
    )
    found = list(examples_in(page, tmp_path))
    assert [(e.line, e.command, e.exit_code, e.skip) for e in found] == [
        (5, "dummyprof inspect --model hf:org/name", 0, "needs the network"),
        (6, "dummyprof audit --model m.py:build --json a.json", 1, None),
        (11, "dummyprof compare --depth 0", 2, None),
        (13, "dummyprof compare -q", 0, None),
    ]
    assert found[2].shown == "dummyprof: error: --depth: must be at least 1, got 0; try --depth 12"
    assert found[3].shown == "dummyprof 0.1.0, torch 2.13.0+cpu, cpu"  # output, though it starts with "dummyprof"
    assert found[0].block == found[1].block != found[2].block == found[3].block


def test_a_run_is_checked_against_what_the_doc_shows() -> None:
    shown = Example("d.md", 1, "dummyprof compare --depth 0", 2, "dummyprof: error: --depth: must be at least 1, got 0")
    assert check(shown, 2, "dummyprof: error: --depth: must be at least 1, got 7\n") == ""
    assert check(shown, 0, "") == "exit 0, the doc says 2"
    assert "not in the output" in check(shown, 2, "dummyprof: error: --width: no\n")
    plain = Example("d.md", 1, "dummyprof compare", 0)
    assert check(plain, 0, "") == "printed nothing"
    assert check(plain, 0, "Traceback (most recent call last):\n  boom") == "printed a traceback"
    assert fold("1.18 s   ±61%") == fold("12.5 s ±7%") == "# s ±#%"


def test_an_exact_figure_in_prose_is_checked_against_its_command(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        '<!-- docs-check: figure "646.19 GiB" from "dummyprof compare --model hf:ds.json --online-quant fp8" -->\n'
        "DeepSeek-V3 is refused: per layer it peaks at 646.19 GiB.\n\n"
        '<!-- docs-check: figure "1,175 tests" from "python -m pytest --collect-only -q" -->\n'
        "The suite collects 1,133 tests.\n",
        encoding="utf-8",
    )
    peak, suite = examples_in(page, tmp_path)
    assert (peak.line, peak.command, peak.figure, peak.shown) == (
        1,
        "dummyprof compare --model hf:ds.json --online-quant fp8",
        "646.19 GiB",
        None,
    )
    said = "dummyprof: error: --online-quant: online fp8 per layer peaks at {} GiB (exact accounting)\n"
    assert check(peak, 2, said.format("646.19")) == ""  # any exit code: the figure is what is checked
    assert check(peak, 2, said.format("646.35")) == "the prose quotes '646.19 GiB'; the command does not print it"
    # The paragraph must quote what is checked, or the check would pass while the prose drifts.
    assert (
        check(suite, 0, "1175 tests collected in 9.1s\n") == "the paragraph under line 4 does not quote '1,175 tests'"
    )
    suite.shown = None
    assert check(suite, 0, "1175 tests collected in 9.1s\n") == ""  # thousands separators are not compared


@pytest.mark.parametrize(
    "example", [e for e in EXAMPLES if e.skip is None and e.command.startswith("dummyprof ")], ids=lambda e: e.where
)
def test_each_documented_command_parses(example: Example) -> None:
    """Its command and every flag exist, with the values shown (nothing is run)."""
    from dummyprof.cli.app import _click_command

    command = _click_command()
    words = shlex.split(example.command)[1:]
    try:
        with command.make_context("dummyprof", list(words), resilient_parsing=False) as context:
            sub = command.get_command(context, words[0])
            assert sub is not None, f"{example.where}: no command {words[0]!r}"
            sub.make_context(words[0], words[1:], parent=context)
    except Exception as exc:  # click's usage errors: the doc names a flag or value the command refuses
        raise AssertionError(f"{example.where}: {example.command}: {exc}") from None


def _command_table(readme: str) -> dict[str, list[list[str]]]:
    """README's command table: each command's rows, each row's flags (its third column)."""
    rows: dict[str, list[list[str]]] = {}
    for line in readme.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and re.fullmatch(r"`[a-z]+`", cells[0]):
            rows.setdefault(cells[0].strip("`"), []).append(re.findall(r"--[a-z][a-z-]*", cells[2]))
    return rows


def test_the_readme_command_table_has_one_row_per_command_with_every_flag() -> None:
    """The table's flag lists are the CLI's own (a new flag, or a removed one, fails here)."""
    from dummyprof.cli.app import _click_command

    command = _click_command()
    context = command.make_context("dummyprof", ["report", "x"], resilient_parsing=True)
    table = _command_table((docs_examples.ROOT / "README.md").read_text(encoding="utf-8"))
    assert sorted(table) == sorted(command.list_commands(context))
    for name, rows in table.items():
        assert len(rows) == 1, f"README's command table has {len(rows)} rows for {name}"
        sub = command.get_command(context, name)
        assert sub is not None
        flags = [
            next(opt for opt in param.opts if opt.startswith("--"))
            for param in sub.params
            if param.param_type_name == "option"
            and any(opt.startswith("--") for opt in param.opts)
            and not getattr(param, "hidden", False)  # a hidden option is not advertised
        ]
        assert sorted(rows[0]) == sorted(flags), f"README's {name} row differs from `dummyprof {name} --help`"


NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


def test_docs_gate_md_counts_the_scenarios_and_checks_of_dummyprof_toml() -> None:
    from dummyprof.gate.checks import planned_checks
    from dummyprof.gate.config import load_config

    config = load_config(docs_examples.ROOT / "dummyprof.toml")
    checks = sum(len(planned_checks(scenario)) for scenario in config.scenarios)
    page = " ".join((docs_examples.ROOT / "docs" / "gate.md").read_text(encoding="utf-8").split())
    stated = re.findall(r"\b([A-Z][a-z]+) scenarios, (\d+) checks\b", page)
    assert stated == [(stated[0][0], str(checks))] and NUMBER_WORDS[stated[0][0].lower()] == len(config.scenarios)
    assert re.findall(r"all (\d+) checks pass", page) == [str(checks)]
