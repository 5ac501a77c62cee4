"""`compare --trace`: a Chrome trace (and speedscope file) of one untimed instrumented round per strategy."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.conftest import CliResult

Cli = Callable[..., CliResult]
SCHEMA = json.loads((Path(__file__).parent / "fixtures" / "trace_event_schema.json").read_text())
DEPTH12 = ("--depth", "12", "--hidden", "32", "--repeat", "1", "--warmup", "0", "--device", "cpu", "--quiet")
DEEPEST = ".".join(["child0"] * 12)


def check_nesting(events: list[dict[str, Any]]) -> None:
    """Per track, complete events nest: each one lies inside every open one that started before it."""
    by_track: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        if event["ph"] == "X":
            by_track[(event["pid"], event["tid"])].append(event)
    for track in by_track.values():
        track.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[float] = []
        for event in track:
            start, end = event["ts"], event["ts"] + event["dur"]
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1] + 1e-3, f"{event['name']} overlaps its parent"
            stack.append(end)


def trace(cli: Cli, tmp_path: Path, *args: str, name: str = "fill.json") -> dict[str, Any]:
    path = tmp_path / name
    result = cli("compare", *DEPTH12, *args, "--trace", str(path))
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_trace_is_valid_trace_event_json_and_shows_13_legacy_fills_of_the_deepest_tensors(
    cli: Cli, tmp_path: Path
) -> None:
    data = trace(cli, tmp_path)
    jsonschema.validate(data, SCHEMA)
    events = data["traceEvents"]
    check_nesting(events)
    labels = {e["args"]["name"]: e["tid"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert set(labels) == {"legacy (v0.29)", "per-layer (v0.33)", "unique (v0.33)"}
    tracks = {label.split(" ")[0]: tid for label, tid in labels.items()}
    fills = Counter((e["tid"], e["name"]) for e in events if e.get("cat") == "fill")
    deepest = [name for (tid, name) in fills if tid == tracks["legacy"] and name.startswith(DEEPEST + ".")]
    assert deepest and all(fills[(tracks["legacy"], name)] == 13 for name in deepest)
    assert all(fills[(tracks["per-layer"], name)] == 1 for name in deepest)
    legacy_visits = sorted(
        e["args"]["visit"]
        for e in events
        if e.get("cat") == "fill" and e["name"] == f"{DEEPEST}.weight" and e["tid"] == tracks["legacy"]
    )
    assert legacy_visits == list(range(1, 14))
    assert sum(1 for e in events if e["tid"] == tracks["legacy"] and e.get("cat") == "fill") == 814
    modules = [e for e in events if e["tid"] == tracks["legacy"] and e.get("cat") == "module"]
    names = [m["name"] for m in modules]
    assert names[0] == "<root>" and DEEPEST in names and len(names) == 15  # root, embedding, lm_head, 12 blocks
    assert "after the timed rounds and apart from them" in data["otherData"]["instrumented_round"]
    weight = next(e for e in events if e.get("cat") == "fill" and e["name"] == f"{DEEPEST}.weight")
    assert weight["args"]["dtype"] == "float32" and weight["args"]["bytes"] == 32 * 32 * 4


def test_the_trace_also_lands_in_the_json_results(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = cli("compare", *DEPTH12, "-s", "per-layer", "--trace", str(tmp_path / "t.json"), "--json", str(out))
    assert result.exit_code == 0, result.stderr
    saved = json.loads(out.read_text())["compare"]["trace"]
    assert [t["strategy"] for t in saved] == ["per-layer"]
    assert sum(1 for s in saved[0]["spans"] if s["kind"] == "fill") == 110


def test_speedscope_file_has_balanced_events(cli: Cli, tmp_path: Path) -> None:
    data = trace(cli, tmp_path, "-s", "legacy", name="fill.speedscope.json")
    assert data["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    (profile,) = data["profiles"]
    frames = data["shared"]["frames"]
    stack: list[int] = []
    last = 0.0
    for event in profile["events"]:
        assert event["at"] >= last - 1e-3
        last = event["at"]
        if event["type"] == "O":
            stack.append(event["frame"])
        else:
            assert stack.pop() == event["frame"]
    assert not stack
    deepest = f"fill {DEEPEST}.weight"
    index = next(i for i, f in enumerate(frames) if f["name"] == deepest)
    assert sum(1 for e in profile["events"] if e["frame"] == index and e["type"] == "O") == 13


def test_trace_refuses_to_overwrite(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text("{}")
    result = cli("compare", *DEPTH12, "--trace", str(path))
    assert result.exit_code == 2
    assert "--trace" in result.stderr and "--force" in result.stderr


@pytest.mark.parametrize("fmt", ["chrome", "speedscope"])
def test_results_without_a_trace_say_how_to_get_one(fmt: str) -> None:
    from dummyprof.reports.trace_formats import chrome_trace, speedscope
    from dummyprof.results.compare import CompareResult
    from dummyprof.results.session import Results

    with pytest.raises(ValueError, match="compare --trace"):
        (chrome_trace if fmt == "chrome" else speedscope)(Results(command="compare", compare=CompareResult()))
