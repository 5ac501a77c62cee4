"""The compare scenario: options, plan and run."""
