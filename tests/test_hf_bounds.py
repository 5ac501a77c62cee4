"""Issue #17.3: every size field of an hf: config checked and named before building; the meta build bounded."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from torch import nn

from dummyprof.errors import DoesNotFitError, UsageError
from dummyprof.models.huggingface import hf_source
from dummyprof.models.loading import callable_source
from dummyprof.models.meta_bounds import BuildLimits, BuildStopped, bounded_build
from tests.conftest import CliResult

pytest.importorskip("transformers")

LLAMA = Path("tests/data/Llama-3.1-8B.json")
TINY = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2}
TINY |= {"head_dim": 16, "vocab_size": 256, "num_hidden_layers": 2}


def _config(tmp_path: Path, **changes: Any) -> str:
    data = json.loads(LLAMA.read_text()) | TINY
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return f"hf:{path}"


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"num_attention_heads": 0}, "num_attention_heads", "0 builds nothing"),
        ({"head_dim": 0}, "head_dim", "0 builds nothing"),
        ({"hidden_size": -64}, "hidden_size", "-64 is negative"),
        ({"intermediate_size": 0}, "intermediate_size", "0 builds nothing"),
        ({"vocab_size": 1e20}, "vocab_size", "1e+20 is a float where a whole number belongs"),
        ({"vocab_size": 10**20}, "vocab_size", "beyond any model"),
        ({"hidden_size": 64.0}, "hidden_size", "a float where a whole number belongs; write 64"),
        ({"num_attention_heads": 7, "head_dim": None}, "num_attention_heads", "7 heads do not divide hidden_size 64"),
        ({"num_key_value_heads": 3}, "num_key_value_heads", "3 key/value heads do not divide num_attention_heads 4"),
    ],
)
def test_each_bad_field_is_named_on_one_line(tmp_path: Path, changes: dict[str, Any], field: str, words: str) -> None:
    spec = _config(tmp_path, **changes)
    with pytest.raises(UsageError) as caught:
        hf_source(spec)
    assert caught.value.flag == "--model"
    assert f"{spec}: config field {field}: " in caught.value.message
    assert words in caught.value.message
    assert "\n" not in str(caught.value)


def test_a_bad_model_arg_names_the_field_under_model_arg(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        hf_source(_config(tmp_path), {"num_attention_heads": 0})
    assert caught.value.flag == "--model-arg"
    assert (
        caught.value.message
        == "config field num_attention_heads: 0 builds nothing (or divides by zero); give at least 1"
    )
    with pytest.raises(UsageError) as caught:
        hf_source(_config(tmp_path), {"num_key_value_heads": 3})
    assert caught.value.flag == "--model-arg"
    assert "config field num_key_value_heads: 3 key/value heads do not divide" in caught.value.message


def test_a_nested_config_field_is_named_with_its_path(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    data = json.loads(LLAMA.read_text()) | TINY | {"text_config": {"hidden_size": -1}}
    path.write_text(json.dumps(data))
    with pytest.raises(UsageError, match=r"config field text_config\.hidden_size: -1 is negative"):
        hf_source(f"hf:{path}")


def test_a_billion_layers_is_refused_before_building(tmp_path: Path) -> None:
    """Estimated from builds of one and two layers (29 modules and tensors per Llama layer, 13 besides)."""
    limits = BuildLimits(seconds=1e9, max_objects=10_000)
    with pytest.raises(DoesNotFitError) as caught:
        hf_source(_config(tmp_path, num_hidden_layers=10**9), limits=limits)
    message = caught.value.message
    assert ": config field num_hidden_layers: 1,000,000,000 layers would build about 29,000,000,013 modules" in message
    assert "more than the 10,000 this machine's memory holds" in message
    assert "at most 344 layers fit: pass --model-arg num_hidden_layers=344" in message  # 13 + 29 * 344 <= 10,000


class FakeClock:
    """Each reading is ``step`` seconds after the last."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_a_build_estimated_past_the_time_budget_is_refused_naming_it(tmp_path: Path) -> None:
    offer = lambda build_s: 1234  # noqa: E731 (tests/test_true_advice.py follows the real offer)
    limits = BuildLimits(seconds=10.0, time_field="time_budget", clock=FakeClock(0.01), budget_for=offer)
    with pytest.raises(DoesNotFitError) as caught:
        hf_source(_config(tmp_path, num_hidden_layers=100_000), limits=limits)
    assert caught.value.field == "time_budget" and caught.value.flag == "--time-budget"
    assert "over its share of the time budget (10 s)" in caught.value.message
    assert caught.value.message.endswith("pass --model-arg num_hidden_layers=611 or give --time-budget 1234s")


def _layers(count: int) -> nn.Module:
    return nn.Sequential(*(nn.Linear(2, 2) for _ in range(count)))


def test_a_preset_or_factory_build_stops_within_the_limit_saying_how_far_it_got() -> None:
    limits = BuildLimits(max_objects=300)
    with pytest.raises(DoesNotFitError) as caught:
        callable_source("big:fn", _layers, {"count": 10**9}, source="big:fn", description="big", limits=limits)
    assert caught.value.flag == "--model"
    assert "big:fn: building it on meta stopped after" in caught.value.message
    assert "with 301 modules and tensors, more than the 300" in caught.value.message


def test_the_time_limit_stops_a_build_from_inside() -> None:
    limits = BuildLimits(seconds=5.0, clock=FakeClock(1.0))
    with pytest.raises(BuildStopped) as caught, bounded_build(limits):
        _layers(1000)
    # the clock is read every 64 objects, one fake second each: the 6th reading is past 5 s
    assert caught.value.reason == "time" and caught.value.objects == 6 * 64


def test_hooks_are_removed_after_a_bounded_build() -> None:
    with bounded_build(BuildLimits(max_objects=5)):
        pass
    _layers(10)  # 30 objects: would stop were a hook left behind


@pytest.fixture
def no_budget_memory(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from dummyprof.scenarios import model_choice

    monkeypatch.setattr(model_choice, "host_budget", lambda max_memory=None: 4096 * 1000)
    yield


def test_cli_a_billion_layers_via_model_arg_is_one_line_exit_2(
    cli: Callable[..., CliResult], tmp_path: Path, no_budget_memory: None
) -> None:
    spec = _config(tmp_path)
    result = cli("inspect", "--model", spec, "--model-arg", "num_hidden_layers=1000000000")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert "config field num_hidden_layers: 1,000,000,000 layers would build about" in lines[0]


# Issue #26.5: every path that builds a model goes through the bound (here 1,000 objects: no_budget_memory).


def test_a_config_that_builds_a_list_per_layer_is_never_made_with_a_billion_layers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_budget_memory: None
) -> None:
    """qwen2's config makes ``layer_types`` one entry per layer: 10^9 of them grew memory for minutes."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    from dummyprof.scenarios.model_choice import choose_source

    config_class = CONFIG_MAPPING["qwen2"]
    made = config_class.from_dict

    def from_dict(data: dict[str, Any], **kwargs: Any) -> Any:
        assert data["num_hidden_layers"] <= 1000, "the config was made with every layer"
        return made(data, **kwargs)

    monkeypatch.setattr(config_class, "from_dict", from_dict)
    spec = _config(tmp_path, model_type="qwen2", rope_scaling=None, num_hidden_layers=10**9)
    with pytest.raises(DoesNotFitError) as caught:
        choose_source(model=spec, preset=None, model_args={})
    assert "config field num_hidden_layers: 1,000,000,000 layers would build about 29,000,000,013" in str(caught.value)
    # the advice holds when followed: the config is made again with the layer count given (layer_types follows)
    fits = int(re.search(r"pass --model-arg num_hidden_layers=(\d+)$", caught.value.message).group(1))  # type: ignore[union-attr]
    source = hf_source(spec, {"num_hidden_layers": fits}, limits=BuildLimits(max_objects=29 * fits + 13))
    assert source.options["num_hidden_layers"] == fits and source.estimated_bytes
    nested = _config(tmp_path, text_config={"model_type": "qwen2", "num_hidden_layers": 10**9})
    with pytest.raises(DoesNotFitError, match=r"config field text_config\.num_hidden_layers: 1,000,000,000 layers"):
        choose_source(model=nested, preset=None, model_args={})


def test_the_builds_that_estimate_a_config_are_bounded_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One layer can be huge by another field (experts, say): the one- and two-layer builds stop like any other."""
    from dummyprof.models import huggingface

    monkeypatch.setattr(
        huggingface, "_build", lambda config, trust, dtype=None: _layers(1000 * config.num_hidden_layers)
    )
    with pytest.raises(DoesNotFitError) as caught:
        hf_source(_config(tmp_path), limits=BuildLimits(max_objects=300))
    assert "building it on meta stopped after" in caught.value.message
    assert "with 301 modules and tensors, more than the 300" in caught.value.message


GROWS = """\
import torch

CALLS = []


def build(layers=2):
    CALLS.append(layers)  # the first call sizes it; every later one is ten thousand times larger
    return torch.nn.Sequential(*(torch.nn.Linear(2, 2) for _ in range(layers * (1 if len(CALLS) == 1 else 10_000))))
"""


def test_every_later_build_on_meta_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_budget_memory: None
) -> None:
    import torch

    from dummyprof.models.synthetic import TreeSpec
    from dummyprof.scenarios.model_choice import choose_source

    model = tmp_path / "grows.py"
    model.write_text(GROWS)
    meta = torch.device("meta")
    source = choose_source(model=f"{model}:build", preset=None, model_args={})
    stopped = r"grows.py:build\(\): building it on meta stopped after .* more than the 1,000"
    with pytest.raises(DoesNotFitError, match=stopped):
        source.build(meta)
    hf = choose_source(model=_config(tmp_path), preset=None, model_args={})
    from dummyprof.models import huggingface

    monkeypatch.setattr(huggingface, "_build", lambda config, trust, dtype=None: _layers(10**5))
    assert hf.construct is not None  # audit's construction values: a fresh build on meta
    with pytest.raises(DoesNotFitError, match=r"LlamaForCausalLM from .* stopped after .* more than the 1,000"):
        hf.construct()
    tree = choose_source(model=None, preset=None, model_args={}, tree=TreeSpec(depth=2, width=16, hidden=32))
    with pytest.raises(DoesNotFitError) as caught:
        tree.build(meta)
    assert caught.value.flag == "--hidden"
    assert "synthetic tree: depth 2, width 16" in caught.value.message
    assert caught.value.message.endswith("this machine's memory holds as Python objects; lower --width or --depth")


def test_the_python_api_builds_within_the_bound(tmp_path: Path, no_budget_memory: None) -> None:
    import dummyprof

    with pytest.raises(DoesNotFitError, match="building it on meta stopped after"):
        dummyprof.load_model("tests/fixtures/models.py:build", depth=2000)
    with pytest.raises(DoesNotFitError, match="preset dense-decoder: building it on meta stopped after"):
        dummyprof.build_preset("dense-decoder", layers=1000)


def test_a_build_stopped_past_its_share_of_the_time_budget_promises_no_budget() -> None:
    """Stopped mid-build, nothing predicts the whole build: what is known is said, and no number offered."""
    limits = BuildLimits(seconds=5.0, time_field="time_budget", clock=FakeClock(1.0), budget_for=lambda s: 99)
    with pytest.raises(DoesNotFitError) as caught:
        callable_source("big:fn", _layers, {"count": 10**9}, source="big:fn", description="big", limits=limits)
    assert caught.value.field == "time_budget"
    assert caught.value.message == (
        "big:fn: building it on meta stopped after 7.0 s with 384 modules and tensors, past its share of the time "
        "budget (5 s); build a smaller model (fewer layers or experts in --model-arg); how long the whole build "
        "takes is not predicted, so no --time-budget can be promised"
    )
