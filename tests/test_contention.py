"""Contention measured over a window from /proc (faked: no busy loops), judged, combined, and said."""

from __future__ import annotations

from pathlib import Path

import pytest

from dummyprof.measure import contention
from dummyprof.reports.format import contention_text
from dummyprof.results.common import CPU_PRESSURE, CPU_STEAL, LOAD_ABOVE_CORES, Contention
from tests.conftest import fake_proc


def _window(proc: Path, *, wall: float, cpu: float, after: dict[str, float], cores: int = 2) -> Contention:
    """Read ``proc``, rewrite it with ``after`` (fake_proc's keywords), read again ``wall`` s later."""
    start = contention.read(proc, clock=lambda: 100.0, cpu=lambda: 5.0)
    fake_proc(proc, **after)  # type: ignore[arg-type]
    end = contention.read(proc, clock=lambda: 100.0 + wall, cpu=lambda: 5.0 + cpu)
    return contention.between(start, end, proc, cores=cores)


def test_pressure_over_the_window_flags_contention(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, pressure_us=1_000_000, steal=0, total=1000)
    # 3 s of the 4 s window some task waited for a CPU; 200 of 1000 more ticks were stolen
    found = _window(proc, wall=4.0, cpu=2.0, after={"pressure_us": 4_000_000, "steal": 200, "total": 2000})
    assert found.pressure == pytest.approx(0.75)
    assert found.steal == pytest.approx(0.2)
    assert found.process_cpu_share == pytest.approx(0.5)
    assert found.load_per_core is None  # PSI read: the load average is not needed
    assert found.reasons == [CPU_PRESSURE, CPU_STEAL] and found.contended


def test_a_quiet_window_is_not_contended(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, pressure_us=10, total=1000)
    found = _window(proc, wall=2.0, cpu=1.9, after={"pressure_us": 20_010, "total": 1400})  # 1% pressure
    assert found.pressure == pytest.approx(0.01)
    assert found.steal == 0.0 and found.reasons == [] and not found.contended


def test_without_psi_the_load_average_against_cores_stands_in(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, load=5.0)
    (proc / "pressure" / "cpu").unlink()  # a kernel without PSI
    found = _window(proc, wall=1.0, cpu=1.0, after={"load": 5.0}, cores=2)
    (proc / "pressure" / "cpu").unlink()
    assert found.pressure is None and found.load_per_core == pytest.approx(2.5)
    assert found.reasons == [LOAD_ABOVE_CORES]


def test_nothing_readable_gives_figures_of_this_process_only(tmp_path: Path) -> None:
    start = contention.read(tmp_path, clock=lambda: 0.0, cpu=lambda: 0.0)
    found = contention.between(start, contention.read(tmp_path, clock=lambda: 2.0, cpu=lambda: 1.0), tmp_path, 2)
    assert (found.pressure, found.steal, found.load_per_core) == (None, None, None)
    assert found.process_cpu_share == 0.5 and not found.contended


def test_windows_combine_weighted_by_their_wall_time() -> None:
    quiet = Contention(wall_s=9.0, cores=2, pressure=0.0, steal=0.0, process_cpu_share=1.0)
    busy = Contention(wall_s=1.0, cores=2, pressure=0.9, steal=0.0, process_cpu_share=0.1, reasons=[CPU_PRESSURE])
    joined = contention.combine([quiet, busy])
    assert joined is not None
    assert joined.wall_s == 10.0 and joined.pressure == pytest.approx(0.09)
    assert joined.process_cpu_share == pytest.approx(0.91)
    assert joined.reasons == []  # 9% over the whole window: under the 10% limit
    assert contention.combine([]) is None


def test_the_window_context_reads_the_injected_proc(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path / "p", pressure_us=0)
    window = contention.Window(proc, clock=iter([0.0, 1.0]).__next__)
    with window.measure():
        fake_proc(proc, pressure_us=500_000)
    found = window.result()
    assert found is not None and found.pressure == pytest.approx(0.5) and found.reasons == [CPU_PRESSURE]


def test_the_report_says_contended_with_its_reasons_or_quiet() -> None:
    busy = Contention(wall_s=1, cores=2, pressure=0.55, steal=0.0, process_cpu_share=0.42, reasons=[CPU_PRESSURE])
    assert contention_text(busy, "calibrating on cpu") == (
        "CONTENDED while calibrating on cpu (CPU pressure 55%, steal 0%, this process 0.42 of 2 CPUs; "
        "cpu-pressure: other tasks waited for a CPU): these times are slower than this machine can do and "
        "another run will not reproduce them"
    )
    quiet = Contention(wall_s=1, cores=2, pressure=0.01, steal=0.0, process_cpu_share=1.9)
    assert contention_text(quiet, "the rounds ran on cpu") == (
        "machine while the rounds ran on cpu: quiet (CPU pressure 1%, steal 0%, this process 1.90 of 2 CPUs)"
    )
    assert contention_text(None, "x") == ""
