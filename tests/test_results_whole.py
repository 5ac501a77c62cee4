"""Every results kind is checked whole when loaded (issue #26, class 2): what one field says about another.

A deployment file written by dummyprof (tests/fixtures/results_v3) is edited the ways that once crashed
a reporter or printed a negative size; each is refused naming the field, one line, exit 2, by every reporter.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult

Cli = Callable[..., CliResult]
DEPLOYMENT = Path(__file__).parent / "fixtures" / "results" / "deployment-deepseek-v3-tp8.json"


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = data["deployment"]
        for key in parents:
            target = target[int(key)] if key.isdigit() else target[key]
        target[int(last) if last.isdigit() else last] = value

    return edit


CASES = [
    (_set("ranks.0.layers", []), "$.deployment.ranks[0].layers: [] is not [start, end) within the 61 layers"),
    (_set("ranks.0.layers", [3]), "$.deployment.ranks[0].layers: [3] is not [start, end) within the 61 layers"),
    (_set("slowest_rank", 99), "$.deployment.slowest_rank: 99 names no rank of this file"),
    (_set("slowest_strategy", "nothing"), "$.deployment.slowest_strategy: 'nothing' names no strategy of rank 0"),
    (_set("ranks.0.strategies", []), "$.deployment.slowest_strategy: 'per-layer' names no strategy of rank 0"),
    (_set("strategies", []), "$.deployment: Object contains unknown field `strategies`"),
    (_set("ranks", []), "$.deployment.ranks: a deployment has at least one rank"),
    (_set("nodes.0.ranks", []), "$.deployment.nodes[0].ranks: a node has at least one rank"),
    (_set("ranks.1.held_bytes", -5), "$.deployment.ranks[1].held_bytes: Expected `int` >= 0"),
    (_set("ranks.1.held_bytes", 5), "$.deployment.ranks[1].held_bytes: 5 is less than the replicated, padding or"),
    (_set("model_bytes", 10**16), "$.deployment.ranks: their 681121048832 bytes are fewer than the model's"),
    (_set("ranks.3.counted_as", 8), "$.deployment.ranks[3].counted_as: 8 names no rank of this file"),
    (_set("ranks.3.filled_as", -1), "$.deployment.ranks[3].filled_as: Expected `int` >= 0"),
    (_set("ranks.3.node", 4), "$.deployment.ranks[3].node: 4 names no node of this file"),
    (_set("nodes.0.ranks", [0, 9]), "$.deployment.nodes[0].ranks[1]: 9 names no rank of this file"),
    (_set("ranks.2.rank", 5), "$.deployment.ranks: the entries' ranks are not each rank 0 to 7 once"),
    (_set("world", 9), "$.deployment.world: 9 ranks, but tp x pp x dp = 8 (at most 65536)"),
    (_set("ranks.2.copies", 2), "$.deployment.ranks: entries for 9 ranks in a world of 8"),
    (_set("ranks.2.copies", 0), "$.deployment.ranks: entries for 7 ranks in a world of 8"),
    (_set("ranks.2.copies", 10**18), "$.deployment.ranks: entries for 1000000000000000007 ranks in a world of 8"),
]


@pytest.mark.parametrize(("edit", "message"), CASES)
def test_a_deployment_whose_parts_disagree_is_refused_by_every_reporter(
    cli: Cli, tmp_path: Path, edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    data = json.loads(DEPLOYMENT.read_text())
    assert cli("report", str(DEPLOYMENT), "-q").exit_code == 0  # as written, it renders
    edit(data)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    for rendering in (("-f", "terminal"), ("-q",), ("-f", "html"), ("-f", "markdown"), ("-f", "json")):
        result = cli("report", str(path), *rendering)
        assert (result.exit_code, result.stdout) == (2, ""), rendering
        assert result.stderr.startswith(f"dummyprof: error: {path}: {message}"), result.stderr
        assert result.stderr.count("\n") == 1


def test_every_results_class_is_a_record_decoded_by_msgspec() -> None:
    """A dataclass among the records would be skipped by msgspec's unknown-key and bound checks."""
    import dataclasses
    import importlib
    import pkgutil

    import dummyprof.results as package
    from dummyprof.results.common import Record

    defined = [
        value
        for info in pkgutil.iter_modules(package.__path__)
        for value in vars(importlib.import_module(f"dummyprof.results.{info.name}")).values()
        if isinstance(value, type) and value.__module__ == f"dummyprof.results.{info.name}"
    ]
    assert [c.__name__ for c in defined if dataclasses.is_dataclass(c)] == []
    assert {"Results", "DeploymentResult", "TensorResult", "Contention"} <= {
        c.__name__ for c in defined if issubclass(c, Record)
    }
