"""Every output file of every command: probed before measuring, never clobbered, failures shown after the results.

One mechanism (dummyprof/files/outputs.py) serves ``--json``, ``--output``,
``--junit``, ``--benchmark-json`` and ``--markdown``; the tests go through the
CLI of each command that writes, so a flag that bypassed it would fail here.
CI runs as root, where permissions do not stop a write: unwritable places are
simulated by failing the same system calls a non-root user would see fail.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dummyprof.cli.app import main
from dummyprof.files import outputs
from dummyprof.files.outputs import Output, check_outputs, write_outputs
from tests.conftest import CliResult

Cli = Callable[..., CliResult]
MODELS = "tests/fixtures/models.py"

CONFIG = """
[scenarios.tiny]
command = "compare"
counters = "all"

[scenarios.tiny.options]
depth = 2
hidden = 32
strategies = ["per-layer", "unique"]
repeat = 1
warmup = 0
device = "cpu"
"""

# (command line before the output flag, the output flag); each writes through the shared mechanism.
INSPECT = ("inspect", "--depth", "2", "--hidden", "32", "-q")
COMPARE = ("compare", "--depth", "2", "--hidden", "32", "--repeat", "1", "--warmup", "0", "--device", "cpu", "-q")
AUDIT = ("audit", "--depth", "2", "--hidden", "32", "--device", "cpu", "-s", "per-layer", "-q")


@pytest.fixture(scope="module")
def gate_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("gate-io")
    config = folder / "dummyprof.toml"
    config.write_text(CONFIG)
    baseline = folder / "baseline.json"
    assert main(["baseline", "--config", str(config), "--output", str(baseline), "-q"]) == 0
    return config, baseline


def commands(gate_files: tuple[Path, Path], results_file: Path) -> dict[str, tuple[tuple[str, ...], str]]:
    config, baseline = gate_files
    gate = ("gate", "--config", str(config), "--baseline", str(baseline), "-q")
    return {
        "inspect --json": (INSPECT, "--json"),
        "compare --json": (COMPARE, "--json"),
        "audit --json": (AUDIT, "--json"),
        "report --output": (("report", str(results_file), "--format", "json"), "--output"),
        "baseline --output": (("baseline", "--config", str(config), "-q"), "--output"),
        "gate --json": (gate, "--json"),
        "gate --junit": (gate, "--junit"),
        "gate --benchmark-json": (gate, "--benchmark-json"),
        "gate --markdown": (gate, "--markdown"),
    }


WRITERS = [
    "inspect --json",
    "compare --json",
    "audit --json",
    "report --output",
    "baseline --output",
    "gate --json",
    "gate --junit",
    "gate --benchmark-json",
    "gate --markdown",
]


@pytest.fixture(scope="module")
def results_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("saved") / "saved.json"
    assert main([*INSPECT, "--json", str(path)]) == 0
    return path


@pytest.fixture
def measuring_is_an_error(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail the test if any scenario starts measuring: probes must refuse before that."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("measured before refusing the output")

    from dummyprof.gate import runner
    from dummyprof.scenarios.audit import run as audit_run
    from dummyprof.scenarios.compare import run as compare_run
    from dummyprof.scenarios.inspect import run as inspect_run

    for module in (audit_run, compare_run, inspect_run):
        monkeypatch.setattr(module, "run", refuse)
    monkeypatch.setattr(runner, "measure_all", refuse)
    yield


# -- probed before measuring -------------------------------------------------------------------


@pytest.mark.parametrize("writer", WRITERS)
def test_an_unwritable_folder_is_refused_before_measuring(
    cli: Cli,
    writer: str,
    gate_files: tuple[Path, Path],
    results_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    measuring_is_an_error: None,
) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    real_access = os.access
    # What a non-root user sees in a folder they may not write (root would be let through).
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if Path(p) == folder and mode & os.W_OK else real_access(p, mode)
    )
    args, flag = commands(gate_files, results_file)[writer]
    result = cli(*args, flag, str(folder / "out.txt"))
    assert result.exit_code == 2, result.stderr
    assert (
        result.stderr
        == f"dummyprof: error: {flag}: cannot create {folder / 'out.txt'}: no permission to write in {folder}\n"
    )


@pytest.mark.parametrize("writer", ["compare --json", "gate --junit", "baseline --output", "report --output"])
def test_a_folder_that_refuses_new_files_is_found_by_really_creating_one(
    cli: Cli,
    writer: str,
    gate_files: tuple[Path, Path],
    results_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    measuring_is_an_error: None,
) -> None:
    def read_only(*args: object, **kwargs: object) -> tuple[int, str]:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(outputs.tempfile, "mkstemp", read_only)
    args, flag = commands(gate_files, results_file)[writer]
    result = cli(*args, flag, str(tmp_path / "out.txt"))
    assert result.exit_code == 2
    assert result.stderr == f"dummyprof: error: {flag}: cannot create {tmp_path / 'out.txt'}: Read-only file system\n"


def test_a_path_under_a_regular_file_is_refused(cli: Cli, tmp_path: Path, measuring_is_an_error: None) -> None:
    (tmp_path / "file").write_text("x")
    result = cli(*INSPECT, "--json", str(tmp_path / "file" / "r.json"))
    assert result.exit_code == 2
    assert "a folder in its path is a file" in result.stderr


def test_a_read_only_file_to_append_to_is_refused(
    cli: Cli,
    gate_files: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    measuring_is_an_error: None,
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))  # the one file a report is appended to
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if Path(p) == summary and mode & os.W_OK else real_access(p, mode)
    )
    config, baseline = gate_files
    result = cli("gate", "--config", str(config), "--baseline", str(baseline), "--markdown", str(summary))
    assert (result.exit_code, result.stderr) == (
        2,
        f"dummyprof: error: --markdown: cannot write {summary}: permission denied\n",
    )


# -- a write that fails after measuring ----------------------------------------------------------


@pytest.fixture
def disk_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe passed, then the disk filled up while measuring."""

    def full(*args: object, **kwargs: object) -> str:
        raise OSError(errno.ENOSPC, "No space left on device")

    real_open = open

    def full_append(file: object, mode: str = "r", *args: object, **kwargs: object) -> object:
        if "a" in mode:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(file, mode, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(outputs, "_write_temp", full)
    monkeypatch.setattr(outputs, "open", full_append, raising=False)


@pytest.mark.parametrize("writer", ["inspect --json", "compare --json", "audit --json", "report --output"])
def test_a_failed_write_shows_the_results_then_one_line_and_exits_2(
    cli: Cli, writer: str, gate_files: tuple[Path, Path], results_file: Path, tmp_path: Path, disk_full: None
) -> None:
    args, flag = commands(gate_files, results_file)[writer]
    target = tmp_path / "out.json"
    result = cli(*args, flag, str(target))
    assert result.exit_code == 2
    assert result.stderr.endswith(f"dummyprof: error: {flag}: could not write {target}: No space left on device\n")
    assert "Traceback" not in result.stderr
    if writer != "report --output":
        assert result.stdout.strip(), "the measured results must still be shown"
    assert not target.exists()
    assert [p.name for p in tmp_path.iterdir()] == []


@pytest.mark.parametrize("writer", ["gate --json", "gate --junit", "gate --benchmark-json", "gate --markdown"])
def test_a_gate_that_cannot_record_exits_3_and_never_says_pass(
    cli: Cli, writer: str, gate_files: tuple[Path, Path], results_file: Path, tmp_path: Path, disk_full: None
) -> None:
    args, flag = commands(gate_files, results_file)[writer]
    target = tmp_path / "out.txt"
    result = cli(*args, flag, str(target))
    assert result.exit_code == 3
    assert "PASS" not in result.stdout and "exit 0" not in result.stdout
    assert result.stdout.startswith("gate COULD NOT RECORD: measured but a report could not be written")
    assert result.stdout.rstrip().endswith("exit 3")
    assert result.stderr == f"dummyprof: error: {flag}: could not write {target}: No space left on device\n"


def test_a_baseline_that_cannot_be_written_says_so_and_exits_3(
    cli: Cli, gate_files: tuple[Path, Path], tmp_path: Path, disk_full: None
) -> None:
    config, _ = gate_files
    result = cli("baseline", "--config", str(config), "--output", str(tmp_path / "b.json"), "-q")
    assert result.exit_code == 3
    assert result.stdout.startswith("baseline NOT written: --output: could not write")
    assert "written to" not in result.stdout


# -- --force on what is not a regular file ------------------------------------------------------------


def test_force_writes_through_a_symlink_to_its_target(cli: Cli, tmp_path: Path) -> None:
    target = tmp_path / "real.json"
    target.write_text("stale")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert cli(*INSPECT, "--json", str(link), "--force").exit_code == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["command"] == "inspect"


def test_a_fifo_is_written_into_never_replaced(cli: Cli, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as handle:
            received.append(handle.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    result = cli(*INSPECT, "--json", str(fifo), "--force")
    reader.join(timeout=30)
    assert result.exit_code == 0, result.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert json.loads(received[0])["command"] == "inspect"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_a_directory_is_refused_even_with_force(cli: Cli, tmp_path: Path, measuring_is_an_error: None) -> None:
    result = cli(*INSPECT, "--json", str(tmp_path), "--force")
    assert result.exit_code == 2 and "is a directory" in result.stderr


def test_writes_to_a_character_device_go_into_it() -> None:
    # /dev/null as an output: written into (never turned into a regular file); two reports may share it.
    null = Output("--json", Path("/dev/null"))
    check_outputs([null, Output("--junit", Path("/dev/null"))], force=True)
    assert write_outputs([(null, "{}")], force=True) == []
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


# -- an output that is also an input ----------------------------------------------------------------


def test_an_output_that_is_an_input_or_another_output_is_refused(
    cli: Cli, gate_files: tuple[Path, Path], results_file: Path, tmp_path: Path, measuring_is_an_error: None
) -> None:
    config, baseline = gate_files
    before = baseline.read_bytes(), config.read_bytes(), results_file.read_bytes()
    gate = ("gate", "--config", str(config), "--baseline", str(baseline))
    link = tmp_path / "link.json"
    link.symlink_to(baseline)
    cases = [
        ((*gate, "--json", str(baseline), "--force"), "--json", "the --baseline input"),
        ((*gate, "--junit", str(link), "--force"), "--junit", "the --baseline input"),
        ((*gate, "--markdown", str(config)), "--markdown", "the --config input"),
        (("baseline", "--config", str(config), "--output", str(config), "--force"), "--output", "the --config input"),
        (
            (*gate, "--json", str(tmp_path / "x"), "--junit", str(tmp_path / "x")),
            "--junit",
            "the --json output",
        ),
        (
            ("report", str(results_file), "-f", "json", "-o", str(results_file), "--force"),
            "--output",
            "the RESULTS.json input",
        ),
    ]
    for args, flag, what in cases:
        result = cli(*args)
        assert result.exit_code == 2, args
        assert result.stderr.startswith(f"dummyprof: error: {flag}: ") and f"is also {what}" in result.stderr, args
    assert (baseline.read_bytes(), config.read_bytes(), results_file.read_bytes()) == before


def test_the_model_file_is_never_an_output(cli: Cli, tmp_path: Path, measuring_is_an_error: None) -> None:
    model = tmp_path / "m.py"
    model.write_text("from tests.fixtures.models import build\n")
    result = cli("compare", "--model", f"{model}:build", "--json", str(model), "--force")
    assert result.exit_code == 2 and "is also the --model input" in result.stderr
    assert model.read_text() == "from tests.fixtures.models import build\n"


# -- without --force: exclusive ----------------------------------------------------------------------


def test_a_file_that_appears_while_measuring_is_never_replaced(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dummyprof.scenarios.inspect import run as inspect_run

    target = tmp_path / "r.json"
    original = inspect_run.run

    def racing(*args: object, **kwargs: object) -> object:
        target.write_text("written by the other run")  # e.g. a second dummyprof with the same --json
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(inspect_run, "run", racing)
    result = cli(*INSPECT, "--json", str(target))
    assert result.exit_code == 2
    assert "appeared while dummyprof was running and was not overwritten" in result.stderr
    assert target.read_text() == "written by the other run"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_exclusive_publish_without_hard_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_links(src: str, dst: str) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(outputs.os, "link", no_links)
    target = Output("--json", tmp_path / "r.json")
    assert write_outputs([(target, "one")], force=False) == []
    (message,) = write_outputs([(target, "two")], force=False)
    assert message.startswith(f"--json: {target.path} appeared while dummyprof was running and was not overwritten")
    assert target.path.read_text() == "one"


# -- stdout belongs to --json - ---------------------------------------------------------------------


def test_json_on_stdout_survives_a_model_that_prints(capfd: pytest.CaptureFixture[str]) -> None:
    code = main(["inspect", "--model", f"{MODELS}:noisy", "--json", "-", "-q"])
    out, err = capfd.readouterr()
    assert code == 0
    assert json.loads(out)["command"] == "inspect"
    assert "building the model..." in err and "raw bytes on fd 1" in err


# -- permissions ----------------------------------------------------------------------------------


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_new_files_respect_the_umask_and_replaced_files_keep_their_mode(
    cli: Cli, tmp_path: Path, umask_022: None
) -> None:
    fresh = tmp_path / "fresh.json"
    assert cli(*INSPECT, "--json", str(fresh)).exit_code == 0
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
    shared = tmp_path / "shared.json"
    shared.write_text("old")
    shared.chmod(0o664)
    assert cli(*INSPECT, "--json", str(shared), "--force").exit_code == 0
    assert stat.S_IMODE(shared.stat().st_mode) == 0o664
