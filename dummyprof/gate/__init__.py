"""The CI performance gate: scenarios from a TOML config, measured metrics, checks and verdicts (docs/gate.md)."""
