"""random-fast: bitwise reproducible whatever the thread count, valid values per dtype, bounded scratch."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from dummyprof.loaders import random_fast as rf
from dummyprof.loaders.fp8_methods import METHODS, TablePair, sample_values
from dummyprof.loaders.initializers import SCALE_BYTE, FastInitializer, V033Initializer, get_initializer
from dummyprof.scenarios.engram.options import EngramOptions
from tests.conftest import CliResult

STEP = rf.LANES * rf.WORD_BYTES  # bytes one generator step writes
CHUNK = rf.CHUNK_BYTES
MULTI_CHUNK = 2 * CHUNK + STEP + 13  # three chunks, the last one partial, ending inside a word


def filled(
    nbytes: int, seed: int = 1234, workers: int = 1, dtype: torch.dtype = torch.uint8, engine: str | None = None
) -> torch.Tensor:
    t = torch.zeros(nbytes - nbytes % dtype.itemsize, dtype=torch.uint8).view(dtype)  # (fp4 has no zeros())
    rf.fill(t, seed, workers=workers, engine=engine)
    return t


KERNEL_MISSING = pytest.mark.skipif(rf._kernel is None, reason="the C kernel was not built with this install")
ENGINES = [pytest.param(rf.KERNEL, marks=KERNEL_MISSING), rf.NUMPY]


def as_bytes(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1).view(torch.uint8)


@pytest.mark.parametrize("engine", ENGINES)
def test_words_match_the_plain_python_specification(engine: str) -> None:
    t = filled(MULTI_CHUNK, engine=engine)
    words = MULTI_CHUNK // 8
    per_chunk = rf.LANES * rf.STEPS
    for index in [0, 1, rf.LANES - 1, rf.LANES, per_chunk - 1, per_chunk, 2 * per_chunk + 5, words - 1]:
        got = int.from_bytes(bytes(t[index * 8 : index * 8 + 8].tolist()), "little")
        assert got == rf.reference_word(1234, index), index
    tail = bytes(t[words * 8 :].tolist())
    assert tail == rf.reference_word(1234, words).to_bytes(8, "little")[: MULTI_CHUNK % 8]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("workers", [2, 3])
def test_same_bytes_with_one_or_more_worker_threads(workers: int, engine: str) -> None:
    assert torch.equal(
        filled(MULTI_CHUNK, workers=1, engine=engine), filled(MULTI_CHUNK, workers=workers, engine=engine)
    )


@KERNEL_MISSING
@pytest.mark.parametrize("dtype", list(rf.RULES))
def test_kernel_and_numpy_engines_write_the_same_bytes(dtype: torch.dtype) -> None:
    nbytes = MULTI_CHUNK - MULTI_CHUNK % dtype.itemsize
    kernel = filled(nbytes, seed=99, workers=2, dtype=dtype, engine=rf.KERNEL)
    numpy = filled(nbytes, seed=99, workers=3, dtype=dtype, engine=rf.NUMPY)
    assert torch.equal(as_bytes(kernel), as_bytes(numpy))


@pytest.mark.skipif(not os.environ.get("DUMMYPROF_REQUIRE_KERNEL"), reason="set DUMMYPROF_REQUIRE_KERNEL=1 (CI does)")
def test_the_c_kernel_was_built_where_it_is_required() -> None:
    """CI builds the package with a compiler: a silent fall back to numpy there would hide a 4x slowdown."""
    assert rf.default_engine() == rf.KERNEL


def test_an_unknown_or_missing_engine_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="no engine 'gpu'; engines: kernel, numpy"):
        rf.fill(torch.zeros(8, dtype=torch.uint8), 1, engine="gpu")
    monkeypatch.setattr(rf, "_kernel", None)
    assert rf.default_engine() == rf.NUMPY
    with pytest.raises(ValueError, match="C kernel was not built"):
        rf.fill(torch.zeros(8, dtype=torch.uint8), 1, engine=rf.KERNEL)
    t = torch.zeros(100, dtype=torch.uint8)
    rf.fill(t, 1)  # falls back to numpy, same bytes
    assert torch.equal(t, filled(100, seed=1, engine=rf.NUMPY))


@KERNEL_MISSING
def test_kernel_refuses_ranges_outside_the_buffer_and_short_lane_arrays() -> None:
    import numpy as np

    assert rf._kernel is not None
    t = torch.zeros(CHUNK + 8, dtype=torch.uint8)
    lanes = np.empty(rf.LANES, dtype=np.uint64)
    with pytest.raises(ValueError, match="chunk range outside the buffer"):
        rf._kernel.fill_chunks(t.data_ptr(), t.numel(), 0, 3, 1, 255, 0, lanes.ctypes.data, rf.LANES)
    with pytest.raises(ValueError, match="lane array too small"):
        rf._kernel.fill_chunks(t.data_ptr(), t.numel(), 0, 1, 1, 255, 0, lanes.ctypes.data, rf.LANES - 1)
    assert torch.all(t == 0)  # nothing written


def test_same_bytes_whatever_torch_set_num_threads() -> None:
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert rf.default_workers() == 1
        one = torch.zeros(MULTI_CHUNK, dtype=torch.uint8)
        rf.fill(one)
        torch.set_num_threads(2)
        assert rf.default_workers() == 2
        two = torch.zeros(MULTI_CHUNK, dtype=torch.uint8)
        rf.fill(two)
    finally:
        torch.set_num_threads(before)
    assert torch.equal(one, two)


def test_same_seed_same_bytes_other_seed_other_bytes() -> None:
    a, b, c = filled(CHUNK + 5, seed=7), filled(CHUNK + 5, seed=7), filled(CHUNK + 5, seed=8)
    assert torch.equal(a, b)
    assert (a != c).float().mean().item() > 0.99  # unrelated streams: almost every byte differs


@pytest.fixture(scope="module")
def longest() -> torch.Tensor:
    return filled(2 * CHUNK + STEP, engine=rf.NUMPY)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "nbytes", [1, 7, 8, 9, STEP - 1, STEP, STEP + 1, CHUNK - 3, CHUNK, CHUNK + 5, 2 * CHUNK + 8 * 3 + 1]
)
def test_any_size_gives_a_prefix_of_the_same_stream(nbytes: int, engine: str, longest: torch.Tensor) -> None:
    """Bytes depend only on (seed, offset): tails, partial steps and partial chunks included."""
    assert torch.equal(filled(nbytes, workers=2, engine=engine), longest[:nbytes])


def test_zero_dim_and_empty_tensors() -> None:
    scalar = torch.zeros((), dtype=torch.float32)
    outcome = rf.fill(scalar, 1)
    assert outcome.bytes_written == 4 and 2**-15 <= abs(scalar.item()) < 2**-11
    assert rf.fill(torch.empty(0, 3, dtype=torch.bfloat16), 1) == (0, 0)


def test_non_contiguous_tensor_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="contiguous tensors only"):
        rf.fill(torch.zeros(8, 8).t(), 1)


def test_dtype_without_a_rule_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"no bit rule for torch.int32; supported: .*torch.float8_e4m3fn"):
        rf.fill(torch.zeros(8, dtype=torch.int32), 1)


FLOAT_BOUNDS = {
    torch.float8_e4m3fn: (0.9375, 64),  # (largest magnitude, distinct values the masks allow)
    torch.float8_e5m2: (0.875, 64),
    torch.float16: (2**-11, 8192),
    torch.bfloat16: (2**-11, 1024),
    torch.float32: (2**-11, None),
    torch.float64: (2**-11, None),
}


@pytest.mark.parametrize("dtype", list(FLOAT_BOUNDS))
def test_floats_are_finite_and_within_the_v033_range(dtype: torch.dtype) -> None:
    top, distinct = FLOAT_BOUNDS[dtype]
    t = torch.zeros(1 << 16, dtype=dtype)
    rf.fill(t, 3)
    values = t.double()
    assert torch.isfinite(values).all()
    assert values.abs().max().item() <= top
    assert values.abs().max().item() < (1.0 if dtype.itemsize == 1 else 1e-3)
    assert values.min().item() < 0 < values.max().item()  # both signs
    rule = rf.RULES[dtype]
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[dtype.itemsize]
    raw = t.view(ints).long() & ((1 << (8 * dtype.itemsize)) - 1) if dtype.itemsize < 8 else None
    if raw is not None:  # every element obeys its masks bit for bit
        assert torch.all(raw & ~(rule.and_mask | rule.or_mask) == 0)
        assert torch.all(raw & rule.or_mask == rule.or_mask)
    if distinct is not None:  # (65,536 draws over 8,192 patterns may miss a few)
        assert 0.99 * distinct <= torch.unique(t.view(ints)).numel() <= distinct


def test_float_magnitudes_spread_over_their_octaves() -> None:
    t = torch.zeros(1 << 16, dtype=torch.bfloat16)
    rf.fill(t, 3)
    exponents = torch.floor(torch.log2(t.float().abs())).long()
    assert set(exponents.unique().tolist()) == {-15, -14, -13, -12}


def test_fp8_zeros_are_the_masks_share() -> None:
    t = torch.zeros(1 << 18, dtype=torch.float8_e4m3fn)
    rf.fill(t, 3)
    zeros = ((t.view(torch.uint8) & 0x7F) == 0).float().mean().item()
    assert 0.028 < zeros < 0.035  # +0 and -0: 2 of the 64 patterns


@pytest.mark.parametrize(("dtype", "low", "high"), [(torch.uint8, 0, 255), (torch.int8, -128, 127)])
def test_integer_bytes_cover_their_whole_range_uniformly(dtype: torch.dtype, low: int, high: int) -> None:
    t = torch.zeros(1 << 16, dtype=dtype)
    rf.fill(t, 3)
    counts = torch.bincount(t.long() - low, minlength=256)
    assert (t.min().item(), t.max().item()) == (low, high)
    assert counts.min().item() > 150 and counts.max().item() < 370  # 256 expected per value


@pytest.mark.parametrize(
    ("engine", "per_worker", "shared"), [pytest.param(rf.KERNEL, 1, 0, marks=KERNEL_MISSING), (rf.NUMPY, 2, 1)]
)
def test_scratch_is_bounded_by_the_lanes_whatever_the_size(engine: str, per_worker: int, shared: int) -> None:
    """numpy: two lane arrays per worker and the shared offsets; kernel: one lane array per worker."""
    for nbytes in (CHUNK + 1, 3 * CHUNK):
        outcome = rf.fill(torch.zeros(nbytes, dtype=torch.uint8), 1, workers=2, engine=engine)
        assert outcome.scratch_bytes == (per_worker * 2 + shared) * rf.LANES * 8 == rf.scratch_bytes(2, engine)
    small = rf.fill(torch.zeros(100, dtype=torch.uint8), 1, workers=2, engine=engine)
    assert small.scratch_bytes == (per_worker * 13 + shared * rf.LANES) * 8  # one worker, 13 lanes for 100 bytes
    assert small.scratch_bytes == rf.scratch_for(100, 2, engine)


def test_torch_fallback_keeps_the_rules_and_bounds_its_scratch() -> None:
    """The path other devices take, run here on CPU: same masks, torch's generator, one chunk of scratch."""
    t = torch.zeros(10_001, dtype=torch.float8_e4m3fn)
    scratch = rf.fill_torch(t.view(-1), rf.RULES[torch.float8_e4m3fn], 5, chunk_bytes=4096)
    assert scratch == (4096 // 8 + 1) * 8
    values = t.float()
    assert torch.isfinite(values).all() and values.abs().max().item() <= 0.9375
    assert torch.all(t.view(torch.uint8) & ~0xB7 == 0)
    again = torch.zeros_like(t)
    rf.fill_torch(again.view(-1), rf.RULES[torch.float8_e4m3fn], 5, chunk_bytes=4096)
    assert torch.equal(t.view(torch.uint8), again.view(torch.uint8))
    bf = torch.zeros(999, dtype=torch.bfloat16)
    rf.fill_torch(bf.view(-1), rf.RULES[torch.bfloat16], 5, chunk_bytes=64)
    assert bf.float().abs().min().item() >= 2**-15 and bf.float().abs().max().item() < 2**-11


# The engram fill method


def pair(rows: int = 300, dim: int = 64) -> TablePair:
    return TablePair(torch.zeros((rows, dim), dtype=torch.float8_e4m3fn), torch.zeros((rows, 2), dtype=torch.uint8))


def test_engram_method_writes_fp8_weights_and_scale_byte_120() -> None:
    t = [pair(), pair()]
    outcome = METHODS["random-fast"].fill(t, 0)
    assert outcome.bytes_written == 2 * (300 * 64 + 300 * 2)
    for p in t:
        assert torch.all(p.scale == SCALE_BYTE)
        assert torch.equal(as_bytes(p.weight), filled(300 * 64, seed=1234) & 0xB7)  # v0.33's seed
    values = sample_values(t)
    assert values.weight_distinct == 64 and values.scale_values == (SCALE_BYTE,)
    assert -0.9375 <= values.weight_min < 0 < values.weight_max <= 0.9375


def test_engram_method_scratch_is_fixed_and_declared() -> None:
    method = METHODS["random-fast"]
    big = [
        TablePair(torch.zeros((CHUNK // 64 + 3, 64), dtype=torch.float8_e4m3fn), torch.zeros((1, 2), dtype=torch.uint8))
    ]
    measured = method.fill(big, 0).scratch_bytes
    assert measured <= rf.scratch_bytes() == method.scratch_bytes(10**9) == method.scratch_bytes(10**3)
    assert measured < big[0].weight.nbytes / 2


# The compare initializer `fast`


def test_fast_is_a_registered_initializer() -> None:
    assert isinstance(get_initializer("fast"), FastInitializer)


def test_fast_keeps_v033_rules_for_constants_scales_and_integers() -> None:
    init = FastInitializer()
    weight = torch.zeros(64, dtype=torch.float8_e4m3fn)
    weight.dummy_weight_value = 1.0  # type: ignore[attr-defined]
    scale = torch.zeros(8, dtype=torch.uint8)
    scale.dummy_weight_value = 127  # type: ignore[attr-defined]
    init(weight, "weight"), init(scale, "weight_scale_inv")
    assert torch.all(weight.view(torch.uint8) == 0x38) and torch.all(scale == 127)  # a declared value wins
    undeclared = torch.zeros(8, dtype=torch.uint8)
    assert init(undeclared, "weight_scale_inv") == (8, 0) and torch.all(undeclared == SCALE_BYTE)
    if hasattr(torch, "float8_e8m0fnu"):
        e8m0 = torch.zeros(8, dtype=torch.float8_e8m0fnu)
        init(e8m0, "w")
        assert torch.all(e8m0.view(torch.uint8) == SCALE_BYTE)
    index = torch.zeros(8, dtype=torch.int64)
    assert init(index, "index") == (0, 0) and torch.all(index == 0)
    meta = torch.empty(8, device="meta")
    assert init(meta, "weight") == (0, 0)


def test_fast_writes_random_bytes_and_floats_in_range() -> None:
    init = FastInitializer(workers=2)
    q = torch.zeros(4096, dtype=torch.int8)
    w = torch.nn.Parameter(torch.zeros(64, 64))
    assert init(q, "qweight").bytes_written == 4096
    assert init(w, "weight").bytes_written == 64 * 64 * 4
    assert q.unique().numel() > 200
    assert 0 < w.detach().abs().max().item() < 1e-3
    assert torch.equal(q.view(torch.uint8), filled(4096, seed=1234))


def test_fast_fills_a_non_contiguous_tensor_through_a_counted_copy() -> None:
    base = torch.zeros(16, 16)
    view = base.t()
    outcome = FastInitializer()(view, "weight")
    assert outcome.bytes_written == 16 * 16 * 4
    assert outcome.scratch_bytes >= 16 * 16 * 4  # the contiguous copy is reported
    expected = torch.zeros(16, 16)
    rf.fill(expected, 1234)
    assert torch.equal(view, expected)


def test_fast_falls_back_to_v033_for_floats_without_a_bit_rule() -> None:
    dtype = getattr(torch, "float8_e4m3fnuz", None)
    if dtype is None:
        pytest.skip("no float8_e4m3fnuz in this torch")
    a, b = torch.zeros(256, dtype=dtype), torch.zeros(256, dtype=dtype)
    FastInitializer()(a, "weight")
    V033Initializer()(b, "weight")
    assert torch.equal(a.view(torch.uint8), b.view(torch.uint8))


def test_compare_runs_with_the_fast_initializer(cli: Callable[..., CliResult]) -> None:
    result = cli(
        "compare", "--depth", "3", "--hidden", "32", "--repeat", "1", "--warmup", "0", "--device", "cpu",
        "--initializer", "fast", "--json", "-", "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert {s["initializer"] for s in data["compare"]["strategies"]} == {"fast"}
    assert data["environment"]["random_fast_engine"] == rf.default_engine()  # which engine wrote the values


def test_a_run_without_random_fast_records_no_engine(cli: Callable[..., CliResult]) -> None:
    result = cli(
        "engram", "--rows", "4096", "--dim", "64", "--method", "constant", "--repeat", "1", "--json", "-", "-q"
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["environment"]["random_fast_engine"] == ""


def test_the_default_engram_methods_are_the_registry_s() -> None:
    assert tuple(EngramOptions().methods) == tuple(METHODS)


def test_engram_shows_random_fast_values_next_to_the_others(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    path = str(tmp_path / "engram.json")
    result = cli("engram", "--rows", "4096", "--dim", "64", "--method", "random-fast", "--repeat", "1", "--json", path)
    assert result.exit_code == 0, result.stderr
    detail = cli("report", path, "--detail")
    assert detail.exit_code == 0, detail.stderr
    # the Methods table (behind --detail): as in, zeros, distinct values, weights (±largest), scale bytes
    row = next(line for line in detail.stdout.splitlines() if re.match(r" random-fast +dummyprof ", line))
    assert re.search(r" 64 +±\S+ +120 *$", row), row
    engine = {"kernel": "random-fast: C kernel", "numpy": "random-fast: numpy engine"}[rf.default_engine()]
    assert engine in " ".join(result.stdout.split())  # the environment line says which engine ran


@pytest.mark.timeout(120)
def test_a_forked_child_gets_its_own_worker_threads() -> None:
    import multiprocessing

    parent = _fill_numpy_only()  # the parent's pool of two workers exists now
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply(_fill_numpy_only) == parent


def _fill_numpy_only() -> bytes:
    """No torch kernel runs here (a forked child must not enter torch's OpenMP pool): empty, fill, read."""
    t = torch.empty(3 * CHUNK, dtype=torch.uint8)
    rf.fill(t, 1, workers=2)
    return t.numpy()[-64:].tobytes()
