"""Reading and writing results files: JSON only, written atomically, never pickled."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dummyprof.errors import ResultsFileError
from dummyprof.results.codec import from_jsonable, to_jsonable
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


def results_from_dict(data: Any, *, source: str = "results") -> Results:
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ResultsFileError(f"{source}: not a dummyprof results file (no schema_version)")
    version = data["schema_version"]
    if not isinstance(version, int) or version < 1:
        raise ResultsFileError(f"{source}: schema_version {version!r} is not valid")
    if version > SCHEMA_VERSION:
        raise ResultsFileError(
            f"{source}: written by a newer dummyprof (schema {version}, this one reads up to "
            f"{SCHEMA_VERSION}); upgrade dummyprof"
        )
    try:
        results = from_jsonable(Results, migrate(data))
    except TypeError as exc:
        raise ResultsFileError(f"{source}: {exc}") from None
    results.schema_version = SCHEMA_VERSION
    return results


def load_results(path: Path) -> Results:
    """Load a results file; corrupt, truncated or foreign files raise ResultsFileError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsFileError(f"{path}: no such file") from None
    except OSError as exc:
        raise ResultsFileError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsFileError(
            f"{path}: not valid JSON (truncated or corrupt?): {exc.msg} at line {exc.lineno}"
        ) from None
    return results_from_dict(data, source=str(path))
