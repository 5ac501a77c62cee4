"""Deployments: per-rank shards of a model (tp, ep, pp, dp) on meta, their exact counts, online quantization.

The modules and their rules: docs/internals.md and docs/deployments.md.
"""

from __future__ import annotations

from dummyprof.deploy.counts import DeploymentCounts, count_deployment
from dummyprof.deploy.plan import ModelDims
from dummyprof.deploy.shards import Sharder
from dummyprof.layout import ParallelLayout, RankCoord

__all__ = [
    "DeploymentCounts",
    "ModelDims",
    "ParallelLayout",
    "RankCoord",
    "Sharder",
    "count_deployment",
]
