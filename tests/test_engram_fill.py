"""Each fp8 fill method's bytes (bitwise), its scratch accounting, and what values it leaves."""

from __future__ import annotations

import pytest
import torch

from dummyprof.loaders.fp8_methods import METHODS, TablePair, fill_random_chunked, fill_random_scratch, sample_values
from dummyprof.models.engram import EngramTable

FP8_ONE = 0x38  # float8_e4m3fn 1.0


def tables(rows: int = 37, dim: int = 64, block: int = 32, count: int = 1) -> list[TablePair]:
    return [
        TablePair(
            torch.zeros((rows, dim), dtype=torch.float8_e4m3fn), torch.full((rows, dim // block), 7, dtype=torch.uint8)
        )
        for _ in range(count)
    ]


def declared_tables(rows: int = 37, dim: int = 64, count: int = 1) -> list[TablePair]:
    """The model's own tables (models.engram.EngramTable), which declare dummy_weight_value."""
    modules = [EngramTable(rows, dim, 32) for _ in range(count)]
    return [TablePair(m.weight, m.weight_scale_inv) for m in modules]


def test_constant_fills_what_the_tables_declare() -> None:
    t = declared_tables(count=2)
    outcome = METHODS["constant"].fill(t, 0)
    for pair in t:
        assert torch.all(pair.weight.view(torch.uint8) == FP8_ONE)
        assert torch.all(pair.scale == 127)
    assert outcome.bytes_written == 2 * (37 * 64 + 37 * 2)
    assert outcome.scratch_bytes == 0
    assert METHODS["constant"].declared and not METHODS["random-scratch"].declared


def test_constant_reads_the_declaration_not_a_constant_of_its_own() -> None:
    module = EngramTable(8, 64, 32)
    module.weight.dummy_weight_value = 0.5  # type: ignore[attr-defined]  # a model that declares another value
    module.weight_scale_inv.dummy_weight_value = 126  # type: ignore[attr-defined]
    METHODS["constant"].fill([TablePair(module.weight, module.weight_scale_inv)], 0)
    assert torch.all(module.weight.float() == 0.5) and torch.all(module.weight_scale_inv == 126)
    with pytest.raises(ValueError, match="declares no dummy_weight_value"):
        METHODS["constant"].fill(tables(), 0)  # raw tensors declare nothing


def test_undeclaring_a_table_lets_vllm_033_draw_random_values() -> None:
    module = EngramTable(64, 64, 32)
    module.declare(False)
    assert not hasattr(module.weight, "dummy_weight_value") and not hasattr(
        module.weight_scale_inv, "dummy_weight_value"
    )
    METHODS["random-scratch"].fill([TablePair(module.weight, module.weight_scale_inv)], 0)
    assert torch.unique(module.weight.view(torch.uint8)).numel() > 10 and torch.all(module.weight_scale_inv == 120)
    module.declare(True)
    assert hasattr(module.weight, "dummy_weight_value") and module.weight_scale_inv.dummy_weight_value == 127  # type: ignore[attr-defined]


def test_memset_writes_zero_everywhere() -> None:
    t = tables()
    t[0].weight.fill_(1.0)
    outcome = METHODS["memset"].fill(t, 0)
    assert torch.all(t[0].weight.view(torch.uint8) == 0) and torch.all(t[0].scale == 0)
    assert outcome == (37 * 66, 0)


@pytest.mark.parametrize("chunk", [1, 1000, 37 * 64 - 1, 37 * 64, 10**6])
def test_chunked_gives_the_bytes_of_scratch_on_cpu(chunk: int) -> None:
    a, b = tables(count=2), tables(count=2)
    fill_random_scratch(a)
    outcome = fill_random_chunked(b, chunk)
    for x, y in zip(a, b, strict=True):
        assert torch.equal(x.weight.view(torch.uint8), y.weight.view(torch.uint8))
        assert torch.equal(x.scale, y.scale)
    assert outcome.scratch_bytes == 2 * min(chunk, 37 * 64)


def test_scratch_accounting_matches_the_method_declaration() -> None:
    elements = 37 * 64
    for name, expected in [("random-convert", 3), ("random-scratch", 2), ("constant", 0), ("memset", 0)]:
        outcome = METHODS[name].fill(declared_tables() if METHODS[name].declared else tables(), 0)
        assert outcome.scratch_bytes == expected * elements, name
        assert METHODS[name].scratch_bytes(elements) == outcome.scratch_bytes, name
    chunked = METHODS["random-chunked"]
    assert chunked.fill(tables(), 500).scratch_bytes == chunked.scratch_bytes(elements, 500) == 1000


def test_each_temporary_is_listed_with_its_bytes_and_adds_up_to_the_scratch() -> None:
    n = 1000
    assert METHODS["random-convert"].temporaries(n) == (2 * n, n)  # the fp16 copy, then its fp8 conversion
    assert METHODS["random-scratch"].temporaries(n) == (2 * n,)
    assert METHODS["random-chunked"].temporaries(n, 300) == (600,) and METHODS["random-chunked"].temporaries(n) == (
        2 * n,
    )
    assert (
        METHODS["constant"].temporaries(n)
        == METHODS["memset"].temporaries(n)
        == METHODS["random-fast"].temporaries(n)
        == ()
    )
    for method in METHODS.values():
        assert method.scratch_bytes(n, 300) == sum(method.temporaries(n, 300)) + method.fixed_scratch_bytes


def test_random_convert_leaves_scales_untouched_and_rounds_almost_everything_to_zero() -> None:
    t = tables(rows=512, dim=256)
    outcome = METHODS["random-convert"].fill(t, 0)
    assert torch.all(t[0].scale == 7)  # uint8 is not a float: vLLM <= 0.29 skips it
    assert outcome.bytes_written == 512 * 256
    values = sample_values(t)
    assert values.weight_zero_share > 0.9  # ±1e-3 in fp8 e4m3
    assert values.scale_values == (7,)


def test_random_scratch_sets_scale_byte_120_and_spreads_values() -> None:
    t = tables(rows=512, dim=256)
    outcome = METHODS["random-scratch"].fill(t, 0)
    assert torch.all(t[0].scale == 120)
    assert outcome.bytes_written == 512 * 256 + 512 * 8
    values = sample_values(t)
    assert values.weight_zero_share < 0.01
    assert values.weight_distinct > 100
    assert values.sampled == 512 * 256


def test_filling_twice_gives_the_same_bytes() -> None:
    t = tables()
    METHODS["random-scratch"].fill(t, 0)
    first = t[0].weight.view(torch.uint8).clone()
    METHODS["random-scratch"].fill(t, 0)
    assert torch.equal(first, t[0].weight.view(torch.uint8))


def test_sample_values_counts_negative_zero_as_zero() -> None:
    t = tables(rows=1, dim=64)
    t[0].weight.view(torch.uint8)[0, :32] = 0x80
    t[0].weight.view(torch.uint8)[0, 32:] = FP8_ONE
    values = sample_values(t)
    assert values.weight_zero_share == 0.5
    assert values.weight_distinct == 2
