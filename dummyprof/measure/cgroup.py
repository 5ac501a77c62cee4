"""The container's memory limit (cgroup v2 ``memory.max``, v1 ``memory.limit_in_bytes``): a process is killed at
it however much RAM is free, so a budget is the smaller of the two. The root is a parameter, for tests."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")
# cgroup v1 writes "no limit" as the largest page-aligned signed 64-bit value (9223372036854771712).
V1_UNLIMITED = 1 << 62


@dataclass(frozen=True)
class CgroupLimit:
    version: int  # 1 or 2
    limit_file: Path
    limit_bytes: int
    usage_bytes: int  # charged to the cgroup, less the inactive file cache the kernel reclaims first

    @property
    def free_bytes(self) -> int:
        return max(0, self.limit_bytes - self.usage_bytes)


def _text(path: Path) -> str:
    """The file's text, '' when it cannot be read (no such controller, not ASCII)."""
    try:
        return path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return ""


def _read_int(path: Path) -> int | None:
    text = _text(path).strip()
    return int(text) if text.isdigit() else None


def _stat(path: Path, key: str) -> int:
    match = re.search(rf"^{key} (\d+)$", _text(path), re.MULTILINE)
    return int(match.group(1)) if match else 0


def _own_paths(proc_cgroup: Path) -> tuple[str | None, str | None]:
    v2 = v1 = None
    for line in _text(proc_cgroup).splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            v2 = parts[2]
        elif "memory" in parts[1].split(","):
            v1 = parts[2]
    return v2, v1


def _candidates(base: Path, own: str | None) -> list[Path]:
    """The process's own cgroup directory first (a host mount), then the mount root (a container's view)."""
    return [base / own.lstrip("/"), base] if own and own != "/" else [base]


def cgroup_memory_limit(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_CGROUP) -> CgroupLimit | None:
    v2_own, v1_own = _own_paths(proc_cgroup)
    for directory in _candidates(root, v2_own):
        limit_file = directory / "memory.max"
        if not limit_file.is_file():
            continue
        limit = _read_int(limit_file)  # None for "max" (no limit) as for anything unreadable
        current = _read_int(directory / "memory.current")
        if limit is None or current is None:
            return None
        usage = max(0, current - _stat(directory / "memory.stat", "inactive_file"))
        return CgroupLimit(2, limit_file, limit, usage)
    for directory in _candidates(root / "memory", v1_own):
        limit_file = directory / "memory.limit_in_bytes"
        limit = _read_int(limit_file)
        if limit is None:
            continue
        if limit >= V1_UNLIMITED:
            return None
        usage = _read_int(directory / "memory.usage_in_bytes") or 0
        usage = max(0, usage - _stat(directory / "memory.stat", "total_inactive_file"))
        return CgroupLimit(1, limit_file, limit, usage)
    return None
