from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from dummyprof.cli.app import main
from dummyprof.loaders.strategies import STRATEGIES, Strategy, legacy_traversal, register_strategy


@pytest.fixture(autouse=True)
def long_lived_objects_frozen() -> None:
    """Each test starts with every object already alive frozen (``gc.freeze``), so a full collection sees only what
    the test made. This process holds far more than a ``dummyprof`` process does (torch, transformers, scipy, every
    collected test, module fixtures' results: about 370,000 objects), and compare collects once a round: each
    collection cost 0.3-0.5 s here (a third of a compare test's time), where a dummyprof process takes milliseconds.
    What the package does is unchanged; garbage left by the previous test is collected first, so none is frozen."""
    gc.collect()
    gc.freeze()


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., CliResult]:
    """Run the CLI in-process, as ``dummyprof ARGS...``, and capture its output."""
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return CliResult(code, out, err)

    assert "dummyprof" in sys.modules
    return run


@pytest.fixture
def two_kernel_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Projected Engram plans size their samples to fit --max-memory with the fill's scratch, which
    depends on the worker count and on whether the C kernel is built: pin both so exact projected
    figures hold on any machine."""
    pin_kernel_workers(monkeypatch)


def pin_kernel_workers(patch: pytest.MonkeyPatch) -> None:
    """Two workers of the C kernel; the test is skipped where the install built no kernel (no C compiler: the
    install falls back to numpy, and CI's DUMMYPROF_REQUIRE_KERNEL test fails instead)."""
    from dummyprof.loaders import random_fast

    if random_fast.KERNEL not in random_fast.available_engines():
        pytest.skip("the C kernel was not built with this install")
    patch.setattr(random_fast, "default_workers", lambda: 2)
    patch.setattr(random_fast, "default_engine", lambda: random_fast.KERNEL)


def fake_proc(root: Path, *, pressure_us: int = 0, steal: int = 0, total: int = 1000, load: float = 0.0) -> Path:
    """A /proc with the three files ``measure.contention`` reads: PSI cpu, the cpu line of stat, loadavg."""
    (root / "pressure").mkdir(parents=True, exist_ok=True)
    (root / "pressure" / "cpu").write_text(
        f"some avg10=0.00 avg60=0.00 avg300=0.00 total={pressure_us}\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    )
    user = total - steal
    (root / "stat").write_text(f"cpu  {user} 0 0 0 0 0 0 {steal} 0 0\ncpu0 {user} 0 0 0 0 0 0 {steal} 0 0\n")
    (root / "loadavg").write_text(f"{load:.2f} 0.00 0.00 1/100 1\n")
    return root


@pytest.fixture(autouse=True, scope="session")
def quiet_machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every test reads a quiet machine (counters that never move), whatever else runs on this one: a time's
    verdict must not depend on the load of the machine the suite runs on. Tests of contention inject their own.
    Session-wide, so module fixtures that run commands see it too."""
    from dummyprof.measure import contention

    root = fake_proc(tmp_path_factory.mktemp("proc"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(contention, "PROC", root)
        yield root


@pytest.fixture
def revisiting_per_layer() -> Iterator[None]:
    """A real regression: "per-layer" walks every ancestor's recursive state_dict() again (the O(depth) refill)."""
    original = STRATEGIES["per-layer"]
    register_strategy(Strategy("per-layer", original.description, legacy_traversal, original.initializer), replace=True)
    try:
        yield
    finally:
        register_strategy(original, replace=True)
