"""Notices a report shows: those a model source or loader gave (stored), then those written from the data."""

from __future__ import annotations

from dummyprof.reports.messages import say
from dummyprof.results.session import Results
from dummyprof.units import format_bytes


def _audit_notices(results: Results) -> list[str]:
    audit = results.audit
    loaders = [f for f in audit.fillers if f.kind == "loader"] if audit is not None else []
    if not loaders:
        return []
    declared = loaders[0].initializer  # every loader carries the one --loader-initializer declared
    values = say("notice.loader-initializer", declared=declared) if declared else say("notice.no-loader-initializer")
    return [say("notice.loaders-traced", values=values)]


def _gate_notices(results: Results) -> list[str]:
    section = results.gate
    if section is None:
        return []
    lines = []
    if results.command == "gate":
        lines += [say("notice.not-measured", name=r.name, error=r.error) for r in section.scenarios if r.error]
    if section.unrecorded:
        lines.append(say("notice.not-recorded", what="; ".join(section.unrecorded)))
    return lines


def _inspect_notices(results: Results) -> list[str]:
    inspect = results.inspect
    if inspect is None:
        return []
    real = inspect.real_device_tensors
    allocated = say("notice.meta-real-tensors", real=real) if real else say("notice.meta-nothing")
    return [say("notice.meta-build", allocated=allocated)]


def notices(results: Results) -> list[str]:
    """A backing note says what a run measured; a dry run measured nothing. The note is words the allocation wrote
    into the data (docs/architecture.md, "still words in the data"), so its tense is mended here."""
    dry_run = results.engram is not None and results.engram.dry_run
    instead, dry = say("notice.measured-instead"), say("notice.dry-run-instead")
    lines = [n.removesuffix(instead) + dry if dry_run and n.endswith(instead) else n for n in results.notices]
    derived = DERIVED.get(results.command)
    return lines + derived(results) if derived is not None else lines


DERIVED = {"audit": _audit_notices, "inspect": _inspect_notices, "gate": _gate_notices, "baseline": _gate_notices}


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
