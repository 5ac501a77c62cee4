"""Tensor rows decoded by msgspec (a large file's fast path): the same Results, or the standard path's message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dummyprof.api import save_results
from dummyprof.errors import ResultsFileError
from dummyprof.results import TensorResult, load_results, results_from_dict, results_to_json, store
from dummyprof.results.codec import to_jsonable
from tests.test_results_store import sample

ROW = '"a.weight": {"names": ["a.weight"], "kinds": [], "module": "", "depth": 1, "shape": [4, 4], '
VISITS = '"dtype": "", "nbytes": 0, "visits": {"legacy": 2}, "bytes_written": {}}'


def written(tmp_path: Path, rows: str) -> Path:
    """``sample()``'s file with its tensor rows replaced by ``rows`` (the text inside ``"tensors": {...}``)."""
    path = tmp_path / "r.json"
    data = json.loads(results_to_json(sample()))
    data["compare"]["tensors"] = {"@": 0}
    path.write_text(json.dumps(data).replace('{"@": 0}', "{" + rows + "}"))
    return path


def standard(path: Path) -> str:
    """What the standard parser and codec make of the file: the Results' JSON, or the error."""
    raw = path.read_bytes()
    try:
        return results_to_json(results_from_dict(store._parse(raw, str(path), tensor_rows=True), source=str(path)))
    except ResultsFileError as exc:
        return str(exc)


def test_usual_rows_take_the_fast_path_and_load_alike(tmp_path: Path) -> None:
    path = written(tmp_path, ROW + VISITS + ", " + ROW.replace("a.weight", "b.weight") + VISITS)
    assert store._load_rows_fast(path.read_bytes(), str(path), False) is not None
    assert results_to_json(load_results(path)) == standard(path)
    loaded = load_results(path)
    assert loaded.compare is not None and list(loaded.compare.tensors) == ["a.weight", "b.weight"]
    assert all(type(t) is TensorResult for t in loaded.compare.tensors.values())


@pytest.mark.parametrize(
    "rows",
    [
        ROW + VISITS + ", " + ROW + VISITS,  # a tensor named twice
        ROW.replace('"depth": 1', '"depth": 1, "depth": 2') + VISITS,  # a field twice
        ROW + VISITS.replace('{"legacy": 2}', '{"legacy": 2, "legacy": 3}'),  # a strategy twice
        ROW + VISITS.replace('"nbytes": 0', '"nbytes": 9223372036854775808'),  # beyond int64
        ROW + VISITS.replace('"nbytes": 0', '"nbytes": -9223372036854775808'),  # the least int64: loads
        ROW + VISITS.replace('"nbytes": 0', '"nbytes": 1.0'),
        ROW + VISITS.replace('"nbytes": 0', '"nbytes": true'),
        ROW + VISITS.replace('"nbytes": 0', '"nbytes": NaN'),
        ROW + VISITS.replace('"nbytes": 0', '"nbytes": 0, "extra": 1'),  # unknown: checked, ignored
        ROW + VISITS.replace('"nbytes": 0', '"nbytes": 0, "extra": 1e999'),
        ROW + VISITS.replace('"dtype": "", ', ""),  # missing: its default
        ROW.replace('"module": ""', '"module": "a:b"') + VISITS,  # a colon in a string: counted as a key
        ROW.replace('"module": ""', '"module": "\\ud800"') + VISITS,  # a lone surrogate: the codec takes it
        ROW.replace('"module": ""', '"module": null') + VISITS,
    ],
)
def test_unusual_rows_load_or_fail_as_the_standard_path_says(tmp_path: Path, rows: str) -> None:
    path = written(tmp_path, rows)
    try:
        got = results_to_json(load_results(path))
    except ResultsFileError as exc:
        got = str(exc)
    assert got == standard(path)


def test_strict_refuses_an_unknown_row_field(tmp_path: Path) -> None:
    path = written(tmp_path, ROW + VISITS.replace('"nbytes": 0', '"nbytes": 0, "extra": 1'))
    with pytest.raises(ResultsFileError, match=r"\$.compare.tensors.a.weight: unknown field 'extra'"):
        load_results(path, strict=True)


def test_an_error_outside_the_rows_is_the_standard_paths(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    save_results(sample(), path)
    path.write_text(path.read_text().replace('"schema_version"', '"command": "compare", "schema_version"', 1))
    with pytest.raises(ResultsFileError, match="'command' appears twice") as caught:
        load_results(path)
    assert str(caught.value) == standard(path)


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
    assert results_to_json(results) == json.dumps(to_jsonable(results), indent=2, allow_nan=False) + "\n"
    results.compare.model.options = {"nan": float("nan")}
    with pytest.raises(ValueError, match="not JSON compliant: nan"):
        results_to_json(results)
