"""Engram sharding by whole hash heads, per-rank sizes, allocator rounding and backings."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch

from dummyprof.allocation.backings import Arena, Backing, next_power_of_two, resolve_backing
from dummyprof.errors import UsageError
from dummyprof.loaders.fp8_methods import METHODS
from dummyprof.models.engram import (
    EngramSpec,
    engram_table_bytes,
    rank_table_bytes,
    rows_of_heads,
    shard,
    validate_engram_spec,
)
from dummyprof.scenarios.engram.plan import build_layout, needed_bytes, reserved_tables

GiB = 1024**3
CPU = torch.device("cpu")


def test_head_aligned_sharding_gives_each_rank_whole_heads() -> None:
    spec = EngramSpec(rows=1000, dim=64, tp_size=4, heads=8)
    shards = [shard(spec, r) for r in range(4)]
    assert [(s.first_head, s.heads, s.part_rows) for s in shards] == [
        (0, 2, 250),
        (2, 2, 250),
        (4, 2, 250),
        (6, 2, 250),
    ]


def test_uneven_sharding_first_ranks_take_one_more_head_and_first_heads_one_more_row() -> None:
    spec = EngramSpec(rows=10, dim=32, tp_size=2, heads=3)
    assert [rows_of_heads(10, 3, h, 1) for h in range(3)] == [4, 3, 3]
    assert shard(spec, 0) == shard(spec, 0).__class__(0, 0, 2, 7)
    assert (shard(spec, 1).first_head, shard(spec, 1).heads, shard(spec, 1).part_rows) == (2, 1, 3)


@pytest.mark.parametrize(("rows", "heads", "ranks"), [(10, 3, 2), (1_000_003, 7, 3), (384_000_000, 16, 8), (17, 17, 5)])
def test_every_row_lands_on_exactly_one_rank(rows: int, heads: int, ranks: int) -> None:
    spec = EngramSpec(rows=rows, dim=32, tp_size=ranks, heads=heads)
    parts = [shard(spec, r) for r in range(ranks)]
    assert sum(p.part_rows for p in parts) == rows
    assert sum(p.heads for p in parts) == heads
    for a, b in itertools.pairwise(parts):
        assert b.first_head == a.first_head + a.heads  # contiguous runs
    assert rows_of_heads(rows, heads, 0, heads) == rows


def test_dp_multiplies_the_ranks() -> None:
    spec = EngramSpec(rows=800, dim=32, tp_size=2, dp_size=2)
    assert spec.ranks == 4 and spec.num_heads == 4
    assert shard(spec, 3).part_rows == 200


def test_deepseek_flash_per_rank_bytes() -> None:
    spec = EngramSpec(rows=384_000_000, dim=256, tables=2, tp_size=4)
    assert shard(spec).part_rows == 96_000_000
    assert rank_table_bytes(spec) == 2 * 96_000_000 * 264 == 50_688_000_000  # 47.2 GiB
    assert round(rank_table_bytes(spec) / GiB, 1) == 47.2
    assert engram_table_bytes(96_000_000, 256, 32) == 96_000_000 * 264


def test_pinned_rounds_each_allocation_up_to_a_power_of_two() -> None:
    assert next_power_of_two(int(47.2 * GiB)) == 64 * GiB
    assert next_power_of_two(1) == 1 and next_power_of_two(4096) == 4096 and next_power_of_two(4097) == 8192
    pinned = Backing("pinned", "pinned")
    spec = EngramSpec(rows=384_000_000, dim=256, tables=2, tp_size=4)
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
    spec = EngramSpec(rows=10, dim=32, tp_size=2, heads=3, rank=1)
    layout = build_layout(spec, Backing("pageable", "pageable"))
    assert layout.part_rows == 3
    assert layout.table_bytes_per_rank == 3 * 33
    assert layout.total_bytes == 10 * 33
    assert [(p.rank, p.part_rows, p.table_bytes) for p in layout.ranks] == [(0, 7, 231), (1, 3, 99)]


@pytest.mark.parametrize(
    ("spec", "flag", "needle"),
    [
        (EngramSpec(rows=100, dim=250), "--dim", "not a multiple of --block-size 32"),
        (EngramSpec(rows=100, tp_size=8, heads=4), "--heads", "use --heads 8 or more"),
        (EngramSpec(rows=100, tp_size=8), "--rank", None),
        (EngramSpec(rows=5, heads=6), "--heads", "more than the 5 rows"),
        (EngramSpec(rows=0), "--rows", "at least 1"),
        (EngramSpec(rows=10, tables=0), "--tables", "at least 1"),
    ],
)
def test_bad_specs_name_the_flag(spec: EngramSpec, flag: str, needle: str | None) -> None:
    if flag == "--rank":
        spec = EngramSpec(rows=100, tp_size=8, rank=8)
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
