"""Deployments on the CLI: ``--tp/--ep/--pp/--dp`` on compare, inspect and audit, the node view, online fp8."""
