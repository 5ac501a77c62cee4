"""Reading results files (JSON only, never pickled) and turning Results into their JSON text.

msgspec decodes the file as plain values (an older schema is refused, naming the command that writes it again),
msgspec converts them into the records (``Record``) and ``whole.py`` checks them together. Added here: which
file, a key given twice, and a field's path under a mapping (``files/reading.said``). Writing files is the edges' job.
"""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path
from typing import Any

import msgspec

from dummyprof.errors import ResultsFileError
from dummyprof.files.reading import RESULTS, DuplicateKeyError, FileKind, read_bounded, said, unique_keys
from dummyprof.files.undecodable import spelled_values
from dummyprof.gc_pause import gc_paused
from dummyprof.results.compare import CompareResult
from dummyprof.results.session import SCHEMA_VERSION, SECTIONS, Results
from dummyprof.results.whole import Refused, check_whole


def results_to_json(results: Results) -> str:
    """``json.dumps(indent=2)``'s text, 4x faster: its C encoder's, indented by msgspec (keeping every token).

    Only what ``load_results`` reads back is written: the whole file's checks run first (``Refused``, naming the
    field), and a name that was not UTF-8 is spelled as a visible escape (files/undecodable.py)."""
    check_whole(results)
    with gc_paused():  # millions of containers, no cycles
        data = msgspec.to_builtins(results)
    try:
        return msgspec.json.format(json.dumps(data, separators=(",", ":"), allow_nan=False), indent=2) + "\n"
    except msgspec.DecodeError:  # a lone surrogate (a name that was not UTF-8), which no reader takes: spelled
        data = spelled_values(data)
    except ValueError:  # a NaN, named by the indenting encoder's message
        return json.dumps(data, indent=2, allow_nan=False) + "\n"
    return msgspec.json.format(json.dumps(data, separators=(",", ":"), allow_nan=False), indent=2) + "\n"


@functools.cache
def _lean() -> Any:
    """Results' keys as plain values but ``compare.tensors``, kept as its text (``msgspec.Raw``): scanned, not built."""

    def plain(name: str, fields: tuple[str, ...], **typed: Any) -> Any:
        spec = [(f, typed.get(f, Any), msgspec.UNSET) for f in fields]
        return msgspec.defstruct(name, spec, forbid_unknown_fields=True)

    compare = plain("_LeanCompare", CompareResult.__struct_fields__, tensors=msgspec.Raw)
    return plain("_LeanResults", Results.__struct_fields__, compare=compare | None)


def _without_rows(raw: bytes) -> tuple[dict[str, Any], int] | None:
    """The document without ``compare.tensors``, and the colons left unread; None when the lean
    decode refuses the file (a key Results does not declare, an older schema's, bad JSON): it is read whole."""
    try:
        with gc_paused():
            lean = msgspec.json.decode(raw, type=_lean())
    except (msgspec.DecodeError, RecursionError):
        return None
    data = {k: v for k, v in msgspec.structs.asdict(lean).items() if v is not msgspec.UNSET}
    compare, unread = data.get("compare"), 0
    if compare is not None:
        data["compare"] = {k: v for k, v in msgspec.structs.asdict(compare).items() if v is not msgspec.UNSET}
        if "tensors" in data["compare"]:  # its key's colon, and those of its text
            unread = 1 + bytes(data["compare"].pop("tensors")).count(b":")
    return data, unread


def _unheld(data: Any) -> str | None:
    """Where ``data`` holds NaN, an infinity (``json.loads`` reads them; msgspec refuses them unnamed) or an
    integer beyond int64 (msgspec reads it, and would hand it to a float field as 1e30)."""
    stack: list[tuple[Any, str]] = [(data, "$")]
    while stack:
        item, at = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            spelled = "NaN" if item != item else "Infinity" if item > 0 else "-Infinity"  # as JSON text has it
            return f"{at}: {spelled} is not a finite number"
        if type(item) is int and not -(2**63) <= item < 2**63:
            return f"{at}: {item:.3g} is beyond int64"
        if isinstance(item, dict):
            stack.extend((v, f"{at}.{k}") for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{at}[{i}]") for i, v in enumerate(item))
    return None


def _standard(raw: bytes, source: str) -> Any:
    """The document by ``json.loads``, key by key: for a line number, a key given twice, a NaN's field."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsFileError(f"{source}: not UTF-8 text (binary or corrupt?) at byte {exc.start}") from None
    try:
        with gc_paused():
            data = json.loads(text, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as exc:
        raise ResultsFileError(
            f"{source}: not valid JSON (truncated or corrupt?): {exc.msg} at line {exc.lineno}"
        ) from None
    except DuplicateKeyError as exc:
        raise ResultsFileError(f"{source}: {exc}; keep one of them") from None
    except RecursionError:
        raise ResultsFileError(f"{source}: nested too deep to be a dummyprof results file (corrupt?)") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise ResultsFileError(f"{source}: not a dummyprof results file: {exc}") from None
    problem = _unheld(data)
    if problem:
        raise ResultsFileError(f"{source}: {problem}")
    return data


def _plain(raw: bytes, source: str) -> Any:
    """The document as plain values, by msgspec; what it refuses, the standard parser names (or msgspec says)."""
    try:
        with gc_paused():
            return msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError) as exc:
        _standard(raw, source)  # a line number, a NaN's field, a key given twice
        raise ResultsFileError(f"{source}: not valid JSON: {exc}") from None  # e.g. a lone surrogate


def _refuse_repeated_keys(raw: bytes, data: Any, source: str, unread: int) -> None:
    """msgspec keeps the last value of a key given twice; which was meant cannot be known, so the file is refused.

    Counted: re-encoded, the decoded ``data`` has one colon per key, as the file has (colons inside strings
    alike; ``unread``: those of the text left unread); fewer means a key was given twice, and an escaped colon
    (``\\u003a``) could hide one: either way the standard parser reads the file key by key and names the key.
    An integer beyond int64 is refused here too, named: MessagePack holds integers in 64 bits.
    """
    try:
        counted = msgspec.json.encode(data).count(b":")
        msgspec.msgpack.encode(data)
    except RecursionError:
        raise ResultsFileError(f"{source}: nested too deep to be a dummyprof results file (corrupt?)") from None
    except OverflowError:
        raise ResultsFileError(f"{source}: {_unheld(data)}") from None
    if counted + unread != raw.count(b":") or re.search(rb"\\u003[aA]", raw):
        _standard(raw, source)


def results_from_dict(data: Any, *, source: str = "results", tensor_rows: bool = True) -> Results:
    """Results from plain values; ResultsFileError names the field. ``tensor_rows=False``: ``compare.tensors``
    (a row per storage, most of a large file) left unread and empty, for reporters that do not show them."""
    problem = _unheld(data)  # a Python float may be NaN; a file's JSON cannot hold one (msgspec refuses it)
    if problem:
        raise ResultsFileError(f"{source}: {problem}")
    return _from_plain(data, source, tensor_rows)


def _from_plain(data: Any, source: str, tensor_rows: bool) -> Results:
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
    command = data.get("command")
    if version < SCHEMA_VERSION:
        raise ResultsFileError(f"{source}: results schema {version}, which this dummyprof no longer reads "
                               f"(it reads schema {SCHEMA_VERSION}); {_again(command, source)}")  # fmt: skip
    if not isinstance(command, str) or command not in SECTIONS:
        known = ", ".join(sorted(SECTIONS))
        raise ResultsFileError(f"{source}: $.command: {command!r} is not a dummyprof command ({known})")
    section = SECTIONS[command]
    if not isinstance(data.get(section), dict):
        raise ResultsFileError(f"{source}: $.{section}: a {command!r} results file needs its {section!r} section")
    if not tensor_rows and isinstance(data.get("compare"), dict) and "tensors" in data["compare"]:
        data = {**data, "compare": {k: v for k, v in data["compare"].items() if k != "tensors"}}
    try:
        with gc_paused():
            results = msgspec.convert(data, Results)
    except msgspec.ValidationError as exc:
        message, where = said(exc, data, Results)
        raise ResultsFileError(f"{source}: {where}: {message}") from None
    results.schema_version = SCHEMA_VERSION
    return _checked(results, source)


def _again(command: Any, source: str) -> str:
    """The command that writes an older file again, in this dummyprof's schema."""
    again = {name: f"run it again: dummyprof {name} ... --json {source}" for name in SECTIONS}
    again["baseline"] = f"make it again: dummyprof baseline --config CONFIG --output {source}"
    again["gate"] = f"run the gate again: dummyprof gate --config CONFIG --baseline BASELINE --json {source}"
    return again.get(command if isinstance(command, str) else "", "run its command again with --json")


def _checked(results: Results, source: str) -> Results:
    try:
        check_whole(results)
    except Refused as exc:
        raise ResultsFileError(f"{source}: {exc}") from None
    return results


def load_results(path: Path, *, tensor_rows: bool = True, kind: FileKind = RESULTS) -> Results:
    """Load a results file (``-``: standard input); a corrupt, truncated or foreign one raises ResultsFileError.

    ``tensor_rows`` as for :func:`results_from_dict`; ``kind``: the file's bound (files/reading.py).
    """
    path = Path(path)
    source = "<stdin>" if str(path) == "-" else str(path)
    raw = read_bounded(path, kind, refuse=ResultsFileError, stdin=True)
    lean = None if tensor_rows else _without_rows(raw)
    data, unread = lean if lean is not None else (_plain(raw, source), 0)
    _refuse_repeated_keys(raw, data, source, unread)
    return _from_plain(data, source, tensor_rows)
