"""Where Engram tables live: pinned, pageable, huge-page, /dev/shm or file-backed host memory, or a GPU. Each
backing says when it cannot be had and what was used instead, and what the allocator reserves (pinned memory
rounds to a power of two: a 47.2 GiB table reserves 64 GiB). Pinned memory three ways, as engines do:
``pin_memory=True`` (``pinned``), ``tensor.pin_memory()`` (``pinned-copy``) and ``cudaHostRegister`` in place
(``pinned-register``, exact size)."""

from __future__ import annotations

import contextlib
import gc
import math
import mmap
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from dummyprof.errors import DoesNotFitError, UsageError
from dummyprof.units import format_bytes

PINNED_KINDS = ("pinned", "pinned-copy", "pinned-register")
MMAP_PREFIX = "mmap:"
BACKINGS = (*PINNED_KINDS, "pageable", "hugepages", "shm", MMAP_PREFIX + "PATH")
CUDA_HOST_REGISTER_DEFAULT = 0  # cudaHostRegisterDefault
HUGE_PAGE = 2 * 1024 * 1024
CUDA_LARGE_ROUND = 2 * 1024 * 1024  # the CUDA caching allocator rounds large blocks to 2 MiB
THP_PATH = Path("/sys/kernel/mm/transparent_hugepage/enabled")
SHM_DIR = Path("/dev/shm")


def page_size() -> int:
    return os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def next_power_of_two(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


@dataclass(frozen=True)
class Backing:
    requested: str  # pinned, pinned-copy, pinned-register, pageable, hugepages, shm, mmap or device
    used: str
    device: str = "cpu"  # where the tensors live ("cuda:0" for on-device tables)
    note: str = ""  # shown to the user when ``used`` differs or is best effort
    path: str = ""  # mmap: the file the tables are mapped from

    @property
    def caching_host_allocator(self) -> bool:  # torch's CUDA caching host allocator: power-of-two rounding
        return self.used in ("pinned", "pinned-copy")

    def reserved_bytes(self, nbytes: int) -> int:
        if self.caching_host_allocator:
            return next_power_of_two(nbytes)
        if self.used == "hugepages":
            return round_up(nbytes, HUGE_PAGE)
        if self.used == "device":
            return round_up(nbytes, CUDA_LARGE_ROUND) if nbytes > 1024 * 1024 else round_up(nbytes, 512)
        return round_up(nbytes, page_size())

    @property
    def rounding(self) -> str:
        return {
            "pinned": "next power of two per allocation (torch pinned allocator)",
            "pinned-copy": "next power of two per allocation (torch pinned allocator), plus a pageable source",
            "pinned-register": f"multiple of the {page_size() // 1024} KiB page per allocation (cudaHostRegister)",
            "mmap": f"multiple of the {page_size() // 1024} KiB page per allocation (file pages)",
            "hugepages": "multiple of 2 MiB per allocation (huge page)",
            "device": "multiple of 2 MiB per allocation (CUDA caching allocator)",
        }.get(self.used, f"multiple of the {page_size() // 1024} KiB page per allocation")


def thp_mode(path: Path = THP_PATH) -> str | None:
    try:
        match = re.search(r"\[(\w+)\]", path.read_text(encoding="ascii"))
    except OSError:
        return None
    return match.group(1) if match else None


def resolve_backing(
    requested: str,
    *,
    offload: bool,
    device: torch.device,
    cuda: bool | None = None,
    thp: str | None = "unknown",
    shm_dir: Path = SHM_DIR,
) -> Backing:
    """Pick the memory kind; fall back to pageable (saying why) when the asked-for kind cannot be had."""
    if not offload:
        if device.type == "cuda":
            return Backing("device", "device", str(device))
        return Backing("device", "pageable", "cpu", "tables kept on the CPU device (no --offload, no GPU)")
    cuda = torch.cuda.is_available() if cuda is None else cuda
    if requested in PINNED_KINDS:
        if cuda:
            how = {
                "pinned": "torch.empty(..., pin_memory=True)",
                "pinned-copy": "an ordinary tensor, then tensor.pin_memory() (a pinned copy)",
                "pinned-register": "an ordinary allocation pinned in place with cudaHostRegister",
            }[requested]
            return Backing(requested, requested, note="" if requested == "pinned" else f"pinned memory from {how}")
        return Backing(
            requested,
            "pageable",
            note=f"pinned memory needs CUDA (torch {torch.__version__} sees no CUDA GPU); measured pageable instead",
        )
    if requested.startswith(MMAP_PREFIX):
        path = requested[len(MMAP_PREFIX) :]
        return Backing(
            "mmap",
            "mmap",
            note=f"tables in files mapped shared from {path} (removed as soon as mapped: nothing is left behind)",
            path=path,
        )
    if requested == "hugepages":
        mode = thp_mode() if thp == "unknown" else thp
        if not hasattr(mmap, "MADV_HUGEPAGE"):
            return Backing(
                "hugepages", "pageable", note="this platform has no madvise(MADV_HUGEPAGE); measured pageable"
            )
        if mode in (None, "never"):
            why = "are disabled (THP mode never)" if mode == "never" else f"are not available ({THP_PATH} unreadable)"
            return Backing("hugepages", "pageable", note=f"transparent huge pages {why}; measured pageable instead")
        return Backing(
            "hugepages",
            "hugepages",
            note="huge pages are best effort (madvise on an mmap); the bytes really backed are read after first touch",
        )
    if requested == "shm":
        if not shm_dir.is_dir() or not os.access(shm_dir, os.W_OK):
            return Backing("shm", "pageable", note=f"{shm_dir} is missing or not writable; measured pageable instead")
        return Backing("shm", "shm", note=f"tables are files in {shm_dir}, as vLLM shares them between DP replicas")
    return Backing("pageable", "pageable")


def disk_free_bytes(directory: Path) -> int | None:
    try:
        st = os.statvfs(directory)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def backing_disk_free(backing: Backing) -> int | None:
    return disk_free_bytes(Path(backing.path).parent) if backing.used == "mmap" else None


def check_mmap_path(path: str) -> str | None:
    """Why ``path`` cannot take a new table file, or None when it can."""
    if not path:
        return "give a file path after mmap:, e.g. --backing mmap:/var/tmp/engram.bin"
    target = Path(path)
    if target.exists() or target.is_symlink():
        return f"{path} already exists; dummyprof never overwrites a file: pick a new path or remove it"
    parent = target.parent
    if not parent.is_dir():
        return f"folder {parent} does not exist"
    if not os.access(parent, os.W_OK):
        return f"folder {parent} is not writable"
    return None


def anon_huge_page_bytes() -> int | None:
    """Bytes of this process backed by transparent huge pages (anonymous and shmem)."""
    try:
        text = Path("/proc/self/smaps_rollup").read_text(encoding="ascii")
    except OSError:
        return None
    total = 0
    found = False
    for key in ("AnonHugePages", "ShmemPmdMapped"):
        match = re.search(rf"^{key}:\s+(\d+) kB", text, re.MULTILINE)
        if match:
            found = True
            total += int(match.group(1)) * 1024
    return total if found else None


def pinned_reserved_bytes() -> int | None:
    """Bytes the CUDA pinned allocator holds (rounded blocks), or None where torch cannot say."""
    if not torch.cuda.is_available():
        return None
    stats_fn = getattr(torch.cuda, "host_memory_stats", None)
    if stats_fn is None:
        return None
    value = stats_fn().get("allocated_bytes.current")
    return int(value) if value is not None else None


def _empty_pinned_cache() -> None:
    # cached pinned blocks would otherwise pile up across sample sizes
    empty = getattr(torch._C, "_host_emptyCache", None)
    if empty is not None and torch.cuda.is_available():
        empty()


@dataclass
class Arena:
    """The allocations of one set of tables (address space reserved, or pinned: pages fault in on first write,
    timed apart); :meth:`release` gives them back."""

    backing: Backing
    tensors: list[torch.Tensor] = field(default_factory=list)
    requested_bytes: int = 0
    reserved_bytes: int = 0  # computed from the backing's rounding rule
    _maps: list[mmap.mmap] = field(default_factory=list)
    _registered: list[int] = field(default_factory=list)  # pointers pinned with cudaHostRegister
    _files: int = 0  # table files created for an mmap backing

    def empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        nbytes = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
        used = self.backing.used
        if used in ("hugepages", "shm", "mmap"):
            tensor = self._mapped(nbytes, used).view(dtype).view(shape)
        else:  # on the backing's device: "cpu" for every host kind
            tensor = torch.empty(shape, dtype=dtype, device=self.backing.device, pin_memory=used == "pinned")
            if used == "pinned-copy":
                tensor = tensor.pin_memory()
            elif used == "pinned-register":
                self._register(tensor)
        self.tensors.append(tensor)
        self.requested_bytes += nbytes
        self.reserved_bytes += self.backing.reserved_bytes(nbytes)
        return tensor

    def _mapped(self, nbytes: int, kind: str) -> torch.Tensor:
        if kind == "hugepages":
            size = round_up(max(nbytes, 1), HUGE_PAGE)
            mm = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            with contextlib.suppress(OSError, AttributeError):
                mm.madvise(mmap.MADV_HUGEPAGE)
        else:
            size = round_up(max(nbytes, 1), page_size())
            if kind == "mmap":
                fd, path = self._create_file(size)
            else:
                fd, path = tempfile.mkstemp(prefix="dummyprof-engram-", dir=SHM_DIR)
            try:
                os.ftruncate(fd, size)
                mm = mmap.mmap(fd, size, flags=mmap.MAP_SHARED)
            finally:
                os.close(fd)
                # The mapping keeps the pages; unlinking now means nothing is left behind on a crash.
                os.unlink(path)
        self._maps.append(mm)
        return torch.frombuffer(mm, dtype=torch.uint8, count=nbytes)

    def _create_file(self, size: int) -> tuple[int, str]:
        """A new file for one table (PATH, PATH.1, ...), never an existing one; disk space checked."""
        base = self.backing.path
        path = base if self._files == 0 else f"{base}.{self._files}"
        free = disk_free_bytes(Path(path).parent)
        if free is not None and free < size:
            raise DoesNotFitError.for_field(
                "backing",
                f"{format_bytes(size)} for a table file in {Path(path).parent} but only {format_bytes(free)} "
                "free on that disk; choose a folder on a larger disk or lower --rows",
            )
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise UsageError.for_field(
                "backing", f"{path} already exists; dummyprof never overwrites a file: pick a new path"
            ) from None
        self._files += 1
        return fd, path

    def _register(self, tensor: torch.Tensor) -> None:
        cudart = torch.cuda.cudart()
        status = cudart.cudaHostRegister(tensor.data_ptr(), tensor.nbytes, CUDA_HOST_REGISTER_DEFAULT)
        if int(status) != 0:
            raise RuntimeError(f"cudaHostRegister of {format_bytes(tensor.nbytes)} failed with CUDA error {status}")
        self._registered.append(tensor.data_ptr())

    def release(self) -> None:
        """Drop every reference held here; memory returns once callers drop theirs too."""
        if self._registered:
            cudart = torch.cuda.cudart()
            for pointer in self._registered:
                cudart.cudaHostUnregister(pointer)
            self._registered.clear()
        self.tensors.clear()
        maps, self._maps = self._maps, []
        if maps or self.backing.caching_host_allocator:
            # a map closes, and the pinned cache empties, only once no view is left: views in reference cycles
            # would hold them. Plain tensors go with their last reference (0.07 s a collection with torch loaded).
            gc.collect()
        for mm in maps:
            # A tensor still alive elsewhere keeps its map exported; it is unmapped when that tensor dies.
            with contextlib.suppress(BufferError):
                mm.close()
        if self.backing.caching_host_allocator:
            _empty_pinned_cache()
