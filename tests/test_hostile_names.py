"""#17.2/#17.4 (wave 2): a user's names and exception texts reach the terminal inert, on one line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult

Cli = Callable[..., CliResult]

NAME = "e\x1b[2J\x1b]0;T\x07[red]R[/red][link=http://x]L[/link]<b>&amp;</b>\u202e|x"
SHOWN = "e\\x1b[2J\\x1b]0;T\\x07[red]R[/red][link=http://x]L[/link]<b>&amp;</b>\\u202e|x"
CODE = f"""
import torch
from torch import nn

NAME = {NAME!r}


class Custom(BaseException):
    pass


def build(hidden: int = 32) -> nn.Module:
    root = nn.Module()
    root.add_module(NAME, nn.Linear(hidden, hidden))
    root.register_parameter("p" + NAME, nn.Parameter(torch.empty(hidden)))
    return root


def raises(hidden: int = 32) -> nn.Module:
    raise ValueError(NAME + "\\nsecond line")


def raises_custom(hidden: int = 32) -> nn.Module:
    raise Custom(NAME)


def loader_generator_exit(model: nn.Module) -> None:
    raise GeneratorExit(NAME)


def loader_custom(model: nn.Module) -> None:
    raise Custom(NAME)
"""


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "hostile.py"
    path.write_text(CODE)
    monkeypatch.chdir(tmp_path)
    return path


def _inert(text: str) -> None:
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in text


@pytest.mark.parametrize(
    ("args", "raised"),
    [
        (("inspect", "--model", "./hostile.py:raises"), "--model: ./hostile.py:raises raised ValueError: "),
        (("audit", "--model", "./hostile.py:raises_custom"), "--model: ./hostile.py:raises_custom raised Custom: "),
        (
            ("compare", "--depth", "1", "--hidden", "32", "--repeat", "1", "--loader", "./hostile.py:loader_custom"),
            "--loader: ./hostile.py:loader_custom raised Custom: ",
        ),
        (
            (
                "compare",
                "--depth",
                "1",
                "--hidden",
                "32",
                "--repeat",
                "1",
                "--loader",
                "./hostile.py:loader_generator_exit",
            ),
            "--loader: ./hostile.py:loader_generator_exit raised GeneratorExit: ",
        ),
    ],
)
def test_a_user_exception_text_is_one_inert_line(cli: Cli, hostile: Path, args: tuple[str, ...], raised: str) -> None:
    """The message of a user's exception was written raw: an ESC[2J cleared the terminal, an OSC set its title."""
    result = cli(*args)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith(f"dummyprof: error: {raised}{SHOWN}")
    assert result.stderr.count("\n") == 1 and "second line" not in result.stderr
    _inert(result.stderr + result.stdout)


@pytest.mark.parametrize("command", ["inspect", "audit", "compare"])
def test_hostile_names_in_a_user_model_are_shown_inert_by_every_command(cli: Cli, hostile: Path, command: str) -> None:
    extra = ("--repeat", "1", "--warmup", "0") if command == "compare" else ()
    result = cli(command, "--model", "./hostile.py:build", *extra)
    assert result.exit_code in (0, 1), result.stderr
    _inert(result.stdout + result.stderr)
    if command == "inspect":  # the tree shows every module's name
        assert SHOWN in result.stdout  # markup shown literally, controls spelled out


def test_a_huge_model_arg_that_does_not_parse_is_quoted_short(cli: Cli) -> None:
    value = "[" * 50_000 + "]" * 49_999
    result = cli("inspect", "--preset", "dense-decoder", "--model-arg", f"layers={value}")
    assert result.exit_code == 2
    assert result.stderr == (
        f"dummyprof: error: --model-arg: layers={value[:60]!r}... (99,999 characters) is not a Python literal "
        "(an unclosed bracket or quote?); write e.g. layers=[1, 2] or layers='text'\n"
    )
