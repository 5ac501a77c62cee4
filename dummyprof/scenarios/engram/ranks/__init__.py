"""Multi-rank ``engram``: every rank fills its shard at once, one gathered report (docs/multi-rank.md).

``world`` (joining torch.distributed, failure-aware barriers), ``launch`` (ranks started here, options in
and Results out as data), ``rank`` (what each rank does, the aggregate), ``options`` and ``run`` (the
whole run as one call: ``--nproc``, the gate, the Python API).
"""
