"""Command-line interface: thin commands over the library."""

from __future__ import annotations

from dummyprof.cli.app import app, main, run

__all__ = ["app", "main", "run"]
