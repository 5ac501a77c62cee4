"""Every flag a report names exists on the command that made it: the footers, notes and advice of every kind of
report, in every format, read for ``--flag`` and checked against the command's own options (its Typer params)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from dummyprof.reports.registry import RenderOptions, render
from dummyprof.results.session import Results
from dummyprof.results.store import load_results
from tests.conftest import CliResult
from tests.fixtures.results import gate_results

Cli = Callable[..., CliResult]
ROOT = Path(__file__).resolve().parent.parent
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def command_flags(name: str) -> set[str]:
    from dummyprof.cli.app import _click_command

    group = _click_command()
    context = group.make_context("dummyprof", ["report", "x"], resilient_parsing=True)
    command = group.get_command(context, name)
    assert command is not None
    return {
        opt
        for param in command.get_params(context)
        for opt in (*param.opts, *param.secondary_opts)
        if opt.startswith("--")
    }


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> list[Results]:
    from dummyprof.cli.app import main

    folder = tmp_path_factory.mktemp("reports")
    made = []
    for args in (["inspect", "--depth", "2"], ["audit", "--depth", "2"], ["inspect", "--depth", "2", "--tp", "2"]):
        path = folder / f"{len(made)}.json"
        assert main([*args, "-q", "--json", str(path)]) in (0, 1)
        made.append(load_results(path))
    saved = [load_results(p) for p in sorted((ROOT / "docs" / "img").glob("*.json"))]
    saved += [load_results(p) for p in sorted((ROOT / "tests" / "fixtures" / "results_v3").glob("*.json"))]
    return [*made, *saved, gate_results()]


def test_every_flag_a_report_names_is_an_option_of_its_command(documents: list[Results]) -> None:
    kinds = {doc.command for doc in documents}
    assert {"compare", "deployment", "engram", "sweep", "inspect", "audit", "gate"} <= kinds
    wrong = []
    for doc in documents:
        texts = [render(doc, "terminal", RenderOptions(width=120, detail=detail)) for detail in (False, True)]
        texts.append(render(doc, "markdown"))
        named = {flag for text in texts for flag in FLAG.findall(text)}
        # a deployment records the command that asked for it: compare, inspect or audit with a layout
        command = doc.deployment.command if doc.deployment is not None else doc.command
        wrong += [f"{doc.command} report names {flag}, which `dummyprof {command}` lacks" for flag in named
                  if flag not in command_flags(command)]  # fmt: skip
    assert not wrong, "\n".join(sorted(set(wrong)))


def test_every_flag_the_reporters_spell_is_some_command_s() -> None:
    """What no rendered sample reaches (advice for a rare case) is still a flag that exists."""
    from dummyprof.cli.app import COMMANDS

    every = set().union(*(command_flags(name) for name, _, _ in COMMANDS))
    wrong = []
    for module in sorted((ROOT / "dummyprof" / "reports").rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                wrong += [f"{module.relative_to(ROOT)}: {f}" for f in FLAG.findall(node.value) if f not in every]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("command", ["compare", "engram", "inspect", "audit"])
def test_every_command_with_details_takes_detail(command: str) -> None:
    assert "--detail" in command_flags(command)


def test_engram_detail_prints_the_full_report(cli: Cli) -> None:
    args = ("engram", "--rows", "1M", "--dim", "64", "--method", "constant", "--repeat", "1")
    short, full = cli(*args), cli(*args, "--detail")
    assert short.exit_code == full.exit_code == 0, short.stderr + full.stderr
    assert "every table, fit, sample and interval: --detail" in short.stdout
    assert len(full.stdout.splitlines()) > len(short.stdout.splitlines())
