"""Engram sharding by whole hash heads (vLLM 0.33's ParallelEngramEmbedding), per-rank sizes, allocator rounding
and backings."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch

from dummyprof.allocation.backings import Arena, Backing, next_power_of_two, resolve_backing
from dummyprof.errors import UsageError
from dummyprof.layout import ParallelLayout, engram_heads_problem, engram_range, head_rows
from dummyprof.loaders.fp8_methods import METHODS
from dummyprof.models.engram import EngramSpec, engram_table_bytes, rank_table_bytes, shard, validate_engram_spec
from dummyprof.scenarios.engram.plan import build_layout, needed_bytes, reserved_tables

GiB = 1024**3
CPU = torch.device("cpu")


def test_head_aligned_sharding_gives_each_rank_whole_heads() -> None:
    spec = EngramSpec(rows=1000, dim=64, tp=4, heads=8)
    shards = [shard(spec, r) for r in range(4)]
    assert [(s.first_head, s.heads, s.part_rows) for s in shards] == [
        (0, 2, 250),
        (2, 2, 250),
        (4, 2, 250),
        (6, 2, 250),
    ]


def vllm_engram(head_sizes: list[int], tp: int, dp: int, tp_rank: int, dp_rank: int) -> tuple[int, int, int] | None:
    """vLLM 0.33's ParallelEngramEmbedding.__init__, written out (vllm/models/deepseek_v41/common/engram.py):
    num_shards = tp * dp, head_rank = tp_rank * dp + dp_rank (engram_head_shard_rank, TP-major),
    part_n_hash_cols = cdiv(n_hash_cols, num_shards), an assert that no shard is left without heads,
    head_start = head_rank * part; vocab_start_idx = sum(head_sizes[:head_start]), vocab_end_idx =
    sum(head_sizes[:head_end]). Returns (head_start, vocab_start, part_num_embeddings); None where vLLM asserts."""
    n_hash_cols, num_shards = len(head_sizes), tp * dp
    part = -(-n_hash_cols // num_shards)
    if not (num_shards - 1) * part < n_hash_cols:
        return None
    head_start = (tp_rank * dp + dp_rank) * part
    start, end = sum(head_sizes[:head_start]), sum(head_sizes[: head_start + part])
    return head_start, start, end - start


@pytest.mark.parametrize(
    ("rows", "heads", "tp", "dp"),
    [(10, 3, 2, 1), (1000, 8, 4, 1), (4099, 4, 2, 2), (1_000_003, 16, 3, 1), (97, 10, 2, 2), (17, 17, 5, 1),
     (64, 6, 2, 3), (100, 5, 4, 1), (100, 9, 8, 1), (800, 4, 2, 2)],
)  # fmt: skip
def test_each_rank_holds_the_vocabulary_range_vllm_gives_it(rows: int, heads: int, tp: int, dp: int) -> None:
    layout = ParallelLayout(tp=tp, dp=dp)
    sizes = [head_rows(rows, heads, h, 1) for h in range(heads)]
    expected = [vllm_engram(sizes, tp, dp, c.tp_rank, c.dp_rank) for c in layout.coords()]
    if None in expected:  # vLLM refuses the layout: so do we, with its reason
        assert engram_heads_problem(heads, layout) == (
            f"Engram sharding leaves ranks without hash heads: {heads} heads over {tp * dp} shards"
        )
        return
    assert engram_heads_problem(heads, layout) is None
    got = [engram_range(rows, heads, layout, c) for c in layout.coords()]
    assert [(g.first_head, g.vocab_start, g.part_rows) for g in got] == expected
    assert sum(g.part_rows for g in got) == rows and sum(g.heads for g in got) == heads  # every row once


def test_shards_are_tp_major_and_take_ceil_heads_the_last_fewer() -> None:
    # tp 2 x dp 2, 4 heads: global rank 1 is (tp 1, dp 0), head shard 1 * 2 + 0 = 2
    spec = EngramSpec(rows=4099, dim=32, tp=2, dp=2, heads=4)
    assert [(shard(spec, r).first_head, shard(spec, r).part_rows) for r in range(4)] == [
        (0, 1025), (2, 1025), (1, 1025), (3, 1024)
    ]  # fmt: skip
    assert [shard(spec, r).vocab_start for r in range(4)] == [0, 2050, 1025, 3075]
    # 10 heads over 4 ranks: ceil = 3 each, the last 1 (not 3, 3, 2, 2)
    spec = EngramSpec(rows=1000, dim=32, tp=4, heads=10)
    assert [shard(spec, r).heads for r in range(4)] == [3, 3, 3, 1]
    assert [rows_of(spec, r) for r in range(4)] == [300, 300, 300, 100]
    assert [head_rows(10, 3, h, 1) for h in range(3)] == [4, 3, 3]


def rows_of(spec: EngramSpec, rank: int) -> int:
    return shard(spec, rank).part_rows


@pytest.mark.parametrize(("rows", "heads", "ranks"), [(10, 3, 2), (1_000_003, 7, 3), (384_000_000, 16, 8), (17, 17, 5)])
def test_every_row_lands_on_exactly_one_rank(rows: int, heads: int, ranks: int) -> None:
    spec = EngramSpec(rows=rows, dim=32, tp=ranks, heads=heads)
    parts = [shard(spec, r) for r in range(ranks)]
    assert sum(p.part_rows for p in parts) == rows
    assert sum(p.heads for p in parts) == heads
    for a, b in itertools.pairwise(parts):
        assert b.first_head == a.first_head + a.heads  # contiguous runs (dp 1: tp-major is rank order)
        assert b.vocab_start == a.vocab_start + a.part_rows
    assert head_rows(rows, heads, 0, heads) == rows


def test_dp_multiplies_the_ranks() -> None:
    spec = EngramSpec(rows=800, dim=32, tp=2, dp=2)
    assert spec.layout.world == 4 and spec.num_heads == 4
    assert shard(spec, 3).part_rows == 200


def test_deepseek_flash_per_rank_bytes() -> None:
    spec = EngramSpec(rows=384_000_000, dim=256, tables=2, tp=4)
    assert shard(spec).part_rows == 96_000_000
    assert rank_table_bytes(spec) == 2 * 96_000_000 * 264 == 50_688_000_000  # 47.2 GiB
    assert round(rank_table_bytes(spec) / GiB, 1) == 47.2
    assert engram_table_bytes(96_000_000, 256, 32) == 96_000_000 * 264


def test_pinned_rounds_each_allocation_up_to_a_power_of_two() -> None:
    assert next_power_of_two(int(47.2 * GiB)) == 64 * GiB
    assert next_power_of_two(1) == 1 and next_power_of_two(4096) == 4096 and next_power_of_two(4097) == 8192
    pinned = Backing("pinned", "pinned")
    spec = EngramSpec(rows=384_000_000, dim=256, tables=2, tp=4)
    # weight 24.58e9 B -> 32 GiB, scale 768e6 B -> 1 GiB, per table
    assert reserved_tables(spec, shard(spec).part_rows, pinned) == 2 * (32 * GiB + 1 * GiB)
    pageable = Backing("pageable", "pageable")
    assert reserved_tables(spec, 1, pageable) == 2 * 2 * 4096


def test_needed_bytes_per_method_are_tables_plus_scratch() -> None:
    spec = EngramSpec(rows=48_000_000, dim=256)
    pageable = Backing("pageable", "pageable")
    tables = reserved_tables(spec, 48_000_000, pageable)
    elements = 48_000_000 * 256
    chunk = 64 * 1024 * 1024
    assert needed_bytes(spec, 48_000_000, METHODS["random-convert"], pageable, chunk) == tables + 3 * elements
    assert needed_bytes(spec, 48_000_000, METHODS["random-scratch"], pageable, chunk) == tables + 2 * elements
    assert needed_bytes(spec, 48_000_000, METHODS["random-chunked"], pageable, chunk) == tables + 2 * chunk
    assert needed_bytes(spec, 48_000_000, METHODS["constant"], pageable, chunk) == tables
    # a table smaller than one chunk needs only its own size of scratch
    assert METHODS["random-chunked"].scratch_bytes(1000, chunk) == 2000


def test_layout_lists_every_rank() -> None:
    spec = EngramSpec(rows=10, dim=32, tp=2, heads=3, rank=1)
    layout = build_layout(spec, Backing("pageable", "pageable"))
    assert layout.part_rows == 3
    assert layout.table_bytes_per_rank == 3 * 33
    assert layout.total_bytes == 10 * 33
    assert [(p.rank, p.part_rows, p.table_bytes) for p in layout.ranks] == [(0, 7, 231), (1, 3, 99)]


@pytest.mark.parametrize(
    ("spec", "flag", "needle"),
    [
        (EngramSpec(rows=100, dim=250), "--dim", "scale block (32 elements, one scale byte each); try --dim 224"),
        (EngramSpec(rows=100, tp=8, heads=4), "--heads", "leaves ranks without hash heads: 4 heads over 8 shards"),
        (EngramSpec(rows=100, tp=8, heads=9), "--heads", "use --heads 8 or a multiple of it"),
        # --rows, not --heads (no --heads was given; none could help): the rows or the ranks are the fix
        (
            EngramSpec(rows=4, tp=8),
            "--rows",
            "4 rows cannot give each of 8 ranks a hash head; use --rows 8 or more, or",
        ),
        (EngramSpec(rows=20, tp=8, heads=24), "--heads", "more than the 20 rows; use --heads 16"),
        (EngramSpec(rows=100, tp=8), "--rank", None),
        (EngramSpec(rows=5, heads=6), "--heads", "more than the 5 rows"),
        (EngramSpec(rows=0), "--rows", "at least 1"),
        (EngramSpec(rows=10, tables=0), "--tables", "at least 1"),
    ],
)
def test_bad_specs_name_the_flag(spec: EngramSpec, flag: str, needle: str | None) -> None:
    if flag == "--rank":
        spec = EngramSpec(rows=100, tp=8, rank=8)
        needle = "between 0 and 7"
    with pytest.raises(UsageError) as info:
        validate_engram_spec(spec)
    assert info.value.flag == flag
    assert needle is not None and needle in info.value.message


def test_pinned_without_cuda_falls_back_to_pageable_and_says_so() -> None:
    backing = resolve_backing("pinned", offload=True, device=CPU, cuda=False)
    assert (backing.requested, backing.used) == ("pinned", "pageable")
    assert "pinned memory needs CUDA" in backing.note and "measured pageable instead" in backing.note
    assert resolve_backing("pinned", offload=True, device=CPU, cuda=True).used == "pinned"


def test_backings_that_cannot_be_had_say_why(tmp_path: Path) -> None:
    assert resolve_backing("hugepages", offload=True, device=CPU, thp="never").used == "pageable"
    assert "THP mode never" in resolve_backing("hugepages", offload=True, device=CPU, thp="never").note
    assert resolve_backing("hugepages", offload=True, device=CPU, thp="madvise").used == "hugepages"
    missing = resolve_backing("shm", offload=True, device=CPU, shm_dir=tmp_path / "nope")
    assert missing.used == "pageable" and "missing or not writable" in missing.note
    no_offload = resolve_backing("pinned", offload=False, device=CPU)
    assert (no_offload.requested, no_offload.used) == ("device", "pageable")


@pytest.mark.parametrize("kind", ["pageable", "hugepages", "shm"])
def test_arena_allocates_writes_and_releases(kind: str) -> None:
    backing = Backing(kind, kind)
    if kind == "shm" and not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm here")
    arena = Arena(backing)
    weight = arena.empty((100, 64), torch.float8_e4m3fn)
    scale = arena.empty((100, 2), torch.uint8)
    assert weight.shape == (100, 64) and weight.dtype == torch.float8_e4m3fn
    weight.fill_(1.0)
    scale.fill_(127)
    assert torch.all(weight.view(torch.uint8) == 0x38) and torch.all(scale == 127)
    assert arena.requested_bytes == 6400 + 200
    assert arena.reserved_bytes == backing.reserved_bytes(6400) + backing.reserved_bytes(200)
    del weight, scale
    arena.release()
    assert arena.tensors == []


def test_the_spec_takes_the_layout_its_options_parsed() -> None:
    """One layout object per run: the options parse it once and the spec the tables are built from holds it."""
    from dummyprof.scenarios.engram.options import EngramOptions

    options = EngramOptions(rows=64, dim=64, tp=2, dp=2, rank=3)
    spec = options.spec()
    assert spec.layout is options.layout == ParallelLayout(tp=2, dp=2)
    assert (spec.tp, spec.dp, spec.rank, spec.num_heads) == (2, 2, 3, 4)


def test_the_python_apis_old_layout_names_are_unknown() -> None:
    from dummyprof.scenarios.engram.options import EngramOptions
    from dummyprof.scenarios.engram.ranks.options import EngramRanksOptions

    for make in (EngramOptions, EngramRanksOptions, EngramSpec):
        with pytest.raises(TypeError, match="tp_size"):
            make(tp_size=2)
