"""dummyprof's per-rank shards against what vLLM's own model classes allocate, rank by rank, without vLLM.

The records in ``tests/data/vllm_goldens/`` were made by ``benchmarks/vllm_goldens.py`` with vLLM itself (its
classes built on meta per rank, its dummy loader run on them; docs/engine-goldens.md). Each case is a config of
``tests/data/`` with the fields the record names changed; for every rank of every layout recorded, dummyprof's
shard must hold the same tensors (names mapped by ``NAMES``, shapes, dtypes, bytes, counts), give each the
initializer rule vLLM's loader gives it, and count the per-layer and the recursive (legacy) fills' visits and
bytes as vLLM's tree makes them.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from dummyprof.deploy import ParallelLayout, count_deployment
from dummyprof.deploy.counts import DeploymentCounts
from dummyprof.deploy.engine import engine_source, quantizer_of, source_sharder
from dummyprof.deploy.shards import RankShard
from dummyprof.errors import UsageError
from dummyprof.loaders.initializers import V033Initializer
from dummyprof.models.source import ModelSource

GOLDENS = Path(__file__).parent / "data" / "vllm_goldens"
DATA = Path(__file__).parent / "data"
FORMAT = 1  # benchmarks/vllm_goldens.py's FORMAT

# Where vLLM's and dummyprof's names for one tensor differ: each side's name is rewritten into one canonical name.
# vLLM side: gpt-oss names its embedding ``embedding`` and its attention ``attn`` (transformers: ``embed_tokens``,
# ``self_attn``).
VLLM_NAMES = ((r"^model\.embedding\.", "model.embed_tokens."), (r"(\.layers\.\d+)\.attn\.", r"\1.self_attn."))
# dummyprof side: unquantized fused experts keep transformers' names ([E, 2I, H] and [E, H, I], as vLLM holds them).
DUMMYPROF_NAMES = (
    (r"\.routed_experts\.gate_up_proj$", ".routed_experts.w13_weight"),
    (r"\.routed_experts\.down_proj$", ".routed_experts.w2_weight"),
)
NAMES = {"vllm": VLLM_NAMES, "dummyprof": DUMMYPROF_NAMES}


def canonical(name: str, side: str) -> str:
    for pattern, replacement in NAMES[side]:
        name = re.sub(pattern, replacement, name)
    return name


# ---- the records ---------------------------------------------------------------------------------------------------


def _goldens() -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(GOLDENS.glob("*.json"))]


def _ranges(text: str) -> Iterator[int]:
    for part in text.split(","):
        first, _, last = part.partition("-")
        yield from range(int(first), int(last or first) + 1)


def expand(rows: list[list[Any]]) -> list[list[Any]]:
    """The record's compact rows (``model.layers.*.x`` with ``"0-47"``) back to one row per tensor."""
    out = []
    for pattern, layers, shape, dtype, nbytes, kind, rule, tied in rows:
        indices = list(_ranges(layers)) if layers else [None]
        for i in indices:
            name = pattern if i is None else pattern.replace(".layers.*.", f".layers.{i}.", 1)
            tie = tied if tied is None or i is None else tied.replace(".layers.*.", f".layers.{i}.", 1)
            out.append([name, tuple(shape), dtype, nbytes, kind, tuple(rule), tie])
    return out


def _params(check: str) -> list[Any]:
    params = []
    for record in _goldens():
        for index, entry in enumerate(record["layouts"]):
            for shard in entry["shards"]:
                ranks = shard["ranks"]
                label = f"{record['case']}-{_layout_label(entry['layout'])}-rank{ranks[0]}"
                reasons = XFAIL.get((check, record["case"], index), ())
                marks = [pytest.mark.xfail(strict=True, reason="; ".join(reasons))] if reasons else []
                params.append(pytest.param(record, entry["layout"], shard, id=label, marks=marks))
    return params


def _layout_label(layout: dict[str, Any]) -> str:
    return "-".join(f"{k}{'' if v is True else v}" for k, v in layout.items())


def _layout(layout: dict[str, Any]) -> ParallelLayout:
    tp, dp, pp = layout.get("tp", 1), layout.get("dp", 1), layout.get("pp", 1)
    if layout.get("ep"):
        return ParallelLayout.from_sizes(tp=tp, dp=dp, pp=pp, ep=tp * dp)
    return ParallelLayout.from_sizes(tp=tp, dp=dp, pp=pp)


# ---- dummyprof's side ----------------------------------------------------------------------------------------------


@functools.cache
def _source(case: str, tmp: Path) -> ModelSource:
    from dummyprof.models.huggingface import hf_source

    record = next(r for r in _goldens() if r["case"] == case)
    config = json.loads((DATA / f"{record['base']}.json").read_text()) if record["base"] else {}
    config.update(record["fields"])
    path = tmp / f"{case}.json"
    path.write_text(json.dumps(config))
    return engine_source(hf_source(f"hf:{path}", {}))


def _whole(source: ModelSource) -> torch.nn.Module:
    return source.whole() if source.whole is not None else source.build(torch.device("meta"))


@functools.cache
def _counts(case: str, tmp: Path, sizes: str) -> DeploymentCounts:
    source = _source(case, tmp)
    layout = _layout(json.loads(sizes))
    quant = quantizer_of(source)
    return count_deployment(
        _whole(source), layout, options=source.options, quant=quant, strategies=["per-layer", "legacy"]
    )


def _shard(case: str, tmp: Path, layout: dict[str, Any], rank: int) -> RankShard:
    source = _source(case, tmp)
    parallel = _layout(layout)
    return source_sharder(source, _whole(source), parallel).build(parallel.coords()[rank])


def dummyprof_rows(shard: RankShard) -> list[list[Any]]:
    """The shard's module tree as the record lists vLLM's: every module's own tensors, named_modules() order."""
    rows = []
    first: dict[int, str] = {}
    for path, module in shard.module.named_modules():
        skip: set[str] = module._non_persistent_buffers_set
        own = [(n, t, "p") for n, t in module._parameters.items() if t is not None]
        own += [(n, t, "n" if n in skip else "b") for n, t in module._buffers.items() if t is not None]
        for local, tensor, kind in own:
            name = f"{path}.{local}" if path else local
            tied = first.setdefault(id(tensor), name)
            rule, _ = V033Initializer().plan(tensor, local)
            value = getattr(tensor, "dummy_weight_value", None)
            rows.append([name, tuple(tensor.shape), str(tensor.dtype).removeprefix("torch."), tensor.nbytes, kind,
                         (rule, value) if value is not None else (rule,), None if tied == name else tied])  # fmt: skip
    return rows


# ---- comparing -----------------------------------------------------------------------------------------------------

_LAYER = re.compile(r"\.layers\.(\d+)\.")


def _folded(lines: list[str]) -> list[str]:
    """Lines alike but for their decoder layer index, once: ``model.layers.{0-1}.x: ...``."""
    groups: dict[str, list[int]] = {}
    for line in lines:
        found = _LAYER.search(line)
        key = _LAYER.sub(".layers.{}.", line, count=1) if found else line
        groups.setdefault(key, []).append(int(found.group(1)) if found else -1)
    out = []
    for key, indices in groups.items():
        if indices[0] < 0:
            out.append(key)
        else:
            first, last = min(indices), max(indices)
            span = (
                str(first)
                if first == last
                else f"{first}-{last}"
                if len(indices) == last - first + 1
                else ",".join(map(str, indices))
            )
            out.append(key.replace("{}", "{" + span + "}", 1))
    return out


def _weights(rows: list[list[Any]], side: str) -> dict[str, tuple[tuple[int, ...], str, int]]:
    """Each storage the loader fills (parameters and persistent buffers), once, by its canonical name."""
    return {canonical(r[0], side): (r[1], r[2], r[3]) for r in rows if r[4] != "n" and r[6] is None}


def tensor_differences(vllm: list[list[Any]], ours: list[list[Any]]) -> list[str]:
    theirs, mine = _weights(vllm, "vllm"), _weights(ours, "dummyprof")
    lines = []
    for name in sorted(theirs.keys() | mine.keys()):
        a, b = theirs.get(name), mine.get(name)
        if a != b:
            show = lambda t: "missing" if t is None else f"{list(t[0])} {t[1]} {t[2]:,} B"  # noqa: E731
            lines.append(f"{name}: vLLM {show(a)}, dummyprof {show(b)}")
    lines = _folded(lines)
    total = lambda w: sum(v[2] for v in w.values())  # noqa: E731
    if lines:
        lines.append(f"tensors: vLLM {len(theirs)} ({total(theirs):,} B), dummyprof {len(mine)} ({total(mine):,} B)")
    return lines


def _rule(rule: tuple[Any, ...]) -> tuple[Any, ...]:
    """vLLM's rule as the record gives it, in the initializer's words (the range is the initializer's own)."""
    if rule[0] in ("uniform", "uniform-via-fp16"):
        return (rule[0],)
    if rule[0] == "scale-byte":
        return ("scale-byte",)
    return rule


def rule_differences(vllm: list[list[Any]], ours: list[list[Any]]) -> list[str]:
    theirs = {canonical(r[0], "vllm"): _rule(r[5]) for r in vllm if r[4] != "n"}
    mine = {canonical(r[0], "dummyprof"): r[5] for r in ours if r[4] != "n"}
    return _folded(
        [
            f"{name}: vLLM {theirs[name]}, dummyprof {mine[name]}"
            for name in sorted(theirs.keys() & mine.keys())
            if theirs[name] != mine[name]
        ]
    )


# ---- expected failures: what dummyprof does not build as vLLM does yet ---------------------------------------------

GPTQ_ROUTER = (
    "GPTQ router: recorded from a config without weight files, vLLM quantizes every linear (the router too); "
    "from a checkpoint it quantizes what the files hold, and dummyprof keeps routers unquantized"
)
# (check, case, layout index) -> why dummyprof's shard differs from vLLM's there; each a strict xfail
XFAIL: dict[tuple[str, str, int], tuple[str, ...]] = {
    **{(check, "qwen3-30b-a3b-gptq", 0): (GPTQ_ROUTER,) for check in ("tensors", "counts")},
}


# ---- the tests -----------------------------------------------------------------------------------------------------


def test_goldens_are_present_and_of_this_format() -> None:
    records = _goldens()
    assert records, "no records in tests/data/vllm_goldens/ (benchmarks/vllm_goldens.py writes them)"
    for record in records:
        assert record["format"] == FORMAT, record["case"]
        assert record["vllm"] == "0.33.0", record["case"]


@pytest.mark.parametrize(("record", "layout", "shard"), _params("tensors"))
def test_shard_tensors_are_vllms(record: dict[str, Any], layout: dict[str, Any], shard: dict[str, Any],
                                 tmp_path_factory: pytest.TempPathFactory) -> None:  # fmt: skip
    tmp = tmp_path_factory.getbasetemp()
    vllm = expand(shard["tensors"])
    for rank in sorted({shard["ranks"][0], shard["ranks"][-1]}):
        ours = dummyprof_rows(_shard(record["case"], tmp, layout, rank))
        differences = tensor_differences(vllm, ours) + rule_differences(vllm, ours)
        assert not differences, f"rank {rank}:\n" + "\n".join(differences)


@pytest.mark.parametrize(("record", "layout", "shard"), _params("counts"))
def test_fill_counts_are_vllms(record: dict[str, Any], layout: dict[str, Any], shard: dict[str, Any],
                               tmp_path_factory: pytest.TempPathFactory) -> None:  # fmt: skip
    counts = _counts(record["case"], tmp_path_factory.getbasetemp(), json.dumps(layout))
    for rank in sorted({shard["ranks"][0], shard["ranks"][-1]}):
        tp = counts.layout.tp
        entry = next(e for e in counts.ranks if rank in range(e.rank, e.rank + e.copies * tp, tp))
        got = {s.strategy: (s.visits, s.bytes_written) for s in entry.strategies}
        want = {
            "per-layer": (shard["per_layer"]["visits"], shard["per_layer"]["bytes_written"]),
            "legacy": (shard["recursive"]["visits"], shard["recursive"]["bytes_written"]),
        }
        assert got == want, f"rank {rank}: dummyprof {got}, vLLM {want}"


def _refused() -> list[Any]:
    return [
        pytest.param(record, entry, id=f"{record['case']}-{_layout_label(entry['layout'])}")
        for record in _goldens()
        for entry in record["layouts"]
        if "refused" in entry
    ]


@pytest.mark.parametrize(("record", "entry"), _refused())
def test_a_layout_vllm_refuses_is_refused(record: dict[str, Any], entry: dict[str, Any],
                                          tmp_path_factory: pytest.TempPathFactory) -> None:  # fmt: skip
    """vLLM's own refusal (recorded with its error) is dummyprof's too: a one-line UsageError naming the flag."""
    with pytest.raises(UsageError) as refused:
        _shard(record["case"], tmp_path_factory.getbasetemp(), entry["layout"], 0)
    assert refused.value.field in {"tp", "ep", "pp", "dp"}, entry["refused"]
