"""Dataclasses to and from plain JSON values.

Missing keys take the field's default, so files written by an older schema
load with defaults; unknown keys are ignored, so newer files still load
(``strict=True`` rejects them: a hand-edited baseline with a typo must not
pass silently). Every value is checked against its field's type: ``null``
only where the field is optional, numbers finite and within what a float (or
an int64) holds, so a corrupt or hostile file is one TypeError naming the
field, never a crash deep inside a reporter.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

T = TypeVar("T")

INT_LIMIT = 2**63  # counts and sizes are int64 wherever they came from


def to_jsonable(value: Any) -> Any:
    """Plain dicts, lists and scalars; properties are not stored, only fields."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


MAX_DEPTH = 64  # the deepest a dummyprof document nests is about 8; deeper free-form values are corrupt or hostile


def _spelled(number: float) -> str:
    """A non-finite number as it stands in a JSON file: NaN, Infinity, -Infinity."""
    return "NaN" if number != number else ("Infinity" if number > 0 else "-Infinity")


def check_free_value(value: Any, where: str) -> None:
    """A value no field types (``options``, an unknown key): finite numbers, int64, bounded nesting."""
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        item, at, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise TypeError(f"{at}: nested more than {MAX_DEPTH} levels deep (corrupt?)")
        if isinstance(item, float) and not math.isfinite(item):
            raise TypeError(f"{at}: {_spelled(item)} is not a finite number")
        if isinstance(item, int) and not isinstance(item, bool) and not -INT_LIMIT <= item < INT_LIMIT:
            raise TypeError(f"{at}: {item:.3g} is too large (beyond int64)")
        if isinstance(item, dict):
            stack.extend((v, f"{at}.{k}", depth + 1) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{at}[{i}]", depth + 1) for i, v in enumerate(item))


_ORIGINS: dict[Any, Any] = {}


def _origin(tp: Any) -> Any:
    try:
        return _ORIGINS[tp]
    except KeyError:
        _ORIGINS[tp] = origin = get_origin(tp)
        return origin


def _convert(tp: Any, value: Any, where: str, strict: bool = False) -> Any:
    # The common leaves first: a large results file is millions of these (report -q on 158 MB took 54 s).
    kind = type(value)
    if tp is str and kind is str:
        return value
    if tp is int and kind is int and -INT_LIMIT <= value < INT_LIMIT:
        return value
    if tp is float and kind is float and math.isfinite(value):
        return value
    if tp is Any:
        check_free_value(value, where)
        return value
    origin = _origin(tp)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in get_args(tp):
            return None
        options = [a for a in get_args(tp) if a is not type(None)]
        if len(options) == 1:
            return _convert(options[0], value, where, strict)
        for option in options:
            try:
                return _convert(option, value, where, strict)
            except (TypeError, ValueError):
                continue
        raise TypeError(f"{where}: {_show(value)} matches none of {tp}")
    if value is None:
        raise TypeError(f"{where}: must not be null")
    if origin in (list, typing.List):  # noqa: UP006
        (item,) = get_args(tp) or (Any,)
        if not isinstance(value, list):
            raise TypeError(f"{where}: expected a list, got {type(value).__name__}")
        return [_convert(item, v, f"{where}[{i}]", strict) for i, v in enumerate(value)]
    if origin is tuple:
        args = get_args(tp)
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"{where}: expected a list, got {type(value).__name__}")
        item = args[0] if args else Any
        return tuple(_convert(item, v, f"{where}[{i}]", strict) for i, v in enumerate(value))
    if origin is dict:
        _, item = get_args(tp) or (str, Any)
        if not isinstance(value, dict):
            raise TypeError(f"{where}: expected an object, got {type(value).__name__}")
        return {k: _convert(item, v, f"{where}.{k}", strict) for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return from_jsonable(tp, value, where, strict=strict)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{where}: expected a number, got {_show(value)}")
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise TypeError(f"{where}: {_spelled(number)} is not a finite number")
        return number
    if tp in (int, str, bool):
        if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
            raise TypeError(f"{where}: expected {tp.__name__}, got {_show(value)}")
        if tp is int and not -INT_LIMIT <= value < INT_LIMIT:
            raise TypeError(f"{where}: {_show(value)} is too large (beyond int64)")
        return value
    return value


_FIELDS: dict[type, tuple[tuple[dataclasses.Field[Any], ...], frozenset[str]]] = {}


def _fields(cls: type) -> tuple[tuple[dataclasses.Field[Any], ...], frozenset[str]]:
    if cls not in _FIELDS:
        fields = dataclasses.fields(cls)
        _FIELDS[cls] = fields, frozenset(f.name for f in fields)
    return _FIELDS[cls]


def from_jsonable(cls: type[T], data: Any, where: str = "$", *, strict: bool = False) -> T:
    """Build dataclass ``cls`` from ``data``; raises TypeError naming the bad field."""
    if not isinstance(data, dict):
        raise TypeError(f"{where}: expected an object, got {type(data).__name__}")
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    fields, names = _fields(cls)
    for key in data.keys() - names:  # ignored (a newer file's field), but never trusted blindly
        if strict:
            raise TypeError(f"{where}: unknown field {key!r}")
        check_free_value(data[key], f"{where}.{key}")
    for field in fields:
        if field.name in data:
            kwargs[field.name] = _convert(hints[field.name], data[field.name], f"{where}.{field.name}", strict)
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise TypeError(f"{where}: missing required field {field.name!r}")
    return cls(**kwargs)
