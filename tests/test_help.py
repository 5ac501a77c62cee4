"""Every command's --help at 80 columns (issue #13): brackets kept, real metavars, nothing past the width."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from dummyprof.cli.helptext import keep_preformatted
from tests.conftest import CliResult

Cli = Callable[..., CliResult]
COMMANDS = [[], ["compare"], ["audit"], ["inspect"], ["engram"], ["gate"], ["baseline"], ["report"], ["sweep"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0] if c else "dummyprof")
def test_help_at_80_columns(cli: Cli, monkeypatch: pytest.MonkeyPatch, command: list[str]) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    capsys_free = cli(*command, "--help")
    assert capsys_free.exit_code == 0, capsys_free.stderr
    out = capsys_free.stdout
    for metavar in ("<bool>", "<str>", "<list[", "<path>", "<int>", "<float>"):
        assert metavar not in out, metavar
    too_long = [line for line in out.splitlines() if len(line) > 80]
    assert not too_long, too_long
    assert "--help" in out


def test_bracketed_text_is_not_taken_for_markup(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    out = " ".join(cli("engram", "--help").stdout.split())
    assert "[part_rows, dim]" in out and "[part_rows, dim/block]" in out


def test_every_bracketed_phrase_of_every_help_survives(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    from dummyprof.cli.app import _click_command

    monkeypatch.setenv("COLUMNS", "80")
    group = _click_command()
    for name, command in group.commands.items():
        out = " ".join(cli(name, "--help").stdout.split())
        phrases = re.findall(r"\[[^\]\n]+\]", command.help or "")
        for param in command.params:
            phrases += re.findall(r"\[[^\]\n]+\]", getattr(param, "help", None) or "")
        for phrase in phrases:
            assert " ".join(phrase.split()) in out, (name, phrase)


def test_prose_is_reflowed_and_tables_are_kept() -> None:
    text = "A paragraph\nwrapped by hand.\n\nMethods:\n  a  first\n  b  second"
    assert keep_preformatted(text) == "A paragraph\nwrapped by hand.\n\n\bMethods:\n  a  first\n  b  second".replace(
        "\bMethods", "\b\nMethods"
    )


def _help(cli: Cli, monkeypatch: pytest.MonkeyPatch, command: str) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    result = cli(command, "--help")
    assert result.exit_code == 0, result.stderr
    return " ".join(result.stdout.split())


def test_every_initializer_the_registry_accepts_is_named_where_it_is_taken(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dummyprof.loaders.initializers import INITIALIZERS
    from dummyprof.scenarios.options import INITIALIZER_NAMES

    assert tuple(INITIALIZERS) == INITIALIZER_NAMES
    for command in ("compare", "sweep", "audit"):
        text = _help(cli, monkeypatch, command)
        initializer = text[text.index("--initializer TEXT") :].split(" --")[0]
        assert all(name in initializer for name in INITIALIZERS), (command, initializer)


def test_baseline_and_audit_say_what_they_do(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    baseline = _help(cli, monkeypatch, "baseline")
    assert "1 a regression" not in baseline and "Exit codes: 0 the baseline was written" in baseline
    audit = _help(cli, monkeypatch, "audit")
    assert "untraced" not in audit and "audit traces its writes" in audit
