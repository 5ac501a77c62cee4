"""Issue #17.6: advice names the real limit: disk space for an mmap backing, the machine for a huge --dim."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from dummyprof.allocation import backings
from dummyprof.errors import DoesNotFitError, UsageError, flag_for
from dummyprof.measure.budget import HostMemory, limit_flag, memory_fix
from dummyprof.measure.engine import SamplingError, sample_sizes
from dummyprof.models.source import FitHint
from dummyprof.models.synthetic import TreeSpec, synthetic_source
from dummyprof.scenarios.engram.options import EngramOptions
from dummyprof.scenarios.engram.run import run
from dummyprof.scenarios.model_choice import fit_words
from dummyprof.schema import Spec, parse, specs
from dummyprof.units import parse_bytes


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


# ---- issue #26.4: a suggested value passes the check that refused it ------------------------------------------------


def _offer(message: str, flag: str) -> list[str]:
    """Every value the message offers for ``flag`` ("try --tp 4 or --tp 28", "give --dp 8 or fewer")."""
    return re.findall(rf"{re.escape(flag)} (\d\S*?)(?:[ ,;)]|$)", message)


def _commands() -> list[tuple[type, Callable[[Any], object]]]:
    from dummyprof.scenarios.audit.options import AuditOptions
    from dummyprof.scenarios.audit.options import validate as audit
    from dummyprof.scenarios.compare.options import CompareOptions
    from dummyprof.scenarios.compare.options import validate as compare
    from dummyprof.scenarios.engram.options import EngramOptions
    from dummyprof.scenarios.engram.options import validate as engram
    from dummyprof.scenarios.inspect.options import InspectOptions
    from dummyprof.scenarios.inspect.options import validate as inspect

    return [(CompareOptions, compare), (InspectOptions, inspect), (AuditOptions, audit), (EngramOptions, engram)]


def _refused_texts(spec: Spec) -> list[str]:
    texts = ["x", "-1"]
    if spec.minimum is not None:
        texts.append(str(int(spec.minimum) - 1))
    if spec.maximum is not None:
        texts.append(str(spec.maximum + 1))
    return texts


@pytest.mark.parametrize("command", range(4))
def test_every_value_a_flag_refusal_offers_passes_the_whole_check(command: int) -> None:
    """Each whole-number flag of each command, refused at parse time: what it offers parses and validates."""
    cls, validate = _commands()[command]
    offered = 0
    for name, (_, spec) in specs(cls).items():
        if spec.unit not in ("int", "count"):
            continue
        flag = flag_for(name)
        for text in _refused_texts(spec):
            with pytest.raises(UsageError) as refused:
                parse(name, spec, text)
            for value in _offer(refused.value.message, flag):
                validate(dataclasses.replace(cls(), **{name: parse(name, spec, value)}))
                offered += 1
    assert offered  # the test saw advice to follow


@pytest.mark.parametrize(
    ("given", "flag"),
    [
        ({"tp": 2, "ranks_per_node": 9}, "--ranks-per-node"),
        ({"tp": 2, "nproc": 3}, "--nproc"),
        ({"dp": 1_000_000_000}, "--dp"),
        ({"pp": 3, "dp": 30_000}, "--dp"),
        ({"tp": 4, "ep": 131_072}, "--ep"),
        ({"ep": 65_537}, "--ep"),
    ],
)
def test_a_layout_refusal_offers_a_value_the_layout_then_passes(given: dict[str, int], flag: str) -> None:
    from dummyprof.scenarios.compare.options import CompareOptions, validate

    with pytest.raises(UsageError) as refused:
        validate(CompareOptions(**given))
    assert refused.value.flag == flag
    values = _offer(refused.value.message, flag) or re.findall(r"give at most (\d+)", refused.value.message)
    assert values, refused.value.message
    for value in values:
        validate(CompareOptions(**(given | {flag[2:].replace("-", "_"): int(value)})))


def test_ranks_per_node_0_offers_a_value_every_world_passes() -> None:
    from dummyprof.scenarios.compare.options import CompareOptions, validate

    with pytest.raises(UsageError) as refused:
        parse("ranks_per_node", specs(CompareOptions)["ranks_per_node"][1], "0")
    assert refused.value.message == "must be at least 1, got 0; try --ranks-per-node 1"
    validate(CompareOptions(tp=2, ranks_per_node=1))  # 8 was offered before, and refused for a world of 2


def test_the_world_bound_names_itself() -> None:
    from dummyprof.scenarios.inspect.options import InspectOptions, validate

    with pytest.raises(UsageError) as refused:
        validate(InspectOptions(dp=1_000_000_000))
    assert refused.value.message == (
        "tp 1 x pp 1 x dp 1000000000 = 1,000,000,000 ranks, over dummyprof's bound of 65,536 ranks "
        "(MAX_WORLD_RANKS); give --dp 65536 or fewer"
    )


def test_nproc_without_a_layout_names_the_layout_not_another_nproc() -> None:
    from dummyprof.scenarios.compare.options import CompareOptions, validate

    with pytest.raises(UsageError) as refused:
        validate(CompareOptions(nproc=2))
    assert refused.value.message == (
        "runs each rank of a layout as a process, and this layout has 1 rank; give a layout of 2 ranks "
        "first (--tp or --dp, e.g. --dp 2)"
    )
    assert not _offer(refused.value.message, "--nproc")
    validate(CompareOptions(nproc=2, dp=2))  # the advice, followed
    with pytest.raises(UsageError) as below:
        parse("nproc", specs(CompareOptions)["nproc"][1], "0")
    assert below.value.message == "must be at least 2, got 0"  # no value passes for every layout


@pytest.mark.parametrize(("heads", "kv"), [(28, 4), (32, 8), (12, 12), (40, 8)])
def test_every_tp_the_heads_refuse_offers_tps_that_split(heads: int, kv: int) -> None:
    from dummyprof.deploy import ModelDims, ParallelLayout, Sharder
    from dummyprof.models.presets import dense_decoder

    model = dense_decoder(layers=1, hidden=heads * 8, heads=heads, kv_heads=kv, intermediate=heads * 8, vocab=64)
    dims = ModelDims(heads, kv)
    refused_tps = 0
    for tp in range(1, heads + 3):
        try:
            Sharder(model, ParallelLayout(tp=tp), dims)
        except UsageError as exc:
            refused_tps += 1
            offers = _offer(exc.message, "--tp")
            assert offers, str(exc)
            for value in offers:
                Sharder(model, ParallelLayout(tp=int(value)), dims).build(ParallelLayout(tp=int(value)).coords()[0])
    assert refused_tps


def test_tp_7_on_28_heads_and_4_kv_heads_offers_4_or_28() -> None:
    from dummyprof.deploy import ModelDims, ParallelLayout, Sharder
    from dummyprof.models.presets import dense_decoder

    model = dense_decoder(layers=1, hidden=224, heads=28, kv_heads=4, intermediate=224, vocab=1792)
    with pytest.raises(UsageError) as refused:
        Sharder(model, ParallelLayout(tp=7), ModelDims(28, 4))
    assert refused.value.message == (
        "28 attention heads and 4 kv heads do not split over 7 ranks (vLLM: tp divides the attention heads, and "
        "tp and the kv heads divide one another); try --tp 4 or --tp 28"
    )


def _memory(available: int) -> HostMemory:
    return HostMemory(available_bytes=available, machine_available_bytes=available, cgroup=None)


def test_online_fp8_over_the_budget_offers_a_max_memory_that_then_passes() -> None:
    from dummyprof.scenarios.compare.options import CompareOptions
    from dummyprof.scenarios.deployment.online import plan_online_quant

    model = nn.Sequential(nn.Linear(1024, 1024, bias=False, device="meta", dtype=torch.bfloat16))
    options = CompareOptions(online_quant="fp8", max_memory=1 << 20)
    with pytest.raises(UsageError) as refused:
        plan_online_quant(model, options, memory=_memory(1 << 30))
    assert refused.value.flag == "--max-memory"
    [offer] = _offer(refused.value.message, "--max-memory")
    assert offer == "4MiB"  # 2 MiB bf16 + 1 MiB fp8 + 4 KiB ... rounded up to whole MiB: the accounted peak
    given = dataclasses.replace(options, max_memory=parse_bytes("--max-memory", offer))
    plan = plan_online_quant(model, given, memory=_memory(1 << 30))
    assert plan.accounted["per-layer"].peak_bytes <= plan.budget


@pytest.mark.parametrize("max_memory", [None, 1 << 40])
def test_online_fp8_over_the_machine_names_the_machine_and_offers_no_max_memory(max_memory: int | None) -> None:
    from dummyprof.scenarios.compare.options import CompareOptions
    from dummyprof.scenarios.deployment.online import plan_online_quant

    model = nn.Sequential(nn.Linear(1024, 1024, bias=False, device="meta", dtype=torch.bfloat16))
    options = CompareOptions(online_quant="fp8", max_memory=max_memory)  # 1 TiB is not silently capped
    with pytest.raises(UsageError) as refused:
        plan_online_quant(model, options, memory=_memory(1 << 20))
    message = refused.value.message
    assert refused.value.flag == "--online-quant"
    assert "the machine is the limit, not --max-memory" in message
    assert "1.00 MiB available (psutil)" in message
    assert not _offer(message, "--max-memory") and "raise" not in message


def test_a_tp_the_vocabulary_refuses_is_not_offered() -> None:
    """28 heads pass tp 28, but a 64-row vocabulary does not split over 28 ranks: only 4 is offered, and passes."""
    from dummyprof.deploy import ModelDims, ParallelLayout, Sharder
    from dummyprof.models.presets import dense_decoder

    model = dense_decoder(layers=1, hidden=224, heads=28, kv_heads=4, intermediate=224, vocab=64)
    with pytest.raises(UsageError) as refused:
        Sharder(model, ParallelLayout(tp=7), ModelDims(28, 4))
    assert refused.value.message.endswith("; try --tp 4")
    with pytest.raises(UsageError) as vocab:
        Sharder(model, ParallelLayout(tp=28), ModelDims(28, 4))
    assert vocab.value.message == (
        "model.embed_tokens.weight has 64 along the split dimension, which 28 ranks cannot share evenly (vLLM "
        "requires it); try --tp 4"
    )


@pytest.mark.parametrize("command", ["inspect", "compare", "audit"])
def test_the_world_is_refused_while_parsing_before_torch_is_imported(command: str) -> None:
    """--dp 1000000000 answers at once: one line, exit 2, and torch (the scenario) is never imported."""
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "dummyprof",
            command,
            "--preset",
            "dense-decoder",
            "--dp",
            "1000000000",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stderr.splitlines()
    assert done.returncode == 2
    assert [line for line in lines if not line.startswith("import time:")] == [
        "dummyprof: error: --dp: tp 1 x pp 1 x dp 1000000000 = 1,000,000,000 ranks, over dummyprof's bound of 65,536 "
        "ranks (MAX_WORLD_RANKS); give --dp 65536 or fewer"
    ]
    assert not [line for line in lines if line.endswith("| torch")]


# ---- issue #36.6: an offer names a flag the command has, is better than the value refused, and holds with the
# ---- other flags as given --------------------------------------------------------------------------------------

DATA = Path("tests/data")


def _hf(tmp_path: Path, base: str, quant: dict[str, Any] | None = None, **fields: Any) -> str:
    import json

    data = json.loads((DATA / f"{base}.json").read_text())
    data.update(fields)
    if quant is not None:
        data["quantization_config"] = quant
    path = tmp_path / f"{base}.json"
    path.write_text(json.dumps(data))
    return f"hf:{path}"


def _flags(cli: Callable[..., Any], command: str) -> set[str]:
    return set(re.findall(r"--[a-z][a-z-]+", cli(command, "--help").stdout))


def test_a_quantization_offer_names_only_flags_the_command_has(tmp_path: Path, cli: Callable[..., Any]) -> None:
    # before: inspect said "give --online-quant fp8", a flag inspect does not have
    model = _hf(tmp_path, "Llama-3.1-8B", num_hidden_layers=1)
    for command in ("inspect", "audit", "compare"):
        refused = cli(command, "--model", model, "--quantization", "fp8", "-q")
        assert refused.exit_code == 2, refused.stderr
        own = re.sub(r"dummyprof (\w+) (--[a-z-]+)", "", refused.stderr)  # another command's flag, named with it
        assert set(re.findall(r"--[a-z][a-z-]+", own)) <= _flags(cli, command), refused.stderr
        for value in _offer(refused.stderr, "--quantization") or re.findall(r"--quantization (\w+) or (\w+)", own)[0]:
            assert value in ("auto", "none")
    named = re.search(r"dummyprof (\w+) (--[a-z-]+)", refused.stderr)
    assert named is not None and named.group(2) in _flags(cli, named.group(1))
    assert cli("inspect", "--model", model, "--quantization", "auto", "-q").exit_code == 0


def test_a_block_no_tp_splits_offers_no_tp(tmp_path: Path, cli: Callable[..., Any]) -> None:
    # before: "choose a smaller tp" at tp 1, where no tp is smaller and none splits the 100-wide blocks
    quant = {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [100, 100]}
    model = _hf(tmp_path, "DeepSeek-V3", quant, num_hidden_layers=1, n_routed_experts=8)
    refused = cli("inspect", "--model", model, "-q")
    assert refused.exit_code == 2 and refused.stderr.startswith("dummyprof: error: --quantization: "), refused.stderr
    assert "smaller tp" not in refused.stderr and "--tp" not in refused.stderr
    assert "at any tp; give --quantization none" in refused.stderr
    assert cli("inspect", "--model", model, "--quantization", "none", "-q").exit_code == 0


def test_a_tp_the_fp8_blocks_refuse_offers_a_tp_they_take(tmp_path: Path, cli: Callable[..., Any]) -> None:
    # before: "choose a smaller tp", no value; the nearest that splits every block is computed and tried first
    model = _hf(tmp_path, "DeepSeek-V3", num_hidden_layers=1, n_routed_experts=8)
    refused = cli("inspect", "--model", model, "--tp", "64", "-q")
    assert refused.exit_code == 2 and "is not a multiple of the fp8 block 128" in refused.stderr, refused.stderr
    offers = _offer(refused.stderr, "--tp")
    assert offers == ["16"], refused.stderr  # 32: down_proj's 576 inputs per rank; above 64, only 128 splits heads
    for tp in offers:
        followed = cli("inspect", "--model", model, "--tp", tp, "-q")
        assert followed.exit_code == 0, followed.stderr


@pytest.mark.parametrize(
    ("given", "offered"),
    [
        ({"heads": "6", "tp": "0"}, ["1"]),  # before: --tp 8, which 6 heads over 8 shards refuse
        ({"heads": "6", "dp": "4", "tp": "0"}, []),  # neither 8 nor 1 splits 6 heads with dp 4: no offer
        ({"tp": "0"}, ["8"]),
        ({"rows": "4", "tp": "0"}, ["1"]),  # 4 rows cannot give 8 ranks a head each
    ],
)
def test_a_parse_time_offer_holds_with_the_other_flags_as_given(
    given: dict[str, str], offered: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from dummyprof.cli.app import main
    from dummyprof.scenarios.engram.options import validate

    args = [a for flag, value in given.items() for a in (f"--{flag}", value)]
    assert main(["engram", *args, "-q"]) == 2
    message = capsys.readouterr().err
    assert message.startswith("dummyprof: error: --tp: must be at least 1, got 0"), message
    assert _offer(message, "--tp") == offered, message
    for tp in offered:
        values = {k: parse(k, specs(EngramOptions)[k][1], v) for k, v in {**given, "tp": tp}.items()}
        validate(EngramOptions(**values))  # the whole check, torch and all: passes


# ---- issue #36.7: time advice carries the margin its own noise needs, and holds when followed ---------------------


class NoisyClock:
    """A machine whose every timed step takes ``step`` seconds times the next factor of ``factors`` (from ``phase``):
    the same noise for every run, each run meeting it at its own phase."""

    def __init__(self, factors: list[float], phase: int = 0, step: float = 1.0) -> None:
        import itertools

        self.now, self.step = 0.0, step
        self.factors = itertools.islice(itertools.cycle(factors), phase, None)

    def __call__(self) -> float:
        self.now += self.step * next(self.factors)
        return self.now


class _Held(Exception):
    """The budget check passed: the run stops there (what follows is other tests' business)."""


def _engram_offer(budget: float, factors: list[float], phase: int, monkeypatch: pytest.MonkeyPatch) -> int | None:
    from dummyprof.errors import DoesNotFitError
    from dummyprof.scenarios.engram import run as engram_run

    check = engram_run._refuse_a_budget_too_short

    def checked(*args: Any, **kwargs: Any) -> None:
        check(*args, **kwargs)
        raise _Held

    monkeypatch.setattr(engram_run, "_refuse_a_budget_too_short", checked)
    options = EngramOptions(rows=2_000_000_000, dim=64, offload=True, max_memory=16 * 2**20, time_budget_s=budget)
    try:
        run(options, clock=NoisyClock(factors, phase))
    except _Held:
        return None
    except DoesNotFitError as refused:
        found = re.search(r"cannot hold the least this run measures.*raise --time-budget to (\d+) s", refused.message)
        assert found is not None, refused.message
        return int(found.group(1))
    raise AssertionError("the budget check did not run")


@pytest.mark.parametrize("phase", range(3))
def test_a_time_budget_engram_offers_holds_when_followed_on_the_same_machine(
    phase: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before: the offer was the lower prediction itself (ceil(least)); followed, a run meeting the noise at another
    # phase predicted more and was refused ("raise --time-budget to 3 s" then "~3.68 s predicted")
    factors = [1.0, 1.6, 0.7]
    offer = _engram_offer(60, factors, phase, monkeypatch)
    assert offer is not None
    for again in range(len(factors)):
        assert _engram_offer(offer, factors, again, monkeypatch) is None, (offer, again)


def test_a_layer_count_offered_under_the_time_limit_holds_when_followed(tmp_path: Path) -> None:
    # before: sized from one timing of the two-layer build; followed, a slower reading refused it
    import json

    from dummyprof.errors import DoesNotFitError
    from dummyprof.models.huggingface import hf_source
    from dummyprof.models.meta_bounds import BuildLimits

    tiny = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2}
    tiny |= {"head_dim": 16, "vocab_size": 256, "bos_token_id": 1, "eos_token_id": 2}

    def model(layers: int) -> str:
        path = tmp_path / f"{layers}.json"
        path.write_text(
            json.dumps(json.loads((DATA / "Llama-3.1-8B.json").read_text()) | tiny | {"num_hidden_layers": layers})
        )
        return f"hf:{path}"

    factors = [1.0, 1.3, 0.8, 1.1, 0.9, 1.25, 1.0]

    def limits(phase: int) -> BuildLimits:
        return BuildLimits(seconds=0.3, time_field="time_budget", clock=NoisyClock(factors, phase, step=0.01))

    for phase in (0, 6):
        with pytest.raises(DoesNotFitError) as refused:
            hf_source(model(10_000), limits=limits(phase))
        found = re.search(r"about ([\d,]+) layers fit: pass --model-arg num_hidden_layers=(\d+)", refused.value.message)
        assert found is not None, refused.value.message
        for again in range(len(factors)):
            hf_source(model(int(found.group(2))), limits=limits(again))  # not refused


def test_a_time_budget_offered_for_a_meta_build_holds_when_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the meta build has the counting share of --time-budget: the offer is that share's inverse, sized like the
    # layer offer at the slowest reading times their spread
    import json

    from dummyprof.models import huggingface
    from dummyprof.scenarios.compare.sizing import COUNTING_SHARE, counting_limit
    from dummyprof.scenarios.model_choice import meta_build_limits

    tiny = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2}
    tiny |= {"head_dim": 16, "vocab_size": 256, "bos_token_id": 1, "eos_token_id": 2, "num_hidden_layers": 10_000}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(json.loads((DATA / "Llama-3.1-8B.json").read_text()) | tiny))
    check = huggingface._refuse_estimate

    class Passed(BaseException):  # not an Exception: the build turns those into a one-line error
        """The estimate's check passed: the build stops there."""

    def checked(*args: Any, **kwargs: Any) -> None:
        check(*args, **kwargs)
        raise Passed

    monkeypatch.setattr(huggingface, "_refuse_estimate", checked)

    def offer(budget: int, factors: list[float], phase: int) -> int | None:
        limits = meta_build_limits(counting_limit(budget), COUNTING_SHARE)
        limits = dataclasses.replace(limits, clock=NoisyClock(factors, phase, step=0.01))
        try:
            huggingface.hf_source(f"hf:{path}", limits=limits)
        except Passed:
            return None
        except DoesNotFitError as refused:
            assert refused.field == "time_budget", refused.message
            found = re.search(r"time budget \(\d+ s\); .* or give --time-budget (\d+)s$", refused.message)
            assert found is not None, refused.message
            return int(found.group(1))
        raise AssertionError("the estimate was not checked")

    for factors in ([1.0], [1.0, 1.3, 0.8, 1.1, 0.9, 1.25, 1.0]):  # a quiet machine, a noisy one
        for phase in range(len(factors)):
            offered = offer(20, factors, phase)
            assert offered is not None and offered > 20
            for again in range(len(factors)):
                assert offer(offered, factors, again) is None, (factors, phase, offered, again)


def test_one_noisy_call_of_a_millisecond_does_not_multiply_the_engram_offer(monkeypatch: pytest.MonkeyPatch) -> None:
    # before: the margin was the widest spread of any one call's two figures; on a busy machine `constant` read
    # 0.3 ms and 10.6 ms (35x) at 2k rows and turned a run of ~5 s into "raise --time-budget to 171 s"
    from dummyprof.errors import DoesNotFitError
    from dummyprof.scenarios.engram import plan
    from dummyprof.scenarios.engram import run as engram_run

    def costs(small: Any, large: Any, rows: int, *, dearer: bool = False) -> dict[str, plan.CallCost]:
        steady = {name: plan.CallCost(0.5, 0.0) for name in small}
        return steady | {"constant": plan.CallCost(0.035 if dearer else 0.001, 0.0)}

    monkeypatch.setattr(engram_run, "call_costs", costs)
    options = EngramOptions(rows=2_000_000_000, dim=64, offload=True, max_memory=16 * 2**20, time_budget_s=1)
    with pytest.raises(DoesNotFitError) as refused:
        run(options, clock=NoisyClock([1.0], step=0.001))
    said = refused.value.message
    found = re.search(r"\(~([\d.]+) s predicted.*\(~([\d.]+) s\), after ([\d.]+) ms.*to (\d+) s or more", said)
    assert found is not None, said
    probe_s, sampling_s, spent_ms, offer = (float(g) for g in found.groups())
    least = probe_s + sampling_s + spent_ms / 1000
    assert least < offer < 1.1 * least + 1, said  # the dearer reading of the one noisy call, not 35x the run
