"""One rank's shard of a model, built on the meta device with the shapes that rank holds.

The shard mirrors the whole model's module tree (same paths, so a strategy walks it as it
walks the whole model), with vLLM's differences: sibling q/k/v, gate/up and DeepSeek's
q_a/kv_a linears become one fused module (``qkv_proj``, ``gate_up_proj``,
``fused_qkv_a_proj``), the vocabulary is padded, a pipeline stage holds only its layers,
and an expert-parallel rank only its experts. Ties survive (one shard tensor per storage),
so do ``dummy_weight_value`` and buffer persistence. Nothing is allocated.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn

from dummyprof.anatomy import dtype_name, qualified_name, walk
from dummyprof.deploy.engine_tree import engine_tree
from dummyprof.deploy.plan import (
    COLUMN,
    EMBED,
    EXPERTS_COLUMN,
    HEAD,
    KV_COLUMN,
    NORM,
    REPLICATED,
    ROW,
    ROWS,
    SHARED_EXPERTS_WHOLE_UNDER_SP,
    VLLM,
    VOCAB,
    ModelDims,
    Placement,
    Planner,
    StageRule,
)
from dummyprof.errors import UsageError
from dummyprof.layout import (
    ParallelLayout,
    RankCoord,
    engram_heads_problem,
    engram_range,
    engram_shards,
    expert_range,
    pad_vocab,
    pp_range,
)
from dummyprof.units import MAX_WORLD_RANKS

META = torch.device("meta")
NO_QUANT = "give --quantization none to count the model unquantized"


@dataclass(frozen=True)
class ShardTensor:
    """One storage of a rank's shard: what it was in the whole model and what this rank holds."""

    name: str  # its name in the shard (the fused module's name for fused linears)
    members: tuple[str, ...]  # the whole model's names it holds a part of (several when fused)
    rule: str
    source: str
    style: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    padding_bytes: int  # bytes no weight is loaded into: padded vocabulary rows, mxfp4 experts' padded rows


@dataclass(frozen=True)
class RankGroup:
    """Ranks that hold the same shard by construction: ``coord`` and the next ``copies - 1`` dp ranks of its stage
    and tp rank (ranks ``coord.rank + k * tp``), built and counted once."""

    coord: RankCoord
    copies: int


@dataclass
class RankShard:
    """A rank's meta module and one entry per storage it holds."""

    coord: RankCoord
    layers: tuple[int, int]  # [start, end) of the decoder layers on this rank's stage
    module: nn.Module
    tensors: list[ShardTensor]

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.tensors)


def _divide(size: int, parts: int, name: str) -> int:
    if size % parts:
        raise UsageError.for_field(
            "tp",
            f"{name} has {size} along the split dimension, which {parts} ranks cannot share evenly (vLLM requires it)",
        )
    return size // parts


def empty_copy(tensor: torch.Tensor, shape: tuple[int, ...], device: torch.device = META) -> torch.Tensor:
    """An unfilled tensor of ``shape`` like ``tensor``: its dtype, a Parameter if it is one, its declared value."""
    made = torch.empty(shape, dtype=tensor.dtype, device=device)
    value = getattr(tensor, "dummy_weight_value", None)
    if isinstance(tensor, nn.Parameter):
        made = nn.Parameter(made, requires_grad=False)
    if value is not None:
        made.dummy_weight_value = value  # type: ignore[attr-defined]
    return made


def heads_split(tp: int, heads: int | None, kv: int | None) -> bool:
    """vLLM's rule: tp divides the attention heads; tp divides the kv heads, or they divide tp (then replicated)."""
    return (heads is None or heads % tp == 0) and (kv is None or (kv % tp if tp <= kv else tp % kv) == 0)


class ShardRewrite(Protocol):
    """What rewrites each shard after it is cut (a quantized checkpoint's method: ``deploy.quant.ShardQuantizer``)."""

    def apply(self, shard: RankShard, layout: ParallelLayout, kv_heads: int | None = None) -> None: ...


class Sharder:
    """Builds each rank's shard of ``model`` (on meta) under ``layout``."""

    def __init__(
        self,
        model: nn.Module,
        layout: ParallelLayout,
        dims: ModelDims | None = None,
        quant: ShardRewrite | None = None,
        *,
        advise: bool = True,
    ) -> None:
        self.model = model
        self.advise = advise  # a tp refused offers the tps that pass (each tried on the model first)
        self.quant = quant  # a quantized checkpoint: each shard is rewritten into the method's tensors
        self.layout = layout
        self.dims = dims or ModelDims.of(model)
        self.planner = Planner(model)
        self.layer_list, self.layer_count = self._find_layers()
        self._tied_head = self._embedding_tied_to_head()
        self.stage_rule = StageRule.of(model)
        self.notices: list[str] = []  # what the shards follow that the user may not expect (the run reports them)
        experts = self.planner.experts
        if layout.expert_parallel and not experts:
            self.notices.append(
                f"expert parallel (ep {layout.ep}) on a model with no experts: vLLM accepts it and it changes "
                "nothing here; the tp x dp ranks are data parallel"
            )
        elif layout.expert_parallel and layout.ep > experts:
            self.notices.append(
                f"ep {layout.ep} over {experts} experts: vLLM accepts it, and {layout.ep - experts} ranks of each "
                "stage's expert group hold no experts"
            )
        if layout.pp > 1 and not self.stage_rule.known:
            self.notices.append(
                f"pipeline stages: {self.stage_rule.architecture} is not in dummyprof's table of vLLM 0.33 "
                "architectures; applied vLLM's Llama rule (embedding on the first stage, and on the last too when "
                "tied to the head; final norm and head on the last)"
            )
        try:
            self._check_splits()
        except UsageError as refused:
            if not advise or refused.field != "tp":
                raise
            raise UsageError.for_field("tp", f"{refused.message}; {self._tp_advice()}") from None

    def _check_splits(self) -> None:
        """What vLLM refuses for this tp, before anything is built: the heads, then every tensor's split."""
        tp, heads, kv = self.layout.tp, self.dims.heads, self.dims.kv_heads
        if not heads_split(tp, heads, kv):
            counts = " and ".join(f"{n} {what}" for n, what in ((heads, "attention heads"), (kv, "kv heads")) if n)
            raise UsageError.for_field(
                "tp",
                f"{counts} do not split over {tp} ranks (vLLM: tp divides the attention heads, and tp and the kv "
                "heads divide one another)",
            )
        first = RankCoord(0, 0, 0, 0)
        for r in walk(self.model, remove_duplicate=True):
            if self.planner.placements[(r.path, r.local)].scale_of is None:
                self._shape(self.placement(r.path, r.local), tuple(r.tensor.shape), first)

    def _tp_advice(self) -> str:
        """The nearest tps below and above this one that every split check passes (run again for each), or why none."""
        layout, heads, kv = self.layout, self.dims.heads, self.dims.kv_heads
        others = layout.world // layout.tp

        def passes(t: int) -> bool:
            if not heads_split(t, heads, kv) or t * others > MAX_WORLD_RANKS:
                return False
            if layout.expert_parallel and layout.ep % t:  # --ep as given must still equal tp x dp
                return False
            try:
                tried = Sharder(
                    self.model,
                    dataclasses.replace(layout, tp=t, dp=layout.ep // t if layout.expert_parallel else layout.dp),
                    self.dims,
                    self.quant,
                    advise=False,
                )
                if self.quant is not None:  # the method's own checks (fp8 blocks) run on a built shard
                    for coord in tried.layout.coords():
                        if coord.tp_rank == coord.dp_rank == 0:  # every tp rank of a stage holds the same sizes
                            tried.build(coord)
            except UsageError:
                return False
            return True

        top = min(heads or 2 * layout.tp + 64, MAX_WORLD_RANKS)
        below = next((t for t in range(min(layout.tp, top + 1) - 1, 0, -1) if passes(t)), None)
        above = next((t for t in range(layout.tp + 1, top + 1) if passes(t)), None)
        offers = " or ".join(f"--tp {t}" for t in (below, above) if t is not None)
        if offers:
            return f"try {offers}"
        return f"no tp up to {top} splits this model" + (f"; {NO_QUANT}" if self.quant is not None else "")

    # ---- where things live -------------------------------------------------------------
    def _find_layers(self) -> tuple[str, int]:
        """The decoder layer list: the ModuleList the pipeline plan names, else the longest ``*layers`` list."""
        lists = [(p, len(m)) for p, m in self.model.named_modules() if isinstance(m, nn.ModuleList) and len(m)]
        pp_plan = getattr(self.model, "_pp_plan", None) or {}
        declared = [(p, n) for p, n in lists if p in pp_plan]
        candidates = declared or [(p, n) for p, n in lists if p.rpartition(".")[2] in ("layers", "h")]  # h: GPT-2
        if self.layout.pp > 1 and len(candidates) != 1:
            names = ", ".join(p for p, _ in candidates) or "none"
            raise UsageError.for_field(
                "pp", f"pipeline stages need one decoder layer list; this model has {names}: use pp 1"
            )
        return candidates[0] if candidates else ("", 0)

    def _embedding_tied_to_head(self) -> bool:
        head = getattr(self.model, "lm_head", None)
        weight = getattr(head, "weight", None)
        return isinstance(weight, torch.Tensor) and any(
            p is weight
            for path, m in self.model.named_modules()
            if path.endswith("embed_tokens")
            for p in m.parameters()
        )

    @property
    def sequence_parallel_moe(self) -> bool:
        """vLLM's sequence-parallel MoE (``ParallelConfig.use_sequence_parallel_moe`` with the default all2all backend,
        ``allgather_reducescatter``): expert parallel with tp > 1 and dp > 1."""
        return self.layout.expert_parallel and self.layout.tp > 1 and self.layout.dp > 1

    @property
    def shared_experts_whole(self) -> bool:
        """The shared experts are built whole on every rank (``disable_tp``): sequence-parallel MoE, and an
        architecture whose vLLM class passes it to its shared experts (``SHARED_EXPERTS_WHOLE_UNDER_SP``)."""
        return self.sequence_parallel_moe and self.stage_rule.architecture in SHARED_EXPERTS_WHOLE_UNDER_SP

    def placement(self, path: str, local: str) -> Placement:
        """The whole model's rule for one tensor, as this layout applies it."""
        place = self.planner.placements[(path, local)]
        if self.shared_experts_whole and "shared_expert" in place.name and place.rule in (COLUMN, KV_COLUMN, ROW):
            return dataclasses.replace(place, rule=REPLICATED, style="sequence-parallel MoE: shared experts whole")
        return place

    def _dp_key(self, coord: RankCoord, tables: list[tuple[Placement, tuple[int, ...]]]) -> tuple[object, ...]:
        """What of a rank's shard depends on its dp rank: its experts (expert parallel) and its Engram ``tables``."""
        layout = self.layout
        experts = [expert_range(n, layout.ep, coord.moe_rank(layout.tp)) for n in sorted(self.planner.expert_counts)]
        return (*(experts if layout.expert_parallel else ()), *(self._shape(p, shape, coord) for p, shape in tables))

    def groups(self, *, grouped: bool = True) -> list[RankGroup]:
        """Every rank in groups of one shard each, by first rank (``grouped`` False: every rank alone).

        A shard depends on the stage and tp rank, and on the dp rank only through :meth:`_dp_key`; consecutive dp
        ranks with the same key are one group, so the work grows with distinct shards, not with ranks."""
        layout = self.layout
        if not grouped:
            return [RankGroup(c, 1) for c in layout.coords()]
        out: list[RankGroup] = []
        tables = [
            (place, tuple(r.tensor.shape))
            for r in walk(self.model, remove_duplicate=True)
            if (place := self.planner.placements[(r.path, r.local)]).rule == ROWS
        ]
        depends = layout.expert_parallel or bool(tables)
        for stage in range(layout.pp):
            for tp_rank in range(layout.tp):
                start, key = 0, None
                for dp_rank in range(layout.dp if depends else 1):
                    here = self._dp_key(self._coord(stage, dp_rank, tp_rank), tables)
                    if dp_rank and here != key:
                        out.append(RankGroup(self._coord(stage, start, tp_rank), dp_rank - start))
                        start = dp_rank
                    key = here
                out.append(RankGroup(self._coord(stage, start, tp_rank), layout.dp - start))
        return sorted(out, key=lambda g: g.coord.rank)

    def _coord(self, stage: int, dp_rank: int, tp_rank: int) -> RankCoord:
        tp = self.layout.tp
        return RankCoord(stage * tp * self.layout.dp + dp_rank * tp + tp_rank, stage, dp_rank, tp_rank)

    def stage_layers(self, stage: int) -> tuple[int, int]:
        if not self.layer_count:
            return 0, 0
        return pp_range(self.layer_count, self.layout.pp, stage)

    def _keeps(self, parent: nn.Module, path: str, coord: RankCoord) -> bool:
        """Whether this rank holds the child module at ``path`` (stage and expert placement)."""
        parent_path, _, last = path.rpartition(".")
        if id(parent) in self.planner.expert_lists and last.isdigit() and self.layout.expert_parallel:
            start, end = expert_range(len(parent._modules), self.layout.ep, coord.moe_rank(self.layout.tp))
            if not start <= int(last) < end:
                return False
        if self.layout.pp == 1:
            return True
        if parent_path == self.layer_list and last.isdigit():
            start, end = self.stage_layers(coord.stage)
            return start <= int(last) < end
        if self.layer_list.startswith(path + ".") or path == self.layer_list or path.startswith(self.layer_list + "."):
            return True
        first, last_stage, rule = coord.stage == 0, coord.stage == self.layout.pp - 1, self.stage_rule
        if "embed" in last or last in ("wte", "wpe"):
            return EMBED not in rule.split or first or (last_stage and rule.tied_on_last and self._tied_head)
        if last == "lm_head":
            return HEAD not in rule.split or last_stage
        if "norm" in last or last == "ln_f":
            return NORM not in rule.split or last_stage
        return True

    # ---- shapes -----------------------------------------------------------------------
    def _shape(self, place: Placement, shape: tuple[int, ...], coord: RankCoord) -> tuple[tuple[int, ...], int]:
        """(shape this rank holds, padded rows among them)."""
        layout, tp = self.layout, self.layout.tp
        dims = [*shape[:-2], shape[-1], shape[-2]] if place.transposed else list(shape)
        rule = place.rule
        if rule == REPLICATED or not dims:
            return tuple(dims), 0
        out = len(dims) - 2 if len(dims) >= 2 else 0
        if rule in (COLUMN, KV_COLUMN):
            kv = self.dims.kv_heads
            # once tp > kv heads, each rank holds one kv head (replicated tp / kv times)
            parts = kv if rule == KV_COLUMN and kv is not None and tp > kv else tp
            dims[out] = _divide(dims[out], parts, place.name)
        elif rule == ROW:
            dims[-1] = _divide(dims[-1], tp, place.name)
        elif rule == VOCAB:
            per = _divide(pad_vocab(dims[0]), tp, place.name)
            real = min(per, max(0, dims[0] - coord.tp_rank * per))
            dims[0] = per
            return tuple(dims), per - real
        elif rule == ROWS:  # whole hash heads per tp x dp shard (vLLM's ParallelEngramEmbedding)
            heads = place.heads or engram_shards(layout)
            problem = engram_heads_problem(heads, layout)
            if problem is not None:
                raise UsageError.for_field(
                    "tp", f"{place.name}: {problem} (vLLM refuses it); give a tp x dp that divides {heads}"
                )
            dims[0] = engram_range(dims[0], heads, layout, coord).part_rows
        else:  # EXPERTS_COLUMN, EXPERTS_ROW
            first = 1 if place.experts_first else 0  # [experts, out, in] / [experts, out] for all experts at once
            if first:
                start, end = expert_range(dims[0], layout.ep, coord.moe_rank(tp) if layout.expert_parallel else 0)
                dims[0] = end - start
            inner = len(dims) - first
            if inner >= 2 or (inner == 1 and rule == EXPERTS_COLUMN):  # a row bias is whole on every rank
                axis = len(dims) - 2 if inner >= 2 and rule == EXPERTS_COLUMN else len(dims) - 1
                dims[axis] = _divide(dims[axis], layout.moe_tp, place.name)
        return tuple(dims), 0

    def _scale_shape(
        self, place: Placement, scale: torch.Tensor, weight: torch.Tensor, coord: RankCoord
    ) -> tuple[int, ...]:
        """A block scale follows its weight: ceil(rows held / block) per dimension."""
        held, _ = self._shape(place, tuple(weight.shape), coord)
        if scale.dim() != weight.dim():
            return tuple(scale.shape)
        dims = []
        for full, part, s in zip(weight.shape, held, scale.shape, strict=True):
            block = -(-full // s) if s else 1
            dims.append(s if part == full else -(-part // block))
        return tuple(dims)

    # ---- building ---------------------------------------------------------------------
    def build(self, coord: RankCoord, device: torch.device = META) -> RankShard:
        """Rank ``coord``'s shard, on meta by default; on a real ``device`` its tensors are allocated, unfilled."""
        made: dict[int, torch.Tensor] = {}
        entries: list[ShardTensor] = []
        modules: dict[int, nn.Module] = {}

        def tensor(module: nn.Module, path: str, local: str, source: torch.Tensor) -> torch.Tensor:
            if id(source) in made:
                return made[id(source)]
            place = self.placement(path, local)
            padding = 0
            if place.scale_of is not None:
                weight = module._parameters[place.scale_of]
                assert weight is not None
                shape = self._scale_shape(place, source, weight, coord)
            else:
                shape, padding = self._shape(place, tuple(source.shape), coord)
            new = empty_copy(source, shape, device)
            made[id(source)] = new
            row_bytes = new.nbytes // shape[0] if shape and shape[0] else 0
            entries.append(
                ShardTensor(
                    qualified_name(path, local), (place.name,), place.rule, place.source, place.style,
                    shape, dtype_name(source.dtype), new.nbytes, padding * row_bytes,
                )
            )  # fmt: skip
            return new

        def shell(module: nn.Module, path: str) -> nn.Module:
            out = nn.Module()
            non_persistent: set[str] = getattr(module, "_non_persistent_buffers_set", set())
            for local, param in module._parameters.items():
                if param is not None:
                    out.register_parameter(local, tensor(module, path, local, param))  # type: ignore[arg-type]
            for local, buf in module._buffers.items():
                if buf is not None:
                    out.register_buffer(local, tensor(module, path, local, buf), persistent=local not in non_persistent)
            fusions = self.planner.fusions.get(id(module), [])
            fused_at = {members[0]: (name, members) for name, members in fusions}
            skipped = {m for _, members in fusions for m in members}
            for name, child in module._modules.items():
                if name in fused_at:
                    fused_name, members = fused_at[name]
                    out.add_module(fused_name, self._fused(module, path, fused_name, members, coord, entries, device))
                if child is None or name in skipped:
                    continue
                child_path = qualified_name(path, name)
                if not self._keeps(module, child_path, coord):
                    continue
                if id(child) not in modules:
                    modules[id(child)] = shell(child, child_path)
                out.add_module(name, modules[id(child)])
            return out

        root = shell(self.model, "")
        shard = RankShard(coord, self.stage_layers(coord.stage), root, entries)
        if self.quant is not None:
            try:
                self.quant.apply(shard, self.layout, self.dims.kv_heads)
            except UsageError as refused:
                if not self.advise or refused.field != "tp":
                    raise
                if self.layout.tp == 1:  # whole blocks missing on one rank are missing on more: no tp helps
                    raise UsageError.for_field("quantization", f"{refused.message}, at any tp; {NO_QUANT}") from None
                raise UsageError.for_field("tp", f"{refused.message}; {self._tp_advice()}") from None
        engine_tree(root, self.model, device)
        return shard

    def _fused(
        self,
        parent: nn.Module,
        path: str,
        fused_name: str,
        members: tuple[str, ...],
        coord: RankCoord,
        entries: list[ShardTensor],
        device: torch.device = META,
    ) -> nn.Module:
        """vLLM's fused linear: the members' shards stacked along the output dimension."""
        out = nn.Module()
        fused_path = qualified_name(path, fused_name)
        for local in ("weight", "bias"):
            sources = [s for m in members if (s := parent.get_submodule(m)._parameters.get(local)) is not None]
            if len(sources) < len(members):
                continue
            places = [self.placement(qualified_name(path, m), local) for m in members]
            parts = [self._shape(p, tuple(s.shape), coord) for p, s in zip(places, sources, strict=True)]
            first = sources[0]
            shape = (sum(held[0] for held, _ in parts), *parts[0][0][1:])
            new = empty_copy(first, shape, device)
            out.register_parameter(local, new)  # type: ignore[arg-type]
            rules = sorted({p.rule for p in places})
            entries.append(
                ShardTensor(
                    qualified_name(fused_path, local), tuple(p.name for p in places), "+".join(rules), VLLM,
                    fused_name, shape, dtype_name(first.dtype), new.nbytes, 0,
                )
            )  # fmt: skip
        return out
