"""Reporters: a Results document as text, one format each, all in :mod:`dummyprof.reports.registry`; no torch."""

from __future__ import annotations
