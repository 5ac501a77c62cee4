"""The ``audit`` scenario: each strategy or loader once on a fresh model under the write tracer (strategies also
under the visit recorder, which must agree), tensors matched across models by canonical name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from dummyprof.anatomy import (
    NON_PERSISTENT,
    buffer_persistence,
    canonical_name,
    describe,
    storage_owners,
    unregistered_tensors,
)
from dummyprof.loaders.initializers import Initializer, get_initializer, vllm_fills
from dummyprof.loaders.strategies import Strategy, get_strategy, run_strategy
from dummyprof.loaders.user_loader import loader_strategy
from dummyprof.measure.device import resolve_device
from dummyprof.measure.environment import collect_environment
from dummyprof.measure.recorder import VisitRecorder
from dummyprof.measure.write_tracer import trace_writes
from dummyprof.models.source import ModelSource
from dummyprof.results.audit import (
    FINDING_KINDS,
    INFO_KINDS,
    AuditResult,
    AuditTensor,
    FillerSummary,
    Finding,
    UnregisteredTensor,
)
from dummyprof.results.session import Results
from dummyprof.scenarios.audit.construction import construction_values
from dummyprof.scenarios.audit.options import AuditOptions, validate
from dummyprof.scenarios.compare.runner import summarize_model
from dummyprof.scenarios.model_choice import check_source_fits, chosen_source

__all__ = ["AuditOptions", "run", "tensor_digest", "validate"]


@dataclass
class _Filler:
    name: str
    kind: str
    initializer: str | None  # the strategy's, or the one a loader was declared to fill like
    strategy: Strategy  # a loader runs as one (loader_strategy), its initializer never called
    init: Initializer | None = None


def tensor_digest(tensor: torch.Tensor) -> str:
    """blake2b of a tensor's bytes in logical order (views and non-contiguous tensors included)."""
    if tensor.device.type == "meta":
        return "meta"  # no bytes to compare
    flat = tensor.detach().reshape(-1).contiguous().view(torch.uint8).cpu()
    return hashlib.blake2b(flat.numpy().tobytes(), digest_size=16).hexdigest()


def _fillers(options: AuditOptions) -> list[_Filler]:
    from dummyprof.scenarios.loader_runs import load_loaders

    fillers = []
    for strategy in map(get_strategy, options.strategies):
        name = options.initializer or strategy.initializer
        fillers.append(_Filler(strategy.name, "strategy", name, strategy, get_initializer(name)))
    loaders = load_loaders(options.loaders, options.loader_args, options.strategies)
    init = options.loader_initializer
    return fillers + [_Filler(loader.name, "loader", init, loader_strategy(loader)) for loader in loaders]


@dataclass
class _Audit:
    result: AuditResult
    ignore: list[str]
    owners: dict[str, type] = field(default_factory=dict)  # non-persistent buffer -> its module's class
    buffer_writes: list[tuple[str, str]] = field(default_factory=list)  # (tensor, filler): judged after all ran

    def find(self, kind: str, tensor: str, fillers: Sequence[str] = (), **data: Any) -> None:
        assert kind in FINDING_KINDS or kind in INFO_KINDS, kind
        self.result.findings.append(Finding(kind, tensor, list(fillers), ignored=kind in self.ignore, **data))


def _structure(model: nn.Module, audit: _Audit) -> dict[str, AuditTensor]:
    """Rows for every registered storage; shared-storage, unregistered and persistence notes."""
    persistence = buffer_persistence(model)
    for note in persistence.notes:
        audit.find("persistence", note.split(":")[0], detail=note)
    storages = storage_owners(model, persistence)
    rows: dict[str, AuditTensor] = {}
    for entries in storages.values():
        name = canonical_name(entries)
        first = next(e for e in entries if e.name == name)
        shape, dtype, _ = describe(first.tensor)
        rows[name] = AuditTensor(
            names=[name] + [e.name for e in entries if e.name != name],
            kinds=[first.kind] + [e.kind for e in entries if e.name != name],
            dtype=dtype,
            shape=shape,
            nbytes=max(e.tensor.numel() * e.tensor.element_size() for e in entries),
            device=first.tensor.device.type,
            vllm_fills=any(e.kind != NON_PERSISTENT for e in entries)
            and vllm_fills(first.tensor, name.rsplit(".", 1)[-1]),
        )
        if all(k == NON_PERSISTENT for k in rows[name].kinds):
            audit.owners[name] = type(model.get_submodule(name.rpartition(".")[0]))
        if len(entries) > 1:
            same_object = all(e.tensor is entries[0].tensor for e in entries)
            audit.find("shared-storage", name, names=[e.name for e in entries], tied=same_object)
    for stray_name, tensor in unregistered_tensors(model, set(storages)):
        shape, dtype, nbytes = describe(tensor)
        audit.result.unregistered.append(UnregisteredTensor(stray_name, shape, dtype, nbytes))
        audit.find("unregistered", stray_name, dtype=dtype, shape=shape, nbytes=nbytes)
    return rows


def _name_by_key(model: nn.Module) -> tuple[dict[int, str], dict[int, torch.Tensor]]:
    storages = storage_owners(model, buffer_persistence(model))
    names = {key: canonical_name(entries) for key, entries in storages.items()}
    tensors = {key: next(e.tensor for e in entries if e.name == names[key]) for key, entries in storages.items()}
    return names, tensors


def _run_filler(
    filler: _Filler, build: Callable[[], nn.Module], rows: dict[str, AuditTensor], audit: _Audit
) -> FillerSummary:
    model = build()
    names, tensors = _name_by_key(model)
    recorder = VisitRecorder(model) if filler.kind == "strategy" else None
    trace = trace_writes(model, lambda m: run_strategy(m, filler.strategy, initializer=filler.init, recorder=recorder))
    summary = FillerSummary(filler.name, filler.kind, filler.initializer, outside_writes=trace.outside_writes)
    written: dict[str, int] = {}
    for key, record in trace.records.items():
        name = names.get(key)
        if name is None or name not in rows:
            continue
        row = rows[name]
        if row.device == "meta":
            continue  # an operator on a meta tensor writes no byte
        row.writes[filler.name] = record.visits
        row.bytes_written[filler.name] = record.bytes_written
        if record.visits:
            row.ops[filler.name] = list(trace.ops.get(key, []))
            row.digests[filler.name] = tensor_digest(tensors[key])
            written[name] = record.visits
    summary.writes = sum(written.values())
    summary.tensors_written = len(written)
    summary.bytes_written = sum(rows[n].bytes_written[filler.name] for n in written)
    summary.repeated_tensors = sum(1 for v in written.values() if v > 1)
    for name, count in written.items():
        if count > 1:
            audit.find("repeated", name, [filler.name], count=count)
        if name in audit.owners:
            audit.buffer_writes.append((name, filler.name))
    for key in trace.untraced:
        audit.find("untraced-write", names.get(key, ""), [filler.name])
    for name in trace.replaced:
        audit.find("replaced", name, [filler.name])
    if recorder is not None:
        for key, recorded in recorder.records.items():
            traced = trace.records.get(key)
            traced_bytes = traced.bytes_written if traced is not None else 0
            if recorded.bytes_written != traced_bytes:
                audit.find(
                    "recorder-mismatch",
                    recorded.name,
                    [filler.name],
                    recorded_bytes=recorded.bytes_written,
                    traced_bytes=traced_bytes,
                )
    del model, tensors
    return summary


def _judge_buffer_writes(source: ModelSource, rows: dict[str, AuditTensor], audit: _Audit) -> None:
    """Each write of a non-persistent buffer: a restore when the bytes left equal the construction's, else a finding."""
    if not audit.buffer_writes:
        return
    owners = {name: audit.owners[name] for name, _ in audit.buffer_writes}
    construct = source.construct or (lambda: source.build(torch.device("meta")))
    # Room for the intermediates a buffer is computed from (an int64 arange for a bf16 buffer), and at least 1 MiB.
    limit = max(8 * max(rows[name].nbytes for name in owners), 1 << 20)
    constructed = construction_values(construct, owners, limit)
    for name, filler in audit.buffer_writes:
        row, value = rows[name], constructed.get(name)
        if (
            value is not None
            and describe(value)[:2] == (row.shape, row.dtype)
            and (row.digests.get(filler) == tensor_digest(value))
        ):
            audit.find("non-persistent-restored", name, [filler])
        else:
            audit.find("non-persistent-written", name, [filler])


def _compare_values(fillers: list[_Filler], rows: dict[str, AuditTensor], audit: _Audit) -> list[list[str]]:
    """Fillers that share an initializer must write the same values: each tensor whose digests differ is a finding,
    with the fillers grouped by the values they wrote. The groups compared."""
    groups: dict[str, list[str]] = {}
    for filler in fillers:
        if filler.initializer is not None:
            groups.setdefault(filler.initializer, []).append(filler.name)
    compared = [group for group in groups.values() if len(group) > 1]
    for group in compared:
        for tensor, row in rows.items():
            digests = {n: row.digests[n] for n in group if n in row.digests}
            if len(set(digests.values())) > 1:
                same: dict[str, list[str]] = {}
                for filler_name, digest in digests.items():
                    same.setdefault(digest, []).append(filler_name)
                audit.find("values-differ", tensor, list(digests), groups=list(same.values()))
    return compared


def _cross_check(fillers: list[_Filler], rows: dict[str, AuditTensor], audit: _Audit) -> list[list[str]]:
    names = [f.name for f in fillers]
    for tensor, row in rows.items():
        wrote = [n for n in names if row.writes.get(n, 0)]
        if all(k == NON_PERSISTENT for k in row.kinds):
            continue  # writing a non-persistent buffer is the finding; leaving it alone is right
        if not wrote and not row.vllm_fills:
            continue  # nobody fills it, and vLLM would not either: 'untouched' notes it
        missed = [n for n in names if not row.writes.get(n, 0)]
        if missed:
            audit.find("missed", tensor, missed, written_by=wrote, dtype=row.dtype)
    compared = _compare_values(fillers, rows, audit)
    untouched = [t for t, row in rows.items() if not any(row.writes.values()) and not row.vllm_fills]
    if untouched:
        audit.find("untouched", untouched[0], names=untouched)
    return compared


def run(options: AuditOptions, *, source: ModelSource | None = None) -> Results:
    validate(options)
    if options.deployed:  # per-rank shards and their exact counts; findings per shard are not audited yet
        from dummyprof.scenarios.deployment.run import run_deployment

        return run_deployment(options, "audit", strategies=list(options.strategies), source=source)
    fillers = _fillers(options)
    device = resolve_device(options.device)
    if source is None:
        source = chosen_source(options)
        check_source_fits(source, device, options.max_memory)
    result = AuditResult()
    audit = _Audit(result, options.ignore)
    probe = source.build(device)
    rows = _structure(probe, audit)
    result.model = summarize_model(source, probe, device, sum(r.nbytes for r in rows.values()))
    del probe
    for filler in fillers:
        result.fillers.append(_run_filler(filler, lambda: source.build(device), rows, audit))
    _judge_buffer_writes(source, rows, audit)
    result.value_groups = _cross_check(fillers, rows, audit)
    result.tensors = rows
    return Results(command="audit", environment=collect_environment(device), audit=result, notices=list(source.notes))
