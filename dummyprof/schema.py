"""Options declared once: each field's default, unit, bounds and help live on the options dataclass.

``option(...)`` is a ``dataclasses.field`` carrying a :class:`Spec`. From it the CLI builds its
Typer parameters (``cli/schema_command.py``), parses and bounds the flag's text (``parse``), and
every entry point (CLI, gate TOML, Python API) checks typed values once, in the scenario's
``validate`` (``check_values``). Errors name the options *field*; the edges turn it into a flag
(``--depth``) or a config key (``scenarios.NAME.options.depth``).

Torch-free: the CLI reads these declarations before anything heavy is imported.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass
from typing import Any

from dummyprof import units
from dummyprof.errors import UsageError, declare_flag


@dataclass(frozen=True)
class Spec:
    """How one options field is given: its unit (how text becomes a value), bounds and help."""

    help: str = ""
    unit: str = "text"  # text, int, count, bytes, seconds, flag, list, args
    minimum: float | None = None
    maximum: int | None = None
    example: str = ""
    metavar: str | None = None
    short: str | None = None  # e.g. "-s"
    shown: str | None = None  # the default as the help shows it (and as it would be typed), e.g. "60s"; "": hidden
    auto: str | None = None  # the bool field that the text "auto" sets instead of this one (--repeat auto)
    flag: str | None = None  # the flag, where it is not ``--`` + the field with dashes (--strategy for strategies)
    # How a command states this field its own way, declared here with the field: command name (or a tuple of
    # names) -> the Spec fields that differ, e.g. sweep's ``{"metavar": "RANGE", "help": "..., or a range."}``.
    forms: Mapping[str | tuple[str, ...], Mapping[str, Any]] = dataclasses.field(default_factory=dict)

    def said_by(self, command: str | None) -> Spec:
        """This field as ``command`` gives it: the form declared for that command, else the field's own."""
        for names, changes in self.forms.items():
            if command is not None and command in ((names,) if isinstance(names, str) else names):
                return dataclasses.replace(self, **changes)
        return self


# The metavar each unit shows in --help, unless a field states its own.
METAVARS = {"int": "INT", "count": "COUNT", "bytes": "SIZE", "seconds": "DURATION", "args": "KEY=VALUE"}


class _Declared(dataclasses.Field):
    """A field made by :func:`option`: as its class is made, a flag it declares becomes the flag errors name."""

    __slots__ = ()

    def __set_name__(self, owner: type, name: str) -> None:
        flag = self.metadata.get("flag") or getattr(self.metadata.get("spec"), "flag", None)
        if flag:
            declare_flag(name, flag)
        super().__set_name__(owner, name)


def option(default: Any = MISSING, *, factory: Callable[[], Any] | None = None, **spec: Any) -> Any:
    """A dataclass field with its :class:`Spec` (``help=``, ``unit=``, ``minimum=``, ``flag=``, ...)."""
    spec.setdefault("metavar", METAVARS.get(spec.get("unit", "text")))
    factory_or_missing: Any = MISSING if factory is None else factory
    field = dataclasses.field(default=default, default_factory=factory_or_missing, metadata={"spec": Spec(**spec)})
    object.__setattr__(field, "__class__", _Declared)  # the same slots; dataclasses takes it for a Field
    return field


def given_as(default: Any, flag: str) -> Any:
    """A plain field (no Spec: nothing generated or checked for it) that a command's own flag gives, e.g.
    ``dist_timeout_s`` by ``--dist-timeout``: errors about it name that flag."""
    field = dataclasses.field(default=default, metadata={"flag": flag})
    object.__setattr__(field, "__class__", _Declared)
    return field


def flag_of(name: str, spec: Spec) -> str:
    """The flag of field ``name``: the one its Spec declares, else ``--`` + the name with dashes."""
    return spec.flag or "--" + name.replace("_", "-")


def integer(default: int | None, help: str, *, example: str = "", minimum: int = 1, **spec: Any) -> Any:
    """A whole-number option (``INT``) at least ``minimum``; a refused value is offered ``example`` (else the default,
    if it has one): a value that passes every later check too, whatever the other flags are."""
    offered = example or ("" if default is None else str(default))
    return option(default, unit="int", minimum=minimum, example=offered, help=help, **spec)


def size(default: int | None, help: str, **spec: Any) -> Any:
    """A number of bytes (``SIZE``: 8GiB, 1e9)."""
    return option(default, unit="bytes", help=help, **spec)


def duration(default: float | None, help: str, **spec: Any) -> Any:
    """A number of seconds (``DURATION``: 60, 5m)."""
    return option(default, unit="seconds", help=help, **spec)


def specs(cls: type) -> dict[str, tuple[dataclasses.Field[Any], Spec]]:
    """Every declared field of an options class, in declaration order."""
    return {f.name: (f, f.metadata["spec"]) for f in dataclasses.fields(cls) if "spec" in f.metadata}


def parse(name: str, spec: Spec, text: Any) -> Any:
    """The value of field ``name`` from the command line's text, bounded as declared; errors name the field."""
    flag = flag_of(name, spec)
    example: dict[str, Any] = {"example": spec.example} if spec.example else {}
    bounds: dict[str, Any] = {"maximum": spec.maximum or units.INT64_MAX, **example}
    try:
        if spec.unit in ("int", "count"):
            parser: Callable[..., int] = units.parse_int if spec.unit == "int" else units.parse_count
            return parser(flag, text, **bounds, **({"minimum": int(spec.minimum)} if spec.minimum is not None else {}))
        if spec.unit == "bytes":
            return units.parse_bytes(flag, text, **bounds)
        if spec.unit == "seconds":
            return units.parse_seconds(flag, text, **example)
        if spec.unit == "args":
            from dummyprof.usercode import parse_call_args

            return parse_call_args(text or [], flag=flag)
    except UsageError as exc:
        raise UsageError.for_field(name, exc.message) from None
    return list(text) if spec.unit == "list" else text


def check_values(options: Any) -> None:
    """Every declared bound of ``options``' typed values (the gate's TOML and the Python API give no text)."""
    for name, (_, spec) in specs(type(options)).items():
        value = getattr(options, name)
        if isinstance(value, (dict, list, tuple)) and units.nesting_depth(value) > units.MAX_NESTING:
            raise UsageError.for_field(  # what the results file would hold, and its reader refuse
                name, f"nests more than {units.MAX_NESTING} levels deep, more than a results file keeps; flatten it"
            )
        if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError.for_field(name, f"must be a finite number, got {value}")
        if spec.unit == "seconds" and value <= 0:
            raise UsageError.for_field(name, f"must be a positive number of seconds, got {value}")
        if spec.unit == "bytes" and spec.minimum is None and value < 1:
            raise UsageError.for_field(name, f"must be positive, got {value}")
        if spec.minimum is not None and value < spec.minimum:
            low = int(spec.minimum)
            bound = "be 0 or more" if low == 0 else f"be at least {low}"
            raise UsageError.for_field(name, f"must {bound}, got {value}")
        if spec.maximum is not None and value > spec.maximum:
            raise UsageError.for_field(name, f"must be at most {spec.maximum:,}, got {value:,}")
