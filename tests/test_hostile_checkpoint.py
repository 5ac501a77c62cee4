"""A hand-edited checkpoint config: every quantization field and every rotary field is checked where it enters,
refused in one line naming the flag and the field (exit 2), and no figure shown is impossible."""

from __future__ import annotations

import copy
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dummyprof.deploy.name_patterns import MAX_STATES, NamePattern, PatternError, match
from tests.conftest import CliResult

Cli = Callable[..., CliResult]
DATA = Path("tests/data")
FIX = "correct it in the config, or give --quantization none to count the model unquantized"


def _config(tmp_path: Path, base: str, quant: dict[str, Any] | None = None, **fields: Any) -> str:
    data = json.loads((DATA / f"{base}.json").read_text())
    data.update({"num_hidden_layers": 1, **fields})
    if "layer_types" in data:  # gpt-oss: one per layer
        data["layer_types"] = data["layer_types"][: data["num_hidden_layers"]]
    if quant is not None:
        data["quantization_config"] = quant
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return f"hf:{path}"


def _refused(result: CliResult, flag: str, *words: str) -> None:
    assert result.exit_code == 2, result.stderr + result.stdout
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith(f"dummyprof: error: {flag}: "), result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


# ---- class 1: quantization fields --------------------------------------------------------------------------------

GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}


@pytest.mark.parametrize(
    ("base", "edit", "field", "shown"),
    [
        ("DeepSeek-V3", {"weight_block_size": [-128, -128]}, "weight_block_size[0]", "-128 is not a whole number"),
        ("DeepSeek-V3", {"weight_block_size": ["128", 128]}, "weight_block_size[0]", "'128' is not a whole number"),
        ("DeepSeek-V3", {"weight_block_size": 128}, "weight_block_size", "128 is not a block"),
        ("DeepSeek-V3", {"ignored_layers": "lm_head"}, "ignored_layers", "is not a list of module names"),
        (None, {"bits": -4}, "bits", "-4 is not one of 2, 3, 4, 8"),
        (None, {"bits": 4.0}, "bits", "4.0 is not a whole number"),
        (None, {"group_size": 0}, "group_size", "0 is not a whole number above 0 (or -1: channelwise)"),
        (None, {"dynamic": {"-:([": {}}}, "dynamic['-:([']", "is not a regular expression (unterminated"),
        (None, {"dynamic": {r"+:(a)\1": {}}}, "dynamic['+:(a)\\\\1']", "has a backreference"),
        (None, {"dynamic": {"+:.*": {"bits": 5}}}, "dynamic['+:.*'].bits", "5 is not one of 2, 3, 4, 8"),
        ("Llama-3.1-8B-Instruct-AWQ-INT4", {"bits": 3}, "bits", "3 is not one of 4, 8"),
        ("Llama-3.1-8B-Instruct-AWQ-INT4", {"group_size": -128}, "group_size", "-128 is not a whole number above 0"),
        ("Qwen3-30B-A3B-FP8-dynamic", {"ignore": ["re:(["]}, "ignore[0]", "is not a regular expression"),
        ("Qwen3-30B-A3B-FP8-dynamic", {"ignore": ["re:(?=x)"]}, "ignore[0]", "has a lookahead or lookbehind"),
        (
            "DeepSeek-R1-FP4",
            {"quantization": {"quant_algo": "NVFP4", "group_size": -16}},
            "quantization.group_size",
            "-16 is not a whole number",
        ),
        ("gpt-oss-20b", {"modules_to_not_convert": [1]}, "modules_to_not_convert", "is not a list of module names"),
    ],
    ids=lambda v: None if isinstance(v, (dict, str)) else "gptq",
)
def test_a_quantization_field_no_checkpoint_holds_is_one_line_naming_it(
    tmp_path: Path, cli: Cli, base: str | None, edit: dict[str, Any], field: str, shown: str
) -> None:
    # before: a RuntimeError from torch.empty (negative dimension), re.error, TypeError: tracebacks, exit 1
    quant = dict(GPTQ) if base is None else json.loads((DATA / f"{base}.json").read_text())["quantization_config"]
    quant.update(edit)
    model = _config(tmp_path, base or "Llama-3.1-8B", quant)
    result = cli("inspect", "--model", model, "--tp", "2", "-q")
    _refused(result, "--quantization", f"quantization_config.{field} ", shown, FIX)
    assert cli("inspect", "--model", model, "--tp", "2", "-q", "--quantization", "none").exit_code == 0


def test_a_pathological_pattern_is_matched_in_bounded_time(tmp_path: Path, cli: Cli) -> None:
    # before: Python's re backtracks through 2^n ways of splitting every module name; the run never ended
    quant = dict(GPTQ, dynamic={"-:(.|.)*(.|.)*Z": {}})
    started = time.perf_counter()
    result = cli("inspect", "--model", _config(tmp_path, "Llama-3.1-8B", quant, num_hidden_layers=2), "-q")
    assert result.exit_code == 0, result.stderr
    assert time.perf_counter() - started < 60  # re takes days on the 30-character names


# ---- the matcher: re.match's answer, without backtracking --------------------------------------------------------

NAMES = [
    "model.layers.0.mlp.gate",
    "model.layers.1.mlp.gate_proj",
    "model.layers.12.self_attn.q_proj",
    "lm_head",
    "LM_HEAD",
    "model.layers.0.mlp.experts.0.gate_proj",
    "",
    "a\n",
]
PATTERNS = [
    r".*mlp.gate$",
    r"model\.layers\.1\.mlp\..*",
    r"(?i)lm_head",
    r"model.layers.\d+.self_attn",
    r".*\.0\.(gate|up)_proj$",
    r"[\w.]+proj\b",
    r"(?:q|k|v)_proj",
    r"model\.layers\.[^2-9]\.",
    r"a\Z",
    r"a$",
    r"(?m)a$",
    r"x?",
    r"model.{3,5}layers",
    r"\Blayers",
    r"(?s).*\n",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_matcher_answers_as_re_match(pattern: str) -> None:
    for name in NAMES:
        assert match(pattern, name) == (re.match(pattern, name) is not None), (pattern, name)


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("([", "not a regular expression"),
        (r"(a)\1", "backreference"),
        ("(?(1)a|b)", "not a regular expression"),
        ("(?<=a)b", "lookahead or lookbehind"),
        ("(?!a)", "lookahead or lookbehind"),
        ("(?>a)", "atomic group"),
        ("a*+", "possessive quantifier"),
        ("(a{1000}){1000}", f"more than {MAX_STATES:,} states"),
        ("a" * 1001, "over 1,000"),
    ],
)
def test_what_the_matcher_cannot_run_is_refused_saying_why(pattern: str, why: str) -> None:
    with pytest.raises(PatternError, match=re.escape(why)):
        NamePattern(pattern)


def test_nested_quantifiers_cost_states_times_characters() -> None:
    started = time.perf_counter()
    assert not match("(a*)*b", "a" * 20_000)
    assert not match("(.|.)*(.|.)*Z", "model.layers.0.mlp.experts.0.gate_proj" * 100)
    assert time.perf_counter() - started < 10  # re.match: 2^20000 ways


# ---- class 2: rotary-cache fields, and no impossible figure --------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "fields", "field", "shown"),
    [
        ("Qwen3-30B-A3B", {"dual_chunk_attention_config": {"chunk_size": 1000, "local_size": 200000}},
         "dual_chunk_attention_config.local_size", "200,000 is larger than chunk_size 1,000"),
        ("Qwen3-30B-A3B", {"dual_chunk_attention_config": {"chunk_size": "x", "local_size": 2}},
         "dual_chunk_attention_config.chunk_size", "'x' is text where a whole number belongs"),
        ("Llama-3.1-8B", {"rope_scaling": {"rope_type": "default", "rope_dim": -64}},
         "rope_scaling.rope_dim", "-64 is negative"),
        ("Llama-3.1-8B", {"rope_scaling": {"rope_type": "default", "rope_dim": "x"}},
         "rope_scaling.rope_dim", "'x' is text where a whole number belongs"),
        ("Llama-3.1-8B", {"rope_scaling": {"rope_type": "yarn", "factor": 8, "original_max_position_embeddings": -8}},
         "rope_scaling.original_max_position_embeddings", "-8 is negative"),
        ("Llama-3.1-8B", {"rope_scaling": {"rope_type": "yarn", "factor": 8, "original_max_position_embeddings": "x"}},
         "rope_scaling.original_max_position_embeddings", "'x' is text where a whole number belongs"),
        ("Llama-3.1-8B", {"rope_scaling": {"rope_type": "default", "partial_rotary_factor": "x"}},
         "rope_scaling.partial_rotary_factor", "'x' is not a number"),
        ("Llama-3.1-8B", {"partial_rotary_factor": 2.0}, "partial_rotary_factor", "2.0 is more than the whole head"),
    ],
    ids=["dual-chunk-local-over-chunk", "dual-chunk-text", "negative-rope-dim", "text-rope-dim",
         "negative-original", "text-original", "text-partial", "partial-over-1"],
)  # fmt: skip
def test_a_rotary_field_no_model_holds_is_one_line_naming_it(
    tmp_path: Path, cli: Cli, base: str, fields: dict[str, Any], field: str, shown: str
) -> None:
    # before: "-32.83 MiB" of rotary cache per rank and an inflated room on the device, or a ValueError traceback
    result = cli("inspect", "--model", _config(tmp_path, base, **fields), "--tp", "2", "--json", "-")
    _refused(result, "--model", f"config field {field}: {shown}")
    assert result.stdout == ""


def _config_object(**rope: Any) -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(
        rope_parameters=rope, num_attention_heads=8, hidden_size=1024, max_position_embeddings=4096
    )  # as a remote-code config or a --model-arg leaves it: past hf_fields' checks


@pytest.mark.parametrize(
    ("rope", "dual", "shown"),
    [
        ({"rope_type": "default", "rope_dim": -64}, None, "rope_scaling.rope_dim -64 is not a whole number from 1"),
        ({"rope_type": "default", "rope_dim": "x"}, None, "rope_scaling.rope_dim 'x' is not a whole number"),
        ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": -1}, None,
         "rope_scaling.original_max_position_embeddings -1 is not a whole number from 1"),
        ({"rope_type": "default", "partial_rotary_factor": -0.5}, None, "partial_rotary_factor -0.5 is not a share"),
        ({"rope_type": "default"}, {"chunk_size": 10, "local_size": 20},
         "dual_chunk_attention_config.local_size 20 is larger than its chunk_size 10"),
        ({"rope_type": "default"}, {"chunk_size": 10, "local_size": "x"},
         "dual_chunk_attention_config.local_size 'x' is not a whole number"),
    ],
)  # fmt: skip
def test_load_buffers_checks_each_rotary_field_where_it_enters(rope: dict[str, Any], dual: Any, shown: str) -> None:
    import torch

    from dummyprof.deploy.load_buffers import load_buffers
    from dummyprof.errors import UsageError
    from dummyprof.models.presets import dense_decoder

    with torch.device("meta"):
        model = dense_decoder()
    config = _config_object(**rope)
    config.dual_chunk_attention_config = dual
    with pytest.raises(UsageError) as caught:
        load_buffers(config, model, ep=1, experts=0)
    assert caught.value.field == "model" and caught.value.message.startswith(f"the config's {shown}")


def _deployment(**rank: Any) -> Any:
    from dummyprof.results.deployment import DeploymentResult, RankEntry
    from dummyprof.results.session import Results

    entry = RankEntry(held_bytes=100, **rank)
    deployment = DeploymentResult(ranks=[entry], world=1, model_bytes=100, layer_count=0, device_memory_bytes=1000)
    return Results(command="deployment", deployment=deployment)


@pytest.mark.parametrize(
    ("rank", "where"),
    [
        ({"rotary_cache_bytes": -34_420_736}, "rotary_cache_bytes"),
        ({"device_room_bytes": 5000, "device_fits": True}, "device_room_bytes: 5000 is more than the device's 1000"),
    ],
    ids=["negative-bytes", "room-beyond-the-device"],
)
def test_an_impossible_figure_is_a_bug_caught_not_shown(rank: dict[str, Any], where: str) -> None:
    from dummyprof.errors import ImpossibleFigure
    from dummyprof.results.whole import check_possible

    check_possible(_deployment())
    with pytest.raises(ImpossibleFigure, match=re.escape(where)):
        check_possible(_deployment(**rank))


# ---- the property: any edit of a quantization or rotary field runs to exit 0 or 2, shows only possible figures,
# ---- and what it writes reads back ---------------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

# Each family's published config, made small where it does not matter (the fields edited are what the rules read).
BASES = {
    "fp8": ("DeepSeek-V3", {"n_routed_experts": 8, "num_experts_per_tok": 2, "first_k_dense_replace": 0}),
    "compressed-tensors fp8": ("Qwen3-30B-A3B-FP8-dynamic", {"num_experts": 8, "num_experts_per_tok": 2}),
    "compressed-tensors w4a16": ("Qwen3-30B-A3B-quantized.w4a16", {"num_experts": 8, "num_experts_per_tok": 2}),
    "gptq": ("Llama-3.1-8B", {"quantization_config": {**GPTQ, "dynamic": {r"-:.*\.1\.mlp\..*": {"bits": 8}}}}),
    "awq": ("Llama-3.1-8B-Instruct-AWQ-INT4", {}),
    "modelopt fp8": ("Llama-3.1-8B-Instruct-FP8-modelopt", {}),
    "modelopt nvfp4": ("DeepSeek-R1-FP4", {"n_routed_experts": 8, "num_experts_per_tok": 2}),
    "mxfp4": ("gpt-oss-20b", {"num_local_experts": 8}),
    "rotary": ("Qwen3-30B-A3B", {"num_experts": 8, "num_experts_per_tok": 2,
                                "dual_chunk_attention_config": {"chunk_size": 8192, "local_size": 1024}}),
    "rotary yarn": ("Llama-3.1-8B", {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "rope_dim": 64,
                                                      "original_max_position_embeddings": 8192}}),
}  # fmt: skip
PATTERN_LISTS = ("ignore", "targets", "modules_to_not_convert", "exclude_modules", "ignored_layers")
ROTARY = ("rope_scaling", "rope_parameters", "dual_chunk_attention_config", "partial_rotary_factor", "rope_theta",
          "max_position_embeddings", "qk_rope_head_dim", "head_dim")  # fmt: skip


def _base(name: str) -> dict[str, Any]:
    file, edits = BASES[name]
    data = json.loads((DATA / f"{file}.json").read_text())
    data.update({"num_hidden_layers": 2, **copy.deepcopy(edits)})  # edited in place by the test
    if "layer_types" in data:
        data["layer_types"] = data["layer_types"][:2]
    return data


def _fields(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], str]]:
    """Every numeric field (``number``), pattern (``pattern``) and pattern key (``key``) under ``data``."""
    found: list[tuple[tuple[Any, ...], str]] = []
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else []
    for key, value in items:
        here = (*path, key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            found.append((here, "number"))
        elif isinstance(value, str) and len(path) >= 1 and path[-1] in PATTERN_LISTS:
            found.append((here, "pattern"))
        elif isinstance(value, (dict, list)):
            found += _fields(value, here)
        if key == "dynamic" or (len(path) >= 1 and path[-1] == "dynamic"):
            found += [((*here, "<key>"), "key")] if len(path) >= 1 and path[-1] == "dynamic" else []
    return found


def _edit_paths(name: str) -> list[tuple[tuple[Any, ...], str]]:
    data = _base(name)
    quant = [((("quantization_config", *p), kind)) for p, kind in _fields(data.get("quantization_config") or {})]
    rotary = [(p, kind) for p, kind in _fields({k: data[k] for k in ROTARY if k in data}) if kind == "number"]
    return quant + rotary


NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 1, 2, 3, 5, 7, 16, 32, 33, 64, 100, 128, 2**31, 2**32 + 1, 2**63]),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(["x", "128", None, True, [], [128], {}]),
)
PATTERNS = st.one_of(
    st.text(alphabet="re:.*+?()[]{}|\\^$ab01_-", max_size=24),
    st.sampled_from(["re:([", "re:(a)\\1", "re:(?=x)", "re:(.|.)*(.|.)*Z", "re:a{1000}{1000}", "-:([", "+:(?<=a)"]),
)
EDITS = st.sampled_from(sorted(BASES)).flatmap(
    lambda name: st.tuples(st.just(name), st.sampled_from(_edit_paths(name))).flatmap(
        lambda picked: st.tuples(
            st.just(picked[0]), st.just(picked[1][0]), NUMBERS if picked[1][1] == "number" else PATTERNS
        )
    )
)


def _apply(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    parent = data
    for key in path[:-2] if path[-1] == "<key>" else path[:-1]:
        parent = parent[key]
    if path[-1] == "<key>":  # a GPTQ dynamic rule's pattern: the key itself
        rule = path[-2]
        parent[value if isinstance(value, str) else str(value)] = parent.pop(rule)
    else:
        parent[path[-1]] = value


def _bytes_figures(value: Any, where: str = "$") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [f for k, v in value.items() for f in _bytes_figures(v, f"{where}.{k}")] + [
            (f"{where}.{k}", v) for k, v in value.items() if k.endswith("_bytes") and isinstance(v, (int, float))
        ]
    if isinstance(value, list):
        return [f for i, v in enumerate(value) for f in _bytes_figures(v, f"{where}[{i}]")]
    return []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edit=EDITS)
def test_any_edit_of_a_checkpoint_field_ends_as_promised(tmp_path: Path, cli: Cli, edit: tuple[str, Any, Any]) -> None:
    name, path, value = edit
    data = _base(name)
    _apply(data, path, value)
    config, out = tmp_path / "config.json", tmp_path / "out.json"
    config.write_text(json.dumps(data))
    result = cli("inspect", "--model", f"hf:{config}", "--tp", "2", "--json", str(out), "--force", "-q")
    assert result.exit_code in (0, 2), (edit, result.stderr)
    assert "Traceback" not in result.stderr and "-" not in re.findall(r"(-?)\d[\d.,]* [KMGT]?i?B\b", result.stdout)
    if result.exit_code == 2:
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("dummyprof: error: --"), result.stderr
        return
    figures = _bytes_figures(json.loads(out.read_text()))
    assert figures and all(v >= 0 for _, v in figures), [f for f in figures if f[1] < 0]
    shown = cli("report", str(out), "-q")
    assert shown.exit_code == 0, shown.stderr
