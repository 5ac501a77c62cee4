"""The audit scenario: options, plan and run."""
