"""A deployment's answer: one entry per rank (its shard, exact counts, fill time), the nodes, online fp8.

Torch-free data; reporters write the words. Every field has a default, so a file written
before a field existed still loads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dummyprof.results.common import Contention

MEASURED, PROJECTED = "measured", "projected"
# DeploymentResult.not_timed: the layout is for a GPU (--device cuda, or --device-memory) and this machine has
# none, so the device-resident bytes get no time (a CPU time is not a GPU start-up time); counts stay exact.
NO_CUDA_HERE = "no-cuda-device-here"


@dataclass
class RankStrategy:
    """One strategy on one rank's shard: exact counts, and its fill time where the run had one."""

    strategy: str = ""
    initializer: str = ""
    visits: int = 0
    redundant_visits: int = 0
    bytes_written: int = 0
    redundant_bytes_written: int = 0
    largest_scratch_bytes: int = 0
    fill: str = ""  # MEASURED, PROJECTED, or "" (counted only: inspect, audit)
    seconds: float | None = None  # the median measured round, or the projected point
    samples_s: list[float] = field(default_factory=list)  # measured rounds
    low_s: float | None = None  # projected interval
    high_s: float | None = None
    floor_s: float | None = None  # bytes written at this run's memset rate: nothing is projected faster
    peak_bytes: int | None = None  # measured RSS peak, or projected (never below what the shard holds)
    # --nproc: this rank's own fill, measured in its own process while every rank filled at once
    rank_seconds: float | None = None
    rank_visits: int | None = None  # recorded by that real fill (equal to ``visits`` when the meta count holds)
    rank_bytes_written: int | None = None


@dataclass
class RankEntry:
    """One rank: where it sits in the layout, what it holds, what each strategy does to it."""

    rank: int = 0
    stage: int = 0
    dp_rank: int = 0
    tp_rank: int = 0
    ep_rank: int | None = None  # its place among the expert-parallel ranks of its stage; None without ep
    node: int = 0
    layers: list[int] = field(default_factory=lambda: [0, 0])  # [start, end) of the decoder layers it holds
    storages: int = 0
    held_bytes: int = 0
    replicated_bytes: int = 0  # tensors every tp x dp rank of its stage holds whole
    padding_bytes: int = 0  # padded vocabulary rows
    offloaded_bytes: int = 0  # CPU-offloaded tables (declared constant Engram rows): host, not device
    counted_as: int = 0  # the rank whose identical shard was walked for these counts
    copies: int = 1  # ranks this entry stands for: rank, rank + tp, ... (the next dp ranks, one shard)
    # device bytes that are not weights, allocated by vLLM at load on this rank (deploy/load_buffers.py)
    rotary_cache_bytes: int = 0
    expert_map_bytes: int = 0
    kv_scale_bytes: int = 0
    filled_as: int | None = None  # the rank whose shard was filled (or projected) for these times
    strategies: list[RankStrategy] = field(default_factory=list)
    device_fits: bool | None = None  # None: no --device-memory given
    device_room_bytes: int | None = None  # device memory left after the shard (negative: short by)

    @property
    def engine_bytes(self) -> int:
        """Non-weight device bytes (rotary cache, expert map, kv scales): apart from ``held_bytes``, in the fit."""
        return self.rotary_cache_bytes + self.expert_map_bytes + self.kv_scale_bytes

    @property
    def device_bytes(self) -> int:
        return self.held_bytes - self.offloaded_bytes + self.engine_bytes

    def strategy(self, name: str) -> RankStrategy:
        return next(s for s in self.strategies if s.strategy == name)

    def rank_numbers(self, tp: int) -> range:
        """Every rank this entry stands for (consecutive dp ranks of one stage and tp rank)."""
        return range(self.rank, self.rank + self.copies * tp, tp)


@dataclass
class NodeEntry:
    """One node: its ranks, the host memory their CPU-offloaded tables take once pinned."""

    node: int = 0
    ranks: list[int] = field(default_factory=list)
    held_bytes: int = 0
    offloaded_bytes: int = 0
    pinned_bytes: int = 0  # offloaded_bytes after the pinned allocator's power-of-two rounding, per allocation
    host_memory_bytes: int = 0
    host_fits: bool | None = None


@dataclass
class OnlineQuantEntry:
    """One pass of the online fp8 path: exact live-byte accounting, and times where it ran."""

    mode: str = ""  # per-layer or whole-model
    scale: str = ""  # tensor or block
    block: int = 128
    initializer: str = ""
    executed: bool = False  # False: accounted on meta only (its peak did not fit the budget)
    layers: int = 0
    tensors: int = 0
    quantized: int = 0
    high_precision_bytes: int = 0
    fp8_bytes: int = 0
    scale_bytes: int = 0
    kept_bytes: int = 0
    peak_bytes: int = 0  # by accounting, exact
    peak_at: str = ""
    largest_layer: str = ""
    largest_layer_bytes: int = 0
    fill_s: float | None = None
    quantize_s: float | None = None
    seconds: float | None = None
    rss_growth_bytes: int | None = None  # measured: the process's peak RSS during the pass above its RSS before
    not_run: str = ""  # why it was only accounted: "memory" (its peak is over the budget) or "time"
    predicted_s: float | None = None  # when not run: high-precision bytes at the probed rate, x1.25


@dataclass
class DeploymentResult:
    """Every rank of a deployment of one model, the nodes, and the online fp8 path when asked."""

    command: str = "compare"  # the command that asked: compare, inspect or audit
    source: str = ""
    description: str = ""
    device: str = "cpu"
    tp: int = 1
    ep: int = 1
    pp: int = 1
    dp: int = 1
    world: int = 1
    expert_parallel: bool = False
    layer_count: int = 0
    heads: int | None = None
    kv_heads: int | None = None
    model_bytes: int = 0  # the whole model, every storage once
    replicated_extra_bytes: int = 0  # replicated tensors held by more than one rank of a stage, beyond the first
    shards_walked: int = 0  # distinct shards counted
    shards_filled: int = 0  # distinct shards filled or projected
    count_s: float = 0.0  # building every shard on meta and counting them
    build_s: float = 0.0  # building the whole model on meta
    memset_bytes_per_s: float | None = None  # this run's floor, where a shard was projected
    ranks: list[RankEntry] = field(default_factory=list)
    ranks_per_node: int = 0
    device_memory_bytes: int | None = None
    nodes: list[NodeEntry] = field(default_factory=list)
    slowest_rank: int | None = None
    slowest_strategy: str = ""
    online_quant: list[OnlineQuantEntry] = field(default_factory=list)
    nproc: int = 0  # real ranks run (--nproc); 0: none
    ranks_finished: list[int] = field(default_factory=list)  # --nproc: the ranks whose figures came back
    ranks_failure: str = ""  # --nproc: why the others did not (their figures are missing, not zero)
    backend: str = ""
    online_quant_target: str = ""  # the model or the rank whose shard the online path ran on
    # Where the shards' bytes live: "cuda" (a GPU deployment: --device cuda, or --device-memory) or "cpu" (a CPU
    # deployment, vLLM's CPU backend); "" in files written before it was stored, and for inspect and audit.
    target: str = ""
    not_timed: str = ""  # why no fill was timed (NO_CUDA_HERE), '' when the shards were filled or projected
    contention: Contention | None = None  # how busy the machine was while the shards were filled or calibrated
    # The slowest rank's figures overlap another rank's (or every rank has the same shard): no rank is slower
    # than the noise says, so none is named; ``slowest_rank`` still holds the rank whose time is shown.
    slowest_within_noise: bool = False

    @property
    def held_bytes(self) -> int:
        return sum(r.held_bytes * r.copies for r in self.ranks)

    @property
    def padding_bytes(self) -> int:
        return sum(r.padding_bytes * r.copies for r in self.ranks)

    @property
    def other_extra_bytes(self) -> int:
        """Bytes held more than once that are neither replicated tensors nor padding (kv heads, dp copies)."""
        return self.held_bytes - self.model_bytes - self.replicated_extra_bytes - self.padding_bytes

    def rank(self, index: int) -> RankEntry:
        return next(r for r in self.ranks if index in r.rank_numbers(self.tp))


def layout_text(result: DeploymentResult) -> str:
    """The layout in vLLM's terms ("tp 2, ep 8, dp 4"): for the reports, and a shard's description in notices."""
    parts = [f"tp {result.tp}"]
    if result.expert_parallel:
        parts.append(f"ep {result.ep}")
    if result.dp > 1:
        parts.append(f"dp {result.dp}")
    if result.pp > 1:
        parts.append(f"pp {result.pp}")
    return ", ".join(parts)
