"""The engram scenario: options, plan and run."""
