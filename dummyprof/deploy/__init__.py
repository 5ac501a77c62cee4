"""Deployments: per-rank shards of a model (tp, ep, pp, dp) on meta, their exact counts, online quantization.

- :mod:`.layout`: the parallel layout and vLLM's placement arithmetic (torch-free).
- :mod:`.plan`: which rule splits each tensor (the model's declared plan, else vLLM's layer names).
- :mod:`.shards`: a rank's shard built on the meta device.
- :mod:`.counts`: every strategy's exact counts on every rank.
- :mod:`.online_quant`: vLLM's online fp8 path, per layer or whole model, with exact live-byte accounting.

See docs/deployments.md.
"""

from __future__ import annotations

from dummyprof.deploy.counts import DeploymentCounts, count_deployment
from dummyprof.deploy.plan import ModelDims
from dummyprof.deploy.shards import Sharder, shard_all
from dummyprof.layout import ParallelLayout, RankCoord, expert_range, pad_vocab, pp_partition

__all__ = [
    "DeploymentCounts",
    "ModelDims",
    "ParallelLayout",
    "RankCoord",
    "Sharder",
    "count_deployment",
    "expert_range",
    "pad_vocab",
    "pp_partition",
    "shard_all",
]
