"""What ``engram`` takes, and the one check of it that the CLI, the gate and the Python API share."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from dummyprof.errors import UsageError
from dummyprof.scenarios.options import check_listed, max_memory_option
from dummyprof.schema import check_values, duration, integer, option
from dummyprof.shapes import EngramShape

if TYPE_CHECKING:
    from dummyprof.loaders.fp8_methods import FillMethod
    from dummyprof.models.engram import EngramSpec

ENGRAM_FIELDS = tuple(f.name for f in fields(EngramShape))  # the tables and the layout: rows .. heads


def _default_methods() -> list[str]:
    from dummyprof.loaders.fp8_methods import DEFAULT_METHODS

    return list(DEFAULT_METHODS)


def _default_chunk() -> int:
    from dummyprof.loaders.fp8_methods import DEFAULT_CHUNK_ELEMENTS

    return DEFAULT_CHUNK_ELEMENTS


@dataclass
class EngramOptions(EngramShape):
    """Plain data (the CI gate builds it from TOML); sizes are per deployment, the run builds one rank."""

    offload: bool = option(False, unit="flag", help="Keep the tables in host memory (pinned by default).")
    backing: str | None = option(
        None,
        metavar="KIND",
        help="Host memory kind with --offload: pinned (torch.empty pin_memory=True), pinned-copy "
        "(tensor.pin_memory()), pinned-register (cudaHostRegister), pageable, hugepages, shm, or mmap:PATH "
        "(a new file on disk, mapped shared, removed at once).",
    )
    device: str = option("auto", help="Without --offload: cpu, cuda, cuda:N or auto.")
    methods: list[str] = option(
        factory=_default_methods,
        unit="list",
        short="-m",
        flag="--method",
        help="Fill method (repeatable). Default: all; memset always runs as the floor.",
        forms={"sweep": {"help": "With --rows: fill method (repeatable). Default: all."}},
    )
    repeat: int = integer(3, "Full-size rounds per method, interleaved.")
    chunk_elements: int = option(
        factory=_default_chunk, unit="count", example="64Mi", shown="64Mi", help="Chunk of random-chunked, e.g. 64Mi."
    )
    max_memory: int | None = max_memory_option()
    time_budget_s: float = duration(
        40.0,
        "Time for all measuring; sizes and rounds are chosen to fit.",
        example="40",
        shown="40",
        flag="--time-budget",
    )
    deadline_s: float | None = duration(
        None,
        "Health-check deadline, e.g. 600: each start-up judged on its interval (met, missed or uncertain; "
        "no verdict from a busy machine).",
        example="600",
        flag="--deadline",
    )
    dry_run: bool = option(False, unit="flag", help="Print the plan (sizes, measure vs project); allocate nothing.")

    def spec(self) -> EngramSpec:
        """The tables to build: the shape's fields, read from these options by name, and the layout these options
        parsed (the same object, not a second one built from tp and dp)."""
        from dummyprof.models.engram import EngramSpec
        from dummyprof.results.common import copied

        spec = copied(EngramSpec, self)
        spec.layout = self.layout  # EngramShape.layout is a cached property: this is its value, parsed once
        return spec


# Smallest chunk for random-chunked: 2 MiB of fp16 scratch, so the per-chunk overhead stays small.
MIN_CHUNK_ELEMENTS = 2**20


def methods_to_run(names: list[str]) -> list[str]:
    """The methods named, plus the memset floor when it is not among them: every run measures its own floor."""
    from dummyprof.loaders.fp8_methods import FLOOR

    return names if FLOOR in names else [*names, FLOOR]


def validate(options: EngramOptions) -> list[FillMethod]:
    """Check every option before anything is sized or allocated; returns the methods to run, floor included."""
    from dummyprof.allocation.backings import BACKINGS, MMAP_PREFIX, check_mmap_path
    from dummyprof.loaders.fp8_methods import DEFAULT_METHODS, get_method
    from dummyprof.models.engram import validate_engram_spec

    check_values(options)
    validate_engram_spec(options.spec())
    if options.backing is not None:
        if options.backing.startswith(MMAP_PREFIX):
            problem = check_mmap_path(options.backing[len(MMAP_PREFIX) :])
            if problem is not None:
                raise UsageError.for_field("backing", problem)
        elif options.backing not in BACKINGS:
            raise UsageError.for_field(
                "backing", f"unknown backing {options.backing!r}; choose from: {', '.join(BACKINGS)}"
            )
        if not options.offload:
            raise UsageError.for_field(
                "backing", "host memory kinds only apply with --offload; add --offload or drop --backing"
            )
    if options.chunk_elements < MIN_CHUNK_ELEMENTS:
        raise UsageError.for_field(
            "chunk_elements",
            f"must be at least 1Mi ({MIN_CHUNK_ELEMENTS:,}), got {options.chunk_elements:,}: each chunk costs a "
            "Python loop step and a generator call, which below 1Mi elements outweigh the fill itself and "
            "run past the time budget; try --chunk-elements 64Mi",
        )
    none = f"give at least one method; choose from: {', '.join(DEFAULT_METHODS)}"
    check_listed("methods", options.methods, get_method, none=none)
    return [get_method(name) for name in methods_to_run(list(options.methods))]
