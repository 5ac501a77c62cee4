"""Container memory limits (fake cgroup trees), the mmap backing and the pinned allocation paths (fakes)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from dummyprof.errors import DoesNotFitError, UsageError
from dummyprof.measure import cgroup
from dummyprof.measure.budget import PSUTIL, host_memory
from dummyprof.models import backings
from dummyprof.models.backings import Arena, Backing, resolve_backing
from dummyprof.scenarios.engram.run import EngramOptions, run, validate

GIB = 1 << 30
CPU = torch.device("cpu")


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="ascii")


def v2_tree(root: Path, limit: str, current: int, inactive_file: int = 0) -> Path:
    write(root / "memory.max", limit + "\n")
    write(root / "memory.current", f"{current}\n")
    write(root / "memory.stat", f"anon {current}\ninactive_file {inactive_file}\nactive_file 0\n")
    proc = root.parent / "proc-cgroup"
    write(proc, "0::/\n")
    return proc


def v1_tree(root: Path, limit: int, usage: int, inactive_file: int = 0) -> Path:
    write(root / "memory" / "memory.limit_in_bytes", f"{limit}\n")
    write(root / "memory" / "memory.usage_in_bytes", f"{usage}\n")
    write(root / "memory" / "memory.stat", f"cache 0\ntotal_inactive_file {inactive_file}\n")
    proc = root.parent / "proc-cgroup"
    write(proc, "4:memory:/process_api/abc\n0::/\n")
    return proc


def test_cgroup_v2_limit_less_what_is_charged(tmp_path: Path) -> None:
    root = tmp_path / "cg"
    proc = v2_tree(root, str(8 * GIB), current=3 * GIB, inactive_file=GIB)
    limit = cgroup.cgroup_memory_limit(root, proc)
    assert limit is not None
    assert (limit.version, limit.limit_bytes, limit.usage_bytes) == (2, 8 * GIB, 2 * GIB)
    assert limit.free_bytes == 6 * GIB  # inactive file cache is reclaimed before the limit bites
    assert limit.limit_file == root / "memory.max"


def test_cgroup_v2_nested_path_of_this_process_first(tmp_path: Path) -> None:
    root = tmp_path / "cg"
    v2_tree(root, "max", current=0)  # the root has no limit
    v2_tree(root / "user.slice" / "job", str(2 * GIB), current=GIB)
    proc = tmp_path / "proc-cgroup"
    write(proc, "0::/user.slice/job\n")
    limit = cgroup.cgroup_memory_limit(root, proc)
    assert limit is not None and limit.limit_bytes == 2 * GIB and limit.free_bytes == GIB


def test_no_limit_when_max_or_v1_unlimited_or_no_files(tmp_path: Path) -> None:
    proc = v2_tree(tmp_path / "v2", "max", current=GIB)
    assert cgroup.cgroup_memory_limit(tmp_path / "v2", proc) is None
    proc = v1_tree(tmp_path / "v1", 9223372036854771712, usage=GIB)  # what v1 writes for "no limit"
    assert cgroup.cgroup_memory_limit(tmp_path / "v1", proc) is None
    assert cgroup.cgroup_memory_limit(tmp_path / "missing", tmp_path / "missing-proc") is None


def test_cgroup_v1_limit(tmp_path: Path) -> None:
    root = tmp_path / "cg"
    proc = v1_tree(root, 4 * GIB, usage=GIB + 512, inactive_file=512)
    limit = cgroup.cgroup_memory_limit(root, proc)
    assert limit is not None
    assert (limit.version, limit.limit_bytes, limit.free_bytes) == (1, 4 * GIB, 3 * GIB)


def test_host_memory_is_capped_by_the_cgroup_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "cg"
    proc = v2_tree(root, str(GIB), current=GIB // 4)
    monkeypatch.setattr("dummyprof.measure.budget.available_memory_bytes", lambda: 16 * GIB)
    host = host_memory(root, proc)
    assert host.available_bytes == 3 * GIB // 4 and host.limit == "cgroup v2"
    assert "cgroup v2 limit" in host.describe() and str(root / "memory.max") in host.describe()
    # a limit larger than what the machine has available does not bind
    proc = v2_tree(tmp_path / "big", str(64 * GIB), current=0)
    host = host_memory(tmp_path / "big", proc)
    assert host.available_bytes == 16 * GIB and host.limit == PSUTIL


def test_engram_budget_records_the_cgroup_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "cg"
    proc = v1_tree(root, 64 * 1024 * 1024, usage=0)
    monkeypatch.setattr(cgroup, "CGROUP_ROOT", root)
    monkeypatch.setattr(cgroup, "PROC_CGROUP", proc)
    results = run(EngramOptions(rows=1_000_000, dim=64, offload=True, backing="pageable", dry_run=True))
    engram = results.engram
    assert engram is not None
    budget = engram.budget
    assert budget.memory_bytes == int(0.8 * 64 * 1024 * 1024)  # 80% of what the cgroup leaves
    assert (budget.limit, budget.cgroup_version, budget.cgroup_limit_bytes) == ("cgroup v1", 1, 64 * 1024 * 1024)
    assert budget.cgroup_file == str(root / "memory" / "memory.limit_in_bytes")
    assert "cgroup v1 limit" in budget.memory_source
    assert not engram.method("memset").fits_in_memory  # 66 MB of tables over a 51 MiB cgroup budget


# --- pinned allocation paths: selection logic with fakes (this machine has no CUDA) ---------------


@pytest.mark.parametrize("kind", ["pinned", "pinned-copy", "pinned-register"])
def test_pinned_paths_need_cuda_and_say_so(kind: str) -> None:
    backing = resolve_backing(kind, offload=True, device=CPU, cuda=False)
    assert (backing.requested, backing.used) == (kind, "pageable")
    assert backing.note.startswith("pinned memory needs CUDA")


def test_pinned_paths_with_cuda_keep_their_rounding_rule() -> None:
    request = 47 * GIB + 1
    empty = resolve_backing("pinned", offload=True, device=CPU, cuda=True)
    copy = resolve_backing("pinned-copy", offload=True, device=CPU, cuda=True)
    register = resolve_backing("pinned-register", offload=True, device=CPU, cuda=True)
    assert (empty.used, copy.used, register.used) == ("pinned", "pinned-copy", "pinned-register")
    # torch's caching host allocator rounds to a power of two; cudaHostRegister pins the pages asked for
    assert empty.reserved_bytes(request) == copy.reserved_bytes(request) == 64 * GIB
    assert register.reserved_bytes(request) == backings.round_up(request, backings.page_size())
    assert empty.caching_host_allocator and copy.caching_host_allocator and not register.caching_host_allocator
    assert "pin_memory()" in copy.note and "cudaHostRegister" in register.note


class FakeCudart:
    def __init__(self) -> None:
        self.registered: list[tuple[int, int, int]] = []
        self.unregistered: list[int] = []

    def cudaHostRegister(self, pointer: int, size: int, flags: int) -> int:
        self.registered.append((pointer, size, flags))
        return 0

    def cudaHostUnregister(self, pointer: int) -> int:
        self.unregistered.append(pointer)
        return 0


def test_register_path_pins_exactly_the_allocation_and_unpins_on_release(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeCudart()
    monkeypatch.setattr(torch.cuda, "cudart", lambda: fake)
    arena = Arena(Backing("pinned-register", "pinned-register"))
    weight = arena.empty((1000, 64), torch.float8_e4m3fn)
    scale = arena.empty((1000, 2), torch.uint8)
    assert fake.registered == [(weight.data_ptr(), 64_000, 0), (scale.data_ptr(), 2_000, 0)]
    pointers = [weight.data_ptr(), scale.data_ptr()]
    del weight, scale
    arena.release()
    assert fake.unregistered == pointers


# --- mmap:PATH ----------------------------------------------------------------------------------------


def test_mmap_backing_refuses_an_existing_file_and_bad_folders(tmp_path: Path) -> None:
    existing = tmp_path / "tables.bin"
    existing.write_bytes(b"keep me")
    for path, message in [
        (existing, "already exists"),
        (tmp_path / "no" / "such" / "t.bin", "does not exist"),
    ]:
        with pytest.raises(UsageError) as info:
            validate(EngramOptions(rows=1000, dim=64, offload=True, backing=f"mmap:{path}"))
        assert info.value.flag == "--backing" and message in info.value.message
    with pytest.raises(UsageError, match="give a file path"):
        validate(EngramOptions(rows=1000, dim=64, offload=True, backing="mmap:"))
    assert existing.read_bytes() == b"keep me"


def test_mmap_tables_live_in_files_that_are_gone_as_soon_as_mapped(tmp_path: Path) -> None:
    path = tmp_path / "tables.bin"
    backing = resolve_backing(f"mmap:{path}", offload=True, device=CPU)
    assert (backing.used, backing.path) == ("mmap", str(path))
    arena = Arena(backing)
    weight = arena.empty((4096, 64), torch.float8_e4m3fn)
    scale = arena.empty((4096, 2), torch.uint8)
    weight.view(torch.uint8).fill_(7)
    scale.fill_(9)
    assert not path.exists() and not Path(f"{path}.1").exists()  # unlinked at once: nothing left on any exit
    assert int(weight.view(torch.uint8).sum()) == 7 * 4096 * 64 and int(scale.sum()) == 9 * 4096 * 2
    page = backings.page_size()
    assert arena.reserved_bytes == backings.round_up(4096 * 64, page) + backings.round_up(4096 * 2, page)
    del weight, scale
    arena.release()
    assert os.listdir(tmp_path) == []


def test_mmap_file_is_removed_when_the_fill_is_interrupted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "tables.bin"

    def interrupted(mm: object, *args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    arena = Arena(resolve_backing(f"mmap:{path}", offload=True, device=CPU))
    monkeypatch.setattr(backings.mmap, "mmap", interrupted)
    with pytest.raises(KeyboardInterrupt):
        arena.empty((1024, 64), torch.float8_e4m3fn)
    assert os.listdir(tmp_path) == []  # the file created before mapping was removed on the way out


def test_mmap_checks_free_disk_space_before_creating(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "tables.bin"
    monkeypatch.setattr(backings, "disk_free_bytes", lambda directory: 1000)
    arena = Arena(resolve_backing(f"mmap:{path}", offload=True, device=CPU))
    with pytest.raises(DoesNotFitError) as info:
        arena.empty((1024, 64), torch.float8_e4m3fn)
    assert info.value.flag == "--backing" and "free on that disk" in info.value.message
    assert os.listdir(tmp_path) == []


def test_engram_run_on_an_mmap_backing(tmp_path: Path) -> None:
    path = tmp_path / "engram.bin"
    options = EngramOptions(
        rows=8192, dim=64, offload=True, backing=f"mmap:{path}", methods=["constant"], repeat=1, time_budget_s=60
    )
    engram = run(options).engram
    assert engram is not None
    assert (engram.backing.requested, engram.backing.used) == ("mmap", "mmap")
    constant = engram.method("constant")
    assert constant.mode == "measured" and constant.bytes_written == 8192 * 66
    assert constant.values is not None and constant.values.weight_distinct == 1
    assert [p.name for p in engram.phases] == ["allocate", "first touch"]
    assert os.listdir(tmp_path) == []


def test_mmap_budget_is_capped_by_free_disk_space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backings, "disk_free_bytes", lambda directory: 5_000_000)
    options = EngramOptions(rows=1_000_000, dim=64, offload=True, backing=f"mmap:{tmp_path / 't.bin'}", dry_run=True)
    engram = run(options).engram
    assert engram is not None
    assert (engram.budget.memory_bytes, engram.budget.limit) == (5_000_000, "disk")
    assert not any(m.fits_in_memory for m in engram.methods)
