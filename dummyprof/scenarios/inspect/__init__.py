"""The inspect scenario: options, plan and run."""
