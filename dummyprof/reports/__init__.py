"""Reporters: render a Results document to the terminal, JSON, Markdown or JUnit.

Reporters import no torch, so a saved results file renders anywhere.
"""

from __future__ import annotations
