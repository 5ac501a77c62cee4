"""Notices a report shows: those a model source or loader gave (stored), then those written from the data."""

from __future__ import annotations

from dummyprof.results.session import Results
from dummyprof.units import format_bytes


def _audit_notices(results: Results) -> list[str]:
    audit = results.audit
    loaders = [f for f in audit.fillers if f.kind == "loader"] if audit is not None else []
    if not loaders:
        return []
    declared = loaders[0].initializer  # every loader carries the one --loader-initializer declared
    values = (
        f"their final bytes are compared with every filler using {declared}, as declared by --loader-initializer"
        if declared
        else "their values are compared with no other filler unless --loader-initializer declares one"
    )
    return [
        "loaders are traced (every operator that writes in place is seen); a visit that writes nothing cannot "
        f"be seen; {values}"
    ]


def _gate_notices(results: Results) -> list[str]:
    section = results.gate
    if section is None:
        return []
    lines = []
    if results.command == "gate":
        lines += [f"scenario {r.name!r} could not be measured: {r.error}" for r in section.scenarios if r.error]
    if section.unrecorded:
        lines.append(f"could not record: {'; '.join(section.unrecorded)}")
    return lines


def _inspect_notices(results: Results) -> list[str]:
    inspect = results.inspect
    if inspect is None:
        return []
    real = inspect.real_device_tensors
    allocated = (
        f"nothing was written, but the callable put {real} tensor(s) on a real device itself (an explicit device=)"
        if real
        else "nothing was allocated or written"
    )
    return [
        "built on the meta device: sizes come from shapes and dtypes, visits from walking each strategy with a "
        f"no-op initializer; {allocated}"
    ]


# A backing note says what a run measured; a dry run measured nothing (issue #20). The note is words the
# allocation wrote into the data (docs/architecture.md, "still words in the data"), so its tense is mended here.
MEASURED_INSTEAD = "; measured pageable instead"
DRY_RUN_INSTEAD = "; a run would measure pageable instead (dry run: nothing was measured)"


def notices(results: Results) -> list[str]:
    dry_run = results.engram is not None and results.engram.dry_run
    lines = [
        n.removesuffix(MEASURED_INSTEAD) + DRY_RUN_INSTEAD if dry_run and n.endswith(MEASURED_INSTEAD) else n
        for n in results.notices
    ]
    derived = DERIVED.get(results.command)
    return lines + derived(results) if derived is not None else lines


DERIVED = {"audit": _audit_notices, "inspect": _inspect_notices, "gate": _gate_notices, "baseline": _gate_notices}


# Which engine wrote random-fast's values: the numpy one is about five times slower (no C compiler at install).
RANDOM_FAST_ENGINES = {"kernel": "C kernel", "numpy": "numpy engine (no C kernel built: slower, see BENCHMARKS.md)"}


def environment_line(results: Results) -> str:
    """Where and with what the run was made: every report's last line."""
    env = results.environment
    threads = f"{env.torch_threads} torch threads" if env.torch_threads else ""
    engine = f", random-fast: {RANDOM_FAST_ENGINES.get(env.random_fast_engine, env.random_fast_engine)}"
    return (
        f"dummyprof {results.dummyprof_version}, torch {env.torch_version}, {env.device} ({env.device_name}), "
        f"CPU {env.cpu_model} x{env.cpu_count}, {threads}, {format_bytes(env.total_memory_bytes)} RAM"
        + (engine if env.random_fast_engine else "")
    )
