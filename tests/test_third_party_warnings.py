"""Third-party warnings (issue #27.3): kept out of the report and off stderr, shown once under --detail."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult

Cli = Callable[..., CliResult]
MODEL = """
import logging, warnings
import torch


def build():
    for _ in range(2):  # twice: shown once
        warnings.warn("`foo` is deprecated, use `bar`", FutureWarning)
        logging.getLogger("somelib.sub").warning("somelib says careful")
    {transformers}
    return torch.nn.Sequential(torch.nn.Linear(8, 8))
"""
# transformers' own logger, as dummyprof sets it up for hf: models (its default stderr handler off)
TRANSFORMERS = (
    "from dummyprof.models.huggingface import _transformers; _transformers(); "
    "from transformers.utils import logging as tl; "
    "tl.get_logger('transformers.modeling_utils').warning('`torch_dtype` is deprecated! Use `dtype` instead!')"
)
NOTICES = [
    "notice: third-party warning, FutureWarning: `foo` is deprecated, use `bar`",
    "notice: third-party warning, somelib: somelib says careful",
]


def _model(tmp_path: Path, transformers: bool = False) -> str:
    path = tmp_path / "warns.py"
    path.write_text(MODEL.format(transformers=TRANSFORMERS if transformers else "pass"), encoding="utf-8")
    return f"{path}:build"


def test_warnings_stay_out_of_the_report_and_off_stderr(cli: Cli, tmp_path: Path) -> None:
    result = cli("inspect", "--model", _model(tmp_path))
    assert (result.exit_code, result.stderr) == (0, "")
    assert "deprecated" not in result.stdout and "careful" not in result.stdout


def test_detail_shows_each_warning_once_and_the_files_carry_none(cli: Cli, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    args = ("compare", "--model", _model(tmp_path, transformers=True), "--repeat", "1", "--warmup", "0")
    plain = cli(*args)
    assert (plain.exit_code, plain.stderr) == (0, "")
    assert "third-party warning" not in plain.stdout and "deprecated" not in plain.stdout
    out = tmp_path / "r.json"
    detail = cli(*args, "--detail", "--json", str(out))
    assert (detail.exit_code, detail.stderr) == (0, "")
    shown = [line for line in detail.stdout.splitlines() if "third-party warning" in line]
    assert shown == [
        *NOTICES,
        "notice: third-party warning, transformers: `torch_dtype` is deprecated! Use `dtype` instead!",
    ]
    assert "third-party" not in json.dumps(json.loads(out.read_text())["notices"])
