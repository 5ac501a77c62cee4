"""The results document: JSON round trip, schema versions, corrupt files, atomic writes."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from dummyprof.api import save_results
from dummyprof.errors import ResultsFileError, UsageError
from dummyprof.files import outputs
from dummyprof.files.outputs import Output, probe_output
from dummyprof.results import (
    SCHEMA_VERSION,
    Estimate,
    ModelSummary,
    Results,
    TensorResult,
    load_results,
    results_from_dict,
    results_to_json,
    store,
)
from tests.conftest import CliResult
from tests.fixtures.results import legacy_and_per_layer


def sample() -> Results:
    model = ModelSummary(description="tree", tensors=2, bytes=64, options={"depth": 2})
    tensors = {"a.weight": TensorResult(names=["a.weight"], depth=1, shape=[4, 4], visits={"legacy": 2})}
    results = legacy_and_per_layer(model, tensors, [0.4, 0.2], [0.1, 0.1], visits=2, redundant=1, max_visits=2)
    results.compare.strategies[0].memory.pinned_bytes = Estimate.missing("no CUDA")
    return results


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    original = sample()
    save_results(original, path)
    loaded = load_results(path)
    assert loaded == original
    assert results_to_json(loaded) == path.read_text()
    data = json.loads(path.read_text())
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["compare"]["tensors"]["a.weight"]["visits"] == {"legacy": 2}
    assert data["compare"]["strategies"][0]["memory"]["pinned_bytes"] == {
        "value": None,
        "how": "unavailable",
        "reason": "no CUDA",
        "samples": [],
        "low": None,
        "high": None,
        "floor": None,
        "device": "",
        "contention": None,
    }
    assert loaded.compare is not None and loaded.compare.speedup("per-layer") == pytest.approx(3.0)


def test_fields_a_file_leaves_out_load_with_defaults() -> None:
    loaded = results_from_dict({"schema_version": 6, "command": "compare", "compare": {"repeat": 3}})
    assert loaded.compare is not None and loaded.compare.repeat == 3
    assert loaded.compare.strategies == [] and loaded.notices == []


@pytest.mark.parametrize(
    ("version", "command", "again"),
    [
        (1, "compare", "run it again: dummyprof compare ... --json old.json"),
        (2, "engram", "run it again: dummyprof engram ... --json old.json"),
        (3, "deployment", "run it again: dummyprof deployment ... --json old.json"),
        (4, "baseline", "make it again: dummyprof baseline --config CONFIG --output old.json"),
        (4, "gate", "run the gate again: dummyprof gate --config CONFIG --baseline BASELINE --json old.json"),
        (4, None, "run its command again with --json"),
    ],
)
def test_an_older_schema_is_refused_in_one_line_naming_the_command_that_writes_it_again(
    tmp_path: Path, version: int, command: str | None, again: str
) -> None:
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"schema_version": version, "command": command, "compare": {"timing": {}}}))
    with pytest.raises(ResultsFileError) as raised:
        load_results(path)
    assert str(raised.value) == (
        f"{path}: results schema {version}, which this dummyprof no longer reads (it reads schema 6); "
        + again.replace("old.json", str(path))
    )


def test_report_on_an_older_file_exits_2_with_one_line(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"schema_version": 4, "command": "compare", "compare": {}}))
    result = cli("report", str(path))
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"dummyprof: error: {path}: results schema 4, which this dummyprof no longer reads (it reads schema 6); "
        f"run it again: dummyprof compare ... --json {path}"
    ]
    assert "Traceback" not in result.stdout + result.stderr


def test_unknown_fields_are_refused_naming_them() -> None:
    """Every record forbids keys it does not declare: an edited typo is an error, not silently dropped."""
    with pytest.raises(ResultsFileError, match=r"^results: \$: Object contains unknown field `from_the_future`$"):
        results_from_dict({"schema_version": 6, "command": "inspect", "inspect": {}, "from_the_future": 1})
    with pytest.raises(ResultsFileError, match=r"^results: \$.inspect.model: Object contains unknown field `x`$"):
        results_from_dict({"schema_version": 6, "command": "inspect", "inspect": {"model": {"x": 1}}})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"schema_version": 6, "command": "compare", "compare": {"rep', "not valid JSON"),
        ("[1, 2]", "not a dummyprof results file"),
        ('{"command": "compare"}', "not a dummyprof results file"),
        ('{"schema_version": 99}', "newer dummyprof"),
        ('{"schema_version": "1"}', "not valid"),
        (
            '{"schema_version": 6, "command": "compare", "compare": {"repeat": "three"}}',
            r"\$.compare.repeat: Expected `int`, got `str`$",
        ),
    ],
)
def test_bad_files_are_clear_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ResultsFileError, match=message):
        load_results(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ResultsFileError, match="no such file"):
        load_results(tmp_path / "nope.json")


def test_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text("keep me")
    with pytest.raises(UsageError, match="already exists; pass --force"):
        probe_output(Output("--json", path), force=False)
    probe_output(Output("--json", path), force=True)
    probe_output(Output("--json", tmp_path / "no" / "r.json"), force=False)  # its folder is made, as pytest's
    assert (tmp_path / "no").is_dir()
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="a folder in its path is a file"):
        probe_output(Output("--json", tmp_path / "file" / "sub" / "r.json"), force=False)
    with pytest.raises(UsageError, match="is a directory"):
        probe_output(Output("--json", tmp_path), force=True)


def test_interrupted_write_leaves_old_file_and_no_temporaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "r.json"
    path.write_text("old")

    def boom(src: str, dst: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(outputs.os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        save_results(sample(), path)
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_never_pickled(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    save_results(sample(), path)
    assert path.read_bytes().startswith(b"{")


def test_converted_lists_and_dicts_are_copies_of_the_document() -> None:
    data = json.loads(json.dumps(msgspec.to_builtins(sample())))
    loaded = results_from_dict(data)
    row = data["compare"]["tensors"]["a.weight"]
    row["shape"].append(1)
    row["visits"]["legacy"] = 99
    assert loaded.compare is not None
    assert loaded.compare.tensors["a.weight"].shape == [4, 4] and loaded.compare.tensors["a.weight"].visits == {
        "legacy": 2
    }


@pytest.mark.parametrize(
    ("samples", "expected"),
    [
        ([1, 2, 3], [1.0, 2.0, 3.0]),  # whole numbers in a list of floats are floats
        ([0.5, float("nan")], "$.compare.strategies[0].time.samples[1]: NaN is not a finite number"),
        ([0.5, "1"], "$.compare.strategies[0].time.samples[1]: Expected `float`, got `str`"),
    ],
)
def test_lists_of_numbers_are_checked_item_by_item(samples: list[Any], expected: Any) -> None:
    data = {"schema_version": 6, "command": "compare", "compare": {"strategies": [{"time": {"samples": samples}}]}}
    if isinstance(expected, str):
        with pytest.raises(ResultsFileError) as raised:
            results_from_dict(data, source="f.json")
        assert str(raised.value) == f"f.json: {expected}"
    else:
        loaded = results_from_dict(data)
        assert loaded.compare is not None
        got = loaded.compare.strategies[0].time.samples
        assert got == expected and all(type(x) is float for x in got)


@pytest.mark.parametrize("enabled", [True, False])
def test_loading_leaves_the_garbage_collector_as_it_found_it(tmp_path: Path, enabled: bool) -> None:
    """Loading pauses the cyclic collector (a large file is millions of containers, no cycles), and only that."""
    good, bad = tmp_path / "r.json", tmp_path / "bad.json"
    save_results(sample(), good)
    bad.write_text('{"schema_version": 6, "command": "compare", "compare": {"repeat": null}}')
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        assert load_results(good).compare == sample().compare
        assert gc.isenabled() is enabled
        with pytest.raises(ResultsFileError, match=r"\$.compare.repeat: Expected `int`, got `null`"):
            load_results(bad)
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def test_without_tensor_rows_the_rest_is_the_same_document(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    save_results(sample(), path)
    assert load_results(path, tensor_rows=False).compare == msgspec.structs.replace(sample().compare, tensors={})
    assert load_results(path) == sample()
    raw = path.read_bytes()
    lean = store._without_rows(raw)
    assert lean is not None
    compare = json.loads(raw)["compare"]
    assert lean[0] == {**json.loads(raw), "compare": {k: v for k, v in compare.items() if k != "tensors"}}
    assert lean[1] == 1 + json.dumps(compare["tensors"]).count(":")  # the colons of the rows' key and text, unread


def test_without_tensor_rows_their_text_is_skipped_not_parsed(tmp_path: Path) -> None:
    """A row refused (a number beyond a float) is never built when rows are skipped; a key given twice, in
    the rows or outside them, is still refused where it is read."""
    path = tmp_path / "r.json"
    save_results(sample(), path)
    text = path.read_text()
    path.write_text(text.replace('"legacy": 2', '"legacy": 1e999'))
    assert load_results(path, tensor_rows=False).compare == msgspec.structs.replace(sample().compare, tensors={})
    with pytest.raises(ResultsFileError, match=r"\$.compare.tensors.a.weight.visits.legacy: Infinity is not a finite"):
        load_results(path)
    for twice, rows in (('"command": "compare", "schema_version"', False), ('"legacy": 2, "legacy": 2', True)):
        path.write_text(text.replace('"schema_version"' if "command" in twice else '"legacy": 2', twice, 1))
        with pytest.raises(ResultsFileError, match="appears twice in one object; keep one of them"):
            load_results(path, tensor_rows=rows)


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: t.replace('"depth": 1', '"depth": 1, "depth": 2', 1),  # a field twice
        lambda t: t.replace('"depth": 1', '"depth": 1, "depth": 2', 1).replace(
            '"dtype": "",', "", 1
        ),  # and one missing
        lambda t: t.replace('"legacy": 2', '"legacy": 2, "legacy": 3', 1),  # a key of a mapping twice
        lambda t: t.replace('"module": ""', '"module": "\\u003a"', 1).replace(
            '"depth": 1', '"depth": 1, "depth": 1', 1
        ),
    ],
)
def test_a_key_given_twice_anywhere_is_refused(tmp_path: Path, edit: Any) -> None:
    """Counting colons after msgspec (which keeps the last) is exact on plain values; an escaped colon is read again."""
    path = tmp_path / "r.json"
    save_results(sample(), path)
    text = json.dumps(json.loads(path.read_text()))
    edited = edit(text)
    assert edited != text
    path.write_text(edited)
    with pytest.raises(ResultsFileError, match="appears twice in one object; keep one of them"):
        load_results(path)


def test_json_text_is_what_the_indenting_encoder_writes() -> None:
    results = sample()
    assert results.compare is not None
    options = {
        "é\x7f\U0001f600": [[], {}, [{}]],
        "big": 10**30,
        "small": 1e-05,
        "neg": -0.0,
        "huge": 1e16,
        "lone": "\ud800",
    }
    results.compare.model.options = options
    written = json.dumps(msgspec.to_builtins(results), indent=2, allow_nan=False) + "\n"
    assert results_to_json(results) == written.replace('"\\ud800"', '"\\\\ud800"')  # spelled: readable back
    results.compare.model.options = {"nan": float("nan")}
    with pytest.raises(ValueError, match="not JSON compliant: nan"):
        results_to_json(results)
