"""What dummyprof writes, its own ``report`` reads back: free-form values nested past what the reader takes are
refused where they enter, and a name that was not UTF-8 is written as a visible escape in every medium."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from dummyprof.files.undecodable import spelled
from dummyprof.reports.tables.escape import html_text, markdown_text, visible, xml_text
from dummyprof.results.store import load_results, results_to_json
from dummyprof.results.whole import Refused
from dummyprof.units import MAX_NESTING, nesting_depth
from tests.conftest import CliResult
from tests.fixtures.results import gate_results

Cli = Callable[..., CliResult]

DEEP = "[" * 70 + "]" * 70  # 70 levels: more than the reader takes


def test_nesting_depth_counts_levels() -> None:
    assert [nesting_depth(v) for v in (1, [], [1], {"a": [1]}, [[[]]])] == [0, 1, 1, 2, 3]
    assert nesting_depth(json.loads(DEEP)) == MAX_NESTING + 1  # counted no further than the bound


@pytest.mark.parametrize("command", ["compare", "inspect", "audit"])
def test_a_model_arg_nested_deeper_than_a_results_file_keeps_is_refused_before_the_run(
    cli: Cli, tmp_path: Path, command: str
) -> None:
    result = cli(command, "--model-arg", f"x={DEEP}", "--json", str(tmp_path / "r.json"))
    assert (result.exit_code, result.stderr) == (
        2,
        "dummyprof: error: --model-arg: nests more than 64 levels deep, more than a results file keeps; flatten it\n",
    )
    assert not (tmp_path / "r.json").exists()


def test_a_gate_config_value_nested_too_deep_is_a_config_error(cli: Cli, tmp_path: Path) -> None:
    config = tmp_path / "dummyprof.toml"
    config.write_text(f'[scenarios.s]\ncommand = "compare"\noptions = {{ model_args = {{ x = {DEEP} }} }}\n')
    result = cli("baseline", "--config", str(config), "--output", str(tmp_path / "b.json"))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"dummyprof: error: --config: {config}: scenarios.s.options.model_args: nests more")


def test_the_writer_refuses_what_the_reader_would() -> None:
    """The last guard, behind the options' check: a document the reader refuses is never written."""
    results = gate_results()
    assert results.gate is not None
    results.gate.scenarios[0].fingerprint.options = {"x": json.loads(DEEP)}
    with pytest.raises(Refused, match=r"\$\.gate\.scenarios\[0\]\.fingerprint\.options: nested more than 64"):
        results_to_json(results)


def test_a_lone_surrogate_is_spelled_as_the_byte_it_stood_for_in_every_medium() -> None:
    name = os.fsdecode(b"m\xff/config.json")  # as Python hands on a folder that is not UTF-8
    assert spelled(name) == visible(name) == xml_text(name) == "m\\xff/config.json"
    assert markdown_text(name) == "m\\\\xff/config.json" and "\\xff" in html_text(name)
    assert spelled("\ud800") == "\\ud800"


def test_a_results_document_with_a_name_that_is_not_utf8_reads_back(tmp_path: Path) -> None:
    results = gate_results()
    assert results.gate is not None
    results.gate.config_path = os.fsdecode(b"/ci/m\xff/dummyprof.toml")
    path = tmp_path / "r.json"
    path.write_text(results_to_json(results), encoding="utf-8")
    back = load_results(path)
    assert back.gate is not None and back.gate.config_path == "/ci/m\\xff/dummyprof.toml"
    assert msgspec.json.decode(path.read_bytes())["gate"]["config_path"] == "/ci/m\\xff/dummyprof.toml"


@pytest.fixture(scope="module")
def undecodable_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers")
    data = json.loads(Path("tests/data/Llama-3.1-8B.json").read_text())
    data |= {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2}
    data |= {"head_dim": 16, "vocab_size": 256, "num_hidden_layers": 2}
    root = tmp_path_factory.mktemp("undecodable")
    folder = os.path.join(os.fsencode(root), b"m\xff")
    os.mkdir(folder)
    with open(os.path.join(folder, b"config.json"), "w") as handle:
        json.dump(data, handle)
    return Path(os.fsdecode(folder))


def test_a_model_folder_that_is_not_utf8_is_written_read_back_and_rendered(
    cli: Cli, tmp_path: Path, undecodable_model: Path
) -> None:
    saved, page = tmp_path / "r.json", tmp_path / "r.html"
    result = cli("audit", "--model", f"hf:{undecodable_model}", "--json", str(saved), "--html", str(page), "-q")
    assert result.exit_code == 0, result.stderr
    assert "m\\xff" in page.read_text(encoding="utf-8")
    report = cli("report", str(saved))
    assert report.exit_code == 0, report.stderr
    assert "m\\xff" in report.stdout and "\udcff" not in report.stdout
    for fmt in ("json", "markdown", "html"):
        out = tmp_path / f"again.{fmt}"
        assert cli("report", str(saved), "-f", fmt, "-o", str(out)).exit_code == 0
        out.read_text(encoding="utf-8")  # strict UTF-8
