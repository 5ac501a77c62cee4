"""Notices a report shows: those a model source or loader gave (stored), then those written from the data."""

from __future__ import annotations

from dummyprof.reports.kinds import KINDS
from dummyprof.reports.messages import say
from dummyprof.results.session import Results
from dummyprof.units import format_bytes


def notices(results: Results) -> list[str]:
    """A backing note says what a run measured; a dry run measured nothing. The note is words the allocation wrote
    into the data (docs/architecture.md, "still words in the data"), so its tense is mended here."""
    dry_run = results.engram is not None and results.engram.dry_run
    instead, dry = say("notice.measured-instead"), say("notice.dry-run-instead")
    lines = [n.removesuffix(instead) + dry if dry_run and n.endswith(instead) else n for n in results.notices]
    kind = KINDS[results.command]
    return lines + kind.notices(kind.section(results))


def environment_line(results: Results) -> str:
    """Where and with what the run was made: every report's last line."""
    env = results.environment
    threads = f"{env.torch_threads} torch threads" if env.torch_threads else ""
    engine = f", random-fast: {say('engine.' + env.random_fast_engine)}"
    return (
        f"dummyprof {results.dummyprof_version}, torch {env.torch_version}, {env.device} ({env.device_name}), "
        f"CPU {env.cpu_model} x{env.cpu_count}, {threads}, {format_bytes(env.total_memory_bytes)} RAM"
        + (engine if env.random_fast_engine else "")
    )
