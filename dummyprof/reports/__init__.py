"""Reporters: render a Results document to the terminal, JSON, Markdown, JUnit, ...

Every format is registered once in :mod:`dummyprof.reports.registry` (how to add one:
docs/architecture.md, "Reporters"). Reporters import no torch, so a saved results file renders anywhere.
"""

from __future__ import annotations
