"""Real ranks for a deployment, ``compare --tp N ... --nproc WORLD``: each a process on this host
(``ranks/launch.spawn``) filling its own shard with every strategy, between barriers so they fill at once.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import torch

from dummyprof.loaders.initializers import get_initializer
from dummyprof.loaders.strategies import get_strategy, run_strategy
from dummyprof.measure.recorder import VisitRecorder
from dummyprof.ranks.world import LaunchEnv, join
from dummyprof.scenarios.deployment.run import shard_model
from dummyprof.scenarios.model_choice import chosen_source

if TYPE_CHECKING:
    from dummyprof.scenarios.compare.options import CompareOptions

BACKEND = "gloo"  # CPU shards; nccl would need a GPU per rank
# Each rank is a fresh process that imports torch and builds the model on meta before it fills: that start-up
# is not the fills' and is not counted against --time-budget; the ranks get this long for it on top.
START_UP_S = 60.0


def rank_main(env: LaunchEnv, options: CompareOptions, strategies: list[str], limit_s: float) -> dict[str, Any]:
    """One rank: its shard filled by every strategy between barriers; its counts and seconds."""
    world = join(env, BACKEND, limit_s, client=True)
    try:
        sharder = shard_model(options, chosen_source(options), time.perf_counter).sharder
        coord = options.layout.coord(env.rank)  # the layout parsed once in the parent, arrived as an object
        figures: dict[str, dict[str, Any]] = {}
        for name in strategies:
            strategy = get_strategy(name)
            init = get_initializer(options.initializer or strategy.initializer)
            shard = sharder.build(coord, torch.device("cpu")).module
            recorder = VisitRecorder(shard)
            world.barrier(f"fill {name}")
            t0 = time.perf_counter()
            run_strategy(shard, strategy, initializer=init, recorder=recorder)
            seconds = time.perf_counter() - t0
            world.barrier(f"filled {name}")
            figures[name] = {
                "visits": recorder.visits,
                "bytes_written": sum(r.bytes_written for r in recorder.records.values()),
                "seconds": seconds,
            }
            del shard, recorder
        return {"rank": env.rank, "strategies": figures}
    finally:
        world.close()


def run_ranks(options: CompareOptions, strategies: list[str], limit_s: float) -> dict[int, dict[str, Any]]:
    """Each rank's figures by rank (``RanksFailed.values``: the ranks that finished); ``limit_s``: the fills'."""
    from dummyprof.ranks.launch import spawn

    assert options.nproc is not None  # run with --nproc only
    limit_s += START_UP_S
    return spawn(rank_main, (options, strategies, limit_s), options.nproc, limit_s=limit_s)
