"""A deployment's answer: one entry per rank (its shard, exact counts, fill time), the nodes, online fp8."""

from __future__ import annotations

from msgspec import field

from dummyprof.results.common import Contention, Count, Estimate, Int64, Record

# What vLLM 0.33's initializer does to each tensor of a quantized shard (RankEntry.fill_kinds), in report order.
FILL_KINDS = ("fp8", "scale", "integer", "skipped", "float", "declared")
FP16_SCRATCH = "fp16-scratch"  # the largest float16 temporary alive at once (one fp8 tensor is drawn at a time)
# DeploymentResult.not_timed: the layout is for a GPU (--device cuda, or --device-memory) and this machine has
# none, so the device-resident bytes get no time (a CPU time is not a GPU start-up time); counts stay exact.
NO_CUDA_HERE = "no-cuda-device-here"


class HostFill(Record):
    """A GPU deployment: one strategy's work on the CPU-offloaded tables (host-resident), timed on this host's CPU;
    the rest of the shard (device-resident) is timed on the device where it is here (``RankStrategy.time``)."""

    visits: Count = 0  # exact visits and bytes this strategy makes to the tables
    bytes_written: Count = 0
    # On this host's CPU: measured, or projected (from a probe fill, or rounds scaled by the bytes written more
    # than once, ``samples`` then scaled too)
    time: Estimate = field(default_factory=lambda: Estimate(device="cpu"))
    pinned: bool = False  # in pinned host memory (CUDA present, as vLLM pins offloaded tables), else pageable

    @property
    def seconds(self) -> float | None:
        return self.time.value


class RankStrategy(Record):
    """One strategy on one rank's shard: exact counts, and its fill time where the run had one."""

    strategy: str = ""
    initializer: str = ""
    visits: Count = 0
    redundant_visits: Count = 0
    bytes_written: Count = 0
    redundant_bytes_written: Count = 0
    largest_scratch_bytes: Count = 0
    time: Estimate | None = None  # the shard's fill, measured or projected; None: counted only (inspect, audit)
    peak_bytes: Count | None = None  # measured RSS peak, or projected (never below what the shard holds)
    # --nproc: this rank's own fill, measured in its own process while every rank filled at once
    rank_time: Estimate | None = None
    rank_visits: Count | None = None  # recorded by that real fill (equal to ``visits`` when the meta count holds)
    rank_bytes_written: Count | None = None
    # A GPU deployment's host-resident part, timed on this host's CPU; ``time`` is then the device-resident
    # part's time on the device (DeploymentResult.device), or None where no CUDA device is here
    host: HostFill | None = None

    @property
    def seconds(self) -> float | None:
        return self.time.value if self.time is not None else None


class RankEntry(Record):
    """One rank: where it sits in the layout, what it holds, what each strategy does to it."""

    rank: Count = 0
    stage: Count = 0
    dp_rank: Count = 0
    tp_rank: Count = 0
    ep_rank: Count | None = None  # its place among the expert-parallel ranks of its stage; None without ep
    node: Count = 0
    layers: list[Count] = field(default_factory=lambda: [0, 0])  # [start, end) of the decoder layers it holds
    storages: Count = 0
    held_bytes: Count = 0
    replicated_bytes: Count = 0  # tensors every tp x dp rank of its stage holds whole
    padding_bytes: Count = 0  # padded vocabulary rows, mxfp4 experts' padded rows
    offloaded_bytes: Count = 0  # CPU-offloaded tables (declared constant Engram rows): host, not device
    counted_as: Count = 0  # the rank whose identical shard was walked for these counts
    copies: Count = 1  # ranks this entry stands for: rank, rank + tp, ... (the next dp ranks, one shard)
    # device bytes that are not weights, allocated by vLLM at load on this rank (deploy/load_buffers.py)
    rotary_cache_bytes: Count = 0
    expert_map_bytes: Count = 0
    kv_scale_bytes: Count = 0
    filled_as: Count | None = None  # the rank whose shard was filled (or projected) for these times
    strategies: list[RankStrategy] = []
    device_fits: bool | None = None  # None: no --device-memory given
    device_room_bytes: Int64 | None = None  # device memory left after the shard (negative: short by)
    # A quantized checkpoint: bytes per vLLM 0.33 fill rule (FILL_KINDS), and FP16_SCRATCH: the largest float16
    # temporary alive at once
    fill_kinds: dict[str, Count] = {}

    @property
    def engine_bytes(self) -> int:
        """Non-weight device bytes (rotary cache, expert map, kv scales): apart from ``held_bytes``, in the fit."""
        return self.rotary_cache_bytes + self.expert_map_bytes + self.kv_scale_bytes

    @property
    def device_bytes(self) -> int:
        return self.held_bytes - self.offloaded_bytes + self.engine_bytes

    def strategy(self, name: str) -> RankStrategy:
        return next(s for s in self.strategies if s.strategy == name)

    def rank_numbers(self, tp: int) -> range:  # every rank it stands for: the next dp ranks, one stage and tp rank
        return range(self.rank, self.rank + self.copies * tp, tp)


class NodeEntry(Record):
    """One node: its ranks, the host memory their CPU-offloaded tables take once pinned."""

    node: Count = 0
    ranks: list[Count] = []
    held_bytes: Count = 0
    offloaded_bytes: Count = 0
    pinned_bytes: Count = 0  # offloaded_bytes after the pinned allocator's power-of-two rounding, per allocation
    host_memory_bytes: Count = 0
    host_fits: bool | None = None


class OnlineQuantEntry(Record):
    """One pass of the online fp8 path: exact live-byte accounting, and times where it ran."""

    mode: str = ""  # per-layer or whole-model
    scale: str = ""  # tensor or block
    block: Count = 128
    initializer: str = ""
    executed: bool = False  # False: accounted on meta only (its peak did not fit the budget)
    layers: Count = 0
    tensors: Count = 0
    quantized: Count = 0
    high_precision_bytes: Count = 0
    fp8_bytes: Count = 0
    scale_bytes: Count = 0
    kept_bytes: Count = 0
    peak_bytes: Count = 0  # by accounting, exact
    peak_at: str = ""
    largest_layer: str = ""
    largest_layer_bytes: Count = 0
    fill_s: float | None = None
    quantize_s: float | None = None
    seconds: float | None = None
    rss_growth_bytes: Int64 | None = None  # measured: the process's peak RSS during the pass above its RSS before
    not_run: str = ""  # why it was only accounted: "memory" (its peak is over the budget) or "time"
    predicted_s: float | None = None  # when not run: high-precision bytes at the probed rate, x1.25


class DeploymentResult(Record):
    """Every rank of a deployment of one model, the nodes, and the online fp8 path when asked."""

    command: str = "compare"  # the command that asked: compare, inspect or audit
    source: str = ""
    description: str = ""
    device: str = "cpu"
    tp: Count = 1
    ep: Count = 1
    pp: Count = 1
    dp: Count = 1
    world: Count = 1
    expert_parallel: bool = False
    layer_count: Count = 0
    heads: Count | None = None
    kv_heads: Count | None = None
    model_bytes: Count = 0  # the whole model, every storage once
    replicated_extra_bytes: Count = 0  # replicated tensors held by more than one rank of a stage, beyond the first
    shards_walked: Count = 0  # distinct shards counted
    shards_filled: Count = 0  # distinct shards filled or projected
    count_s: float = 0.0  # building every shard on meta and counting them
    build_s: float = 0.0  # building the whole model on meta
    memset_bytes_per_s: float | None = None  # this run's floor, where a shard was projected
    fresh_budget_s: float | None = None  # the --time-budget whose first-touch probes cover every page, if short
    ranks: list[RankEntry] = []
    ranks_per_node: Count = 0
    device_memory_bytes: Count | None = None
    nodes: list[NodeEntry] = []
    slowest_rank: Count | None = None
    slowest_strategy: str = ""
    online_quant: list[OnlineQuantEntry] = []
    nproc: Count = 0  # real ranks run (--nproc); 0: none
    ranks_finished: list[Count] = []  # --nproc: the ranks whose figures came back
    ranks_failure: str = ""  # --nproc: why the others did not (their figures are missing, not zero)
    backend: str = ""
    online_quant_target: str = ""  # the model or the rank whose shard the online path ran on
    # Where the shards' bytes live: "cuda" (a GPU deployment: --device cuda, or --device-memory) or "cpu" (a CPU
    # deployment, vLLM's CPU backend); "" for inspect and audit.
    target: str = ""
    not_timed: str = ""  # why no fill was timed (NO_CUDA_HERE), '' when the shards were filled or projected
    contention: Contention | None = None  # every shard's reading (its times carry their own) as one window
    # The slowest rank's figures overlap another rank's (or every rank has the same shard): no rank is slower
    # than the noise says, so none is named; ``slowest_rank`` still holds the rank whose time is shown.
    slowest_within_noise: bool = False

    @property
    def host_contention(self) -> Contention | None:
        """How busy the machine was while the host-resident part was filled (not_timed runs; its times carry it)."""
        hosts = (s.host for r in self.ranks for s in r.strategies if s.host is not None)
        return next((h.time.contention for h in hosts if h.time.contention is not None), None)

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
    shown = {"tp": True, "ep": result.expert_parallel, "dp": result.dp > 1, "pp": result.pp > 1}
    return ", ".join(f"{name} {getattr(result, name)}" for name, show in shown.items() if show)
