"""Results and baseline files as they come: corrupt, hand-edited or hostile files are one line and exit 2.

The property test takes real documents (written by dummyprof itself) and
mutates them field by field; ``report`` and ``gate`` must answer 0 or 2 and
never raise. The gate's measurement is replaced by a canned one, so each
example costs milliseconds.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dummyprof.cli.app import main
from dummyprof.gate import runner
from dummyprof.measure import contention
from dummyprof.results.common import Environment
from tests.conftest import CliResult, fake_proc
from tests.fixtures.gate_configs import tiny_config

Cli = Callable[..., CliResult]
DEPLOYMENT = Path(__file__).parent / "fixtures" / "results" / "deployment-deepseek-v3-tp8.json"

# One check of each kind the files carry: counters, a ratio and a timing (two rounds).
CONFIG = tiny_config(
    checks='ratios = [{ numerator = "unique.visits", denominator = "per-layer.visits", max = 1.0 }]\n'
    'timings = ["unique.time"]\n',
    repeat=2,
)


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One real file of each kind, written by dummyprof."""
    folder = tmp_path_factory.mktemp("docs")
    config = folder / "dummyprof.toml"
    config.write_text(CONFIG)
    kinds = ("inspect", "compare", "audit", "baseline", "gate", "engram", "deployment")
    files = {name: folder / f"{name}.json" for name in kinds}
    small = ("--depth", "2", "--hidden", "32", "-q")
    assert main(["inspect", *small, "--json", str(files["inspect"])]) == 0
    assert main(["compare", *small, "--repeat", "1", "--warmup", "0", "--json", str(files["compare"])]) == 0
    assert main(["audit", *small, "--json", str(files["audit"])]) in (0, 1)
    assert main(["engram", "--rows", "4096", "--dim", "64", "-q", "--json", str(files["engram"])]) == 0
    # Written by `python -m dummyprof compare --model hf:tests/data/DeepSeek-V3.json --tp 8 --json ...` (90 s here)
    shutil.copy(DEPLOYMENT, files["deployment"])
    assert main(["baseline", "--config", str(config), "--output", str(files["baseline"]), "-q"]) == 0
    gate = ["gate", "--config", str(config), "--baseline", str(files["baseline"])]
    with pytest.MonkeyPatch.context() as patch:  # a quiet machine, as conftest's quiet_machine gives each test
        patch.setattr(contention, "PROC", fake_proc(folder / "proc"))
        assert main([*gate, "--json", str(files["gate"]), "-q"]) == 0
    files["config"] = config
    return files


@pytest.fixture
def canned_measurement(documents: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The gate measures nothing: it gets the scenarios of the real baseline back."""
    runs = list(runner.load_baseline(documents["baseline"]).values())
    monkeypatch.setattr(runner, "measure_all", lambda *args, **kwargs: (copy.deepcopy(runs), Environment()))
    yield


# -- examples ---------------------------------------------------------------------------------------


def _edit(path: Path, tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    data = json.loads(path.read_text())
    change(data)
    out = tmp_path / "edited.json"
    out.write_text(json.dumps(data))
    return out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8 text (binary or corrupt?) at byte 0"),
        (b'{"schema_version": 6}', "$.command: None is not a dummyprof command"),
        (b'{"schema_version": 6, "command": "compare"}', "$.compare: a 'compare' results file needs its 'compare'"),
        (b'{"schema_version": 6, "command": "gate", "gate": null}', "$.gate: a 'gate' results file needs"),
        (
            b'{"schema_version": 6, "command": "inspect", "inspect": {"model": null}}',
            "$.inspect.model: Expected `object`, got `null`",
        ),
        (b'{"schema_version": 6, "command": "inspect", "inspect": {}, "extra": 1e999}', "$.extra: Infinity is not"),
        (b'{"schema_version": 6, "command": "inspect", "inspect": {}, "x": ' + b"[" * 100_000, "nested too deep"),
        (
            b'{"schema_version": 6, "command": "inspect", "inspect": {}, "x": ' + b"[" * 200 + b"]" * 200 + b"}",
            "$: Object contains unknown field `x`",
        ),
        (
            b'{"schema_version": 6, "command": "compare", "compare": {"repeat": ' + b"9" * 30 + b"}}",
            "$.compare.repeat: 1e+30 is beyond int64",
        ),
        (
            b'{"schema_version": 6, "command": "compare", "compare": {"repeat": ' + b"9" * 5000 + b"}}",
            "not a dummyprof",
        ),
        (b'{"schema_version": true, "command": "compare", "compare": {}}', "schema_version True is not valid"),
    ],
)
def test_corrupt_results_are_one_line_naming_the_file_and_field(
    cli: Cli, tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    for fmt in ("terminal", "json", "markdown"):
        result = cli("report", str(path), "-f", fmt)
        assert result.exit_code == 2
        assert result.stderr.startswith(f"dummyprof: error: {path}: ") and message in result.stderr, result.stderr
        assert result.stderr.count("\n") == 1


def test_null_in_a_required_field_of_a_real_file(cli: Cli, documents: dict[str, Path], tmp_path: Path) -> None:
    path = _edit(documents["compare"], tmp_path, lambda d: d["compare"]["strategies"][0].update(visits=None))
    result = cli("report", str(path))
    assert result.exit_code == 2
    assert result.stderr == f"dummyprof: error: {path}: $.compare.strategies[0].visits: Expected `int`, got `null`\n"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("NaN", "NaN is not a finite number"),
        ("Infinity", "Infinity is not a finite number"),
        ("-1", "value -1.0: a counter is a whole number from 0 to 9223372036854775807 (int64)"),
        ("0.5", "value 0.5: a counter is a whole number from 0 to 9223372036854775807 (int64)"),
        ("10000000000000000000", "value 1e+19: a counter is a whole number from 0 to 9223372036854775807 (int64)"),
        ("1e19", "value 1e+19: a counter is a whole number from 0 to 9223372036854775807 (int64)"),
        (
            "9223372036854775808",
            "value 9.223372036854776e+18: a counter is a whole number from 0 to 9223372036854775807",
        ),
    ],
)
def test_a_hand_edited_baseline_counter_is_rejected_naming_the_value(
    cli: Cli, documents: dict[str, Path], tmp_path: Path, change: str, message: str
) -> None:
    text = documents["baseline"].read_text()
    data = json.loads(text)
    metric = data["gate"]["scenarios"][0]["metrics"]["unique.visits"]
    marker = "123456789.0"
    metric["value"] = float(marker)
    edited = tmp_path / "baseline.json"
    edited.write_text(json.dumps(data).replace(marker, change))
    result = cli("gate", "--config", str(documents["config"]), "--baseline", str(edited))
    assert result.exit_code == 2, result.stdout
    assert result.stderr.startswith(f"dummyprof: error: {edited}: ") and message in result.stderr
    assert "unique.visits" in result.stderr or "$.gate.scenarios[0].metrics" in result.stderr


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m.update(value=0.0), "0.0 s: a time must be above 0"),
        (lambda m: m["time"]["samples"].__setitem__(0, -0.5), "-0.5 s: a time must be above 0"),
        (lambda m: m["time"].update(samples=[]), "no samples"),
        (lambda m: m.update(kind="timer"), "kind 'timer' is none of 'counter', 'time' and 'fit'"),
        (lambda m: m.update(medain=1.0), "metrics.unique.time: Object contains unknown field `medain`"),
    ],
)
def test_a_hand_edited_baseline_time_is_rejected(
    cli: Cli, documents: dict[str, Path], tmp_path: Path, edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    path = _edit(documents["baseline"], tmp_path, lambda d: edit(d["gate"]["scenarios"][0]["metrics"]["unique.time"]))
    result = cli("gate", "--config", str(documents["config"]), "--baseline", str(path))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"dummyprof: error: {path}: ") and message in result.stderr, result.stderr


# -- the property: any single-field mutation of a real file is exit 0 or 2, never a traceback ----------


def _paths(value: Any, where: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield where
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*where, key))
    elif isinstance(value, list):
        for i, item in enumerate(value[:3]):  # the first few elements stand for the rest
            yield from _paths(item, (*where, i))


REPLACEMENTS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2**63, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, -1.0, 1e308, 5e-324]),
    st.text(max_size=8),
    st.sampled_from(["", "compare", "gate", "baseline", "time", "counter", "s", "bytes", "x", "pass", "regressed"]),
    st.lists(st.integers(min_value=-3, max_value=3), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.just([[[[[[[[[[[]]]]]]]]]]]),
)
DELETE = object()


def _mutated(data: Any, path: tuple[Any, ...], replacement: Any) -> Any:
    if not path:
        return replacement if replacement is not DELETE else {}
    doc = copy.deepcopy(data)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if replacement is DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = replacement
    return doc


MUTATION_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
NEGATE = object()  # a number made negative (or one less than its negative): a count below zero


def _cross(document: Any) -> st.SearchStrategy[Any]:
    """Values from elsewhere in the same file: a reference pointed at another rank, strategy or node."""
    values = (_at(document, path) for path in _PATHS_OF[id(document)])
    leaves = {(type(v).__name__, v): v for v in values if isinstance(v, (int, str))}
    return st.sampled_from(sorted(leaves.values(), key=repr)) if leaves else st.nothing()


def _at(data: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        data = data[key]
    return data


def _mutations(kind: str) -> st.SearchStrategy[tuple[tuple[Any, ...], Any]]:
    def for_document(paths: list[tuple[Any, ...]]) -> st.SearchStrategy[tuple[tuple[Any, ...], Any]]:
        cross = _cross(_DOCUMENTS[kind])
        return st.tuples(st.sampled_from(paths), st.one_of(REPLACEMENTS, st.just(DELETE), st.just(NEGATE), cross))

    return st.deferred(lambda: for_document(_PATHS[kind]))


_PATHS: dict[str, list[tuple[Any, ...]]] = {}
_DOCUMENTS: dict[str, Any] = {}
_PATHS_OF: dict[int, list[tuple[Any, ...]]] = {}
KINDS = ("inspect", "compare", "audit", "baseline", "gate", "engram", "deployment")


@pytest.fixture(scope="module")
def paths(documents: dict[str, Path]) -> dict[str, list[tuple[Any, ...]]]:
    for kind in KINDS:
        _DOCUMENTS[kind] = json.loads(documents[kind].read_text())
        _PATHS[kind] = _PATHS_OF[id(_DOCUMENTS[kind])] = list(_paths(_DOCUMENTS[kind]))
    return _PATHS


def _mutated(data: Any, path: tuple[Any, ...], replacement: Any) -> Any:
    if not path:
        return replacement if replacement not in (DELETE, NEGATE) else {}
    doc = copy.deepcopy(data)
    parent = _at(doc, path[:-1])
    if replacement is DELETE:  # a field left out, or an element removed from its list
        del parent[path[-1]]
    elif replacement is NEGATE:
        value = parent[path[-1]]
        negative = isinstance(value, (int, float)) and not isinstance(value, bool)
        parent[path[-1]] = (-value if value else -1) if negative else value
    else:
        parent[path[-1]] = replacement
    return doc


def _write(tmp_path: Path, data: Any) -> Path:
    out = tmp_path / "mutated.json"
    out.write_text(json.dumps(data, allow_nan=True))  # NaN and Infinity on purpose: a hand edit can put them there
    return out


# Every reporter, and the terminal's other modes: each reads the file its own way.
RENDERINGS = [
    ("-f", "terminal"),
    ("-f", "terminal", "--detail"),
    ("-q",),
    ("-f", "json"),
    ("-f", "markdown"),
    ("-f", "html"),
    ("-f", "junit"),
    ("-f", "benchmark-json"),
    ("-f", "pytorch-benchmark"),
]


@pytest.mark.parametrize("kind", KINDS)
def test_report_on_a_mutated_real_file_is_exit_0_or_2(
    cli: Cli, documents: dict[str, Path], paths: dict[str, Any], tmp_path: Path, kind: str
) -> None:
    """One field changed, left out, negated, pointed elsewhere in the file, or one element removed from a list,
    rendered by every reporter: exit 0, or 2 with one line (a reporter that does not take the kind says so)."""
    original = _DOCUMENTS[kind]

    @MUTATION_SETTINGS
    @given(mutation=_mutations(kind), rendering=st.sampled_from(RENDERINGS))
    def check(mutation: tuple[tuple[Any, ...], Any], rendering: tuple[str, ...]) -> None:
        path = _write(tmp_path, _mutated(original, *mutation))
        result = cli("report", str(path), *rendering)
        assert result.exit_code in (0, 2), result.stderr
        if result.exit_code == 2:
            assert result.stderr.startswith("dummyprof: error: ") and result.stderr.count("\n") == 1

    check()


def test_gate_on_a_mutated_real_baseline_is_exit_0_2_or_3(
    cli: Cli, documents: dict[str, Path], paths: dict[str, Any], tmp_path: Path, canned_measurement: None
) -> None:
    original = _DOCUMENTS["baseline"]

    @MUTATION_SETTINGS
    @given(mutation=_mutations("baseline"))
    def check(mutation: tuple[tuple[Any, ...], Any]) -> None:
        path = _write(tmp_path, _mutated(original, *mutation))
        result = cli("gate", "--config", str(documents["config"]), "--baseline", str(path), "-q")
        # 0 pass, 1 a (mutated) counter differs, 3 not comparable (a mutated fingerprint); never a traceback
        assert result.exit_code in (0, 1, 2, 3), result.stderr
        if result.exit_code == 2:
            assert result.stderr.startswith("dummyprof: error: ") and result.stderr.count("\n") == 1

    check()


# -- loaded files are read bounded and checked fully (issue #17, classes 3 and 5) ----------------------


def _sparse(path: Path, size: int) -> Path:
    """A file of ``size`` bytes that takes no disk: its size alone must refuse it, before a byte is read."""
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)  # no writer: reading it would wait for ever
    return path


def test_what_is_not_a_regular_file_is_never_read(
    cli: Cli, documents: dict[str, Path], tmp_path: Path, fifo: Path
) -> None:
    config, baseline = str(documents["config"]), str(documents["baseline"])
    hf = "a Hugging Face config.json"
    cases = [
        (("report", "/dev/zero"), "/dev/zero: a character device", "a results file written by --json"),
        (("report", str(fifo), "-q"), f"{fifo}: a FIFO", "a results file written by --json"),
        (
            ("gate", "--config", "/dev/zero", "--baseline", baseline),
            "--config: /dev/zero: a character device",
            "a TOML file such as dummyprof.toml",
        ),
        (
            ("gate", "--config", str(fifo), "--baseline", baseline),
            f"--config: {fifo}: a FIFO",
            "a TOML file such as dummyprof.toml",
        ),
        (
            ("gate", "--config", config, "--baseline", "/dev/zero"),
            "/dev/zero: a character device",
            "a baseline written by dummyprof baseline",
        ),
        (("inspect", "--model", "hf:/dev/zero"), "--model: /dev/zero: a character device", hf),
        (("inspect", "--model", f"hf:{fifo}"), f"--model: {fifo}: a FIFO", hf),
    ]
    for args, start, give in cases:
        result = cli(*args)
        assert (result.exit_code, result.stderr) == (
            2,
            f"dummyprof: error: {start}, not a regular file; give {give}\n",
        ), args


def test_a_folder_is_refused_by_every_reader(cli: Cli, documents: dict[str, Path], tmp_path: Path) -> None:
    """A folder opens (os.open gives it a descriptor): what was opened is checked before it is read (issue #26, 5)."""
    folder = tmp_path / "folder.json"
    folder.mkdir()
    config, baseline = str(documents["config"]), str(documents["baseline"])
    cases = [
        (("report", str(folder), "-q"), f"{folder}: is a directory; give a results file written by --json"),
        (
            ("gate", "--config", config, "--baseline", str(folder)),
            f"{folder}: is a directory; give a baseline written by dummyprof baseline",
        ),
        (
            ("gate", "--config", str(folder), "--baseline", baseline),
            f"--config: {folder}: is a directory; give a TOML file such as dummyprof.toml",
        ),
    ]
    for args, message in cases:
        result = cli(*args)
        assert (result.exit_code, result.stderr) == (2, f"dummyprof: error: {message}\n"), args


def test_a_file_larger_than_its_bound_is_refused_by_its_size(
    cli: Cli, documents: dict[str, Path], tmp_path: Path
) -> None:
    config, baseline = str(documents["config"]), str(documents["baseline"])
    big_results = _sparse(tmp_path / "big.json", (1 << 30) + 1)
    big_baseline = _sparse(tmp_path / "baseline.json", (64 << 20) + 1)
    big_config = _sparse(tmp_path / "dummyprof.toml", (1 << 20) + 1)
    hf = tmp_path / "hf"
    hf.mkdir()
    _sparse(hf / "config.json", (16 << 20) + 1)
    cases = [
        (
            ("report", str(big_results), "-q"),
            f"{big_results}: is 1.00 GiB, more than the 1.00 GiB dummyprof reads; "
            "give a results file written by --json",
        ),
        (
            ("gate", "--config", config, "--baseline", str(big_baseline)),
            f"{big_baseline}: is 64.00 MiB, more than "
            "the 64.00 MiB dummyprof reads; give a baseline written by dummyprof baseline",
        ),
        (
            ("gate", "--config", str(big_config), "--baseline", baseline),
            f"--config: {big_config}: is 1.00 MiB, "
            "more than the 1.00 MiB dummyprof reads; give a TOML file such as dummyprof.toml",
        ),
        (
            ("inspect", "--model", f"hf:{hf}"),
            f"--model: {hf / 'config.json'}: is 16.00 MiB, more than the "
            "16.00 MiB dummyprof reads; give a Hugging Face config.json",
        ),
    ]
    for args, message in cases:
        result = cli(*args)
        assert (result.exit_code, result.stderr) == (2, f"dummyprof: error: {message}\n"), args


def test_standard_input_is_read_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    from dummyprof.files.reading import FileKind, read_bounded

    class Endless(io.RawIOBase):
        """/dev/zero on stdin: more bytes than any bound, for ever."""

        served = 0

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            self.served += len(buffer)
            return len(buffer)

    endless = Endless()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(endless)))
    with pytest.raises(ValueError, match=r"^<stdin>: holds more, more than the 1.00 KiB dummyprof reads; give x$"):
        read_bounded("-", FileKind(1024, "x"), refuse=ValueError, stdin=True)
    assert endless.served <= 1 << 16  # the bound and a buffer, not the stream


def test_a_baseline_holding_a_scenario_twice_is_refused(cli: Cli, documents: dict[str, Path], tmp_path: Path) -> None:
    def twice(data: dict[str, Any]) -> None:
        scenarios = data["gate"]["scenarios"]
        scenarios.append(copy.deepcopy(scenarios[0]))
        scenarios[1]["metrics"]["unique.visits"]["value"] = 1.0  # the first would win, or the second: neither may

    path = _edit(documents["baseline"], tmp_path, twice)
    result = cli("gate", "--config", str(documents["config"]), "--baseline", str(path), "-q")
    assert (result.exit_code, result.stdout, result.stderr) == (
        2,
        "",
        f"dummyprof: error: {path}: $.gate.scenarios[1]: scenario 'tiny' is also $.gate.scenarios[0]; a baseline "
        "holds each scenario once: re-create it with dummyprof baseline\n",
    )


@pytest.mark.parametrize("kind", ["baseline", "compare", "gate"])
def test_a_key_twice_in_one_object_is_refused(cli: Cli, documents: dict[str, Path], tmp_path: Path, kind: str) -> None:
    text = documents[kind].read_text()
    assert '"command": ' in text
    path = tmp_path / "twice.json"
    path.write_text(text.replace('"command": ', '"command": "inspect", "command": ', 1))
    args = (
        ("gate", "--config", str(documents["config"]), "--baseline", str(path))
        if kind == "baseline"
        else ("report", str(path), "-q")
    )
    result = cli(*args)
    assert (result.exit_code, result.stderr) == (
        2,
        f"dummyprof: error: {path}: the key 'command' appears twice in one object; keep one of them\n",
    )


def test_a_key_twice_in_a_gate_config_or_an_hf_config_is_refused(
    cli: Cli, documents: dict[str, Path], tmp_path: Path
) -> None:
    config = tmp_path / "dummyprof.toml"
    config.write_text(CONFIG.replace("depth = 2", "depth = 2\ndepth = 3"))
    result = cli("gate", "--config", str(config), "--baseline", str(documents["baseline"]))
    assert result.exit_code == 2 and result.stderr.startswith(f"dummyprof: error: --config: {config}: not valid TOML")
    assert result.stderr.count("\n") == 1
    hf = tmp_path / "config.json"
    hf.write_text(Path("tests/data/Llama-3.1-8B.json").read_text().replace("{", '{"num_hidden_layers": 1000000,', 1))
    result = cli("inspect", "--model", f"hf:{hf}")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"dummyprof: error: --model: {str(hf)!r} is not JSON (the key 'num_hidden_layers'")
