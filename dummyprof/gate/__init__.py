"""The CI performance gate: scenarios from a TOML config, measured metrics, checks and verdicts.

Exact counters (visits, bytes written, scratch) are compared with a committed
baseline; timings only count as regressions when they are both larger than a
factor and statistically significant; in-run ratios cancel machine speed.
"""
