"""Each rule of the vLLM 0.33 and 0.29 initializers, dtype by dtype, bitwise."""

from __future__ import annotations

import pytest
import torch

from dummyprof.loaders.initializers import (
    DEFAULT_SEED,
    SCALE_BYTE,
    FillOutcome,
    V029Initializer,
    V033Initializer,
)

v033 = V033Initializer()
v029 = V029Initializer()
SENTINEL = 77


def fresh_gen() -> torch.Generator:
    return torch.Generator(device="cpu").manual_seed(DEFAULT_SEED)


def sentinel(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    t = torch.empty(shape, dtype=dtype)
    t.view(torch.uint8).fill_(SENTINEL)
    return t


def test_meta_tensor_is_untouched() -> None:
    t = torch.empty(8, device="meta")
    assert v033(t, "weight") == FillOutcome(0, 0)
    assert v029(t, "weight") == FillOutcome(0, 0)


def test_declared_value_wins_before_any_dtype_rule() -> None:
    fp8 = sentinel((4, 64), torch.float8_e4m3fn)
    fp8.dummy_weight_value = 1.0  # type: ignore[attr-defined]
    scale = sentinel((4, 2), torch.uint8)
    scale.dummy_weight_value = 127  # type: ignore[attr-defined]
    assert v033(fp8, "weight") == FillOutcome(fp8.nbytes, 0)
    assert v033(scale, "weight_scale_inv") == FillOutcome(scale.nbytes, 0)
    one_fp8 = torch.tensor([1.0]).to(torch.float8_e4m3fn).view(torch.uint8).item()
    assert torch.all(fp8.view(torch.uint8) == one_fp8)
    assert torch.all(scale == 127)  # not 120: the declaration comes before the scale rule


def test_declared_zero_is_honoured() -> None:
    bias = torch.full((16,), 3.0)
    bias.dummy_weight_value = 0.0  # type: ignore[attr-defined]
    v033(bias, "bias")
    assert torch.all(bias == 0.0)


def test_e8m0_and_uint8_scale_get_byte_120() -> None:
    e8m0 = sentinel((32,), torch.float8_e8m0fnu)
    scale = sentinel((8, 4), torch.uint8)
    assert v033(e8m0, "anything") == FillOutcome(32, 0)
    assert v033(scale, "weight_scale_inv") == FillOutcome(32, 0)
    assert torch.all(e8m0.view(torch.uint8) == SCALE_BYTE)
    assert torch.all(scale == SCALE_BYTE)


def test_uint8_without_scale_in_name_gets_random_bytes() -> None:
    t = sentinel((64, 64), torch.uint8)
    v033(t, "packed_weight")
    expected = torch.empty((64, 64), dtype=torch.uint8).random_(0, 256, generator=fresh_gen())
    assert torch.equal(t, expected)


def test_int8_gets_signed_random_bytes() -> None:
    t = sentinel((64, 64), torch.int8)
    assert v033(t, "int8_weight") == FillOutcome(t.nbytes, 0)
    expected = torch.empty((64, 64), dtype=torch.int8).random_(-128, 128, generator=fresh_gen())
    assert torch.equal(t, expected)
    assert int(t.min()) < 0 < int(t.max())


@pytest.mark.skipif(not hasattr(torch, "float4_e2m1fn_x2"), reason="no packed fp4 in this torch")
def test_packed_fp4_gets_random_bytes() -> None:
    t = sentinel((16, 16), torch.float4_e2m1fn_x2)
    v033(t, "weight")
    expected = torch.empty((16, 16), dtype=torch.uint8).random_(0, 256, generator=fresh_gen())
    assert torch.equal(t.view(torch.uint8), expected)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int16])
def test_other_integers_are_untouched(dtype: torch.dtype) -> None:
    t = sentinel((16,), dtype)
    before = t.clone()
    assert v033(t, "expert_index") == FillOutcome(0, 0)
    assert v029(t, "expert_index") == FillOutcome(0, 0)
    assert torch.equal(t.view(torch.uint8), before.view(torch.uint8))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_floats_draw_uniform_from_a_freshly_seeded_generator(dtype: torch.dtype) -> None:
    t = sentinel((32, 32), dtype)
    assert v033(t, "weight") == FillOutcome(t.nbytes, 0)
    expected = torch.empty((32, 32), dtype=dtype).uniform_(-1e-3, 1e-3, generator=fresh_gen())
    assert torch.equal(t.view(torch.uint8), expected.view(torch.uint8))
    assert float(t.abs().max()) <= 1e-3


def test_fp8_goes_through_a_float16_scratch_with_range_one() -> None:
    t = sentinel((64, 64), torch.float8_e4m3fn)
    assert v033(t, "qweight") == FillOutcome(t.nbytes, 2 * t.numel())
    expected = torch.empty((64, 64), dtype=torch.float16).uniform_(-1.0, 1.0, generator=fresh_gen())
    assert torch.equal(t.view(torch.uint8), expected.to(torch.float8_e4m3fn).view(torch.uint8))
    assert float(t.float().abs().max()) <= 1.0
    assert (t.float() == 0).float().mean() < 0.05


def test_custom_range_and_seed() -> None:
    init = V033Initializer(seed=7, low=2.0, high=3.0)
    t = torch.empty(100)
    init(t, "w")
    expected = torch.empty(100).uniform_(2.0, 3.0, generator=torch.Generator().manual_seed(7))
    assert torch.equal(t, expected)


def test_filling_twice_gives_the_same_bytes_as_once() -> None:
    a, b = torch.empty(1000), torch.empty(1000)
    v033(a, "w")
    v033(b, "w")
    v033(b, "w")
    assert torch.equal(a, b)


def test_v029_leaves_non_floats_alone_even_scales() -> None:
    for dtype, name in ((torch.uint8, "weight_scale_inv"), (torch.int8, "w"), (torch.uint8, "w")):
        t = sentinel((8, 8), dtype)
        before = t.clone()
        assert v029(t, name) == FillOutcome(0, 0)
        assert torch.equal(t, before)


def test_v029_ignores_declared_values() -> None:
    t = torch.full((64,), 5.0)
    t.dummy_weight_value = 1.0  # type: ignore[attr-defined]
    v029(t, "norm_weight")
    expected = torch.empty(64).uniform_(-1e-3, 1e-3, generator=fresh_gen())
    assert torch.equal(t, expected)


def test_v029_fp8_uses_two_full_size_temporaries_and_is_mostly_zero() -> None:
    t = sentinel((128, 128), torch.float8_e4m3fn)
    outcome = v029(t, "qweight")
    assert outcome == FillOutcome(t.nbytes, 3 * t.numel())  # fp16 copy (2 B) + fp8 copy (1 B) per element
    expected = torch.empty((128, 128), dtype=torch.float16).uniform_(-1e-3, 1e-3, generator=fresh_gen())
    assert torch.equal(t.view(torch.uint8), expected.to(torch.float8_e4m3fn).view(torch.uint8))
    # ±1e-3 is below half of e4m3's smallest subnormal (2^-9) for most draws: almost all zeros.
    assert (t.float() == 0).float().mean() > 0.9


def test_v029_and_v033_fp8_agree_bitwise_on_the_same_range() -> None:
    a = sentinel((64, 64), torch.float8_e4m3fn)
    b = sentinel((64, 64), torch.float8_e4m3fn)
    V029Initializer(low=-1.0, high=1.0)(a, "w")
    v033(b, "w")
    assert torch.equal(a.view(torch.uint8), b.view(torch.uint8))
