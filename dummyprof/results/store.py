"""Reading results files (JSON only, never pickled) and turning Results into their JSON text.

Writing a file is the edges' business (``dummyprof.files.outputs``; ``dummyprof.save_results`` in ``api``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import numpy

from dummyprof.errors import ResultsFileError
from dummyprof.files.reading import RESULTS, DuplicateKeyError, FileKind, read_bounded, unique_keys
from dummyprof.gc_pause import gc_paused
from dummyprof.results.codec import MAX_DEPTH, from_jsonable, rows_from_json, to_jsonable
from dummyprof.results.compare import TensorResult
from dummyprof.results.migrate import migrate
from dummyprof.results.session import SCHEMA_VERSION, Results


def results_to_json(results: Results) -> str:
    """``json.dumps(indent=2)``'s text, 4x faster: its C encoder's, indented by msgspec (keeping every token)."""
    with gc_paused():  # millions of containers, no cycles
        data = to_jsonable(results)
    try:
        return msgspec.json.format(json.dumps(data, separators=(",", ":"), allow_nan=False), indent=2) + "\n"
    except (ValueError, msgspec.DecodeError):  # a NaN, named by the indenting encoder's message; a lone surrogate
        return json.dumps(data, indent=2, allow_nan=False) + "\n"


# The section each command fills (its own; a baseline the gate's); a file without it cannot be rendered.
SECTIONS = {name: name for name in ("compare", "audit", "inspect", "engram", "gate", "sweep", "deployment")}
SECTIONS["baseline"] = "gate"


def _without_tensor_rows(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (not changed) with ``compare.tensors`` left out: the per-tensor rows, most of a large file."""
    compare = data.get("compare")
    if not isinstance(compare, dict) or "tensors" not in compare:
        return data
    return {**data, "compare": {key: value for key, value in compare.items() if key != "tensors"}}


def results_from_dict(data: Any, *, source: str = "results", strict: bool = False, tensor_rows: bool = True) -> Results:
    """Validate ``data`` against the schema and build Results; ResultsFileError names the file and the field.

    ``strict`` also rejects unknown fields (baselines: a typo must not be ignored). ``tensor_rows=False``
    neither reads nor checks ``compare.tensors`` (one row per storage; hundreds of thousands in a large
    model's file) and leaves it empty: for reporters that do not show them (see ``Reporter.reads_tensor_rows``).
    """
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ResultsFileError(f"{source}: not a dummyprof results file (no schema_version)")
    version = data["schema_version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ResultsFileError(f"{source}: schema_version {version!r} is not valid")
    if version > SCHEMA_VERSION:
        raise ResultsFileError(
            f"{source}: written by a newer dummyprof (schema {version}, this one reads up to "
            f"{SCHEMA_VERSION}); upgrade dummyprof"
        )
    data = migrate(data)
    command = data.get("command")
    if not isinstance(command, str) or command not in SECTIONS:
        known = ", ".join(sorted(SECTIONS))
        raise ResultsFileError(f"{source}: $.command: {command!r} is not a dummyprof command ({known})")
    section = SECTIONS[command]
    if not isinstance(data.get(section), dict):
        raise ResultsFileError(f"{source}: $.{section}: a {command!r} results file needs its {section!r} section")
    if not tensor_rows:
        data = _without_tensor_rows(data)
    try:
        with gc_paused():
            results = from_jsonable(Results, data, strict=strict)
    except TypeError as exc:
        raise ResultsFileError(f"{source}: {exc}") from None
    results.schema_version = SCHEMA_VERSION
    return results


class _CompareRows(msgspec.Struct):
    tensors: msgspec.Raw = msgspec.Raw(b"")


class _Locate(msgspec.Struct):
    """Only where ``compare.tensors`` lies; every other field is skipped by the scanner, not built."""

    compare: _CompareRows | None = None


_LOCATE = msgspec.json.Decoder(_Locate)


def _tensor_rows_span(raw: bytes) -> tuple[int, int] | None:
    """Where ``compare.tensors`` lies, found by one msgspec scan without building rows; None if not found.

    Most of a large compare file is that one array; the rest is small enough for the standard parser, which
    names the line of a syntax error and refuses a key given twice. msgspec's Raw is a view of the input
    (no copy), so where it starts is an address difference; anything unexpected is None.
    """
    try:
        found = _LOCATE.decode(raw)
    except (msgspec.DecodeError, RecursionError):  # not an object, or corrupt: the standard parser says where
        return None
    rows = found.compare.tensors if found.compare is not None else None
    if not rows:
        return None
    view = memoryview(rows)
    start = int(numpy.frombuffer(view, dtype=numpy.uint8).ctypes.data) - int(
        numpy.frombuffer(raw, dtype=numpy.uint8).ctypes.data
    )
    end = start + len(view)
    if not (start >= 0 and end <= len(raw) and raw[start : start + 1] == view[:1] and raw[end - 1 : end] == view[-1:]):
        return None
    return start, end


def _load_rows_fast(raw: bytes, source: str, strict: bool) -> Results | None:
    """Tensor rows by :func:`rows_from_json`, the rest as usual; None when either is unusual: the standard
    path then reads the whole text and names what is wrong (its line, or byte, in the whole file)."""
    span = _tensor_rows_span(raw)
    if span is None:
        return None
    with gc_paused():
        rows = rows_from_json(TensorResult, memoryview(raw)[span[0] : span[1]], raw.count(b":", *span))
    if rows is None:
        return None
    try:
        data = _parse(raw[: span[0]] + b"[]" + raw[span[1] :], source, tensor_rows=True)
        results = results_from_dict(data, source=source, strict=strict, tensor_rows=False)
    except ResultsFileError:
        return None
    if results.compare is not None:  # always: the rows were in it
        results.compare.tensors = rows
    return results


def _parse(raw: bytes, source: str, *, tensor_rows: bool) -> Any:
    if not tensor_rows and (span := _tensor_rows_span(raw)):
        raw = raw[: span[0]] + b"[]" + raw[span[1] :]  # replaced, unread
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsFileError(f"{source}: not UTF-8 text (binary or corrupt?) at byte {exc.start}") from None
    del raw
    try:
        with gc_paused():
            return json.loads(text, object_pairs_hook=unique_keys)  # a key twice: which one was meant?
    except json.JSONDecodeError as exc:
        raise ResultsFileError(
            f"{source}: not valid JSON (truncated or corrupt?): {exc.msg} at line {exc.lineno}"
        ) from None
    except DuplicateKeyError as exc:
        raise ResultsFileError(f"{source}: {exc}; keep one of them") from None
    except RecursionError:
        raise ResultsFileError(f"{source}: nested more than {MAX_DEPTH} levels deep (corrupt?)") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise ResultsFileError(f"{source}: not a dummyprof results file: {exc}") from None


def load_results(path: Path, *, strict: bool = False, tensor_rows: bool = True, kind: FileKind = RESULTS) -> Results:
    """Load a results file (``-``: standard input); corrupt, truncated or foreign files raise ResultsFileError.

    ``tensor_rows=False``: without ``compare.tensors``, neither read nor checked (see :func:`results_from_dict`).
    ``kind``: what the file should be and its bound (files/reading.py); a larger file, or no regular file, is refused.
    """
    path = Path(path)
    source = "<stdin>" if str(path) == "-" else str(path)
    raw = [read_bounded(path, kind, refuse=ResultsFileError, stdin=True)]  # popped: _parse frees the text it decodes
    results = _load_rows_fast(raw[0], source, strict) if tensor_rows else None
    if results is not None:
        return results
    data = _parse(raw.pop(), source, tensor_rows=tensor_rows)
    return results_from_dict(data, source=source, strict=strict, tensor_rows=tensor_rows)
