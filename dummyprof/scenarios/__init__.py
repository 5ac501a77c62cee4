"""Scenarios: what a command (or a gate config entry) runs, from options to a Results document.

Each scenario validates its options, checks that the run fits in memory before
allocating, measures, and returns a torch-free ``Results``. Nothing here prints.
"""

from __future__ import annotations
