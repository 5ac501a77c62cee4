"""One bounded read for every file dummyprof parses (``report /dev/zero`` once read 3.3 GB before failing), of
regular files only (a FIFO with no writer cannot hang the run) or a documented ``-``; JSON objects that may not
repeat a key; a msgspec error's path with a mapping's key named (``said``)."""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin, get_type_hints

from dummyprof.units import format_bytes

if TYPE_CHECKING:  # msgspec is imported where a file is decoded, not by `dummyprof --help`
    import msgspec

STDIN = "-"
STDIN_FILE = Path("/dev/stdin")  # what descriptor 0 is: a file compared by device and inode, or a pipe


def backing_file(path: str | Path) -> Path | None:
    """The regular file a read of ``path`` reads: itself, or the archive it lies in (``pkgs.zip/mod.py``)."""
    for candidate in (Path(path), *Path(path).parents):
        if candidate.exists():
            return candidate if candidate.is_file() else None
    return None


@dataclass(frozen=True)
class FileKind:  # the most bytes a kind of file may hold, and what to give instead (in messages)
    limit: int
    give: str


# The bounds, each well above any file dummyprof writes of that kind (docs/promises.md):
# a compare file of a ~100k-tensor model was 259 MB, a baseline of ten scenarios is ~100 kB,
# a gate config a few kB, and the largest Hugging Face config.json known to us under 1 MB.
RESULTS = FileKind(1 << 30, "a results file written by --json")
BASELINE = FileKind(64 << 20, "a baseline written by dummyprof baseline")
GATE_CONFIG = FileKind(1 << 20, "a TOML file such as dummyprof.toml")
HF_CONFIG = FileKind(16 << 20, "a Hugging Face config.json")

Refuse = Callable[[str], Exception]

_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _too_large(source: str, kind: FileKind, size: int | None = None) -> str:
    found = f"is {format_bytes(size)}" if size is not None else "holds more"
    return f"{source}: {found}, more than the {format_bytes(kind.limit)} dummyprof reads; give {kind.give}"


def _read_at_most(handle: Any, limit: int) -> bytes:
    """At most ``limit + 1`` bytes: enough to know it is too large."""
    chunks: list[bytes] = []
    left = limit + 1
    while left > 0:
        chunk = handle.read(min(left, 1 << 24))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_bounded(path: Path | str, kind: FileKind, *, refuse: Refuse, stdin: bool = False) -> bytes:
    """The bytes of the regular file ``path`` (``-``: standard input when ``stdin``), at most ``kind.limit``;
    ``refuse(message)`` for anything else, the message naming the file and what to give instead."""
    limit, what = kind.limit, kind.give
    if stdin and str(path) == STDIN:
        data = _read_at_most(sys.stdin.buffer, limit)
        if len(data) > limit:
            raise refuse(_too_large("<stdin>", kind))
        return data
    source = str(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once (and is refused below) instead of hanging.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise refuse(f"{source}: no such file") from None
    except IsADirectoryError:
        raise refuse(f"{source}: is a directory; give {what}") from None
    except OSError as exc:
        raise refuse(f"{source}: cannot read ({exc.strerror or exc})") from None
    # What was opened is checked before it is wrapped: os.open gives a folder a descriptor that os.fdopen refuses.
    st = os.fstat(fd)
    problem = (
        f"is a directory; give {what}"
        if stat.S_ISDIR(st.st_mode)
        else f"{_kind(st.st_mode)}, not a regular file; give {what}"
        if not stat.S_ISREG(st.st_mode)
        else None
    )
    if problem is not None or st.st_size > limit:
        os.close(fd)
        raise refuse(f"{source}: {problem}" if problem else _too_large(source, kind, st.st_size))
    with os.fdopen(fd, "rb", buffering=0) as handle:
        os.set_blocking(fd, True)
        try:
            data = _read_at_most(handle, limit)
        except OSError as exc:
            raise refuse(f"{source}: cannot read ({exc.strerror or exc})") from None
    if len(data) > limit:  # it grew while being read
        raise refuse(_too_large(source, kind))
    return data


class DuplicateKeyError(ValueError):
    """A JSON object names a key twice: which value was meant cannot be known."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for ``json.loads`` (which keeps a repeated key's last value without a word)."""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(f"the key {key!r} appears twice in one object")
            seen.add(key)
    return result


def _fails(value: Any, kind: Any) -> bool:
    import msgspec

    try:
        msgspec.convert(value, kind)
    except msgspec.ValidationError:
        return True
    return False


def _field_types(kind: Any) -> dict[str, Any]:
    import msgspec

    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        return {f.name: f.type for f in msgspec.structs.fields(kind)}
    return get_type_hints(kind, include_extras=True) if isinstance(kind, type) else {}


def _inner(kind: Any) -> Any:
    """``kind`` without ``| None``: the type of the value below a path step."""
    options = [a for a in get_args(kind) if a is not type(None)] if get_origin(kind) in (Union, UnionType) else []
    return options[0] if len(options) == 1 else kind


def said(exc: msgspec.ValidationError, data: Any, kind: type) -> tuple[str, str]:
    """msgspec's message about ``data`` decoded as ``kind``, and the field's path, a mapping's key (msgspec's
    ``[...]``) named by walking ``data`` and the types again: the first key whose value is refused."""
    message, _, where = str(exc).partition(" - at `")
    steps = re.findall(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]", where.rstrip("`")[1:])
    path, value, kind = "$", data, _inner(kind)
    for name, index in steps:
        if name:
            kind = _inner(_field_types(kind).get(name, Any))
            value, path = value.get(name) if isinstance(value, dict) else None, f"{path}.{name}"
        elif index == "...":
            kind = _inner(get_args(kind)[1]) if get_origin(kind) is dict else Any
            key = next((k for k, v in value.items() if _fails(v, kind)), None) if isinstance(value, dict) else None
            value, path = (value[key], f"{path}.{key}") if key is not None else (None, f"{path}[...]")
        else:
            kind = _inner(get_args(kind)[0]) if get_origin(kind) is list else Any
            value, path = value[int(index)] if isinstance(value, list) else None, f"{path}[{index}]"
    return message, path
