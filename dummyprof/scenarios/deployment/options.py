"""The deployment fields compare, inspect and audit share (``--tp``, ``--ep``, ``--pp``, ``--dp``, the node view).

Torch-free: the CLI reads these declarations to build ``--help``. Declared once here, so the
flags, the gate's TOML keys and the Python API's fields are the same on every command; the four
layout fields become one ``layout.ParallelLayout`` object, once (``DeploymentChoice.layout``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property
from typing import Protocol

from dummyprof.errors import UsageError
from dummyprof.layout import ParallelLayout
from dummyprof.schema import integer, option, size
from dummyprof.units import MAX_WORLD_RANKS

LAYOUT_FIELDS = ("tp", "ep", "pp", "dp")
ONLINE_QUANT_FORMATS = ("fp8",)
ONLINE_QUANT_SCALES = ("tensor", "block")


@dataclass
class DeploymentChoice:
    """How the model is deployed: ranks per parallel dimension (vLLM's), and the nodes they run on."""

    tp: int = integer(1, "Tensor-parallel ranks: each rank's shard is built on meta as vLLM splits it.")
    ep: int = integer(
        1,
        "Expert-parallel ranks (vLLM --enable-expert-parallel over the tp x dp ranks of a stage: ep = tp x dp; "
        "--ep 8 alone sets dp 8).",
    )
    pp: int = integer(1, "Pipeline stages: contiguous decoder layer ranges (vLLM's get_pp_indices).")
    dp: int = integer(1, "Data-parallel replicas (attention and dense layers whole on each).")
    ranks_per_node: int | None = integer(
        None, "Ranks on one node, for the node view (default: every rank on one node).", example="1"
    )
    device_memory: int | None = size(
        None,
        "Each rank's device memory, e.g. 141GiB (an H200): says whether each shard fits, with the room left.",
        example="141GiB",
    )
    host_memory: int | None = size(
        None, "One node's host memory, for CPU-offloaded tables (default: this machine's).", example="2TiB"
    )

    @cached_property
    def layout(self) -> ParallelLayout:
        """The one layout object these fields name (``--ep`` may set dp), parsed once (by ``validate``, after the
        world's bound): the checks, the run, its shards and its real ranks all take this object."""
        return ParallelLayout.from_sizes(tp=self.tp, ep=self.ep, pp=self.pp, dp=self.dp)

    @property
    def deployed(self) -> bool:
        """A layout other than one rank: the run answers per rank."""
        return any(getattr(self, name) > 1 for name in LAYOUT_FIELDS)


@dataclass
class CompareDeploymentChoice:
    """compare's own: ``--online-quant`` (vLLM's online fp8 path, per layer, next to whole-model materialization)
    and ``--nproc`` (every rank of the layout as a real process on this host, gloo, filled at once)."""

    online_quant: str | None = option(
        None,
        metavar="FORMAT",
        help="Run vLLM's online-quantization path: per layer materialize, fill, quantize to fp8, release; "
        "timed and its peak accounted next to whole-model materialization (fp8).",
    )
    online_quant_scale: str = option("tensor", metavar="SCALE", help="fp8 scales: tensor (one per matrix) or block.")
    nproc: int | None = integer(
        None,
        "Also run every rank as a process on this host (gloo), each filling its own shard with every strategy at "
        "once; must equal the layout's ranks (tp x dp x pp).",
        minimum=2,
        maximum=MAX_WORLD_RANKS,
    )


# The fields in the order --help lists them.
DEPLOYMENT_FIELDS = tuple(f.name for f in fields(DeploymentChoice))
ONLINE_QUANT_FIELDS = tuple(f.name for f in fields(CompareDeploymentChoice))  # compare's own


class LayoutGroup(Protocol):
    """The layout group (``DeploymentChoice``) as the checks and the run take it: the four sizes, the one layout
    they make, and the node view's fields."""

    tp: int
    ep: int
    pp: int
    dp: int
    ranks_per_node: int | None
    device_memory: int | None
    host_memory: int | None

    @property
    def layout(self) -> ParallelLayout: ...


def check_world(options: LayoutGroup) -> None:
    """tp x pp x dp (and ep) at most ``MAX_WORLD_RANKS``; the advice is the largest value of the largest factor that
    passes with the other flags as given (none where changing one flag alone would break ep = tp x dp)."""
    tp, pp, dp, ep = options.tp, options.pp, options.dp, options.ep
    ep_sets_dp = ep > 1 and dp == 1 and ep % tp == 0  # --ep alone sets dp (layout): the world is ep x pp
    factors = {"ep": ep, "pp": pp} if ep_sets_dp else {"tp": tp, "pp": pp, "dp": dp}
    world = factors["ep"] * pp if ep_sets_dp else tp * pp * dp
    if world <= MAX_WORLD_RANKS:
        return
    name = max(factors, key=lambda n: factors[n])
    fits = MAX_WORLD_RANKS // (world // factors[name])
    step = tp if name == "ep" else 1  # ep stays a multiple of tp
    fits -= fits % step
    advice = f"give --{name} {fits} or fewer" if fits >= 1 and (ep == 1 or ep_sets_dp) else "give fewer ranks"
    raise UsageError.for_field(
        name,
        f"tp {tp} x pp {pp} x dp {world // (tp * pp)} = {world:,} ranks, over dummyprof's bound of "
        f"{MAX_WORLD_RANKS:,} ranks (MAX_WORLD_RANKS); {advice}",
    )


def check_deployment(options: LayoutGroup) -> None:
    """The rules across fields: a bounded world, a node view of at most the world's ranks."""
    check_world(options)
    world = options.layout.world
    if options.ranks_per_node is not None and options.ranks_per_node > world:
        raise UsageError.for_field(
            "ranks_per_node", f"{options.ranks_per_node} ranks per node for a world of {world}; give at most {world}"
        )
