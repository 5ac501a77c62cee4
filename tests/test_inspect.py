"""dummyprof inspect: the module tree, sizes, visits per strategy, pruning, JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from dummyprof.reports.notices import notices
from dummyprof.results.inspect import InspectResult
from dummyprof.scenarios.inspect.run import InspectOptions, run
from tests.conftest import CliResult

Cli = Callable[..., CliResult]
M = "tests/fixtures/models.py"
# Clean(hidden=32, depth=2): embed 128x32 fp32; each Block: Linear 32x32+bias, LayerNorm, int64 position_ids,
# fp32 running_mean. Block bytes 4096+128 + 256 + 256 + 128 = 4864.
BLOCK_BYTES = 4864
TOTAL_BYTES = 128 * 32 * 4 + 2 * BLOCK_BYTES


def inspect(**kwargs: object) -> InspectResult:
    results = run(InspectOptions(**kwargs))  # type: ignore[arg-type]
    assert results.inspect is not None
    return results.inspect


def test_sizes_and_visits_per_module() -> None:
    result = inspect(model=f"{M}:build")
    nodes = {n.path: n for n in result.nodes}
    assert list(nodes) == [
        "",
        "embed",
        "block",
        "block.proj",
        "block.norm",
        "block.inner",
        "block.inner.proj",
        "block.inner.norm",
    ]
    root = nodes[""]
    assert root.subtree_bytes == TOTAL_BYTES and result.model.device == "meta (nothing allocated)"
    # legacy visits a tensor once per ancestor, itself included: sum of (module depth + 1) over 13 storages
    assert root.subtree_visits == {"legacy": 40, "per-layer": 13, "unique": 13}
    assert root.subtree_redundant == {"legacy": 27, "per-layer": 0, "unique": 0}
    leaf = nodes["block.inner.proj"]
    assert (leaf.type, leaf.own_tensors, leaf.own_bytes, leaf.depth) == ("Linear", 2, 32 * 32 * 4 + 32 * 4, 3)
    assert leaf.visits == {"legacy": 8, "per-layer": 2, "unique": 2}
    assert leaf.redundant == {"legacy": 6, "per-layer": 0, "unique": 0}
    assert nodes["block"].subtree_bytes == 2 * BLOCK_BYTES and nodes["block"].own_bytes == 256 + 128


def test_tied_weight_counts_once_at_its_owner() -> None:
    result = inspect(model=f"{M}:tied", strategies=["per-layer", "unique"])
    nodes = {n.path: n for n in result.nodes}
    assert nodes["embed"].visits == {"per-layer": 2, "unique": 1}
    assert nodes["embed"].redundant == {"per-layer": 1, "unique": 0}
    assert nodes["lm_head"].own_bytes == 0 and nodes["lm_head"].shared == ["weight = embed.weight"]


def test_pruning_by_depth_and_bytes() -> None:
    shallow = inspect(model=f"{M}:build", max_depth=1)
    assert [n.path for n in shallow.nodes] == ["", "embed", "block"] and shallow.hidden_modules == 5
    assert shallow.nodes[0].subtree_visits["legacy"] == 40  # hidden modules still count above
    big = inspect(model=f"{M}:build", min_bytes=4096)
    assert [n.path for n in big.nodes] == ["", "embed", "block", "block.proj", "block.inner", "block.inner.proj"]
    assert big.hidden_modules == 2


def test_cli_tree_json_and_errors(cli: Cli, tmp_path: Path) -> None:
    outcome = cli("inspect", "--preset", "deepseek-v4-like", "--max-depth", "3")
    assert outcome.exit_code == 0, outcome.stderr
    assert "DecoderLayer" in outcome.stdout and "(+" in outcome.stdout  # legacy redundancy shown
    assert "hidden by --max-depth 3 (still counted above)" in outcome.stdout
    path = tmp_path / "tree.json"
    assert cli("inspect", "--model", f"{M}:build", "-s", "legacy", "--json", str(path), "-q").exit_code == 0
    data = json.loads(path.read_text())["inspect"]
    assert data["strategies"] == ["legacy"] and data["nodes"][0]["subtree_visits"] == {"legacy": 40}
    rendered = cli("report", str(path), "--format", "markdown")
    assert rendered.exit_code == 0 and "| **visits: legacy 40 (+27)** |" in rendered.stdout
    bad = cli("inspect", "--max-depth", "-1")
    assert bad.exit_code == 2 and "--max-depth: must be at least 0" in bad.stderr
    bad_size = cli("inspect", "--min-bytes", "lots")
    assert bad_size.exit_code == 2 and "--min-bytes: expected a size such as 1MiB" in bad_size.stderr
    unknown = cli("inspect", "-s", "fastest")
    assert unknown.exit_code == 2 and "--strategy: unknown strategy 'fastest'" in unknown.stderr


def test_huge_layout_allocates_nothing() -> None:
    # About 64 GiB of bf16 weights: only possible because it stays on the meta device.
    result = inspect(
        preset="dense-decoder",
        model_args={"layers": 40, "hidden": 8192, "intermediate": 28672, "heads": 64, "kv_heads": 8, "vocab": 32000},
    )
    assert result.nodes[0].subtree_bytes > 60 * 2**30


def test_says_when_the_callable_allocated_anyway(tmp_path: Path) -> None:
    explicit = tmp_path / "explicit.py"
    explicit.write_text(
        "import torch\nfrom torch import nn\n\n"
        "def build():\n"
        "    model = nn.Linear(4, 4)\n"
        "    model.register_buffer('table', torch.zeros(8, device='cpu'))  # an explicit device= beats meta\n"
        "    return model\n"
    )
    results = run(InspectOptions(model=f"{explicit}:build"))
    assert results.inspect is not None and results.inspect.real_device_tensors == 1
    assert any("the callable put 1 tensor(s) on a real device itself" in n for n in notices(results))
    assert any("nothing was allocated or written" in n for n in notices(run(InspectOptions())))
