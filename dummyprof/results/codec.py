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
import functools
import math
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin, get_type_hints

import msgspec

T = TypeVar("T")

INT_LIMIT = 2**63  # counts and sizes are int64 wherever they came from


_SCALARS = frozenset({str, int, float, bool, type(None)})
_field_names: Callable[[type], tuple[str, ...] | None] = functools.cache(
    lambda kind: tuple(f.name for f in dataclasses.fields(kind)) if dataclasses.is_dataclass(kind) else None
)


def to_jsonable(value: Any) -> Any:
    """Plain dicts, lists and scalars; properties are not stored, only fields."""
    if type(value) in _SCALARS:
        return value
    names = _field_names(type(value))
    if names is not None:
        return {name: to_jsonable(getattr(value, name)) for name in names}
    # A list or dict of scalars (most of a large file's rows) is copied whole, at C speed.
    if isinstance(value, dict):
        if set(map(type, value)) <= {str} and set(map(type, value.values())) <= _SCALARS:
            return dict(value)
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if set(map(type, value)) <= _SCALARS:
            return list(value)
        return [to_jsonable(v) for v in value]
    return value


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


# Every type a field declares is looked up once: a large file converts millions of values.
_origin: Callable[[Any], Any] = functools.cache(get_origin)
_args: Callable[[Any], tuple[Any, ...]] = functools.cache(get_args)


_LEAVES = (str, int, float)


def _all_plain(item: Any, values: Any) -> bool:
    """Every value is already a valid ``item`` (str, an int64 int, a finite float), checked at C speed.

    The common case of a list or dict of leaves (shapes, names, visits per strategy); when it fails,
    the caller walks the values one by one to name the bad one.
    """
    if item not in _LEAVES or not set(map(type, values)) <= {item}:
        return False
    if item is int and values:
        return min(values) >= -INT_LIMIT and max(values) < INT_LIMIT
    if item is float:
        return all(map(math.isfinite, values))
    return True


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
        if value is None and type(None) in _args(tp):
            return None
        options = [a for a in _args(tp) if a is not type(None)]
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
    if origin in (list, tuple):  # typing.List[int] too; a tuple[int, ...] is stored as a list
        item = (_args(tp) or (Any,))[0]
        if not isinstance(value, (list, tuple) if origin is tuple else list):
            raise TypeError(f"{where}: expected a list, got {type(value).__name__}")
        if _all_plain(item, value):
            return origin(value)
        return origin([_convert(item, v, f"{where}[{i}]", strict) for i, v in enumerate(value)])
    if origin is dict:
        _, item = _args(tp) or (str, Any)
        if not isinstance(value, dict):
            raise TypeError(f"{where}: expected an object, got {type(value).__name__}")
        if _all_plain(item, value.values()):
            return dict(value)
        return {k: _convert(item, v, f"{where}.{k}", strict) for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return from_jsonable(tp, value, where, strict=strict)
    # An integer literal is held to int64 for a float too: 10**30 would pass as a finite float, an edited counter.
    if tp in (int, float) and isinstance(value, int) and not -INT_LIMIT <= value < INT_LIMIT:
        raise TypeError(f"{where}: {_show(value)} is too large (beyond int64)")
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{where}: expected a number, got {_show(value)}")
        number = float(value)  # an int64 always converts
        if not math.isfinite(number):
            raise TypeError(f"{where}: {_spelled(number)} is not a finite number")
        return number
    if tp in (int, str, bool) and (not isinstance(value, tp) or (tp is int and isinstance(value, bool))):
        raise TypeError(f"{where}: expected {tp.__name__}, got {_show(value)}")
    return value


class _Field(typing.NamedTuple):
    """How :func:`from_jsonable` reads one field: its type, and the shortcut its common values take."""

    name: str
    tp: Any
    required: bool
    leaf: type | None  # str, int or float: the value itself, when it is a valid one
    container: type | None  # list or dict of ``item``s (str, int or float): a copy, when every item is valid
    item: Any


_PLANS: dict[type, tuple[tuple[_Field, ...], frozenset[str]]] = {}


def _plan(cls: type) -> tuple[tuple[_Field, ...], frozenset[str]]:
    if cls not in _PLANS:
        hints = get_type_hints(cls)
        plan = []
        for f in dataclasses.fields(cls):
            tp = hints[f.name]
            origin, args = _origin(tp), _args(tp)
            item = args[-1] if origin in (list, dict) and args else None
            plan.append(
                _Field(
                    f.name,
                    tp,
                    f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
                    tp if tp in _LEAVES else None,
                    origin if item in _LEAVES else None,
                    item,
                )
            )
        _PLANS[cls] = tuple(plan), frozenset(f.name for f in plan)
    return _PLANS[cls]


def from_jsonable(cls: type[T], data: Any, where: str = "$", *, strict: bool = False) -> T:
    """Build dataclass ``cls`` from ``data``; raises TypeError naming the bad field."""
    if not isinstance(data, dict):
        raise TypeError(f"{where}: expected an object, got {type(data).__name__}")
    kwargs: dict[str, Any] = {}
    plan, names = _plan(cls)
    if not data.keys() <= names:
        for key in data.keys() - names:  # ignored (a newer file's field), but never trusted blindly
            if strict:
                raise TypeError(f"{where}: unknown field {key!r}")
            check_free_value(data[key], f"{where}.{key}")
    for name, tp, required, leaf, container, item in plan:
        if name not in data:
            if required:
                raise TypeError(f"{where}: missing required field {name!r}")
            continue
        value = data[name]
        kind = type(value)
        # The common cases inline, as in _convert: a large file is millions of these.
        if kind is leaf and (
            kind is str or (kind is int and -INT_LIMIT <= value < INT_LIMIT) or (kind is float and math.isfinite(value))
        ):
            kwargs[name] = value
        elif kind is container and _all_plain(item, value if kind is list else value.values()):
            kwargs[name] = kind(value)
        else:
            kwargs[name] = _convert(tp, value, f"{where}.{name}", strict)
    return cls(**kwargs)


def _int64(tp: Any) -> Any:
    """``tp`` for msgspec, with every int held to int64 as :func:`_convert` holds it."""
    if tp is int:
        return Annotated[int, msgspec.Meta(ge=-INT_LIMIT, le=INT_LIMIT - 1)]
    origin = _origin(tp)
    return origin[tuple(map(_int64, _args(tp)))] if origin in (list, dict) else tp


def rows_from_json(cls: type[Any], text: Any, colons: int) -> dict[str, Any] | None:
    """A JSON object of flat ``cls`` rows (str, int, lists and dicts of them) by msgspec, 5x faster; else None.

    Every field, no other, in msgspec's types (stricter than the codec's: no float for an int, no NaN, no lone
    surrogate). msgspec keeps the last of a key given twice: the ``colons`` in ``text`` must be the keys read.
    """
    hints = get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    row_type = msgspec.defstruct(cls.__name__, [(n, _int64(hints[n])) for n in names], forbid_unknown_fields=True)
    try:
        rows = msgspec.json.decode(text, type=dict[str, row_type])  # type: ignore[valid-type]
    except (msgspec.DecodeError, RecursionError):
        return None
    mappings = [n for n in names if _origin(hints[n]) is dict]
    keys = len(rows) * (1 + len(names)) + sum(len(getattr(row, n)) for row in rows.values() for n in mappings)
    if keys != colons:
        return None
    return {key: cls(*msgspec.structs.astuple(row)) for key, row in rows.items()}
