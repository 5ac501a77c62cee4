"""Record what vLLM's own model classes allocate per rank, and what its dummy loader does with each tensor.

Run with the Python of a throwaway environment that has vLLM (never dummyprof's: docs/engine-goldens.md)::

    /path/to/vllm-venv/bin/python benchmarks/vllm_goldens.py            # every case, into tests/data/vllm_goldens/
    /path/to/vllm-venv/bin/python benchmarks/vllm_goldens.py --case llama-3.1-8b --out /tmp/goldens

It imports neither dummyprof nor anything outside vLLM, torch and the standard library. For each case (a config
from ``tests/data/`` with a few fields changed) and each layout in it, every rank's model is built on the meta
device with vLLM's own classes (``initialize_model``), its parallel groups faked for that rank in this one
process and its CUDA platform faked as an H200 (compute capability 9.0), so quantization methods pick the kernels
and layouts they pick on that GPU. Then, on that module tree:

- every registered tensor (each module's own parameters and buffers, ``model.named_modules()`` order): name,
  shape, dtype, bytes, parameter / persistent buffer / non-persistent buffer, and what vLLM's
  ``initialize_single_dummy_weight`` does with it: that function is called on a small real CPU tensor of the same
  dtype, name and ``dummy_weight_value``, prefilled with a sentinel, and the result read back (skipped, a declared
  constant and its value, the e8m0 scale byte, random bytes, uniform);
- the per-layer fill: ``DummyModelLoader.load_weights`` itself run on the meta model with its per-tensor
  initializer hooked (visits, and bytes of the visits its rule writes);
- the recursive fill of vLLM <= 0.29 on this tree (for each module in ``model.modules()``, every tensor of its
  recursive ``state_dict()``; 0.29's initializer writes floats only): visits and bytes written.

Ranks whose records are identical are stored once with the list of ranks. Tensors of decoder layers with one
index range are stored once (``model.layers.*.mlp.down_proj.weight`` with ``"0-47"``). A case vLLM refuses is
recorded with its error. The output is compact JSON, one file per case.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
import traceback
import types
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
OUT = DATA / "vllm_goldens"
FORMAT = 1  # the records' layout; the test refuses a file of another

# name, base config in tests/data, fields replaced in it, layouts (tp, dp, ep, pp)
CASES: list[dict[str, Any]] = [
    {"name": "llama-3.1-8b", "base": "Llama-3.1-8B", "fields": {},
     "layouts": [{"tp": 1}, {"tp": 2}, {"tp": 16}, {"tp": 1, "pp": 2}, {"tp": 3}]},
    {"name": "qwen3-30b-a3b", "base": "Qwen3-30B-A3B", "fields": {"num_hidden_layers": 2},
     "layouts": [{"tp": 8}, {"tp": 1, "dp": 8, "ep": True}, {"tp": 2, "dp": 2, "ep": True}, {"tp": 2, "pp": 2}]},
    {"name": "deepseek-v3-fp8-block", "base": "DeepSeek-V3", "fields": {"num_hidden_layers": 5},
     "layouts": [{"tp": 8}, {"tp": 1, "dp": 8, "ep": True}]},
    {"name": "qwen3-30b-a3b-fp8-block", "base": "Qwen3-30B-A3B", "fields": {
        "num_hidden_layers": 2,
        "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
                                "weight_block_size": [128, 128]}},
     "layouts": [{"tp": 2}, {"tp": 4}]},
    {"name": "llama-3.1-8b-ct-fp8", "base": "Llama-3.1-8B-Instruct-FP8-dynamic", "fields": {"num_hidden_layers": 2},
     "layouts": [{"tp": 2}]},
    {"name": "qwen3-30b-a3b-ct-fp8", "base": "Qwen3-30B-A3B-FP8-dynamic", "fields": {"num_hidden_layers": 2},
     "layouts": [{"tp": 2}]},
    {"name": "qwen3-30b-a3b-ct-w4a16", "base": "Qwen3-30B-A3B-quantized.w4a16", "fields": {"num_hidden_layers": 2},
     "layouts": [{"tp": 2}]},
    {"name": "qwen3-30b-a3b-gptq", "base": "Qwen3-30B-A3B", "fields": {
        "num_hidden_layers": 2,
        "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False,
                                "sym": True}},
     "layouts": [{"tp": 4}]},
    {"name": "llama-3.1-8b-gptq", "base": "Llama-3.1-8B", "fields": {
        "num_hidden_layers": 2, "torch_dtype": "float16",
        "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False,
                                "sym": True}},
     "layouts": [{"tp": 2}]},
    {"name": "llama-3.1-8b-awq", "base": "Llama-3.1-8B-Instruct-AWQ-INT4", "fields": {"num_hidden_layers": 2},
     "layouts": [{"tp": 2}]},
    {"name": "llama-3.1-8b-modelopt-fp8", "base": "Llama-3.1-8B-Instruct-FP8-modelopt",
     "fields": {"num_hidden_layers": 2}, "layouts": [{"tp": 2}]},
    {"name": "llama-3.1-8b-modelopt-nvfp4", "base": "Llama-3.1-8B", "fields": {
        "num_hidden_layers": 2,
        "quantization_config": {"quant_method": "modelopt", "producer": {"name": "modelopt", "version": "0.23.0"},
                                "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None,
                                                 "group_size": 16, "exclude_modules": ["lm_head"]}}},
     "layouts": [{"tp": 1}]},
    {"name": "deepseek-r1-nvfp4", "base": "DeepSeek-R1-FP4", "fields": {"num_hidden_layers": 4},
     "layouts": [{"tp": 8}]},
    {"name": "gpt-oss-20b-mxfp4", "base": "gpt-oss-20b",
     "fields": {"num_hidden_layers": 2, "layer_types": ["sliding_attention", "full_attention"]},
     "layouts": [{"tp": 2}]},
    {"name": "qwen1.5-moe-a2.7b-sp", "base": None, "fields": {
        "architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "hidden_size": 2048,
        "intermediate_size": 5632, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
        "num_experts": 60, "num_experts_per_tok": 4, "num_hidden_layers": 2, "num_attention_heads": 16,
        "num_key_value_heads": 16, "vocab_size": 151936, "max_position_embeddings": 8192, "rope_theta": 1000000.0,
        "rms_norm_eps": 1e-06, "torch_dtype": "bfloat16", "tie_word_embeddings": False, "decoder_sparse_step": 1,
        "norm_topk_prob": False, "hidden_act": "silu", "use_sliding_window": False, "sliding_window": 32768,
        "max_window_layers": 21, "attention_dropout": 0.0, "initializer_range": 0.02, "mlp_only_layers": [],
        "output_router_logits": False, "router_aux_loss_coef": 0.001, "bos_token_id": 151643,
        "eos_token_id": 151643},
     "layouts": [{"tp": 2}, {"tp": 2, "dp": 2, "ep": True}]},
]  # fmt: skip


# ---- faking what a CPU machine lacks: vLLM's compiled extensions and a CUDA device ---------------------------------


def _stub_module(name: str) -> None:
    """A compiled extension this machine cannot load: any attribute is a function that refuses to run."""
    module = types.ModuleType(name)

    def attribute(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)

        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(f"{name}.{attr}: a stub (no CUDA here)")

        return refuse

    module.__getattr__ = attribute  # type: ignore[method-assign]
    sys.modules[name] = module


class _StubOps:
    """``torch.ops._C`` and friends: layers look their kernels up while they are built, and never call them here."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _StubOps(f"{self._name}.{attr}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"torch.ops.{self._name}: a stub (no CUDA here)")


def fake_cuda(capability: tuple[int, int], device_name: str) -> None:
    """Make vLLM believe it runs on a CUDA GPU of ``capability``: before any other vLLM module is imported."""
    os.environ["VLLM_DISABLE_SHARED_EXPERTS_STREAM"] = "1"  # a CUDA stream per shared expert: no weights
    for name in ("vllm._C_stable_libtorch", "vllm._moe_C_stable_libtorch", "vllm._C", "vllm.vllm_flash_attn"):
        _stub_module(name)
    import vllm.platforms as platforms
    from vllm.platforms.cuda import NonNvmlCudaPlatform
    from vllm.platforms.interface import DeviceCapability

    class FakeCuda(NonNvmlCudaPlatform):
        @classmethod
        def get_device_capability(cls, device_id: int = 0) -> DeviceCapability:
            return DeviceCapability(*capability)

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return device_name

        @classmethod
        def get_device_total_memory(cls, device_id: int = 0) -> int:
            return 141 << 30

        @classmethod
        def device_count(cls) -> int:
            return 1 << 16

        @classmethod
        def num_compute_units(cls, device_id: int = 0) -> int:
            return 132  # an H200's SMs

    platforms._current_platform = FakeCuda()  # type: ignore[attr-defined]
    import vllm._custom_ops as ops

    # what the compiled extension answers for sm 9.0 (csrc: cutlass_scaled_mm_supports_*)
    ops.cutlass_scaled_mm_supports_fp8 = lambda c: c >= 89
    ops.cutlass_scaled_mm_supports_block_fp8 = lambda c: c in (90, 100)
    ops.cutlass_scaled_mm_supports_fp4 = lambda c: c >= 100
    ops.mxfp4_experts_quant_supported = lambda c: c >= 100
    ops.cutlass_group_gemm_supported = lambda c: c in (90, 100)
    for namespace in ("_C", "_moe_C", "_C_cache_ops", "_C_custom_ar", "_vllm_fa2_C", "_vllm_fa3_C"):
        torch.ops.__dict__[namespace] = _StubOps(namespace)


# ---- one rank's parallel groups, faked in this process -------------------------------------------------------------


class _FakeProcessGroup:
    """What layers ask a torch process group while they are built: its size and this rank."""

    def __init__(self, size: int, rank: int) -> None:
        self._size, self._rank = size, rank

    def size(self) -> int:
        return self._size

    def rank(self) -> int:
        return self._rank


class FakeGroup:
    """What vLLM's layers read of a ``GroupCoordinator`` while they are built: sizes and ranks."""

    def __init__(self, world_size: int, rank_in_group: int) -> None:
        self.world_size = world_size
        self.rank_in_group = rank_in_group
        self.ranks = list(range(world_size))
        self.rank = rank_in_group
        self.local_rank = rank_in_group
        self.device_group = _FakeProcessGroup(world_size, rank_in_group)
        self.cpu_group = self.device_group
        self.device_communicator = None
        self.unique_name = "fake"

    @property
    def is_first_rank(self) -> bool:
        return self.rank_in_group == 0

    @property
    def is_last_rank(self) -> bool:
        return self.rank_in_group == self.world_size - 1


def set_groups(tp: int, dp: int, pp: int, rank: int) -> dict[str, int]:
    """vLLM's numbering: stage-major, then dp, then tp (tp fastest); experts spread over tp x dp of a stage."""
    from vllm.distributed import parallel_state as ps

    tp_rank, dp_rank, pp_rank = rank % tp, (rank // tp) % dp, rank // (tp * dp)
    ps._TP = FakeGroup(tp, tp_rank)
    ps._PP = FakeGroup(pp, pp_rank)
    ps._DP = FakeGroup(dp, dp_rank)
    ps._EP = FakeGroup(tp * dp, dp_rank * tp + tp_rank)
    ps._DCP = FakeGroup(1, 0)
    ps._PCP = FakeGroup(1, 0)
    ps._WORLD = FakeGroup(tp * dp * pp, rank)
    return {"tp_rank": tp_rank, "dp_rank": dp_rank, "pp_rank": pp_rank}


# ---- building one rank ---------------------------------------------------------------------------------------------


def case_config(case: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((DATA / f"{case['base']}.json").read_text()) if case["base"] else {}
    config.update(case["fields"])
    return config


def build_rank(config_dir: str, layout: dict[str, Any], rank: int, device: str = "meta") -> tuple[torch.nn.Module, Any]:
    """Rank ``rank``'s model of ``layout`` built by vLLM's ``initialize_model`` on ``device`` (``cpu``: real,
    untouched memory from ``torch.empty``), and its ``ModelConfig``."""
    from vllm.config import (
        CompilationConfig,
        LoadConfig,
        ModelConfig,
        ParallelConfig,
        PassConfig,
        VllmConfig,
        set_current_vllm_config,
    )
    from vllm.model_executor.model_loader.utils import initialize_model
    from vllm.utils.torch_utils import set_default_torch_dtype

    tp, dp, pp = layout.get("tp", 1), layout.get("dp", 1), layout.get("pp", 1)
    model_config = ModelConfig(model=config_dir, skip_tokenizer_init=True, dtype="auto", enforce_eager=True)
    parallel = ParallelConfig(
        tensor_parallel_size=tp,
        pipeline_parallel_size=pp,
        data_parallel_size=dp,
        enable_expert_parallel=bool(layout.get("ep")),
    )
    coords = set_groups(tp, dp, pp, rank)
    parallel.data_parallel_rank = coords["dp_rank"]
    vllm_config = VllmConfig(
        model_config=model_config,
        parallel_config=parallel,
        load_config=LoadConfig(load_format="dummy"),
        compilation_config=CompilationConfig(mode=0, pass_config=PassConfig(fuse_allreduce_rms=False)),
    )
    with set_current_vllm_config(vllm_config), set_default_torch_dtype(model_config.dtype), torch.device(device):
        model = initialize_model(vllm_config=vllm_config)
    return model, model_config


# ---- what the dummy loader does with each tensor -------------------------------------------------------------------

SENTINEL = 0x5A


def fill_rule(tensor: torch.Tensor, name: str) -> list[Any]:
    """vLLM's ``initialize_single_dummy_weight`` run on a small real tensor like ``tensor``; what it did, read back:
    ``["skip"]``, ``["declared", value]``, ``["scale-byte", byte]``, ``["random-bytes"]``, ``["uniform", bound]``
    (``"uniform-via-fp16"`` under 16 bits, as vLLM draws those through a float16 scratch)."""
    from vllm.model_executor.model_loader.weight_utils import initialize_single_dummy_weight

    probe = torch.empty(64, dtype=tensor.dtype)
    probe.view(torch.uint8).fill_(SENTINEL)
    value = getattr(tensor, "dummy_weight_value", None)
    if value is not None:
        probe.dummy_weight_value = value  # type: ignore[attr-defined]
    initialize_single_dummy_weight(probe, name=name)
    raw = probe.view(torch.uint8)
    if bool((raw == SENTINEL).all()):
        return ["skip"]
    if value is not None:
        return ["declared", value]
    if bool((raw == raw[0]).all()):
        return ["scale-byte", int(raw[0])]
    if not tensor.dtype.is_floating_point or (tensor.dtype.itemsize == 1 and tensor.dtype not in _FP8):
        return ["random-bytes"]
    bound = float(probe.float().abs().max())
    rule = "uniform-via-fp16" if torch.finfo(tensor.dtype).bits < 16 else "uniform"
    return [rule, 1.0 if bound > 1e-3 else 1e-3]


_FP8 = {torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz}


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def tensor_rows(model: torch.nn.Module) -> list[list[Any]]:
    """Every registered tensor, each module's own, in ``named_modules()`` order (as the per-layer fill walks them):
    ``[name, shape, dtype, nbytes, kind, rule, tied_to]``; kind ``p`` parameter, ``b`` buffer, ``n``
    non-persistent buffer; ``tied_to`` the first name of a storage met before (else None)."""
    rows = []
    first: dict[int, str] = {}
    for path, module in model.named_modules():
        skip: set[str] = module._non_persistent_buffers_set
        own = [(n, t, "p") for n, t in module._parameters.items() if t is not None]
        own += [(n, t, "n" if n in skip else "b") for n, t in module._buffers.items() if t is not None]
        for local, tensor, kind in own:
            name = f"{path}.{local}" if path else local
            key = id(tensor)
            tied = first.setdefault(key, name)
            rule = fill_rule(tensor, local) if kind != "n" else ["not-visited"]
            rows.append(
                [name, list(tensor.shape), dtype_name(tensor.dtype), tensor.nbytes, kind, rule,
                 None if tied == name else tied]
            )  # fmt: skip
    return rows


def module_aliases(model: torch.nn.Module) -> list[list[str]]:
    """Modules registered under more than one parent: ``[path, layers, first path]`` (``model.layers.*.x`` with the
    layer indices, as tensors are compacted), the topmost alias only (what is below it is aliased with it).
    ``model.modules()`` visits such a module once; each parent's ``state_dict()`` lists it."""
    first: dict[int, str] = {}
    aliases: list[list[str]] = []
    for path, module in model.named_modules(remove_duplicate=False):
        seen = first.setdefault(id(module), path)
        if seen != path and not any(path.startswith(f"{a}.") for a, _ in aliases):
            aliases.append([path, seen])
    groups: dict[tuple[str, str], list[int]] = {}
    for path, seen in aliases:
        match, other = _LAYER.match(path), _LAYER.match(seen)
        if match is None:
            groups.setdefault((path, seen), []).append(-1)
            continue
        same = other is not None and other.group(2) == match.group(2)
        target = f"{other.group(1)}*{other.group(3)}" if same and other else seen
        groups.setdefault((f"{match.group(1)}*{match.group(3)}", target), []).append(int(match.group(2)))
    return [[path, _ranges(ix) if ix[0] >= 0 else "", seen] for (path, seen), ix in groups.items()]


def per_layer_fill(model: torch.nn.Module, model_config: Any) -> dict[str, int]:
    """``DummyModelLoader.load_weights`` itself on the meta model, its per-tensor initializer hooked."""
    from vllm.config.load import LoadConfig
    from vllm.model_executor.model_loader import dummy_loader

    visits: list[tuple[torch.Tensor, str]] = []
    original = dummy_loader.initialize_single_dummy_weight

    def hooked(param: torch.Tensor, *args: Any, name: str = "", **kwargs: Any) -> None:
        visits.append((param, name))
        original(param, *args, name=name, **kwargs)  # meta: returns at once

    dummy_loader.initialize_single_dummy_weight = hooked
    try:
        dummy_loader.DummyModelLoader(LoadConfig(load_format="dummy")).load_weights(model, model_config)
    finally:
        dummy_loader.initialize_single_dummy_weight = original
    written = sum(t.nbytes for t, name in visits if fill_rule(t, name)[0] != "skip")
    return {"visits": len(visits), "bytes_written": written, "storages": len({id(t) for t, _ in visits})}


def recursive_fill(model: torch.nn.Module) -> dict[str, int]:
    """vLLM <= 0.29's traversal on this tree: each module's recursive ``state_dict()``; floats written."""
    visits = written = 0
    for module in model.modules():
        for tensor in module.state_dict().values():
            visits += 1
            if tensor.dtype.is_floating_point:
                written += tensor.nbytes
    return {"visits": visits, "bytes_written": written}


# ---- compacting: decoder layers alike stored once ------------------------------------------------------------------

_LAYER = re.compile(r"^(.*?\.layers\.)(\d+)(\..*)$")


def _ranges(indices: list[int]) -> str:
    parts, start = [], indices[0]
    for prev, cur in zip(indices, [*indices[1:], None], strict=True):
        if cur != prev + 1:
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = cur
    return ",".join(parts)


def compact(rows: list[list[Any]]) -> list[list[Any]]:
    """Rows that differ only in their decoder layer index become one, ``model.layers.*.x`` with the indices."""
    groups: dict[str, list[Any]] = {}
    order: list[str] = []
    for name, *rest in rows:
        match = _LAYER.match(name)
        tied = rest[-1]
        tied_match = _LAYER.match(tied) if tied else None
        if match and (tied is None or (tied_match and tied_match.group(2) == match.group(2))):
            pattern = f"{match.group(1)}*{match.group(3)}"
            rest = [*rest[:-1], f"{tied_match.group(1)}*{tied_match.group(3)}" if tied_match else None]
            index = int(match.group(2))
        else:
            pattern, index = name, -1
        key = json.dumps([pattern, rest])
        if key not in groups:
            groups[key] = [pattern, rest, []]
            order.append(key)
        groups[key][2].append(index)
    out = []
    for key in order:
        pattern, rest, indices = groups[key]
        out.append([pattern, _ranges(indices) if indices[0] >= 0 else "", *rest])
    return out


# ---- one case ------------------------------------------------------------------------------------------------------


def record_case(case: dict[str, Any]) -> dict[str, Any]:
    import vllm

    config = case_config(case)
    out: dict[str, Any] = {
        "format": FORMAT,
        "vllm": vllm.__version__,
        "torch": torch.__version__,
        "device": "faked CUDA, NVIDIA H200, capability 9.0",
        "case": case["name"],
        "base": case["base"],
        "fields": case["fields"],
        "layouts": [],
    }
    directory = tempfile.mkdtemp()
    try:
        (Path(directory) / "config.json").write_text(json.dumps(config))
        for layout in case["layouts"]:
            world = layout.get("tp", 1) * layout.get("dp", 1) * layout.get("pp", 1)
            entry: dict[str, Any] = {"layout": layout, "shards": []}
            seen: dict[str, dict[str, Any]] = {}
            try:
                for rank in range(world):
                    model, model_config = build_rank(directory, layout, rank)
                    rows = compact(tensor_rows(model))
                    record = {
                        "tensors": rows,
                        "aliases": module_aliases(model),
                        "per_layer": per_layer_fill(model, model_config),
                        "recursive": recursive_fill(model),
                    }
                    key = json.dumps(record, sort_keys=True)
                    if key in seen:
                        seen[key]["ranks"].append(rank)
                    else:
                        seen[key] = {"ranks": [rank], **record}
                        entry["shards"].append(seen[key])
                    del model
            except Exception as exc:  # vLLM refuses the layout, or this script cannot build it on a CPU
                said = " ".join(line.strip() for line in str(exc).splitlines()[:3])  # pydantic: the reason is 2nd
                entry["refused"] = f"{type(exc).__name__}: {said}"[:400]
                frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/vllm/" in f.filename]
                where = frames[-1] if frames else traceback.extract_tb(exc.__traceback__)[-1]
                entry["where"] = f"{where.filename.split('site-packages/')[-1]}:{where.lineno}"
                entry["shards"] = []
            out["layouts"].append(entry)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return out


def write(record: dict[str, Any], out: Path) -> Path:
    """Compact JSON: one line per layout's shard tensor row, so a diff shows what changed."""
    path = out / f"{record['case']}.json"
    lines = ["{"]
    head = {k: v for k, v in record.items() if k != "layouts"}
    for key, value in head.items():
        lines.append(f"{json.dumps(key)}: {json.dumps(value)},")
    lines.append('"layouts": [')
    for i, entry in enumerate(record["layouts"]):
        lines.append("{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in entry.items() if k != "shards")
                     + ', "shards": [')  # fmt: skip
        for j, shard in enumerate(entry["shards"]):
            head = {k: shard[k] for k in ("ranks", "per_layer", "recursive", "aliases")}
            lines.append(
                "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in head.items()) + ', "tensors": ['
            )
            lines.append(",\n".join(json.dumps(row, separators=(",", ":")) for row in shard["tensors"]))
            lines.append("]}" + ("," if j < len(entry["shards"]) - 1 else ""))
        lines.append("]}" + ("," if i < len(record["layouts"]) - 1 else ""))
    lines.append("]}")
    text = "\n".join(lines) + "\n"
    json.loads(text)  # what is written parses
    path.write_text(text)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", help="a case's name (default: every case)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"folder for the JSON files (default: {OUT})")
    args = parser.parse_args(argv)
    chosen = [c for c in CASES if not args.case or c["name"] in args.case]
    if args.case and len(chosen) != len(args.case):
        known = ", ".join(c["name"] for c in CASES)
        print(f"vllm_goldens: --case: unknown case; known: {known}", file=sys.stderr)
        return 2
    fake_cuda((9, 0), "NVIDIA H200")
    args.out.mkdir(parents=True, exist_ok=True)
    for case in chosen:
        with contextlib.redirect_stdout(sys.stderr):
            record = record_case(case)
        path = write(record, args.out)
        refused = [e["layout"] for e in record["layouts"] if "refused" in e]
        print(f"{path}: {path.stat().st_size} bytes" + (f"; not built: {refused}" if refused else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
