"""Reading and writing results files: JSON only, written atomically, never pickled."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from dummyprof.errors import ResultsFileError
from dummyprof.gc_pause import gc_paused
from dummyprof.results.codec import MAX_DEPTH, from_jsonable, to_jsonable
from dummyprof.results.migrate import migrate
from dummyprof.results.outputs import Output, probe_output, replace_atomic
from dummyprof.results.session import SCHEMA_VERSION, Results


def check_writable(path: Path, *, force: bool, flag: str) -> None:
    """Refuse up front to overwrite a file unless asked to, and to write where we cannot (see outputs.py)."""
    probe_output(Output(flag, Path(path)), force=force)


def write_text_atomic(path: Path, text: str) -> None:
    """Replace ``path`` atomically: a crash or Ctrl-C leaves the old file or the new one, never half of one."""
    replace_atomic(Path(path), text)


def results_to_json(results: Results) -> str:
    return json.dumps(to_jsonable(results), indent=2, sort_keys=False, allow_nan=False) + "\n"


def save_results(results: Results, path: Path) -> None:
    write_text_atomic(path, results_to_json(results))


# The section each command fills; a file that names a command but lacks its section cannot be rendered.
SECTIONS = {
    "compare": "compare",
    "audit": "audit",
    "inspect": "inspect",
    "engram": "engram",
    "baseline": "gate",
    "gate": "gate",
    "sweep": "sweep",
}


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


def _read_bytes(path: Path) -> bytes:
    """The file (``-``: standard input)."""
    try:
        return sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
    except FileNotFoundError:
        raise ResultsFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ResultsFileError(f"{path}: is a directory; give a results file written by --json") from None
    except OSError as exc:
        raise ResultsFileError(f"{path}: cannot read ({exc.strerror})") from None


_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])  # an object's values left unparsed, to parse or skip each


def _parse_fast(raw: bytes, *, tensor_rows: bool) -> Any:
    """msgspec's parser, and without ``tensor_rows`` not even that for ``compare.tensors``: its text is only
    scanned to find where it ends. On a 228 MB compare file, 0.4 s in place of json.loads' 2.5 s."""
    if tensor_rows:
        return msgspec.json.decode(raw)
    data = {
        key: value if key == "compare" else msgspec.json.decode(value) for key, value in _OBJECT.decode(raw).items()
    }
    if "compare" in data:
        compare = _OBJECT.decode(data["compare"])
        data["compare"] = {key: msgspec.json.decode(value) for key, value in compare.items() if key != "tensors"}
    return data


def _parse_slow(raw: bytes, source: str) -> Any:
    """The standard library's parser, for what msgspec refused: its messages name the line, and it reads NaN,
    Infinity and numbers beyond a float, which the codec then refuses naming the field."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsFileError(f"{source}: not UTF-8 text (binary or corrupt?) at byte {exc.start}") from None
    del raw
    try:
        with gc_paused():
            return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsFileError(
            f"{source}: not valid JSON (truncated or corrupt?): {exc.msg} at line {exc.lineno}"
        ) from None
    except RecursionError:
        raise ResultsFileError(f"{source}: nested more than {MAX_DEPTH} levels deep (corrupt?)") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise ResultsFileError(f"{source}: not a dummyprof results file: {exc}") from None


def _parse(raw: bytes, source: str, *, tensor_rows: bool) -> Any:
    try:
        with gc_paused():
            return _parse_fast(raw, tensor_rows=tensor_rows)
    except (msgspec.DecodeError, RecursionError):  # ValidationError too: not an object, a number out of range
        return _parse_slow(raw, source)


def load_results(path: Path, *, strict: bool = False, tensor_rows: bool = True) -> Results:
    """Load a results file (``-``: standard input); corrupt, truncated or foreign files raise ResultsFileError.

    ``tensor_rows=False``: without ``compare.tensors``, neither read nor checked (see :func:`results_from_dict`).
    """
    path = Path(path)
    source = "<stdin>" if str(path) == "-" else str(path)
    data = _parse(_read_bytes(path), source, tensor_rows=tensor_rows)  # the bytes are dropped once parsed
    return results_from_dict(data, source=source, strict=strict, tensor_rows=tensor_rows)
