"""Ranks of one torch.distributed world for any scenario: ``world`` (joining, barriers, gathering) and ``launch``
(ranks started from Python on this host). What a rank does is its scenario's (docs/multi-rank.md)."""
