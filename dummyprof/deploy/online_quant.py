"""vLLM's online-quantization path on a model built on meta, per layer or whole model, with exact live bytes.

The PR keeps vLLM's online path: a layer whose weights are still on meta is materialized,
filled by the dummy initializer, quantized (``process_weights_after_loading``) and its
high-precision copy dropped. ``per-layer`` does that one module at a time; ``whole-model``
materializes and fills everything first, then quantizes, then drops the high-precision
copies (the full-size temporary of vLLM #54958: 2 + 1 bytes per bf16 element at the peak).

Live bytes are kept by accounting, not by reading RSS, so they are exact and the same on every
machine. Counted: every tensor the path materializes (high precision), every fp8 weight and
scale it makes, and each quantization's float32 staging buffer (one band of ``block`` rows,
alive while that one tensor is quantized). Not counted: the reductions' outputs per band (two
float32 values per ``block`` columns, and two scalars for a per-tensor scale). With
``execute=False`` nothing is allocated and the same accounting is returned (check fit first).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from dummyprof.anatomy import qualified_name
from dummyprof.errors import UsageError
from dummyprof.loaders.initializers import get_initializer

FP8 = getattr(torch, "float8_e4m3fn", None)
FP8_MAX = 448.0  # largest finite float8_e4m3fn
SCALE_DTYPE = torch.float32
PER_TENSOR = "tensor"
BLOCK = "block"
PER_LAYER = "per-layer"
WHOLE_MODEL = "whole-model"
_NOT_QUANTIZED = ("embed", "lm_head")  # vLLM's online fp8 leaves embeddings and the head in high precision


@dataclass(frozen=True)
class OnlineQuantResult:
    """Counts, bytes and the live-byte peak of one online-quantization pass."""

    mode: str  # PER_LAYER or WHOLE_MODEL
    scale: str  # PER_TENSOR or BLOCK
    block: int
    initializer: str
    executed: bool  # False: accounted on meta, nothing allocated, no time measured
    layers: int  # modules that had tensors on meta
    tensors: int  # tensors materialized
    quantized: int  # of those, weights quantized to fp8
    high_precision_bytes: int  # every tensor materialized, before quantization
    quantized_source_bytes: int  # the high-precision bytes of the quantized weights (released)
    fp8_bytes: int
    scale_bytes: int
    kept_bytes: int  # high-precision tensors that stay (norms, embeddings, head, biases, buffers)
    peak_bytes: int
    peak_at: str  # the tensor being quantized (or materialized) when the peak was reached
    largest_layer: str
    largest_layer_bytes: int  # its high-precision bytes
    largest_staging_bytes: int
    fill_seconds: float
    quantize_seconds: float
    seconds: float

    @property
    def final_bytes(self) -> int:
        return self.kept_bytes + self.fp8_bytes + self.scale_bytes


class _Ledger:
    def __init__(self) -> None:
        self.live = 0
        self.peak = 0
        self.peak_at = ""

    def alloc(self, nbytes: int, where: str) -> None:
        self.live += nbytes
        if self.live > self.peak:
            self.peak, self.peak_at = self.live, where

    def free(self, nbytes: int) -> None:
        self.live -= nbytes


def quantizable(path: str, local: str, tensor: torch.Tensor) -> bool:
    """What vLLM's online fp8 quantizes: linear weights (2-D) and fused expert weights (3-D) in 16/32-bit floats.

    Embeddings, the head, router gates (``*.gate``: vLLM builds them unquantized), norms and biases stay.
    """
    if not tensor.dtype.is_floating_point or torch.finfo(tensor.dtype).bits < 16 or tensor.dim() not in (2, 3):
        return False
    module = path.rpartition(".")[2]
    if any(word in module for word in _NOT_QUANTIZED) or module == "gate":
        return False
    return local == "weight" or (tensor.dim() == 3 and module == "experts")


def scale_shape(shape: tuple[int, ...], scale: str, block: int) -> tuple[int, ...]:
    """One float32 scale per matrix (per expert for 3-D weights), or per ``block`` x ``block`` tile."""
    lead = shape[:-2]
    if scale == PER_TENSOR:
        return lead if lead else (1,)
    rows, cols = shape[-2:]
    return (*lead, -(-rows // block), -(-cols // block))


def staging_bytes(shape: tuple[int, ...], scale: str, block: int) -> int:
    """The float32 band buffer quantizing one tensor needs: ``min(block, rows)`` rows, columns padded to blocks."""
    rows, cols = shape[-2:]
    padded = -(-cols // block) * block if scale == BLOCK else cols
    return min(block, rows) * padded * 4


def _quantize_matrix(
    weight: torch.Tensor, out: torch.Tensor, scales: torch.Tensor, staging: torch.Tensor, scale: str, block: int
) -> None:
    """Quantize one 2-D ``weight`` into ``out`` (fp8) and ``scales`` through the ``staging`` band buffer."""
    rows, cols = weight.shape
    if scale == PER_TENSOR:
        amax = max(abs(float(weight.amax())), abs(float(weight.amin())))
        value = max(amax / FP8_MAX, torch.finfo(SCALE_DTYPE).tiny)
        scales.fill_(value)
    for index, start in enumerate(range(0, rows, block)):
        band = weight[start : start + block]
        buf = staging[: band.shape[0]]
        buf[:, :cols].copy_(band)
        if scale == BLOCK:
            buf[:, cols:].zero_()
            tiles = buf.view(band.shape[0], -1, block)
            tile_max = torch.maximum(tiles.amax(dim=(0, 2)), tiles.amin(dim=(0, 2)).neg())
            scales[index].copy_(tile_max.div_(FP8_MAX).clamp_(min=torch.finfo(SCALE_DTYPE).tiny))
            tiles.div_(scales[index].view(1, -1, 1))
        else:
            buf.div_(value)
        buf.clamp_(-FP8_MAX, FP8_MAX)
        out[start : start + block].copy_(buf[:, :cols])


def _check(scale: str, mode: str, block: int) -> None:
    if FP8 is None:
        raise UsageError.for_field("online_quant", "this torch build has no float8_e4m3fn; online fp8 needs it")
    if scale not in (PER_TENSOR, BLOCK):
        raise UsageError.for_field("online_quant_scale", f"unknown scale {scale!r}; choose {PER_TENSOR} or {BLOCK}")
    if mode not in (PER_LAYER, WHOLE_MODEL):
        raise UsageError.for_field("online_quant_mode", f"unknown mode {mode!r}; choose {PER_LAYER} or {WHOLE_MODEL}")
    if block < 1:
        raise UsageError.for_field("online_quant_block", f"block must be >= 1, got {block}")


class _Pass:
    """The state of one pass: the ledger, the counts, the tensors made so far (ties share them)."""

    def __init__(self, scale: str, block: int, initializer: str, execute: bool, clock: Callable[[], float]) -> None:
        self.scale, self.block, self.execute, self.clock = scale, block, execute, clock
        self.init = get_initializer(initializer)
        self.device = torch.device("cpu") if execute else torch.device("meta")
        self.ledger = _Ledger()
        # id of a meta tensor -> (that tensor, kept alive so its id is never reused; what replaced it)
        self.made: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.quantized_ids: set[int] = set()
        self.tensors = self.quantized = 0
        self.hp = self.hp_quantized = self.fp8 = self.scales = self.staging = 0
        self.fill_s = self.quant_s = 0.0

    def materialize(self, module: nn.Module, path: str) -> list[tuple[str, torch.Tensor]]:
        """Put the module's own meta tensors on the CPU (or new meta tensors when not executing); count them."""
        made = []
        holders = ((module._parameters, True), (module._buffers, False))
        for table, is_param in holders:
            for local, tensor in list(table.items()):
                if tensor is None or tensor.device.type != "meta":
                    continue
                if id(tensor) in self.made:  # tied: a second owner of a tensor already made
                    table[local] = self.made[id(tensor)][1]  # type: ignore[assignment]
                    continue
                new = torch.empty(tensor.shape, dtype=tensor.dtype, device=self.device)
                value = getattr(tensor, "dummy_weight_value", None)
                if is_param:
                    new = nn.Parameter(new, requires_grad=False)
                if value is not None:
                    new.dummy_weight_value = value  # type: ignore[attr-defined]
                self.made[id(tensor)] = (tensor, new)
                table[local] = new  # type: ignore[assignment]
                self.ledger.alloc(new.nbytes, qualified_name(path, local))
                self.tensors += 1
                self.hp += new.nbytes
                made.append((local, new))
        return made

    def fill(self, made: list[tuple[str, torch.Tensor]]) -> None:
        if not self.execute:
            return
        t0 = self.clock()
        with torch.no_grad():
            for local, tensor in made:
                self.init(tensor, local)
        self.fill_s += self.clock() - t0

    def quantize(self, module: nn.Module, path: str, made: list[tuple[str, torch.Tensor]]) -> list[torch.Tensor]:
        """Quantize the module's quantizable weights into fp8 + scales; returns the high-precision ones to drop."""
        dropped = []
        for local, weight in made:
            if not quantizable(path, local, weight) or id(weight) in self.quantized_ids:
                continue
            name = qualified_name(path, local)
            shape = tuple(weight.shape)
            q = torch.empty(shape, dtype=FP8, device=self.device)
            self.ledger.alloc(q.nbytes, name)
            scales = torch.empty(scale_shape(shape, self.scale, self.block), dtype=SCALE_DTYPE, device=self.device)
            self.ledger.alloc(scales.nbytes, name)
            stage_bytes = staging_bytes(shape, self.scale, self.block)
            self.ledger.alloc(stage_bytes, name)
            if self.execute:
                t0 = self.clock()
                staging = torch.empty(stage_bytes // 4, dtype=torch.float32).view(min(self.block, shape[-2]), -1)
                with torch.no_grad():
                    matrices = [(weight, q, scales)] if weight.dim() == 2 else zip(weight, q, scales, strict=True)
                    for w2, q2, s2 in matrices:
                        _quantize_matrix(w2, q2, s2, staging, self.scale, self.block)
                del staging
                self.quant_s += self.clock() - t0
            self.ledger.free(stage_bytes)
            self.staging = max(self.staging, stage_bytes)
            suffix = "_scale_inv" if self.scale == BLOCK else "_scale"
            module._parameters[local] = nn.Parameter(q, requires_grad=False)
            module._parameters[f"{local}{suffix}"] = nn.Parameter(scales, requires_grad=False)
            self.quantized_ids.add(id(weight))
            self.quantized += 1
            self.fp8 += q.nbytes
            self.scales += scales.nbytes
            self.hp_quantized += weight.nbytes
            dropped.append(weight)
        return dropped

    def release(self, dropped: list[torch.Tensor]) -> None:
        for weight in dropped:
            self.ledger.free(weight.nbytes)


def online_quantize(
    model: nn.Module,
    *,
    mode: str = PER_LAYER,
    scale: str = PER_TENSOR,
    block: int = 128,
    initializer: str = "v0.33",
    execute: bool = True,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[OnlineQuantResult, nn.Module]:
    """Run the online fp8 path over a copy of ``model`` (its meta tensors); returns the accounting and the copy.

    ``per-layer``: for each module holding meta tensors, in ``modules()`` order: materialize its
    own tensors, fill them, quantize its weights, drop their high-precision copies. Peak: the
    bytes kept so far (fp8, scales, unquantized tensors) plus one module's high-precision
    tensors, its fp8 weights and scales made so far, and one staging band.
    ``whole-model``: materialize and fill every module, then quantize module by module, then
    drop every high-precision copy. Peak: all high-precision bytes, all fp8 and scales, plus the
    last staging band (the largest such sum along the way).
    """
    _check(scale, mode, block)
    work = copy.deepcopy(model)  # the caller's meta model stays meta; deepcopy keeps ties
    _copy_declared_values(model, work)
    state = _Pass(scale, block, initializer, execute, clock)
    t0 = clock()
    largest = ("", 0)
    layers = 0
    pending: list[tuple[nn.Module, str, list[tuple[str, torch.Tensor]]]] = []
    for path, module in work.named_modules():
        before = state.hp
        made = state.materialize(module, path)
        if not made:
            continue
        layers += 1
        if state.hp - before > largest[1]:
            largest = (path, state.hp - before)
        state.fill(made)
        if mode == PER_LAYER:
            state.release(state.quantize(module, path, made))
        else:
            pending.append((module, path, made))
    dropped = [w for module, path, made in pending for w in state.quantize(module, path, made)]
    state.release(dropped)
    return (
        OnlineQuantResult(
            mode=mode,
            scale=scale,
            block=block,
            initializer=str(getattr(state.init, "name", initializer)),
            executed=execute,
            layers=layers,
            tensors=state.tensors,
            quantized=state.quantized,
            high_precision_bytes=state.hp,
            quantized_source_bytes=state.hp_quantized,
            fp8_bytes=state.fp8,
            scale_bytes=state.scales,
            kept_bytes=state.hp - state.hp_quantized,
            peak_bytes=state.ledger.peak,
            peak_at=state.ledger.peak_at,
            largest_layer=largest[0],
            largest_layer_bytes=largest[1],
            largest_staging_bytes=state.staging,
            fill_seconds=state.fill_s,
            quantize_seconds=state.quant_s,
            seconds=clock() - t0 if execute else 0.0,
        ),
        work,
    )


def _copy_declared_values(source: nn.Module, copy_: nn.Module) -> None:
    """``copy.deepcopy`` drops a Parameter's Python attributes: carry ``dummy_weight_value`` over by name."""
    copied = dict(copy_.named_parameters(remove_duplicate=False)) | dict(copy_.named_buffers(remove_duplicate=False))
    for name, tensor in (
        *source.named_parameters(remove_duplicate=False),
        *source.named_buffers(remove_duplicate=False),
    ):
        value = getattr(tensor, "dummy_weight_value", None)
        if value is not None and name in copied:
            setattr(copied[name], "dummy_weight_value", value)  # noqa: B010 - torch's types do not declare it
