"""Dataclasses to and from plain JSON values.

Missing keys take the field's default, so files written by an older schema
load with defaults; unknown keys are ignored, so newer files still load.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

T = TypeVar("T")


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


def _convert(tp: Any, value: Any, where: str) -> Any:
    if tp is Any or value is None:
        return value
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(tp) if a is not type(None)]
        if len(options) == 1:
            return _convert(options[0], value, where)
        for option in options:
            try:
                return _convert(option, value, where)
            except (TypeError, ValueError):
                continue
        raise TypeError(f"{where}: {value!r} matches none of {tp}")
    if origin in (list, typing.List):  # noqa: UP006
        (item,) = get_args(tp) or (Any,)
        if not isinstance(value, list):
            raise TypeError(f"{where}: expected a list, got {type(value).__name__}")
        return [_convert(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is tuple:
        args = get_args(tp)
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"{where}: expected a list, got {type(value).__name__}")
        item = args[0] if args else Any
        return tuple(_convert(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        _, item = get_args(tp) or (str, Any)
        if not isinstance(value, dict):
            raise TypeError(f"{where}: expected an object, got {type(value).__name__}")
        return {k: _convert(item, v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return from_jsonable(tp, value, where)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp in (int, str, bool):
        if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
            raise TypeError(f"{where}: expected {tp.__name__}, got {value!r}")
        return value
    return value


def from_jsonable(cls: type[T], data: Any, where: str = "$") -> T:
    """Build dataclass ``cls`` from ``data``; raises TypeError naming the bad field."""
    if not isinstance(data, dict):
        raise TypeError(f"{where}: expected an object, got {type(data).__name__}")
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        if field.name in data:
            kwargs[field.name] = _convert(hints[field.name], data[field.name], f"{where}.{field.name}")
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise TypeError(f"{where}: missing required field {field.name!r}")
    return cls(**kwargs)
