"""What ``engram`` takes, and the one check of it that the CLI, the gate and the Python API share."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

from dummyprof.allocation.backings import BACKINGS, MMAP_PREFIX, check_mmap_path
from dummyprof.errors import UsageError
from dummyprof.loaders.fp8_methods import DEFAULT_CHUNK_ELEMENTS, DEFAULT_METHODS, FLOOR, FillMethod, get_method
from dummyprof.models.engram import EngramSpec, validate_engram_spec

DEFAULT_TIME_BUDGET_S = 40.0
DEFAULT_REPEAT = 3


@dataclass
class EngramOptions:
    """Plain data (the CI gate builds it from TOML); sizes are per deployment, the run builds one rank."""

    rows: int = 384_000_000
    dim: int = 256
    block_size: int = 32
    tables: int = 1
    tp_size: int = 1
    dp_size: int = 1
    rank: int = 0
    heads: int | None = None
    offload: bool = False
    # pinned (default with --offload), pinned-copy, pinned-register, pageable, hugepages, shm or mmap:PATH
    backing: str | None = None
    device: str = "auto"
    methods: list[str] = field(default_factory=lambda: list(DEFAULT_METHODS))
    repeat: int = DEFAULT_REPEAT
    chunk_elements: int = DEFAULT_CHUNK_ELEMENTS
    max_memory: int | None = None
    time_budget_s: float = DEFAULT_TIME_BUDGET_S
    deadline_s: float | None = None
    dry_run: bool = False

    def spec(self) -> EngramSpec:
        """The tables to build: EngramSpec's fields, read from these options by name."""
        return EngramSpec(**{f.name: getattr(self, f.name) for f in fields(EngramSpec)})


# Smallest chunk for random-chunked: 2 MiB of fp16 scratch, so the per-chunk overhead stays small.
MIN_CHUNK_ELEMENTS = 2**20


def methods_to_run(names: list[str]) -> list[str]:
    """The methods named, plus the memset floor when it is not among them: every run measures its own floor."""
    return names if FLOOR in names else [*names, FLOOR]


def validate(options: EngramOptions) -> list[FillMethod]:
    """Check every option before anything is sized or allocated; returns the methods to run, floor included."""
    validate_engram_spec(options.spec())
    if options.backing is not None:
        if options.backing.startswith(MMAP_PREFIX):
            problem = check_mmap_path(options.backing[len(MMAP_PREFIX) :])
            if problem is not None:
                raise UsageError("--backing", problem)
        elif options.backing not in BACKINGS:
            raise UsageError("--backing", f"unknown backing {options.backing!r}; choose from: {', '.join(BACKINGS)}")
        if not options.offload:
            raise UsageError(
                "--backing", "host memory kinds only apply with --offload; add --offload or drop --backing"
            )
    if options.repeat < 1:
        raise UsageError("--repeat", f"must be at least 1, got {options.repeat}; try --repeat 3")
    if options.chunk_elements < MIN_CHUNK_ELEMENTS:
        raise UsageError(
            "--chunk-elements",
            f"must be at least 1Mi ({MIN_CHUNK_ELEMENTS:,}), got {options.chunk_elements:,}: each chunk costs a "
            "Python loop step and a generator call, which below 1Mi elements outweigh the fill itself and "
            "run past the time budget; try --chunk-elements 64Mi",
        )
    if not options.time_budget_s > 0 or not math.isfinite(options.time_budget_s):
        raise UsageError("--time-budget", f"must be a positive number of seconds, got {options.time_budget_s}")
    if options.deadline_s is not None and not options.deadline_s > 0:
        raise UsageError("--deadline", f"must be a positive number of seconds, got {options.deadline_s}")
    if options.max_memory is not None and options.max_memory < 1:
        raise UsageError("--max-memory", f"must be positive, got {options.max_memory}")
    if not options.methods:
        raise UsageError("--method", f"give at least one method; choose from: {', '.join(DEFAULT_METHODS)}")
    methods: list[FillMethod] = []
    for name in options.methods:
        method = get_method(name)
        if method in methods:
            raise UsageError("--method", f"{name!r} is listed twice")
        methods.append(method)
    return [get_method(name) for name in methods_to_run([m.name for m in methods])]
