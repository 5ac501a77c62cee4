"""Exact per-rank counts: every strategy's counting pass (``loaders/counting.py``) on each rank's meta shard.

Counts depend only on the module tree, shapes, dtypes and attributes, so ranks whose shards
are alike in all of those (every tp rank of a stage, usually) are counted once and the
figures are shared; ``counted_as`` names the rank whose walk they came from. Each rank is a
Results ``RankEntry`` with one ``RankStrategy`` per strategy, its counts filled in.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from torch import nn

from dummyprof.anatomy import NON_PERSISTENT, model_bytes, walk
from dummyprof.deploy.load_buffers import load_buffers
from dummyprof.deploy.plan import REPLICATED, ModelDims
from dummyprof.deploy.quant import fill_kinds
from dummyprof.deploy.shards import RankShard, Sharder, ShardRewrite
from dummyprof.layout import ParallelLayout
from dummyprof.loaders.counting import count_on_meta
from dummyprof.loaders.strategies import STRATEGIES, Strategy, get_strategy
from dummyprof.results.deployment import RankEntry, RankStrategy


@dataclass(frozen=True)
class RuleUse:
    """How many of the whole model's tensors one rule split, and where the rule came from."""

    rule: str
    source: str
    style: str
    tensors: int


@dataclass(frozen=True)
class DeploymentCounts:
    """Per-rank exact counts for a layout, and the whole model they were cut from."""

    layout: ParallelLayout
    model_bytes: int
    layer_count: int
    ranks: tuple[RankEntry, ...]  # each rank's own entry (its strategies are its own objects too)
    rules: tuple[RuleUse, ...]
    shards_walked: int  # distinct shards counted (the rest shared their figures)
    heads: int | None  # attention heads and kv heads the split used; None: not known, k/v split as plain columns
    kv_heads: int | None
    seconds: float  # building every shard and counting them
    not_counted: tuple[str, ...] = ()  # non-weight device bytes vLLM allocates that could not be counted


def _signature(shard: RankShard) -> tuple[Any, ...]:
    """Everything the counts depend on: names (the tree), shapes, dtypes, declared values, ties, persistence."""
    parts: list[Any] = []
    ids: dict[int, int] = {}  # a storage's first-seen index: ties compare equal across shards, ids do not
    for r in walk(shard.module, remove_duplicate=True):
        value, tie = getattr(r.tensor, "dummy_weight_value", None), ids.setdefault(id(r.tensor), len(ids))
        parts.append((r.path, r.local, tuple(r.tensor.shape), r.tensor.dtype, value, tie, r.kind == NON_PERSISTENT))
    return tuple(parts)


def _strategy_counts(model: nn.Module, strategy: Strategy) -> RankStrategy:
    """One strategy's exact work on one rank's shard."""
    counted = count_on_meta(model, strategy)
    visited = [r for r in counted.recorder.records.values() if r.visits]
    return RankStrategy(
        strategy=strategy.name,
        initializer=counted.initializer,
        visits=counted.recorder.visits,
        redundant_visits=sum(r.visits - 1 for r in visited),
        bytes_written=sum(r.bytes_written for r in visited),
        redundant_bytes_written=sum(max(0, r.bytes_written - r.nbytes) for r in visited),
        largest_scratch_bytes=counted.recorder.peak_scratch_bytes,
    )


def engine_bytes(sharder: Sharder) -> int:
    """The whole model as the engine builds it on one rank (quantized), without vocabulary padding."""
    one = Sharder(sharder.model, ParallelLayout(), sharder.dims, sharder.quant).build(ParallelLayout().coords()[0])
    return one.nbytes - sum(t.padding_bytes for t in one.tensors)


def count_deployment(
    model: nn.Module,
    layout: ParallelLayout,
    *,
    options: dict[str, Any] | None = None,
    quant: ShardRewrite | None = None,
    strategies: Sequence[str] | None = None,
    clock: Callable[[], float] = time.perf_counter,
    grouped: bool = True,
) -> DeploymentCounts:
    """Build every rank's shard of ``model`` (a meta model) and count ``strategies`` (default: all) on each.

    Ranks that hold one shard by construction are one entry (``copies``; ``grouped`` False: one per rank, as real
    ranks report). ``options``: the source's (a preset's ``heads``/``kv_heads``; a transformers config is read first);
    ``quant``: what rewrites each shard (a quantized source's ``deploy.engine.quantizer_of``).
    """
    t0 = clock()
    chosen = [get_strategy(s, flag="--strategies") for s in (strategies or list(STRATEGIES))]
    sharder = Sharder(model, layout, ModelDims.of(model, options), quant)
    walked: dict[tuple[Any, ...], tuple[int, tuple[RankStrategy, ...]]] = {}
    ranks = []
    not_counted: set[str] = set()
    for group in sharder.groups(grouped=grouped):
        coord = group.coord
        shard = sharder.build(coord)
        key = _signature(shard)
        if key not in walked:
            walked[key] = (coord.rank, tuple(_strategy_counts(shard.module, s) for s in chosen))
        counted_as, figures = walked[key]
        extra = load_buffers(
            getattr(model, "config", None), shard.module, ep=layout.ep, experts=sharder.planner.experts
        )
        if extra.not_counted:
            not_counted.add(extra.not_counted)
        ranks.append(
            RankEntry(
                **dataclasses.asdict(coord),
                ep_rank=coord.moe_rank(layout.tp) if layout.expert_parallel else None,
                layers=list(shard.layers),
                storages=len(shard.tensors),
                held_bytes=shard.nbytes,
                replicated_bytes=sum(t.nbytes for t in shard.tensors if t.rule == REPLICATED),
                padding_bytes=sum(t.padding_bytes for t in shard.tensors),
                counted_as=counted_as,
                copies=group.copies,
                rotary_cache_bytes=extra.rotary_cache,
                expert_map_bytes=extra.expert_map,
                kv_scale_bytes=extra.kv_scales,
                strategies=[msgspec.structs.replace(s) for s in figures],
                fill_kinds=fill_kinds(shard.module) if sharder.quant is not None else {},
            )
        )
    uses = Counter((p.rule, p.source, p.style) for p in sharder.planner.placements.values())
    return DeploymentCounts(
        layout=layout,
        model_bytes=model_bytes(model) if sharder.quant is None else engine_bytes(sharder),
        layer_count=sharder.layer_count,
        ranks=tuple(ranks),
        rules=tuple(RuleUse(r, s, st, n) for (r, s, st), n in sorted(uses.items())),
        shards_walked=len(walked),
        heads=sharder.dims.heads,
        kv_heads=sharder.dims.kv_heads,
        seconds=clock() - t0,
        not_counted=tuple(sorted(not_counted)),
    )
