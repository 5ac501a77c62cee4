"""Random dummy values at memory speed: random machine words on every core, masked into valid values per dtype.

Why and how: docs/engram.md, "random-fast". Every byte is a pure function of (seed, byte offset), so any number
of worker threads and either engine (the C ``kernel``, or ``numpy``) write the same bytes; other devices draw
from torch's generator there (the same rules and ranges, not the same bytes).
"""

from __future__ import annotations

import itertools
import os
import types
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache

import numpy as np
import torch

from dummyprof.loaders.outcome import DEFAULT_SEED, FillOutcome

LANES = 16384  # words per lane array: 128 KiB, so a worker's two arrays stay in its L2 cache
STEPS = 32  # generator steps per chunk: seeding (10 passes over the lanes) is paid once per 32 steps
WORD_BYTES = 8
CHUNK_BYTES = LANES * STEPS * WORD_BYTES  # 4 MiB of output per chunk, fixed: it defines the bytes

_MASK64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15  # SplitMix64's increment
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
MULTIPLIER = 0xF1357AEA2E62A9C5  # a spectrally good 64-bit MCG multiplier (Steele & Vigna, 2021)


_kernel: types.ModuleType | None
try:
    from dummyprof.loaders import _random_fast_kernel as _kernel
except ImportError:  # built without a C compiler: the numpy engine writes the same bytes, slower
    _kernel = None

KERNEL = "kernel"
NUMPY = "numpy"
ENGINES = (KERNEL, NUMPY)


def default_engine() -> str:
    return KERNEL if _kernel is not None else NUMPY


def available_engines() -> list[str]:  # fastest first
    return [e for e in ENGINES if e != KERNEL or _kernel is not None]


def _check_engine(engine: str) -> str:
    if engine not in ENGINES:
        raise ValueError(f"random-fast has no engine {engine!r}; engines: {', '.join(ENGINES)}")
    if engine == KERNEL and _kernel is None:
        raise ValueError("random-fast's C kernel was not built with this install (no C compiler at pip install?)")
    return engine


@dataclass(frozen=True)
class BitRule:
    """How a random word becomes valid values of one dtype: ``(word & and_mask) | or_mask``, per element."""

    itemsize: int
    and_mask: int  # per element, before repetition over the 64-bit word
    or_mask: int
    values: str  # the range the masks produce, in words

    def word(self, mask: int) -> int:
        """The per-element mask repeated over a little-endian 64-bit word."""
        bits = self.itemsize * 8
        return sum(mask << (bits * i) for i in range(WORD_BYTES // self.itemsize)) & _MASK64

    @property
    def and_word(self) -> int:
        return self.word(self.and_mask)

    @property
    def or_word(self) -> int:
        return self.word(self.or_mask)


# Floats keep their sign and mantissa and only the low exponent bits, with the high ones pinned, so
# |x| < 2**-11 (4.88e-4, inside v0.33's ±1e-3). fp8 clears the exponent bits that would reach 1.0,
# so |x| <= 0.9375 (e4m3fn) or 0.875 (e5m2), inside v0.33's ±1; NaN and Inf patterns cannot occur.
RULES: dict[torch.dtype, BitRule] = {
    torch.uint8: BitRule(1, 0xFF, 0, "uniform bytes 0..255"),
    torch.int8: BitRule(1, 0xFF, 0, "uniform bytes -128..127"),
    torch.float8_e4m3fn: BitRule(1, 0xB7, 0, "±{0..7/8}·2^-6, ±(1+m/8)·2^{-5,-3,-1}: |x| <= 0.9375"),
    torch.float8_e5m2: BitRule(1, 0xBB, 0, "±(1+m/4)·2^e, e in {-14,-12,...,-1} and subnormals: |x| <= 0.875"),
    torch.float16: BitRule(2, 0x8FFF, 0, "exponent 0..3 (subnormals included): |x| < 2^-11"),
    torch.bfloat16: BitRule(2, 0x81FF, 0x3800, "2^-15 <= |x| < 2^-11"),
    torch.float32: BitRule(4, 0x81FFFFFF, 0x38000000, "2^-15 <= |x| < 2^-11"),
    torch.float64: BitRule(8, 0x803FFFFFFFFFFFFF, 0x3F00000000000000, "2^-15 <= |x| < 2^-11"),
}
FP4_X2 = getattr(torch, "float4_e2m1fn_x2", None)
if FP4_X2 is not None:  # packed fp4 has no NaN or Inf: any byte is two valid values
    RULES[FP4_X2] = BitRule(1, 0xFF, 0, "uniform bytes (two e2m1 values each)")


def default_workers() -> int:
    return max(1, torch.get_num_threads())


def scratch_for(nbytes: int, workers: int | None = None, engine: str | None = None) -> int:
    """Temporaries of one CPU fill of ``nbytes``: the lane arrays of every worker that can get a chunk."""
    n = default_workers() if workers is None else workers
    n = max(1, min(n, -(-nbytes // CHUNK_BYTES)))
    lanes = lanes_for(nbytes)
    if (default_engine() if engine is None else engine) == KERNEL:
        return n * lanes * WORD_BYTES
    return (2 * n * lanes + LANES) * WORD_BYTES


def scratch_bytes(workers: int | None = None, engine: str | None = None) -> int:
    """Most temporaries of one CPU fill of any size."""
    n = default_workers() if workers is None else workers
    return scratch_for(n * CHUNK_BYTES, n, engine)


def _mix64(z: int) -> int:
    z = ((z ^ (z >> 30)) * _MIX1) & _MASK64
    z = ((z ^ (z >> 27)) * _MIX2) & _MASK64
    return z ^ (z >> 31)


def seed_key(seed: int) -> int:
    """The SplitMix64 state a seed starts from (mixed, so nearby seeds give unrelated streams)."""
    return _mix64(seed & _MASK64)


def reference_word(seed: int, index: int) -> int:
    """Word ``index`` of the stream, unmasked, in plain Python: the specification the kernel is tested against."""
    chunk, within = divmod(index, LANES * STEPS)
    step, lane = divmod(within, LANES)
    x = _mix64((seed_key(seed) + (chunk * LANES + lane + 1) * GAMMA) & _MASK64) | 1
    x = (x * pow(MULTIPLIER, step + 1, 1 << 64)) & _MASK64
    return x ^ (x >> 32)


@cache
def _lane_offsets() -> np.ndarray:
    offsets = np.arange(LANES, dtype=np.uint64) * np.uint64(GAMMA)  # wraps mod 2**64, as intended
    offsets.flags.writeable = False
    return offsets


@cache
def _executor(workers: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dummyprof-random-fast")


# A forked child inherits the pool object but not its threads: it would wait forever on it.
os.register_at_fork(after_in_child=_executor.cache_clear)


def lanes_for(nbytes: int) -> int:
    """Lanes a tensor of ``nbytes`` uses: all of them, or fewer for a tensor smaller than one step."""
    return max(1, min(LANES, -(-nbytes // WORD_BYTES)))


def _chunk_writer(dst: np.ndarray, rule: BitRule, key: int) -> Callable[[int, np.ndarray, np.ndarray], None]:
    """Returns ``write(chunk, x, t)`` that fills one chunk of ``dst`` (uint8) using lane arrays ``x`` and ``t``."""
    total = dst.size
    whole = total - total % WORD_BYTES
    dst64 = dst[:whole].view(np.uint64)
    and_word = np.uint64(rule.and_word)
    or_word = np.uint64(rule.or_word)
    masked = rule.and_word != _MASK64
    offsets = _lane_offsets()[: lanes_for(total)]  # a tensor under one step has a single, partial step
    u = np.uint64
    multiplier, fold, one = u(MULTIPLIER), u(32), u(1)
    mix1, mix2, s30, s27, s31 = u(_MIX1), u(_MIX2), u(30), u(27), u(31)

    def finish(t: np.ndarray, out: np.ndarray) -> None:
        """``t`` holds folded words; write them masked into ``out`` (the last op writes ``out``)."""
        if rule.or_word:
            np.bitwise_and(t, and_word, out=t)
            np.bitwise_or(t, or_word, out=out)
        elif masked:
            np.bitwise_and(t, and_word, out=out)

    def write(chunk: int, x: np.ndarray, t: np.ndarray) -> None:
        # Seed the lanes: SplitMix64 outputs number chunk * LANES + 1 .. + LANES of the seed's stream.
        np.add(offsets, u((key + (chunk * LANES + 1) * GAMMA) & _MASK64), out=x)
        np.right_shift(x, s30, out=t)
        np.bitwise_xor(x, t, out=x)
        np.multiply(x, mix1, out=x)
        np.right_shift(x, s27, out=t)
        np.bitwise_xor(x, t, out=x)
        np.multiply(x, mix2, out=x)
        np.right_shift(x, s31, out=t)
        np.bitwise_xor(x, t, out=x)
        np.bitwise_or(x, one, out=x)  # odd: full period of the multiplicative generator
        start = chunk * CHUNK_BYTES
        for step in range(STEPS):
            b0 = start + step * LANES * WORD_BYTES
            if b0 >= total:
                return
            b1 = min(total, b0 + LANES * WORD_BYTES)
            np.multiply(x, multiplier, out=x)
            np.right_shift(x, fold, out=t)
            if b1 <= whole and b1 - b0 == LANES * WORD_BYTES:
                out = dst64[b0 // WORD_BYTES : b1 // WORD_BYTES]
                if masked or rule.or_word:
                    np.bitwise_xor(x, t, out=t)
                    finish(t, out)
                else:
                    np.bitwise_xor(x, t, out=out)
            else:  # the tensor's last, partial step: mask in scratch, copy the bytes that exist
                np.bitwise_xor(x, t, out=t)
                finish(t, t)
                dst[b0:b1] = t.view(np.uint8)[: b1 - b0]

    return write


def _run_workers(chunks: int, workers: int, new_writer: Callable[[], Callable[[int], None]]) -> None:
    """Threads pulling chunk indices from a shared counter; each makes its writer (and scratch) once."""
    counter = itertools.count()

    def work() -> None:
        write = new_writer()
        while (chunk := next(counter)) < chunks:  # next() on a count is atomic under the GIL
            write(chunk)

    if workers == 1:
        work()
    else:
        futures = [_executor(workers).submit(work) for _ in range(workers)]
        for f in futures:
            f.result()


def _fill_cpu(flat: torch.Tensor, rule: BitRule, seed: int, workers: int, engine: str) -> int:
    total = flat.nbytes
    chunks = -(-total // CHUNK_BYTES)
    workers = max(1, min(workers, chunks))
    lanes = lanes_for(total)
    key = seed_key(seed)

    if engine == KERNEL:
        assert _kernel is not None
        fill_chunks, address = _kernel.fill_chunks, flat.data_ptr()
        and_word, or_word = rule.and_word, rule.or_word

        def new_writer() -> Callable[[int], None]:
            x = np.empty(lanes, dtype=np.uint64)
            return lambda chunk: fill_chunks(
                address, total, chunk, chunk + 1, key, and_word, or_word, x.ctypes.data, lanes
            )

    else:
        write_chunk = _chunk_writer(flat.view(torch.uint8).numpy(), rule, key)

        def new_writer() -> Callable[[int], None]:
            x, t = np.empty(lanes, dtype=np.uint64), np.empty(lanes, dtype=np.uint64)
            return lambda chunk: write_chunk(chunk, x, t)

    _run_workers(chunks, workers, new_writer)
    return scratch_for(total, workers, engine)


def _signed(word: int) -> int:
    return word - (1 << 64) if word >= 1 << 63 else word


def fill_torch(flat: torch.Tensor, rule: BitRule, seed: int, chunk_bytes: int = CHUNK_BYTES) -> int:
    """Device fallback: words from torch's generator on the tensor's device, masked the same way, chunk by chunk."""
    dst = flat.view(torch.uint8)
    gen = torch.Generator(device=flat.device).manual_seed(seed)
    words = torch.empty(max(1, min(chunk_bytes, dst.numel()) // WORD_BYTES + 1), dtype=torch.int64, device=flat.device)
    and_word, or_word = _signed(rule.and_word), _signed(rule.or_word)
    for b0 in range(0, dst.numel(), chunk_bytes):
        b1 = min(dst.numel(), b0 + chunk_bytes)
        need = -(-(b1 - b0) // WORD_BYTES)
        part = words[:need]
        part.random_(-(1 << 63), None, generator=gen)  # the full 64-bit range
        part.bitwise_and_(and_word).bitwise_or_(or_word)
        dst[b0:b1].copy_(part.view(torch.uint8)[: b1 - b0])
    return words.nbytes


def fill(
    tensor: torch.Tensor, seed: int = DEFAULT_SEED, *, workers: int | None = None, engine: str | None = None
) -> FillOutcome:
    """Fill ``tensor`` in place with masked random words; ``engine`` (CPU only): ``kernel`` or ``numpy`` (the
    same bytes). ``ValueError`` for a dtype without a rule, a non-contiguous tensor or an engine not built."""
    rule = RULES.get(tensor.dtype)
    if rule is None:
        raise ValueError(f"random-fast has no bit rule for {tensor.dtype}; supported: {', '.join(map(str, RULES))}")
    if not tensor.is_contiguous():
        raise ValueError("random-fast fills contiguous tensors only (call .contiguous() and copy back)")
    chosen = _check_engine(default_engine() if engine is None else engine)
    if tensor.numel() == 0:
        return FillOutcome(0, 0)
    flat = tensor.detach().reshape(-1)
    if flat.device.type == "cpu":
        scratch = _fill_cpu(flat, rule, seed, default_workers() if workers is None else workers, chosen)
    else:
        scratch = fill_torch(flat, rule, seed)
    return FillOutcome(tensor.nbytes, scratch)
