"""Scenarios: what a command (or a gate config entry) runs, from options to a torch-free Results; nothing prints."""

from __future__ import annotations
