"""A deployment (``--tp/--ep/--pp/--dp``) counted: every rank's shard on meta with exact counts
(``deploy.count_deployment``), each shard's CPU-offloaded tables, the node view. inspect and audit stop here;
compare measures the distinct shards on top (``fills.py``).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn

from dummyprof.allocation.backings import next_power_of_two
from dummyprof.deploy import DeploymentCounts, RankCoord, Sharder, count_deployment
from dummyprof.deploy.engine import quantizer_of, source_sharder
from dummyprof.deploy.plan import ROWS
from dummyprof.deploy.shards import META, RankShard
from dummyprof.errors import UsageError
from dummyprof.measure.engine import Clock
from dummyprof.measure.memory import total_memory_bytes
from dummyprof.models.source import ModelSource
from dummyprof.results import verdict
from dummyprof.results.common import copied
from dummyprof.results.deployment import DeploymentResult, NodeEntry
from dummyprof.results.session import Results
from dummyprof.results.whole import check_possible
from dummyprof.scenarios.deployment.options import LayoutGroup
from dummyprof.scenarios.model_choice import chosen_source
from dummyprof.scenarios.options import BuildGroups

HOST, DEVICE = "host", "device"  # where a shard's tensor lives: CPU-offloaded tables on the host, the rest on the GPU


def shard_tensors(shard: RankShard) -> dict[str, torch.Tensor]:
    tensors: dict[str, torch.Tensor] = dict(shard.module.named_parameters(remove_duplicate=False))
    tensors.update(shard.module.named_buffers(remove_duplicate=False))
    return tensors


def residence(shard: RankShard) -> dict[str, str]:
    """Where each of the shard's tensors lives in the deployment: ``HOST`` for a CPU-offloaded table (Engram rows
    that declare their value: vLLM offloads those), else ``DEVICE``."""
    tensors = shard_tensors(shard)
    return {
        t.name: HOST
        if t.rule == ROWS and getattr(tensors.get(t.name), "dummy_weight_value", None) is not None
        else DEVICE
        for t in shard.tensors
    }


def fill_device(where: str, device: torch.device) -> torch.device:
    """The device a tensor living ``where`` is filled and timed on, for a deployment on ``device``: a host-resident
    table on this host's CPU, whatever the device; a device-resident tensor on the device."""
    return torch.device("cpu") if where == HOST else device


def _offloaded(shard: RankShard) -> list[int]:
    where = residence(shard)
    return [t.nbytes for t in shard.tensors if where[t.name] == HOST]


def _replicated_extra(counts: DeploymentCounts) -> int:
    """Replicated tensors beyond their first copy in each stage: every rank of a stage holds them whole."""
    per_stage: dict[int, list[int]] = {}
    for r in counts.ranks:
        per_stage.setdefault(r.stage, []).extend([r.replicated_bytes] * r.copies)
    return sum(sum(v) - max(v) for v in per_stage.values())


def _node_view(result: DeploymentResult, offloaded: dict[int, list[int]], options: LayoutGroup) -> None:
    per_node = options.ranks_per_node or result.world
    host = options.host_memory if options.host_memory is not None else total_memory_bytes()
    result.ranks_per_node, result.device_memory_bytes = per_node, options.device_memory
    nodes: dict[int, NodeEntry] = {}
    for r in result.ranks:
        r.node = r.rank // per_node  # its first rank's node (a group of dp ranks may span nodes)
        # the pinned allocator rounds each allocation up to a power of two (vLLM #56410; docs/semantics.md)
        pinned = sum(next_power_of_two(n) for n in offloaded[r.counted_as])
        for rank in r.rank_numbers(result.tp):
            node = nodes.setdefault(rank // per_node, NodeEntry(node=rank // per_node, host_memory_bytes=host))
            node.ranks.append(rank)
            node.held_bytes += r.held_bytes
            node.offloaded_bytes += r.offloaded_bytes
            node.pinned_bytes += pinned
        if options.device_memory is not None:
            r.device_room_bytes = options.device_memory - r.device_bytes
            r.device_fits = verdict.fits(r.device_bytes, options.device_memory)
    for node in nodes.values():
        node.ranks.sort()
        node.host_fits = verdict.fits(node.pinned_bytes, node.host_memory_bytes) if node.offloaded_bytes else None
    result.nodes = [nodes[n] for n in sorted(nodes)]


@dataclass
class Counted:
    """A deployment counted on meta: its source and sharder, the result with every rank's counts, each entry's
    first rank's coordinates, each distinct shard's CPU-offloaded tables' bytes, and the notices so far."""

    source: ModelSource
    sharder: Sharder
    result: DeploymentResult
    coords: dict[int, RankCoord]
    offloaded: dict[int, list[int]]
    notes: list[str]

    def results(self, options: LayoutGroup, device: torch.device) -> Results:
        """The node view added, as the Results of a run on ``device``."""
        from dummyprof.measure.environment import collect_environment

        _node_view(self.result, self.offloaded, options)
        results = Results(command="deployment", environment=collect_environment(device), deployment=self.result)
        results.notices.extend(dict.fromkeys(self.notes))
        check_possible(results)  # an impossible figure is a bug caught here, never shown
        return results


def refuse_loaders(options: BuildGroups) -> None:
    if getattr(options, "loaders", None):  # audit's and compare's fill group; inspect has none
        raise UsageError.for_field(
            "loaders", "a deployment (--tp/--ep/--pp/--dp) fills shards with the built-in strategies; drop --loader"
        )


class Shards(NamedTuple):
    model: nn.Module
    build_s: float
    sharder: Sharder


def shard_model(options: BuildGroups, source: ModelSource, clock: Clock) -> Shards:
    """The whole model on meta and its sharder, which refuses a tp vLLM cannot split."""
    t0 = clock()
    meta = source.whole() if source.whole is not None else source.build(META)
    build_s = clock() - t0
    return Shards(meta, build_s, source_sharder(source, meta, options.layout))


def count(
    options: BuildGroups,
    command: str,
    source: ModelSource,
    shards: Shards,
    *,
    strategies: list[str],
    clock: Clock,
    grouped: bool = True,
) -> Counted:
    """Every rank of ``shards`` (``shard_model``'s) counted, ranks that hold one shard as one entry unless not
    ``grouped`` (real ranks report one by one), and each distinct shard's CPU-offloaded tables."""
    meta, build_s, sharder = shards
    layout = options.layout
    counts = count_deployment(
        meta,
        layout,
        options=source.options,
        quant=quantizer_of(source),
        strategies=strategies,
        clock=clock,
        grouped=grouped,
    )
    result = copied(  # the counts' model_bytes, layer_count, heads, kv_heads, shards_walked
        DeploymentResult,
        counts,
        command=command,
        source=source.source,
        description=source.description,
        **dataclasses.asdict(layout),  # tp, pp, dp, expert_parallel
        ep=layout.ep,
        world=layout.world,
        ranks=list(counts.ranks),
        replicated_extra_bytes=_replicated_extra(counts),
        count_s=counts.seconds,
        build_s=build_s,
    )
    coords = {r.rank: layout.coord(r.rank) for r in counts.ranks}  # each entry's first rank
    offloaded: dict[int, list[int]] = {}
    for r in counts.ranks:
        if r.counted_as not in offloaded:
            offloaded[r.counted_as] = _offloaded(sharder.build(coords[r.counted_as]))
        r.offloaded_bytes = sum(offloaded[r.counted_as])
    notes = [*source.notes, *sharder.notices]
    notes += [
        f"not in the device bytes: the {what} (vLLM allocates it at load; its size is not modelled)"
        for what in counts.not_counted
    ]
    return Counted(source, sharder, result, coords, offloaded, notes)


def run_deployment(
    options: BuildGroups,
    command: str,
    *,
    strategies: list[str],
    source: ModelSource | None = None,
    clock: Clock = time.perf_counter,
) -> Results:
    """Per-rank counts for inspect's or audit's options (their model and layout groups); compare measures on top
    (``fills.measure_deployment``)."""
    refuse_loaders(options)
    source = source or chosen_source(options)
    counted = count(options, command, source, shard_model(options, source, clock), strategies=strategies, clock=clock)
    return counted.results(options, torch.device("cpu"))
