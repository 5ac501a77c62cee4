"""The gate's TOML config (``dummyprof.toml``, or ``[tool.dummyprof]`` in ``pyproject.toml``): scenarios to run
and the checks of each, decoded into Structs; a mistake names the file and the key before anything is measured."""

from __future__ import annotations

import sys
import typing
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from dummyprof.errors import UsageError
from dummyprof.files.reading import GATE_CONFIG, read_bounded, said
from dummyprof.gate.commands import COMMANDS, CommandSpec
from dummyprof.gate.fingerprint import option_defaults
from dummyprof.gate.metrics import MetricSpec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

DEFAULT_CONFIG = Path("dummyprof.toml")
DEFAULT_FACTOR = 1.10
DEFAULT_ALPHA = 0.05
FINITE = sys.float_info.max  # a bound that refuses inf and nan (TOML has both)


class ConfigError(UsageError):
    """A mistake in the config file: names the file and the key, exit 2."""

    def __init__(self, path: Path | str, key: str, message: str) -> None:
        super().__init__("--config", f"{path}: {key}: {message}" if key else f"{path}: {message}")


@dataclass
class ScenarioConfig:
    name: str
    command: CommandSpec
    options: Any  # the command's options dataclass, e.g. CompareOptions
    metrics: dict[str, MetricSpec]  # what the scenario will measure, by name
    counters: list[str] = field(default_factory=list)  # exact, against the baseline
    limits: dict[str, float] = field(default_factory=dict)  # absolute upper bounds, no baseline needed
    ratios: list[RatioCheck] = field(default_factory=list)  # inside one run, no baseline needed
    timings: list[str] = field(default_factory=list)  # against the baseline: factor and rank test
    defaults: dict[str, Any] = field(default_factory=dict)  # the options' defaults, for fingerprints


@dataclass
class GateConfig:
    path: Path
    factor: float = DEFAULT_FACTOR
    alpha: float = DEFAULT_ALPHA
    scenarios: list[ScenarioConfig] = field(default_factory=list)

    def select(self, names: list[str] | None) -> list[ScenarioConfig]:
        if not names:
            return list(self.scenarios)
        known = {s.name: s for s in self.scenarios}
        for name in names:
            if name not in known:
                raise UsageError.for_field(
                    "scenario", f"no scenario {name!r} in {self.path}; choose from: {', '.join(known)}"
                )
        return [s for s in self.scenarios if s.name in names]


def find_config(path: Path | None) -> tuple[Path, dict[str, Any]]:
    """The config's path and its dummyprof table: ``--config``, else dummyprof.toml, else pyproject.toml."""
    if path is None:
        if DEFAULT_CONFIG.is_file():
            path = DEFAULT_CONFIG
        elif Path("pyproject.toml").is_file() and "dummyprof" in _read(Path("pyproject.toml")).get("tool", {}):
            path = Path("pyproject.toml")
        else:
            raise UsageError.for_field(
                "config",
                "no dummyprof.toml here and no [tool.dummyprof] in pyproject.toml; "
                "pass --config PATH (see docs/gate.md)",
            )
    data = _read(path)
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        if "dummyprof" not in tool:
            raise ConfigError(path, "", "has no [tool.dummyprof] table; add one or pass a dummyprof.toml")
        data = tool["dummyprof"]
    return path, data


def _read(path: Path) -> dict[str, Any]:
    raw = read_bounded(path, GATE_CONFIG, refuse=lambda message: UsageError.for_field("config", message))
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise UsageError.for_field("config", f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise UsageError.for_field("config", f"{path}: not valid TOML (not UTF-8 text)") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise UsageError.for_field("config", f"{path}: nested too deep to be a dummyprof config (corrupt?)") from None


class _Gate(msgspec.Struct, forbid_unknown_fields=True):
    factor: Annotated[float, msgspec.Meta(gt=1, le=FINITE)] = DEFAULT_FACTOR  # 1.10: 10% slower
    alpha: Annotated[float, msgspec.Meta(gt=0, lt=1)] = DEFAULT_ALPHA


class RatioCheck(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    numerator: str
    denominator: str
    max: Annotated[float, msgspec.Meta(gt=0, le=FINITE)]

    @property
    def name(self) -> str:
        return f"{self.numerator} / {self.denominator}"


class _Scenario(msgspec.Struct, forbid_unknown_fields=True):
    command: str
    options: dict[str, Any] = {}
    counters: list[str] | Literal["all"] = "all"
    limits: dict[str, Annotated[float, msgspec.Meta(ge=-FINITE, le=FINITE)]] = {}
    ratios: list[RatioCheck] = []
    timings: list[str] | Literal["all"] = []


class _Config(msgspec.Struct, forbid_unknown_fields=True):
    """The config's tables as TOML gives them, each key typed: msgspec names a wrong one by its path."""

    gate: _Gate = msgspec.field(default_factory=_Gate)
    scenarios: dict[str, _Scenario] = {}


def load_config(path: Path | None = None) -> GateConfig:
    path, data = find_config(path)
    try:
        config = msgspec.convert(data, _Config)
    except msgspec.ValidationError as exc:
        message, where = said(exc, data, _Config)
        raise ConfigError(path, where.removeprefix("$").lstrip("."), message) from None
    if not config.scenarios:
        raise ConfigError(path, "scenarios", 'no scenarios; add a [scenarios.NAME] table with command = "compare"')
    parsed = [_scenario(path, name, table) for name, table in config.scenarios.items()]
    return GateConfig(path, config.gate.factor, config.gate.alpha, parsed)


def _scenario(path: Path, name: str, table: _Scenario) -> ScenarioConfig:
    key = f"scenarios.{name}"
    if table.command not in COMMANDS:
        choices = ", ".join(f'"{c}"' for c in COMMANDS)
        raise ConfigError(path, f"{key}.command", f"got {table.command!r}; choose one of: {choices}")
    command = COMMANDS[table.command]
    options = _options(path, f"{key}.options", command, table.options)
    try:
        metrics = command.metric_names(options)
    except UsageError as exc:  # e.g. a --loader spec that cannot be imported
        raise ConfigError(path, f"{key}.options.{option_key(exc)}".rstrip("."), exc.message) from None
    counter_names = _names(path, f"{key}.counters", table.counters, metrics, kind="counter")
    timing_names = _names(path, f"{key}.timings", table.timings, metrics, kind="time")
    _names(path, f"{key}.limits", list(table.limits), metrics, kind=None)
    for i, ratio in enumerate(table.ratios):
        for part in ("numerator", "denominator"):
            _names(path, f"{key}.ratios[{i}].{part}", [getattr(ratio, part)], metrics, kind=None)
    if not (counter_names or table.limits or table.ratios or timing_names):
        raise ConfigError(path, key, 'has no checks; set counters = "all" or add limits, ratios or timings')
    defaults = option_defaults(command.options_type())
    return ScenarioConfig(
        name, command, options, metrics, counter_names, dict(table.limits), table.ratios, timing_names, defaults
    )


def _options(path: Path, key: str, command: CommandSpec, table: dict[str, Any]) -> Any:
    try:
        cls = command.options_type()
    except (ImportError, AttributeError) as exc:
        raise ConfigError(path, key, f"the {command.name!r} scenario is not available here ({exc})") from None
    valid = [f.name for f in fields(cls)]
    _known_keys(path, key, cls, table, command.name)
    table = _relative_to_config(path, table)
    try:
        options: Any = msgspec.convert(table, cls)
    except msgspec.ValidationError as exc:
        message, where = said(exc, table, cls)
        raise ConfigError(path, key + where.removeprefix("$"), message) from None
    try:
        command.validate(options)
    except UsageError as exc:
        field = option_key(exc)
        if field and field not in valid:  # the swept command's option, in a sweep's nested table (its engram)
            field = next((f"{k}.{field}" for k, v in table.items() if isinstance(v, dict) and field in v), field)
        raise ConfigError(path, f"{key}.{field}" if field else key, exc.message) from None
    return options


def _known_keys(path: Path, key: str, cls: type, table: dict[str, Any], command: str) -> None:
    """Refuses a key ``cls`` has no field for, at every level: a sweep's options nest the swept command's
    (``[scenarios.S.options.engram]``), which msgspec would build ignoring a key it does not know."""
    valid = [f.name for f in fields(cls)]
    hints = typing.get_type_hints(cls)
    for name, value in table.items():
        if name not in valid:
            raise ConfigError(path, f"{key}.{name}", f"unknown option for {command!r}; valid: {', '.join(valid)}")
        kinds = typing.get_args(hints.get(name)) or (hints.get(name),)  # EngramOptions | None, CompareOptions
        nested = [t for t in kinds if isinstance(t, type) and is_dataclass(t)]
        if isinstance(value, dict) and nested:
            _known_keys(path, f"{key}.{name}", nested[0], value, name)  # a sweep's table is named by its command


def _code_file(folder: Path, spec: Any) -> Any:
    """``./file.py:callable`` relative to the config's folder; package modules and named loaders stay as they are."""
    if not isinstance(spec, str) or ":" not in spec:
        return spec
    target, _, attr = spec.rpartition(":")
    if not (target.endswith(".py") or "/" in target) or Path(target).is_absolute():
        return spec
    return f"{folder / target}:{attr}"


HF = "hf:"  # models/huggingface.PREFIX (the gate's config reader imports no torch)
MMAP = "mmap:"  # allocation/backings.MMAP_PREFIX


def _is_hub_id(target: str) -> bool:
    """``ORG/NAME``: a Hugging Face hub id, not a path, unless the config's folder holds it (checked first)."""
    return target.count("/") == 1 and not target.startswith((".", "/", "~")) and not target.endswith(".json")


def _prefixed(folder: Path, spec: Any, prefix: str) -> Any:
    """``PREFIX:PATH`` (``hf:`` a config or folder, ``mmap:`` a file made for the tables) relative to the config's
    folder; an absolute or home path stays as it is, and so does a hub id ``hf:ORG/NAME`` unless the config's folder
    holds that path."""
    if not isinstance(spec, str) or not spec.startswith(prefix):
        return spec
    target = spec.removeprefix(prefix)
    if not target or Path(target).expanduser().is_absolute() or target.startswith("~"):
        return spec
    here = folder / target
    if prefix == HF and _is_hub_id(target) and not here.exists():
        return spec
    return f"{prefix}{here}"  # also when it is missing: the error then names the file next to the config


def _relative_to_config(path: Path, table: dict[str, Any]) -> dict[str, Any]:
    """Every path a scenario's options hold is relative to the config, as a user reading it expects, never to the
    working folder: ``model`` (a file, an ``hf:`` config or folder), ``loaders``, an ``mmap:`` ``backing``.

    At every level: a sweep's options nest the swept command's (``[scenarios.S.options.compare]``).
    """
    folder = path.parent
    table = {
        k: _relative_to_config(path, v) if isinstance(v, dict) and not k.endswith("_args") else v
        for k, v in table.items()
    }
    if "model" in table:  # ./file.py:callable, or hf: a config, a folder or a hub id
        model = table["model"]
        table["model"] = _prefixed(folder, model, HF) if str(model).startswith(HF) else _code_file(folder, model)
    if isinstance(table.get("loaders"), list):
        table["loaders"] = [_code_file(folder, spec) for spec in table["loaders"]]
    if "backing" in table:
        table["backing"] = _prefixed(folder, table["backing"], MMAP)
    return table


def option_key(exc: UsageError) -> str:
    """The options key an error is about: its field, else its flag without dashes (``--loader`` -> ``loader``)."""
    return exc.field or (exc.flag or "").lstrip("-")


def _names(
    path: Path, key: str, value: list[str] | str, metrics: dict[str, MetricSpec], *, kind: str | None
) -> list[str]:
    """Metric names, checked (msgspec has typed them); ``"all"``: every metric of ``kind``."""
    wanted = [m for m, spec in metrics.items() if kind is None or spec.kind == kind]
    if value == "all":
        return wanted
    for name in value:
        spec = metrics.get(name)
        if spec is None:
            raise ConfigError(path, key, f"unknown metric {name!r}; this scenario measures: {', '.join(wanted)}")
        if kind is not None and spec.kind != kind:
            raise ConfigError(path, key, f"{name!r} is a {spec.kind}, not a {kind}; choose from: {', '.join(wanted)}")
    return list(value)
