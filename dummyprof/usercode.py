"""A user's code named on the command line (``--model``, ``--loader``): ``package.module:callable`` or
``./file.py:callable``. Torch-free; nothing of it is imported before :func:`resolve_callable`."""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any

from dummyprof.errors import UsageError, running_user_code
from dummyprof.files.reading import backing_file

SPEC_FORMS = "package.module:callable or ./file.py:callable"


def parse_call_args(items: Iterable[str], *, flag: str = "--model-arg") -> dict[str, Any]:
    """``key=value`` pairs; values are Python literals (``4``, ``1e-3``, ``'bf16'``, ``[1, 2]``), else plain strings."""
    parsed: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise UsageError(flag, f"expected key=value with a Python name as key, got {item!r}; e.g. {flag} layers=4")
        if key in parsed:
            raise UsageError(flag, f"{key!r} is given twice")
        parsed[key] = _literal(flag, key, text.strip())
    return parsed


SHOWN_NAMES = 12  # of a module's callables, in a "has no attribute" error

# A bare word (bfloat16, cuda:0, my-model) stays a string; anything with brackets or quotes
# that is not a valid literal is a typo ([1,2 or 'bf16) and must not silently become a string.
_BARE_WORD = re.compile(r"[A-Za-z_][\w.:/+-]*")


QUOTED_CHARS = 60  # of a value echoed in an error: a 100 kB argument is not repeated in full


def _quoted(text: str) -> str:
    if len(text) <= QUOTED_CHARS:
        return repr(text)
    return f"{text[:QUOTED_CHARS]!r}... ({len(text):,} characters)"


def _literal(flag: str, key: str, text: str) -> Any:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        if _BARE_WORD.fullmatch(text):
            return text
        raise UsageError(
            flag,
            f"{key}={_quoted(text)} is not a Python literal (an unclosed bracket or quote?); "
            f"write e.g. {key}=[1, 2] or {key}='text'",
        ) from None
    _check_literal(flag, key, value)
    return value


def _check_literal(flag: str, key: str, value: Any) -> None:
    """Integers beyond int64 (a C++ overflow in torch) and non-finite floats, refused with the key."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool) and not -(2**63) <= item < 2**63:
            raise UsageError(flag, f"{key}: {item:.3g} is beyond int64; no model size can be that large")
        if isinstance(item, float) and not math.isfinite(item):
            raise UsageError(flag, f"{key}: {item} is not a finite number")
        if isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())


def _file_module(target: str, flag: str) -> Any:
    path = Path(target)
    if not path.is_file():
        raise UsageError(flag, f"no such file {target!r}; give {SPEC_FORMS}")
    resolved = path.resolve()
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:10]
    name = f"_dummyprof_user_{resolved.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise UsageError(flag, f"cannot import {str(path)!r} as Python source; give {SPEC_FORMS}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look a module up by name while it executes
    try:
        with running_user_code(flag, f"importing {str(path)!r}"):
            spec.loader.exec_module(module)
    except UsageError:
        del sys.modules[name]
        raise
    return module


def _package_module(name: str, flag: str) -> Any:
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)  # as ``python -m`` would: modules next to the user resolve
    try:
        with running_user_code(flag, f"importing module {name!r}", passes=(ModuleNotFoundError,)):
            return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise UsageError(flag, f"cannot import module {name!r}: {exc}; check the name or PYTHONPATH") from exc


def _split(spec: str, flag: str) -> tuple[str, str, bool]:
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise UsageError(flag, f"expected {SPEC_FORMS}, got {spec!r}")
    return target, attr, _is_file(target)


def _is_file(target: str) -> bool:
    return target.endswith(".py") or "/" in target or os.sep in target


def callable_name(spec: str) -> str:
    return spec.rpartition(":")[2]


def check_spec(spec: str, *, flag: str) -> None:
    """The spec's form, and that its file exists, without importing anything (finding a package module may import
    its parents: :func:`resolve_callable` reports it)."""
    target, _, is_file = _split(spec, flag)
    if is_file and not Path(target).is_file():
        raise UsageError(flag, f"no such file {target!r}; give {SPEC_FORMS}")


def module_file(dotted: str) -> Path | None:
    """The file (or archive) ``import dotted`` would read, found without importing its packages."""
    search: list[str] | None = [os.getcwd(), *(p or os.getcwd() for p in sys.path)]  # cwd first, as --model does
    spec = None
    parts = dotted.split(".")
    for i in range(len(parts)):
        try:
            spec = PathFinder.find_spec(".".join(parts[: i + 1]), search)
        except (ImportError, ValueError):
            return None
        if spec is None:
            return None
        locations = spec.submodule_search_locations
        search = list(locations) if locations is not None else None
        if search is None and i < len(parts) - 1:
            return None
    origin = spec.origin if spec is not None else None
    return backing_file(origin) if origin else None


def spec_reads(spec: str) -> Iterator[tuple[str, Path]]:
    """The files a spec's code is read from, ``(what, path)`` with ``{flag}`` for the flag that named it; none for a
    name (a named loader such as hf-init)."""
    target, sep, _ = spec.rpartition(":")
    if not sep or not target:
        return
    if _is_file(target):
        yield "the {flag} input", Path(target)
    elif (found := module_file(target)) is not None:
        yield f"the {{flag}} input (module {target})", found


def resolve_callable(spec: str, *, flag: str = "--model") -> Callable[..., Any]:
    """Import ``module:attr`` or ``file.py:attr`` (``attr`` may be dotted) and return the callable."""
    target, attr, is_file = _split(spec, flag)
    module = _file_module(target, flag) if is_file else _package_module(target, flag)
    value: Any = module
    for part in attr.split("."):
        if not hasattr(value, part):
            public = sorted(n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n, None)))
            more = f" and {len(public) - SHOWN_NAMES} more" if len(public) > SHOWN_NAMES else ""
            hint = f"; it defines: {', '.join(public[:SHOWN_NAMES])}{more}" if public else ""
            raise UsageError(flag, f"{target!r} has no attribute {attr!r}{hint}")
        value = getattr(value, part)
    if not callable(value):
        raise UsageError(flag, f"{spec!r} is a {type(value).__name__}, not a callable")
    return value
