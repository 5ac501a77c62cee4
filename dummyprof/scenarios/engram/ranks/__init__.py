"""Multi-rank ``engram``: every rank fills its shard at once, one gathered report (docs/multi-rank.md)."""
