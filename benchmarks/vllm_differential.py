"""One-off differential check of dummyprof's per-layer strategy against vLLM's own loader.

Not part of CI or of the project's dependencies. It needs vLLM installed in a
separate environment (see docs/semantics.md, "vLLM in its own environment"), e.g.::

    python3 -m venv /tmp/vllm-venv && /tmp/vllm-venv/bin/pip install vllm==0.33.0 typer rich psutil
    PYTHONPATH=. /tmp/vllm-venv/bin/python benchmarks/vllm_differential.py

For several synthetic trees it fills one copy with vLLM's
``DummyModelLoader.load_weights`` and another with the matching dummyprof
strategy (vLLM >= 0.30: ``per-layer`` with the v0.33 initializer; vLLM <= 0.29:
``legacy`` with the v0.29 initializer), then compares, storage by storage, how
many times each was handed to the initializer and the final bytes. Exit 0 when
everything matches. Install ``vllm==0.29.0`` in another environment to check
the legacy side.
"""

from __future__ import annotations

import sys
from collections import Counter

import torch

from dummyprof.anatomy import registered_tensors, storage_key, storage_tensors
from dummyprof.loaders.initializers import V029Initializer, V033Initializer
from dummyprof.loaders.strategies import get_strategy, run_strategy
from dummyprof.measure.recorder import VisitRecorder, index_model
from dummyprof.models.synthetic import TreeSpec, build_tree


def storage_bytes(model: torch.nn.Module) -> dict[str, bytes]:
    names = {key: record.name for key, record in index_model(model).items()}
    tensors = storage_tensors(model)
    out: dict[str, bytes] = {}
    for key, name in names.items():
        tensor = tensors[key]
        if tensor.device.type != "meta":
            out[name] = bytes(tensor.untyped_storage())
    return out


def prefill(model: torch.nn.Module) -> None:
    with torch.no_grad():
        for t in registered_tensors(model):
            if t.device.type != "meta":
                t.untyped_storage().fill_(0x5A)


def legacy_vllm() -> bool:
    import vllm

    major, minor = (int(x) for x in vllm.__version__.split(".")[:2])
    return (major, minor) <= (0, 29)


def check(spec: TreeSpec) -> list[str]:
    from vllm.config.load import LoadConfig
    from vllm.model_executor.model_loader import dummy_loader, weight_utils

    # vLLM <= 0.29 calls the per-tensor initializer from weight_utils.initialize_dummy_weights;
    # later releases call it from the dummy loader module itself.
    hooked = weight_utils if legacy_vllm() else dummy_loader
    visits: Counter[int] = Counter()
    original = hooked.initialize_single_dummy_weight

    def counting(param: torch.Tensor, *args: object, **kwargs: object) -> None:
        visits[storage_key(param)] += 1
        original(param, *args, **kwargs)

    theirs = build_tree(spec)
    prefill(theirs)
    hooked.initialize_single_dummy_weight = counting
    try:
        dummy_loader.DummyModelLoader(LoadConfig(load_format="dummy")).load_weights(theirs, model_config=None)
    finally:
        hooked.initialize_single_dummy_weight = original
    their_visits = {r.name: visits.get(k, 0) for k, r in index_model(theirs).items()}

    ours = build_tree(spec)
    prefill(ours)
    recorder = VisitRecorder(ours)
    strategy, initializer = ("legacy", V029Initializer()) if legacy_vllm() else ("per-layer", V033Initializer())
    run_strategy(ours, get_strategy(strategy), initializer=initializer, recorder=recorder)
    our_visits = {r.name: r.visits for r in recorder.records.values()}

    problems = [
        f"visits {n}: vLLM {their_visits[n]} vs dummyprof {our_visits.get(n)}"
        for n in their_visits
        if their_visits[n] != our_visits.get(n)
    ]
    a, b = storage_bytes(theirs), storage_bytes(ours)
    problems += [f"bytes differ: {n}" for n in a if a[n] != b.get(n)]
    print(
        f"{spec}: {len(their_visits)} storages, {sum(their_visits.values())} vLLM initializer calls, "
        f"{len(a)} byte-compared -> {'OK' if not problems else f'{len(problems)} mismatches'}"
    )
    return problems


def main() -> int:
    import vllm

    side = "legacy + v0.29" if legacy_vllm() else "per-layer + v0.33"
    print(f"vLLM {vllm.__version__}, torch {torch.__version__}: against dummyprof {side}")
    problems: list[str] = []
    for spec in (
        TreeSpec(depth=4, width=1, hidden=64),
        TreeSpec(depth=3, width=3, hidden=32, meta=True),
        TreeSpec(depth=6, width=2, hidden=64, dtype="bfloat16", engram_rows=100),
        TreeSpec(depth=2, width=1, hidden=128, dtype="float16"),
    ):
        problems += check(spec)
    for p in problems:
        print("  " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
