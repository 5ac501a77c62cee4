"""Issue #17.6: advice names the real limit: disk space for an mmap backing, the machine for a huge --dim."""

from __future__ import annotations

from pathlib import Path

import pytest

from dummyprof.allocation import backings
from dummyprof.errors import DoesNotFitError
from dummyprof.measure.budget import limit_flag, memory_fix
from dummyprof.measure.projection import SamplingError, sample_sizes
from dummyprof.models.source import FitHint
from dummyprof.models.synthetic import TreeSpec, synthetic_source
from dummyprof.scenarios.engram.options import EngramOptions
from dummyprof.scenarios.engram.run import run
from dummyprof.scenarios.model_choice import fit_words


def test_a_full_disk_under_an_mmap_backing_names_the_disk_never_max_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backings, "disk_free_bytes", lambda directory: 64)  # not one row of the tables
    options = EngramOptions(
        rows=1_000_000, dim=64, offload=True, backing=f"mmap:{tmp_path / 't.bin'}", methods=["constant"], repeat=1
    )
    with pytest.raises(DoesNotFitError) as caught:
        run(options)
    assert caught.value.flag == "--backing"
    assert "the disk of the --backing mmap: file is the limit, not --max-memory" in caught.value.message
    assert "raise --max-memory" not in caught.value.message


@pytest.mark.parametrize("limit", ["psutil", "cgroup v2", "cgroup v1"])
def test_the_machine_as_the_limit_is_named_and_max_memory_is_not_offered(limit: str) -> None:
    assert memory_fix(limit) == (
        f"this machine's memory ({limit}) is the limit, not --max-memory: lower the size (--dim, --rows)"
    )
    assert limit_flag(limit) == "--dim"


def test_only_the_users_own_max_memory_is_to_be_raised() -> None:
    assert (memory_fix("--max-memory"), limit_flag("--max-memory")) == ("raise --max-memory", "--max-memory")
    assert limit_flag("disk") == limit_flag("/dev/shm") == "--backing"


def test_a_sampling_error_carries_which_budget_binds() -> None:
    with pytest.raises(SamplingError) as caught:
        sample_sizes(100, seconds_per_row=0.0, bytes_per_row=1000, fixed_bytes=0, memory_budget=10, time_budget=1)
    assert caught.value.binding == "memory"


def test_the_tree_fit_hint_is_data_and_the_scenario_words_it() -> None:
    source = synthetic_source(TreeSpec(depth=2, width=1, hidden=1024))
    assert source.fit_hint is not None
    hint = source.fit_hint(10 * 1024 * 1024)
    assert (hint.field, hint.fits, hint.also) == ("hidden", 512, ("width", "depth"))
    assert fit_words(hint) == "--hidden 512 fits at this width and depth (or lower --width/--depth)"
    nothing = source.fit_hint(1)
    assert (nothing.field, nothing.fits, nothing.also) == ("width", None, ("depth",))
    assert fit_words(nothing) == "lower --width or --depth"
    assert fit_words(FitHint("num_hidden_layers", model_arg=True)) == "pass --model-arg num_hidden_layers=N (smaller)"
