"""The online fp8 path: exact counts and live-byte peaks (per layer vs whole model), the same accounting without
allocating, and quantized values that match the initializer's through their scales."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from dummyprof.deploy.online_quant import BLOCK, PER_LAYER, PER_TENSOR, WHOLE_MODEL, OnlineQuantResult, online_quantize
from dummyprof.errors import UsageError
from dummyprof.loaders.initializers import V033Initializer
from dummyprof.models.presets import dense_decoder
from tests.fakes import FakeClock

pytestmark = pytest.mark.skipif(not hasattr(torch, "float8_e4m3fn"), reason="needs float8_e4m3fn")
META = torch.device("meta")
N, ROWS, COLS = 3, 1000, 160  # three bf16 linears of 1000 x 160


def _linears() -> nn.Module:
    with META:
        return nn.Sequential(*(nn.Linear(COLS, ROWS, bias=False, dtype=torch.bfloat16) for _ in range(N)))


def _final(result: OnlineQuantResult) -> tuple[int, int, int]:
    """What a pass leaves: high-precision tensors kept, fp8 weights, scales."""
    return result.kept_bytes, result.fp8_bytes, result.scale_bytes


def test_per_layer_peak_is_one_layer_in_high_precision_plus_the_fp8_model() -> None:
    result, _ = online_quantize(_linears(), mode=PER_LAYER, scale=PER_TENSOR, clock=FakeClock())
    elems = ROWS * COLS
    staging = 128 * COLS * 4  # one band of 128 rows in float32
    # At the last layer: the two layers before it in fp8 (+ a 4-byte scale each), this layer's bf16 weight,
    # its fp8 copy and scale, and the staging band.
    assert result.peak_bytes == (N - 1) * (elems + 4) + 2 * elems + (elems + 4) + staging
    assert result.peak_at == f"{N - 1}.weight"
    assert (result.layers, result.tensors, result.quantized) == (N, N, N)
    assert (result.high_precision_bytes, result.fp8_bytes, result.scale_bytes) == (N * 2 * elems, N * elems, N * 4)
    assert (result.kept_bytes, result.fp8_bytes + result.scale_bytes) == (0, N * (elems + 4))
    assert (result.largest_layer_bytes, result.largest_staging_bytes) == (2 * elems, staging)


def test_whole_model_peak_is_three_bytes_per_bf16_element() -> None:
    result, _ = online_quantize(_linears(), mode=WHOLE_MODEL, scale=PER_TENSOR, clock=FakeClock())
    elems = ROWS * COLS
    assert result.peak_bytes == N * 2 * elems + N * (elems + 4) + 128 * COLS * 4
    assert 3.0 < result.peak_bytes / (N * elems) < 3.5  # 2 (bf16) + 1 (fp8) + scales and one staging band
    per_layer, _ = online_quantize(_linears(), mode=PER_LAYER, scale=PER_TENSOR, clock=FakeClock())
    assert _final(per_layer) == _final(result)


def test_block_scales_are_one_float_per_128x128_tile() -> None:
    result, model = online_quantize(_linears(), mode=PER_LAYER, scale=BLOCK, clock=FakeClock())
    tiles = 8 * 2  # ceil(1000 / 128) x ceil(160 / 128)
    assert result.scale_bytes == N * tiles * 4
    assert result.largest_staging_bytes == 128 * 256 * 4  # columns padded to whole blocks
    layer = model[0]
    assert layer.weight.dtype == torch.float8_e4m3fn and tuple(layer.weight_scale_inv.shape) == (8, 2)


def _expected_peak(model: nn.Module, scale: str) -> tuple[int, int]:
    """Per-layer accounting written out from the shapes: (peak, bytes kept at the end)."""
    quantized_names = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_up_proj", "down_proj"}
    kept = peak = 0
    for path, module in model.named_modules():
        own = [t for t in (*module._parameters.values(), *module._buffers.values()) if t is not None]
        if not own:
            continue
        layer = sum(t.numel() * t.element_size() for t in own)
        live = kept + layer
        peak = max(peak, live)
        dropped = 0
        for t in own:
            if path.rpartition(".")[2] not in quantized_names or t.dim() != 2:
                continue
            rows, cols = t.shape
            scales = 4 if scale == PER_TENSOR else 4 * -(-rows // 128) * -(-cols // 128)
            padded = cols if scale == PER_TENSOR else -(-cols // 128) * 128
            live += t.numel() + scales
            peak = max(peak, live + min(128, rows) * padded * 4)
            dropped += t.numel() * t.element_size()
        kept = live - dropped
    return peak, kept


@pytest.mark.parametrize("scale", [PER_TENSOR, BLOCK])
def test_per_layer_accounting_on_a_decoder_and_the_same_without_allocating(scale: str) -> None:
    with META:
        model = dense_decoder(layers=2, hidden=256, heads=4, kv_heads=2, intermediate=320, vocab=1000, tie=False)
    result, done = online_quantize(model, mode=PER_LAYER, scale=scale, clock=FakeClock())
    peak, kept = _expected_peak(model, scale)
    assert (result.peak_bytes, result.kept_bytes + result.fp8_bytes + result.scale_bytes) == (peak, kept)
    assert result.quantized == 2 * 6  # q, k, v, o, gate_up, down per layer
    assert result.layers == 2 * 9 + 3  # per layer: 2 norms, q, k, v, o, rotary, gate_up, down; embed, norm, head
    dry, untouched = online_quantize(model, mode=PER_LAYER, scale=scale, execute=False)
    assert dry.executed is False and dry.seconds == 0.0
    assert (dry.peak_bytes, dry.peak_at, _final(dry), dry.quantized) == (
        result.peak_bytes,
        result.peak_at,
        _final(result),
        result.quantized,
    )
    assert all(t.device.type == "meta" for t in (*untouched.parameters(), *model.parameters()))
    assert done.lm_head.weight.dtype == torch.bfloat16 and done.lm_head.weight.device.type == "cpu"
    assert done.model.norm.weight.eq(1.0).all()  # filled by the initializer (the norm declares 1.0)


def test_quantized_values_are_the_initializers_through_their_scale() -> None:
    _, model = online_quantize(_linears(), mode=PER_LAYER, scale=PER_TENSOR, clock=FakeClock())
    reference = torch.empty(ROWS, COLS, dtype=torch.bfloat16)
    V033Initializer()(reference, "weight")
    amax = reference.float().abs().max()
    layer = model[1]
    assert layer.weight_scale.item() == pytest.approx(float(amax) / 448.0, rel=1e-6)
    back = layer.weight.float() * layer.weight_scale
    assert (back - reference.float()).abs().max() <= float(amax) / 16  # e4m3 keeps 3 mantissa bits
    assert layer.weight.float().abs().max().item() == 448.0  # the largest value maps to fp8's largest


def test_block_values_use_each_tiles_own_scale() -> None:
    _, model = online_quantize(_linears(), mode=WHOLE_MODEL, scale=BLOCK, clock=FakeClock())
    reference = torch.empty(ROWS, COLS, dtype=torch.bfloat16)
    V033Initializer()(reference, "weight")
    tile = reference[128:256, 128:160].float()
    scale = model[2].weight_scale_inv[1, 1].item()
    assert scale == pytest.approx(tile.abs().max().item() / 448.0, rel=1e-6)
    back = model[2].weight[128:256, 128:160].float() * scale
    assert (back - tile).abs().max() <= tile.abs().max() / 16


def test_bad_choices_are_one_line_naming_the_field() -> None:
    with pytest.raises(UsageError, match=r"^online_quant_scale: unknown scale 'row'; choose tensor or block$"):
        online_quantize(_linears(), scale="row")
    with pytest.raises(UsageError, match=r"^online_quant_mode: unknown mode 'x'; choose per-layer or whole-model$"):
        online_quantize(_linears(), mode="x")
