"""Typer parameters generated from declarations (``dummyprof.schema``): an options dataclass's fields,
and a command's own flags, each a :class:`~dummyprof.schema.Spec` (see :func:`with_options`).
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any, Optional

import typer

from dummyprof.errors import UsageError
from dummyprof.files.outputs import path_of
from dummyprof.scenarios.deployment.options import LAYOUT_FIELDS, check_world
from dummyprof.schema import Spec, flag_of, parse, specs

Command = Callable[..., int]


def param_name(field: str, spec: Spec) -> str:
    """A field's parameter name: its flag's (``strategies`` -> ``strategy``), as ``ctx.params`` keys it."""
    return flag_of(field, spec)[2:].replace("-", "_")


# The type Typer parses a flag's text to, by unit (typer needs Optional on Python 3.10); anything else is text.
KINDS: dict[str, Any] = {
    "flag": bool,
    "list": Optional[list[str]],  # noqa: UP045
    "args": Optional[list[str]],  # noqa: UP045
    "path": Optional[Path],  # noqa: UP045 - a command's own file flags (--output, --trace, ...)
    "pair": Optional[tuple[str, Path]],  # noqa: UP045 - FORMAT PATH (--export)
}


def _parameter(name: str, spec: Spec, default: Any) -> inspect.Parameter:
    names = [flag_of(name, spec), *([spec.short] if spec.short else [])]
    kind = KINDS.get(spec.unit, Optional[str])  # noqa: UP045
    metavar = spec.metavar or {"flag": None, "path": "PATH"}.get(spec.unit, "TEXT")  # a flag shows none
    # A file flag's text becomes a Path here, where an empty value can still be told from "." and refused.
    parser = (lambda text: path_of(names[0], text)) if spec.unit == "path" else None
    info = typer.Option(*names, metavar=metavar, help=spec.help, parser=parser)
    return inspect.Parameter(
        param_name(name, spec), inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[kind, info]
    )


def _field_parameter(field: dataclasses.Field[Any], spec: Spec) -> inspect.Parameter:
    """A field's parameter, its default as the parameter holds it (and the help shows it): a flag's bool, else text
    or None."""
    shown = spec.shown
    if shown is None and field.default is not dataclasses.MISSING and field.default is not None:
        shown = str(field.default)
    return _parameter(field.name, spec, field.default if spec.unit == "flag" else shown or None)


def _declared(cls: type | None, fields: Sequence[str], form: str | None) -> dict[str, tuple[Any, Spec]]:
    """The Spec of each of ``fields`` of ``cls`` as command ``form`` states it (``Spec.forms``, at the field)."""
    every = specs(cls) if cls is not None else {}
    return {n: (every[n][0], every[n][1].said_by(form)) for n in fields if n in every}


def field_spec(cls: type, field: str, form: str | None = None) -> Spec:
    """One field's Spec, as command ``form`` states it: for a command's own flag that parses a field of another
    options class (sweep's ``--dim``, ``--method``: engram's fields)."""
    return specs(cls)[field][1].said_by(form)


def options_from(
    cls: type, fields: Sequence[str], params: Mapping[str, Any], form: str | None = None
) -> tuple[Any, frozenset[str]]:
    """``cls`` from the raw flag values in ``params`` (keyed as ``ctx.params``), and the fields the user gave;
    each field's text parsed as command ``form`` declares it (its name: ``sweep``, ``compare``)."""
    values: dict[str, Any] = {}
    refused: tuple[str, Spec, Any, UsageError] | None = None  # the first value refused, said once the others parse
    for name, (_, spec) in _declared(cls, fields, form).items():
        raw = params.get(param_name(name, spec))
        if raw is None or (spec.unit in ("list", "args") and not raw):
            continue
        if spec.auto and str(raw).strip().lower() == "auto":
            values[spec.auto] = True
            continue
        try:
            values[name] = parse(name, spec, raw)
        except UsageError as exc:
            refused = refused or (name, spec, raw, exc)
    if refused is not None:
        name, spec, raw, first = refused
        if not spec.example:
            raise first
        offer = _offer(cls, name, spec, values)
        parse(name, dataclasses.replace(spec, example=offer), raw)  # refused again, offering what holds (or nothing)
        raise first  # pragma: no cover - parse refused it once
    return cls(**values), frozenset(values)


def _offer(cls: type, name: str, spec: Spec, others: Mapping[str, Any]) -> str:
    """The value a refused flag offers: its example, else its least value, the first that passes with every other
    flag as given the checks that need no torch (the world's bound, ``check_offer`` of the options' group that
    declares one: Engram's split over the ranks); '' if none. The options class itself is not made: some of its
    defaults import torch, which a flag's error never loads."""
    declared = {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
    least = str(int(spec.minimum)) if spec.minimum is not None else ""
    owner = next((k for k in reversed(cls.__mro__) if "check_offer" in vars(k)), None)
    for text in dict.fromkeys(t for t in (spec.example, least) if t):
        values = {**declared, **others, name: parse(name, spec, text)}
        try:
            if all(f in values for f in LAYOUT_FIELDS):
                check_world(SimpleNamespace(**values))  # reads the four sizes only
            if owner is not None:
                owner(**{f.name: values[f.name] for f in dataclasses.fields(owner) if f.name in values}).check_offer()
        except UsageError:
            continue
        return text
    return ""


def with_options(
    cls: type | None, fields: Sequence[str] = (), flags: Mapping[str, Spec] | None = None
) -> Callable[[Command], Command]:
    """Typer options for ``fields`` of ``cls``, in that order, before the command's own parameters.

    Each field as this command states it: the form its declaration gives for the command's name (the function's,
    ``sweep``), else the field's own (``Spec.forms``); no command restates a field's help or metavar.

    ``fields`` may also name the command's own parameters, to place them among the generated ones.
    The command receives what it declares: ``options`` (built and parsed), ``given`` (the fields
    the user gave), ``raw`` (the generated options' text, to parse itself), and its own parameters.
    An own parameter named in ``flags`` keeps its name (``benchmark_json`` is ``--benchmark-json``) and
    default; its Spec gives the unit (``text``, ``flag``, ``list``, ``path``, ``pair``), metavar, short name and help.
    """

    def wrap(fn: Command) -> Command:
        form = fn.__name__
        declared = _declared(cls, fields, form)
        own = {p.name: p for p in inspect.signature(fn).parameters.values()}
        hints = typing.get_type_hints(fn, include_extras=True)
        special = ("options", "given", "raw", "ctx")

        def mine(name: str) -> inspect.Parameter:
            if flags and name in flags:
                return _parameter(name, flags[name], own[name].default)
            return own[name].replace(annotation=hints[name], kind=inspect.Parameter.KEYWORD_ONLY)

        params = [mine("ctx")] if "ctx" in own else []
        for name in fields:  # a parameter the command declares itself wins over the field of that name
            params.append(mine(name) if name in own else _field_parameter(*declared[name]))
        params += [mine(n) for n in own if n not in special and n not in fields]
        generated = {param_name(n, spec) for n, (_, spec) in declared.items() if n not in own}

        def command(**kwargs: Any) -> int:
            passed = {k: v for k, v in kwargs.items() if k not in generated}
            if "raw" in own:
                passed["raw"] = {k: v for k, v in kwargs.items() if k in generated}
            if "options" in own and cls is not None:
                passed["options"], given = options_from(cls, fields, kwargs, form)
                if all(hasattr(passed["options"], f) for f in LAYOUT_FIELDS):
                    check_world(passed["options"])  # bounded while parsing, before torch and the scenario load
                if "given" in own:
                    passed["given"] = given
            return fn(**passed)

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        command.__name__ = fn.__name__
        command.__doc__ = fn.__doc__
        return command

    return wrap
