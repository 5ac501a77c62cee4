"""Typer parameters generated from an options dataclass's declarations (``dummyprof.schema``).

A command names the fields it offers, in the order ``--help`` lists them; each becomes a Typer
option with the field's flag, metavar, help and shown default. The command function receives
the options built from them (``options``), ahead of its own CLI-only parameters (``--json``...).
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Optional

import typer

from dummyprof.errors import flag_for
from dummyprof.schema import Spec, parse, specs

Command = Callable[..., int]


def param_name(field: str) -> str:
    """The Python name of a field's parameter: its flag's (``strategies`` -> ``strategy``), as ``ctx.params`` keys it."""
    return flag_for(field)[2:].replace("-", "_")


def _parameter(field: dataclasses.Field[Any], spec: Spec, help: str) -> inspect.Parameter:
    names = [flag_for(field.name), *([spec.short] if spec.short else [])]
    if spec.unit == "flag":
        info = typer.Option(*names, help=help)
        return inspect.Parameter(param_name(field.name), inspect.Parameter.KEYWORD_ONLY, default=field.default,
                                 annotation=Annotated[bool, info])
    many = spec.unit in ("list", "args")
    kind: Any = Optional[list[str]] if many else Optional[str]  # noqa: UP045 - typer needs Optional on Python 3.10
    shown = spec.shown
    if shown is None and field.default is not dataclasses.MISSING and field.default is not None:
        shown = str(field.default)
    info = typer.Option(*names, metavar=spec.metavar, help=help)
    return inspect.Parameter(param_name(field.name), inspect.Parameter.KEYWORD_ONLY, default=shown or None,
                             annotation=Annotated[kind, info])


def options_from(cls: type, fields: Sequence[str], params: Mapping[str, Any]) -> tuple[Any, frozenset[str]]:
    """``cls`` from the raw flag values in ``params`` (keyed as ``ctx.params``), and the fields the user gave."""
    declared = specs(cls)
    values: dict[str, Any] = {}
    for name in fields:
        field, spec = declared[name]
        raw = params.get(param_name(name))
        if raw is None or (spec.unit in ("list", "args") and not raw):
            continue
        if spec.auto and str(raw).strip().lower() == "auto":
            values[spec.auto] = True
            continue
        values[name] = parse(name, spec, raw)
    return cls(**values), frozenset(values)


def with_options(
    cls: type, fields: Sequence[str], *, help: Mapping[str, str] | None = None
) -> Callable[[Command], Command]:
    """Generate ``fields``' Typer options (``help`` overrides a field's help for this command)."""
    declared = specs(cls)
    extra_help = dict(help or {})

    def wrap(fn: Command) -> Command:
        own = inspect.signature(fn).parameters.values()
        hints = typing.get_type_hints(fn, include_extras=True)
        ctx_params = [p.replace(annotation=hints[p.name]) for p in own if p.name == "ctx"]
        generated = [_parameter(declared[n][0], declared[n][1], extra_help.get(n, declared[n][1].help)) for n in fields]
        rest = [
            p.replace(annotation=hints[p.name], kind=inspect.Parameter.KEYWORD_ONLY)
            for p in own
            if p.name not in ("options", "given", "ctx")
        ]
        takes_given = any(p.name == "given" for p in own)
        # A command without an ``options`` parameter parses later itself (options_from(ctx.params)):
        # a rank of a multi-rank run parses after joining, so rank 0 reports every rank's bad input.
        takes_options = any(p.name == "options" for p in own)
        mine = {param_name(n) for n in fields}

        def command(**kwargs: Any) -> int:
            passed = {k: v for k, v in kwargs.items() if k not in mine}
            if not takes_options:
                return fn(**passed)
            options, given = options_from(cls, fields, kwargs)
            if takes_given:
                passed["given"] = given
            return fn(options, **passed)

        params = [*ctx_params, *generated, *rest]
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        command.__name__ = fn.__name__
        command.__doc__ = fn.__doc__
        return command

    return wrap
