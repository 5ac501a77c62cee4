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
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dummyprof.cli.app import main
from dummyprof.files import outputs
from dummyprof.files.outputs import Output, check_outputs, write_outputs
from tests.conftest import CliResult
from tests.fixtures.gate_configs import tiny_config

Cli = Callable[..., CliResult]
MODELS = "tests/fixtures/models.py"

# (command line before the output flag, the output flag); each writes through the shared mechanism.
INSPECT = ("inspect", "--depth", "2", "--hidden", "32", "-q")
COMPARE = ("compare", "--depth", "2", "--hidden", "32", "--repeat", "1", "--warmup", "0", "--device", "cpu", "-q")
AUDIT = ("audit", "--depth", "2", "--hidden", "32", "--device", "cpu", "-s", "per-layer", "-q")


@pytest.fixture(scope="module")
def gate_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("gate-io")
    config = folder / "dummyprof.toml"
    config.write_text(tiny_config())
    baseline = folder / "baseline.json"
    assert main(["baseline", "--config", str(config), "--output", str(baseline), "-q"]) == 0
    return config, baseline


Writer = tuple[tuple[str, ...], str]
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


@pytest.fixture
def writer(request: pytest.FixtureRequest, gate_files: tuple[Path, Path], results_file: Path) -> Writer:
    """The writer named by the test's parameter: its command line before the output flag, and the flag."""
    config, baseline = gate_files
    gate = ("gate", "--config", str(config), "--baseline", str(baseline), "-q")
    writers: dict[str, Writer] = {
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
    return writers[request.param]


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


@pytest.mark.usefixtures("measuring_is_an_error")
@pytest.mark.parametrize("writer", WRITERS, indirect=True)
def test_an_unwritable_folder_is_refused_before_measuring(
    cli: Cli, writer: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    real_access = os.access
    # What a non-root user sees in a folder they may not write (root would be let through).
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if Path(p) == folder and mode & os.W_OK else real_access(p, mode)
    )
    args, flag = writer
    result = cli(*args, flag, str(folder / "out.txt"))
    assert result.exit_code == 2, result.stderr
    assert (
        result.stderr
        == f"dummyprof: error: {flag}: cannot create {folder / 'out.txt'}: no permission to write in {folder}\n"
    )


@pytest.mark.usefixtures("measuring_is_an_error")
@pytest.mark.parametrize("writer", WRITERS, indirect=True)
def test_an_empty_value_is_named_with_a_file_name_for_the_flag(
    cli: Cli, writer: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--markdown "$GITHUB_STEP_SUMMARY"`` off CI passes an empty value: said as such, not as the folder '.'."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    args, flag = writer
    result = cli(*args, flag, "")
    assert result.exit_code == 2
    unset = " ($GITHUB_STEP_SUMMARY unset, off CI?)" if flag == "--markdown" else ""
    named = {"--markdown": "summary.md", "--junit": "junit.xml", "--benchmark-json": "bench.json"}
    name = named.get(flag, "results.json")
    assert result.stderr == f"dummyprof: error: {flag}: an empty value{unset}; give a file name such as {name}\n"


@pytest.mark.usefixtures("measuring_is_an_error")
@pytest.mark.parametrize(
    "writer", ["compare --json", "gate --junit", "baseline --output", "report --output"], indirect=True
)
def test_a_folder_that_refuses_new_files_is_found_by_really_creating_one(
    cli: Cli, writer: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read_only(*args: object, **kwargs: object) -> tuple[int, str]:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(outputs.tempfile, "mkstemp", read_only)
    args, flag = writer
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

    monkeypatch.setattr(outputs, "publish", full)
    monkeypatch.setattr(outputs, "open", full_append, raising=False)


@pytest.fixture
def failed_write(cli: Cli, writer: Writer, tmp_path: Path, disk_full: None) -> tuple[str, Path, CliResult]:
    """The writer's output to a disk that filled up while measuring: its flag, its target and the result."""
    args, flag = writer
    target = tmp_path / "out.json"
    return flag, target, cli(*args, flag, str(target))


@pytest.mark.parametrize(
    "writer", ["inspect --json", "compare --json", "audit --json", "report --output"], indirect=True
)
def test_a_failed_write_shows_the_results_then_one_line_and_exits_2(
    failed_write: tuple[str, Path, CliResult], writer: Writer, tmp_path: Path
) -> None:
    flag, target, result = failed_write
    assert result.exit_code == 2
    assert result.stderr.endswith(f"dummyprof: error: {flag}: could not write {target}: No space left on device\n")
    assert "Traceback" not in result.stderr
    if writer[0][0] != "report":
        assert result.stdout.strip(), "the measured results must still be shown"
    assert not target.exists()
    assert [p.name for p in tmp_path.iterdir()] == []


@pytest.mark.parametrize(
    "writer", ["gate --json", "gate --junit", "gate --benchmark-json", "gate --markdown"], indirect=True
)
def test_a_gate_that_cannot_record_exits_3_and_never_says_pass(failed_write: tuple[str, Path, CliResult]) -> None:
    flag, target, result = failed_write
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


# -- what the run reads is never written (issue #17, class 1) ---------------------------------------

# Never measured (every case is refused first): the run settings are left to their defaults but one round.
GATE_MODEL_CONFIG = """
[scenarios.mine]
command = "compare"
counters = "all"
options = { model = "./model.py:build", loaders = ["./fill.py:fill"], strategies = ["per-layer"], repeat = 1 }
"""


@pytest.fixture
def user_files(tmp_path: Path, gate_files: tuple[Path, Path]) -> dict[str, Path]:
    """A user's folder: a model, a loader, a gate config naming both, an hf: folder; and a baseline."""
    files = {
        "model": tmp_path / "model.py",
        "loader": tmp_path / "fill.py",
        "config": tmp_path / "dummyprof.toml",
        "hf": tmp_path / "hf",
        "baseline": gate_files[1],
    }
    files["model"].write_text("from tests.fixtures.models import build\n")
    files["loader"].write_text("def fill(model):\n    pass\n")
    files["config"].write_text(GATE_MODEL_CONFIG)
    files["hf"].mkdir()
    (files["hf"] / "config.json").write_text(Path("tests/data/Llama-3.1-8B.json").read_text())
    (files["hf"] / "sub").mkdir()
    (files["hf"] / "sub" / "tokenizer.json").write_text("{}")
    return files


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("force", [False, True])
def test_no_file_the_run_reads_is_ever_an_output(
    cli: Cli, user_files: dict[str, Path], tmp_path: Path, force: bool, measuring_is_an_error: None
) -> None:
    model, loader, config, hf, baseline = (user_files[k] for k in ("model", "loader", "config", "hf", "baseline"))
    (tmp_path / "model-link.py").symlink_to(model)
    os.link(loader, tmp_path / "fill-hardlink.py")
    gate = ("gate", "--config", str(config), "--baseline", str(baseline), "-q")
    cases = [
        (("inspect", "--model", f"hf:{hf}", "-q"), "--json", hf / "config.json", "a file of the --model folder"),
        (("inspect", "--model", f"hf:{hf}", "-q"), "--json", hf / "sub" / "tokenizer.json", "a file of the --model"),
        (("inspect", "--model", f"hf:{hf / 'config.json'}", "-q"), "--json", hf / "config.json", "the --model input"),
        (("compare", "--model", f"{model}:build", "-q"), "--json", tmp_path / "model-link.py", "the --model input"),
        (
            ("compare", "--model", f"{model}:build", "--loader", f"{loader}:fill", "-q"),
            "--trace",
            tmp_path / "fill-hardlink.py",
            "the --loader input",
        ),
        (("audit", "--model", f"{model}:build", "-q"), "--html", model, "the --model input"),
        (("baseline", "--config", str(config), "-q"), "--output", model, "the scenarios.mine.options.model input"),
        (gate, "--markdown", model, "the scenarios.mine.options.model input"),
        (gate, "--junit", tmp_path / "fill-hardlink.py", "the scenarios.mine.options.loaders[0] input"),
        (gate, "--benchmark-json", config, "the --config input"),
        (gate, "--json", baseline, "the --baseline input"),
    ]
    before = _snapshot(tmp_path), baseline.read_bytes()
    for args, flag, target, what in cases:
        result = cli(*args, flag, str(target), *(["--force"] if force else []))
        assert (result.exit_code, result.stdout) == (2, ""), (args, flag, result.stderr)
        assert result.stderr.startswith(f"dummyprof: error: {flag}: {target} is also {what}"), result.stderr
        assert "never writes a file the run reads" in result.stderr
    assert (_snapshot(tmp_path), baseline.read_bytes()) == before


def test_a_package_module_named_by_model_is_never_an_output(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, measuring_is_an_error: None
) -> None:
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('a package is never imported to find its module')\n")
    (package / "models.py").write_text("from tests.fixtures.models import build\n")
    monkeypatch.chdir(tmp_path)
    result = cli("inspect", "--model", "mypkg.models:build", "--json", str(package / "models.py"), "--force")
    assert result.exit_code == 2
    assert f"--json: {package / 'models.py'} is also the --model input (module mypkg.models)" in result.stderr
    assert (package / "models.py").read_text() == "from tests.fixtures.models import build\n"


def test_markdown_appends_only_to_the_ci_step_summary(
    cli: Cli, gate_files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, baseline = gate_files
    gate = ("gate", "--config", str(config), "--baseline", str(baseline), "-q", "--markdown")
    notes = tmp_path / "notes.md"
    notes.write_text("# my notes\n")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    result = cli(*gate, str(notes))
    assert (result.exit_code, result.stderr) == (
        2,
        f"dummyprof: error: --markdown: {notes} already exists; pass --force to overwrite it or choose another name\n",
    )
    assert notes.read_text() == "# my notes\n"
    assert cli(*gate, str(notes), "--force").exit_code == 0  # asked for: replaced, not appended
    assert notes.read_text().startswith("## dummyprof gate\n")
    summary = tmp_path / "step_summary"
    summary.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    link = tmp_path / "summary-link"
    link.symlink_to(summary)
    assert cli(*gate, str(link)).exit_code == 0  # the same file by another name
    assert summary.read_text().startswith("# earlier step\n## dummyprof gate\n")


def test_the_step_summary_is_never_appended_to_when_the_run_reads_it(
    cli: Cli, gate_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, measuring_is_an_error: None
) -> None:
    config, baseline = gate_files
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(config))
    before = config.read_bytes()
    result = cli("gate", "--config", str(config), "--baseline", str(baseline), "--markdown", str(config))
    assert result.exit_code == 2 and f"--markdown: {config} is also the --config input" in result.stderr
    assert config.read_bytes() == before


# -- '-' is stdout only where a flag says so -----------------------------------------------------------


@pytest.mark.parametrize("flag", ["--junit", "--benchmark-json", "--markdown", "--html"])
@pytest.mark.parametrize("dash_exists", [False, True])
def test_dash_is_never_a_file_for_a_flag_without_stdout(
    cli: Cli,
    gate_files: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    flag: str,
    dash_exists: bool,
    measuring_is_an_error: None,
) -> None:
    config, baseline = gate_files
    monkeypatch.chdir(tmp_path)
    if dash_exists:
        (tmp_path / "-").write_text("a file named -")
    result = cli("gate", "--config", str(config), "--baseline", str(baseline), flag, "-", "--force")
    assert (result.exit_code, result.stderr) == (
        2,
        f"dummyprof: error: {flag}: '-' (standard output) is not supported here; give a file name "
        f"(a file named '-' in this folder: {tmp_path / '-'})\n",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == (["-"] if dash_exists else [])
    if dash_exists:
        assert (tmp_path / "-").read_text() == "a file named -"


def test_dash_is_stdout_for_json_and_report_output_and_a_file_named_dash_is_untouched(
    cli: Cli, results_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-").write_text("a file named -")
    result = cli("report", str(results_file), "-f", "json", "-o", "-")
    assert result.exit_code == 0 and json.loads(result.stdout)["command"] == "inspect"
    result = cli(*INSPECT, "--json", "-")
    assert result.exit_code == 0 and json.loads(result.stdout)["command"] == "inspect"
    assert (tmp_path / "-").read_text() == "a file named -"


def test_the_inputs_of_a_gate_config_include_the_options_nested_in_a_sweep(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from dummyprof.cli.inputs import run_inputs
    from dummyprof.scenarios.compare.options import CompareOptions
    from dummyprof.scenarios.sweep.options import SweepOptions

    sweep = SweepOptions(parameter="model-arg:depth", compare=CompareOptions(model="./m.py:build", loaders=["hf-init"]))
    config = SimpleNamespace(path=tmp_path / "dummyprof.toml", scenarios=[SimpleNamespace(name="s", options=sweep)])
    found = [(i.what, str(i.path)) for i in run_inputs(gate=config)]  # type: ignore[arg-type]
    assert found == [
        ("the --config input", str(tmp_path / "dummyprof.toml")),
        ("the scenarios.s.options.compare.model input", "m.py"),
    ]


def test_a_module_the_model_imports_is_never_an_output(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    helper = tmp_path / "net_sizes.py"
    helper.write_text("WIDTH = 4\n")
    model = tmp_path / "net.py"
    model.write_text(
        "import torch\n\n\ndef build():\n    from net_sizes import WIDTH  # imported while the run builds\n\n"
        "    return torch.nn.Linear(WIDTH, WIDTH)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "net_sizes", raising=False)
    refused = (
        f"dummyprof: error: --json: {helper} is also a module the run imported (net_sizes); "
        "dummyprof never writes a file the run reads, even with --force. Choose another file"
    )
    try:
        # first run: the helper is imported after the outputs were checked, so it is refused at write time
        result = cli("inspect", "--model", f"{model}:build", "--json", str(helper), "--force")
        assert (result.exit_code, result.stderr.splitlines()[-1]) == (2, refused)
        assert "<root> Linear" in result.stdout  # the results are still shown
        # imported already: refused before anything runs
        result = cli("inspect", "--model", f"{model}:build", "--json", str(helper), "--force")
        assert (result.exit_code, result.stdout, result.stderr) == (2, "", refused + "\n")
    finally:
        sys.modules.pop("net_sizes", None)
    assert helper.read_text() == "WIDTH = 4\n"


# Issue #26.1: the input list holds the real file behind every input, however it was reached.


def _zip(path: Path, name: str, source: str) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(name, source)
    return path


def test_a_model_module_imported_from_a_zip_archive_never_overwrites_the_archive(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, measuring_is_an_error: None
) -> None:
    """``PYTHONPATH=pkgs.zip --model zmod:build``: the module's file is ``pkgs.zip/zmod.py``, read from the archive."""
    archive = _zip(tmp_path / "pkgs.zip", "zmod.py", "from tests.fixtures.models import build\n")
    before = archive.read_bytes()
    monkeypatch.syspath_prepend(str(archive))
    monkeypatch.delitem(sys.modules, "zmod", raising=False)
    result = cli("inspect", "--model", "zmod:build", "--json", str(archive), "--force")
    assert (result.exit_code, result.stdout) == (2, "")
    assert f"--json: {archive} is also the --model input (module zmod); dummyprof never writes" in result.stderr
    assert archive.read_bytes() == before


def test_a_helper_the_model_imports_lazily_from_a_zip_is_never_overwritten(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = _zip(tmp_path / "h.zip", "zhelper.py", "WIDTH = 4\n")
    before = archive.read_bytes()
    model = tmp_path / "net.py"
    model.write_text(
        "def build():\n    import torch\n    from zhelper import WIDTH\n\n    return torch.nn.Linear(WIDTH, 1)\n"
    )
    monkeypatch.syspath_prepend(str(archive))
    monkeypatch.delitem(sys.modules, "zhelper", raising=False)
    refused = f"--json: {archive} is also a module the run imported (zhelper); dummyprof never writes"
    try:
        result = cli("inspect", "--model", f"{model}:build", "--json", str(archive), "--force")
        assert result.exit_code == 2 and refused in result.stderr  # imported while it ran: refused at write time
        result = cli("inspect", "--model", f"{model}:build", "--json", str(archive), "--force")
        assert (result.exit_code, result.stdout) == (2, "") and refused in result.stderr  # before anything runs
    finally:
        sys.modules.pop("zhelper", None)
    assert archive.read_bytes() == before


def test_the_results_file_behind_standard_input_is_never_overwritten(cli: Cli, tmp_path: Path) -> None:
    """``report - -o r.json --force < r.json``: descriptor 0 is compared as a file (device and inode)."""
    results = tmp_path / "r.json"
    results.write_bytes(Path("tests/fixtures/results/audit.json").read_bytes())
    before = results.read_bytes()
    saved = os.dup(0)
    try:
        with results.open("rb") as stdin:
            os.dup2(stdin.fileno(), 0)
            result = cli("report", "-", "-f", "markdown", "-o", str(results), "--force")
    finally:
        os.dup2(saved, 0)
        os.close(saved)
    assert (result.exit_code, result.stdout) == (2, "")
    assert f"--output: {results} is also the RESULTS.json input (standard input); dummyprof never" in result.stderr
    assert results.read_bytes() == before


@pytest.fixture
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A Hugging Face cache holding org/name's config.json, offline: (the snapshot's link, the blob behind it)."""
    constants = pytest.importorskip("huggingface_hub.constants")
    repo = tmp_path / "hub" / "models--org--name"
    (repo / "blobs").mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    blob = repo / "blobs" / "0f1e2d"
    data = json.loads(Path("tests/data/Llama-3.1-8B.json").read_text())
    data |= {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2}
    data |= {"head_dim": 16, "vocab_size": 256, "num_hidden_layers": 2, "bos_token_id": 1, "eos_token_id": 2}
    blob.write_text(json.dumps(data))
    snapshot = repo / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").symlink_to("../../blobs/0f1e2d")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return snapshot / "config.json", blob


def test_a_hub_config_read_from_the_cache_is_never_overwritten(cli: Cli, hub_cache: tuple[Path, Path]) -> None:
    link, blob = hub_cache
    before = blob.read_bytes()
    what = f"a file of the --model folder {str(link.parent)!r}"
    for target in (link, blob):
        result = cli("inspect", "--model", "hf:org/name", "--json", str(target), "--force")
        assert (result.exit_code, result.stdout) == (2, "")
        assert f"--json: {target} is also {what}; dummyprof never writes" in result.stderr
    assert blob.read_bytes() == before and link.is_symlink()
    result = cli("inspect", "--model", "hf:org/name", "-q")  # and it is the config the run builds, offline
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.startswith("23 tensors, 208.69 KiB;")  # the two-layer config in the cache


@pytest.mark.parametrize(
    "args",
    [("report", "{saved}", "-o", "rel.md", "-f", "markdown"), ("inspect", "--depth", "2", "--json", "rel.json")],
    ids=["report -o", "inspect --json"],
)
def test_a_removed_working_folder_is_one_line_and_exit_2(
    tmp_path: Path, results_file: Path, args: tuple[str, ...]
) -> None:
    """Run from a folder removed under the shell: a relative output names nothing; one line, exit 2."""
    import subprocess

    argv = [sys.executable, "-m", "dummyprof", *(a.format(saved=results_file) for a in args)]
    script = 'mkdir gone && cd gone && rmdir ../gone && exec "$@"'
    proc = subprocess.run(["sh", "-c", script, "sh", *argv], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (
        f"dummyprof: error: the working folder ({tmp_path / 'gone'}) no longer exists, so a relative path names "
        "nothing; cd to a folder that exists, or give absolute paths\n"
    )
    assert not list(tmp_path.iterdir())  # nothing written anywhere


# -- an earlier run's own file ------------------------------------------------------------------------


def test_report_replaces_its_own_earlier_output_and_no_other_file(
    cli: Cli, gate_files: tuple[Path, Path], results_file: Path, tmp_path: Path
) -> None:
    """``report -o FILE`` run again replaces what it wrote (the file tells its report and command); a user's file,
    another command's report, a format that tells no command, or the results it reads still need --force or are
    refused."""
    _, baseline = gate_files
    for saved, fmt, name in [(results_file, "markdown", "r.md"), (baseline, "benchmark-json", "bench.json")]:
        target = tmp_path / name
        for _ in range(2):  # the second run replaces what the first wrote
            result = cli("report", str(saved), "-f", fmt, "-o", str(target), "-q")
            assert (result.exit_code, result.stderr) == (0, ""), result.stderr
        target.write_text("mine\n")  # the user's file now
        result = cli("report", str(saved), "-f", fmt, "-o", str(target), "-q")
        assert result.exit_code == 2 and f"--output: {target} already exists; pass --force" in result.stderr
        assert target.read_text() == "mine\n"
    other = tmp_path / "other.md"  # baseline's Markdown is not an inspect report's own
    assert cli("report", str(baseline), "-f", "markdown", "-o", str(other), "-q").exit_code == 0
    result = cli("report", str(results_file), "-f", "markdown", "-o", str(other), "-q")
    assert result.exit_code == 2 and "already exists; pass --force" in result.stderr
    assert other.read_text().startswith("## dummyprof baseline\n")


def test_a_benchmark_json_file_is_told_as_its_commands_own(gate_files: tuple[Path, Path], tmp_path: Path) -> None:
    """Each entry opens with the command that wrote it: github-action-benchmark reads name, unit and value only."""
    config, baseline = gate_files
    bench = tmp_path / "bench.json"
    assert main(["gate", "--config", str(config), "--baseline", str(baseline), "--benchmark-json", str(bench)]) == 0
    entries = json.loads(bench.read_text())
    assert entries and all(next(iter(entry)) == "dummyprof" and entry["dummyprof"] == "gate" for entry in entries)
    assert outputs.own_kind(bench) == "benchmark:gate"
    bench.write_text('[{"name": "x", "unit": "s", "value": 1.0}]\n')  # the same format, not dummyprof's
    assert outputs.own_kind(bench) is None
