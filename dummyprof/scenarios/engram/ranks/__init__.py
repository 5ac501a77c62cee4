"""Multi-rank ``engram``: every rank fills its shard at once, one gathered report (docs/multi-rank.md).

``rank`` (what each rank does, the aggregate), ``options`` and ``run`` (the whole run as one call:
``--nproc``, the gate, the Python API), on the generic ranks of ``dummyprof.ranks``.
"""
