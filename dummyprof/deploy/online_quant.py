"""vLLM's online-quantization path on a model built on meta, per layer or whole model, with exact live bytes.

The PR keeps vLLM's online path: a layer whose weights are still on meta is materialized,
filled by the dummy initializer, quantized (``process_weights_after_loading``) and its
high-precision copy dropped. ``whole-model`` is the full-size temporary of vLLM #54958
(2 + 1 bytes per bf16 element at the peak); :func:`online_quantize` gives both orders.

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

import torch
from torch import nn

from dummyprof.anatomy import qualified_name
from dummyprof.deploy.shards import empty_copy
from dummyprof.errors import UsageError
from dummyprof.loaders.initializers import get_initializer
from dummyprof.results.deployment import OnlineQuantEntry

FP8 = getattr(torch, "float8_e4m3fn", None)
FP8_MAX = 448.0  # largest finite float8_e4m3fn
SCALE_DTYPE = torch.float32
PER_TENSOR = "tensor"
BLOCK = "block"
PER_LAYER = "per-layer"
WHOLE_MODEL = "whole-model"
_NOT_QUANTIZED = ("embed", "lm_head")  # vLLM's online fp8 leaves embeddings and the head in high precision


class OnlineQuantResult(OnlineQuantEntry):
    """One pass: the Results' entry (counts, bytes, the live-byte peak, times), and its largest staging band.

    Accounted without executing (``executed`` False), nothing is allocated and every time is 0.0.
    """

    seconds: float = 0.0
    largest_staging_bytes: int = 0


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
    """The state of one pass: live bytes, the result it counts into, the tensors made so far (ties share them)."""

    def __init__(self, result: OnlineQuantResult, execute: bool, clock: Callable[[], float]) -> None:
        self.r, self.execute, self.clock = result, execute, clock
        self.scale, self.block = result.scale, result.block
        self.init = get_initializer(result.initializer)
        self.device = torch.device("cpu") if execute else torch.device("meta")
        self.live = 0
        # id of a meta tensor -> (that tensor, kept alive so its id is never reused; what replaced it)
        self.made: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.quantized_ids: set[int] = set()
        self.fill_s = self.quant_s = 0.0

    def alloc(self, nbytes: int, where: str) -> None:
        self.live += nbytes
        if self.live > self.r.peak_bytes:
            self.r.peak_bytes, self.r.peak_at = self.live, where

    def materialize(self, module: nn.Module, path: str) -> list[tuple[str, torch.Tensor]]:
        """Put the module's own meta tensors on the CPU (or new meta tensors when not executing); count them."""
        made = []
        for table in (module._parameters, module._buffers):
            for local, tensor in list(table.items()):
                if tensor is None or tensor.device.type != "meta":
                    continue
                if id(tensor) in self.made:  # tied: a second owner of a tensor already made
                    table[local] = self.made[id(tensor)][1]  # type: ignore[assignment]
                    continue
                new = empty_copy(tensor, tuple(tensor.shape), self.device)
                self.made[id(tensor)] = (tensor, new)
                table[local] = new  # type: ignore[assignment]
                self.alloc(new.nbytes, qualified_name(path, local))
                self.r.tensors += 1
                self.r.high_precision_bytes += new.nbytes
                self.r.kept_bytes += new.nbytes  # until it is quantized
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
            scales = torch.empty(scale_shape(shape, self.scale, self.block), dtype=SCALE_DTYPE, device=self.device)
            stage_bytes = staging_bytes(shape, self.scale, self.block)
            self.alloc(q.nbytes + scales.nbytes + stage_bytes, name)  # all three live at once
            if self.execute:
                t0 = self.clock()
                staging = torch.empty(stage_bytes // 4, dtype=torch.float32).view(min(self.block, shape[-2]), -1)
                with torch.no_grad():
                    matrices = [(weight, q, scales)] if weight.dim() == 2 else zip(weight, q, scales, strict=True)
                    for w2, q2, s2 in matrices:
                        _quantize_matrix(w2, q2, s2, staging, self.scale, self.block)
                del staging
                self.quant_s += self.clock() - t0
            self.live -= stage_bytes
            self.r.largest_staging_bytes = max(self.r.largest_staging_bytes, stage_bytes)
            suffix = "_scale_inv" if self.scale == BLOCK else "_scale"
            module._parameters[local] = nn.Parameter(q, requires_grad=False)
            module._parameters[f"{local}{suffix}"] = nn.Parameter(scales, requires_grad=False)
            self.quantized_ids.add(id(weight))
            self.r.quantized += 1
            self.r.fp8_bytes += q.nbytes
            self.r.scale_bytes += scales.nbytes
            self.r.kept_bytes -= weight.nbytes
            dropped.append(weight)
        return dropped

    def release(self, dropped: list[torch.Tensor]) -> None:
        """Drop the copies (inline ``live -= sum(...quantize...)`` would read ``live`` before quantize adds)."""
        self.live -= sum(weight.nbytes for weight in dropped)


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
    result = OnlineQuantResult(mode=mode, scale=scale, block=block, initializer=initializer, executed=execute)
    state = _Pass(result, execute, clock)
    result.initializer = str(getattr(state.init, "name", initializer))
    t0 = clock()
    pending: list[tuple[nn.Module, str, list[tuple[str, torch.Tensor]]]] = []
    for path, module in work.named_modules():
        before = result.high_precision_bytes
        made = state.materialize(module, path)
        if not made:
            continue
        result.layers += 1
        if result.high_precision_bytes - before > result.largest_layer_bytes:
            result.largest_layer, result.largest_layer_bytes = path, result.high_precision_bytes - before
        state.fill(made)
        if mode == PER_LAYER:
            state.release(state.quantize(module, path, made))
        else:
            pending.append((module, path, made))
    state.release([w for module, path, made in pending for w in state.quantize(module, path, made)])
    result.fill_s, result.quantize_s = state.fill_s, state.quant_s
    result.seconds = clock() - t0 if execute else 0.0
    return result, work


def _copy_declared_values(source: nn.Module, copy_: nn.Module) -> None:
    """``copy.deepcopy`` drops a Parameter's Python attributes (not a buffer's): carry ``dummy_weight_value`` over."""
    copied = dict(copy_.named_parameters(remove_duplicate=False))
    for name, param in source.named_parameters(remove_duplicate=False):
        value = getattr(param, "dummy_weight_value", None)
        if value is not None:
            setattr(copied[name], "dummy_weight_value", value)  # noqa: B010 - torch's types do not declare it
