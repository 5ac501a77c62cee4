"""Ranks: processes of one torch.distributed world, for any scenario (Engram tables, deployments).

``world`` (torchrun's environment, joining the group, failure-aware barriers, gathering objects) and
``launch`` (ranks started from Python on this host: a function and its arguments in, each rank's
return value out). Imports torch.distributed and ``dummyprof.errors`` only: what a rank does is
its scenario's (docs/multi-rank.md).
"""
