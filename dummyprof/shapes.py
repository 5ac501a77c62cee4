"""What a run builds, each field declared once and torch-free: the synthetic tree and the Engram tables.

``models.synthetic.TreeSpec`` and ``models.engram.EngramSpec`` add what is built from these fields;
the options of compare, audit, inspect, sweep and engram inherit them, so a field's default, bounds
and help are the same for the Python API, the CLI and the gate.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from dummyprof.layout import ParallelLayout, engram_split_refusal
from dummyprof.schema import integer, option

# --dtype auto: the synthetic tree is built in float32; an hf: model in vLLM's --dtype auto (the config's).
AUTO_DTYPE = "auto"
TREE_DTYPE = "float32"
DTYPES = "float32, bfloat16 or float16"
MODEL_DTYPES = (AUTO_DTYPE, TREE_DTYPE, "bfloat16", "float16")  # --dtype for a preset, --model code or hf:
DTYPE_AUTO_HELP = (
    "auto: float32 for the tree, vLLM's --dtype auto (the config's) for hf: models, their own for a preset and "
    "--model code; given, every model is built in it."
)
# Every size a synthetic weight can take and torch can still count in int64 bytes (hidden x hidden x 8).
MAX_HIDDEN = 2**20


@dataclass
class TreeShape:
    """The synthetic tree, as compare builds it by default (audit and inspect build a smaller one)."""

    # compare and sweep state some fields their own way (Spec.forms); sweep's take a RANGE of values
    depth: int = integer(
        12,
        "Levels of nested blocks below the root.",
        forms={"sweep": {"metavar": "RANGE", "help": "Levels of nested blocks, or a range: 1:16."}},
    )
    width: int = integer(
        1,
        "Synthetic tree: child blocks per block.",
        forms={
            "compare": {"help": "Child blocks per block (blocks grow as width^depth)."},
            "sweep": {"metavar": "RANGE", "help": "Child blocks per block, or a range."},
        },
    )
    hidden: int = integer(
        512,
        "Size of each weight (hidden x hidden); multiple of 32.",
        maximum=MAX_HIDDEN,
        forms={"sweep": {"metavar": "RANGE", "help": "Size of each weight (multiple of 32), or a range."}},
    )
    dtype: str = option(
        AUTO_DTYPE,
        help=f"Float dtype of the model: {DTYPES}; {DTYPE_AUTO_HELP}",
        forms={
            ("compare", "sweep"): {"help": f"Float dtype of the model: float32, bfloat16 or float16; {DTYPE_AUTO_HELP}"}
        },
    )
    meta: bool = option(False, unit="flag", help="Add a tensor left on the meta device (never filled).")
    engram_rows: int = integer(
        0, "Add a small Engram-style fp8 table with this many rows (0: none).", minimum=0, example="4096"
    )


@dataclass
class EngramShape:
    """The whole deployment's Engram tables and which rank this process plays."""

    rows: int = option(
        384_000_000,
        unit="count",
        minimum=1,
        example="2e9",
        shown="384M",
        help="Rows of one table, all ranks together: 2e9, 384M, 1.5G, 2_000_000_000.",
    )
    dim: int = integer(
        256, "Row width (fp8 elements).", forms={"sweep": {"help": "With --rows: row width (fp8 elements)."}}
    )
    block_size: int = integer(32, "Elements per scale byte; --dim must divide by it.")
    tables: int = integer(1, "Tables per model (DeepSeek V4.1 Flash has 2).", example="2")
    # The layout's names, as on compare, inspect and audit.
    tp: int = integer(1, "Tensor-parallel size.", example="8")
    dp: int = integer(1, "Data-parallel size; tables shard over tp x dp ranks.")
    rank: int = integer(0, "Which rank to build (0 .. tp x dp - 1).", minimum=0)
    heads: int | None = integer(
        None, "Hash heads per table, split whole over ranks. Default: one per rank.", example="8"
    )

    @cached_property
    def layout(self) -> ParallelLayout:
        """The ranks the tables are split over: the one layout object (``--tp`` x ``--dp``), parsed once."""
        return ParallelLayout(tp=self.tp, dp=self.dp)

    def check_offer(self) -> None:
        """The rules across the tables' fields that need no torch (the split over the ranks): what a flag's refusal
        offers is held to them with the other flags given, before it is printed (``cli/schema_command.py``)."""
        refused = engram_split_refusal(self.rows, self.heads, self.layout, self.rank)
        if refused is not None:
            raise refused
