"""Per-rank shards on meta: vLLM's placement arithmetic, shapes against formulas from the config numbers, the
bytes identity, exact per-rank counts, and one-line errors for layouts vLLM refuses."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

from dummyprof.deploy import (
    ModelDims,
    ParallelLayout,
    Sharder,
    count_deployment,
)
from dummyprof.deploy.shards import RankShard
from dummyprof.errors import UsageError
from dummyprof.layout import expert_range, pad_vocab, pp_partition
from dummyprof.models.presets import dense_decoder, moe_decoder, torch_transformer
from tests.fakes import FakeClock

META = torch.device("meta")
DATA = Path("tests/data")


@functools.cache
def _hf(name: str) -> nn.Module:
    """A published config built on meta, once per test session (sharding only reads it)."""
    pytest.importorskip("transformers")
    from dummyprof.models.huggingface import hf_source

    return hf_source(f"hf:{DATA}/{name}.json").build(META)  # unquantized (engine_source applies quantization)


def shard_all(model: nn.Module, layout: ParallelLayout, dims: ModelDims | None = None) -> list[RankShard]:
    """Every rank's shard of ``model`` (a meta model) under ``layout``."""
    sharder = Sharder(model, layout, dims)
    return [sharder.build(coord) for coord in layout.coords()]


def _shapes(model: nn.Module) -> dict[str, tuple[int, ...]]:
    return {n: tuple(t.shape) for n, t in (*model.named_parameters(), *model.named_buffers())}


# ---- vLLM's arithmetic ----------------------------------------------------------------------


def test_pipeline_partition_is_vllms() -> None:
    assert pp_partition(20, 4) == [5, 5, 5, 5]
    assert pp_partition(61, 4) == [15, 15, 16, 15]  # the remainder goes before the last stage
    assert pp_partition(32, 3) == [11, 11, 10]
    assert pp_partition(5, 4) == [1, 1, 2, 1]


def test_vocab_padding_and_expert_placement_are_vllms() -> None:
    assert [pad_vocab(v) for v in (1000, 1024, 128256, 129280)] == [1024, 1024, 128256, 129280]
    assert [expert_range(256, 3, r) for r in range(3)] == [(0, 86), (86, 171), (171, 256)]
    assert [expert_range(10, 4, r) for r in range(4)] == [(0, 3), (3, 6), (6, 8), (8, 10)]


def test_ep_alone_is_data_parallel_attention_with_expert_parallel() -> None:
    layout = ParallelLayout.from_sizes(ep=8)
    assert (layout.tp, layout.dp, layout.ep, layout.moe_tp, layout.world) == (1, 8, 8, 1, 8)
    both = ParallelLayout.from_sizes(tp=8, ep=8)
    assert (both.tp, both.dp, both.ep, both.moe_tp) == (8, 1, 8, 1)
    dense = ParallelLayout.from_sizes(tp=2, dp=2)
    assert (dense.ep, dense.moe_tp) == (1, 4)  # vLLM flattens the MoE tp across dp
    with pytest.raises(UsageError, match=r"^ep: 4 experts ranks but tp 2 x dp 4 = 8") as err:
        ParallelLayout.from_sizes(tp=2, ep=4, dp=4)
    assert err.value.field == "ep"
    with pytest.raises(UsageError, match=r"^tp: must be a whole number of ranks >= 1, got 0"):
        ParallelLayout.from_sizes(tp=0)


# ---- shapes against formulas written from the config numbers ----------------------------


def test_llama_tp2_shapes() -> None:
    h, heads, kv, hd, inter, vocab, tp = 4096, 32, 8, 128, 14336, 128256, 2
    for shard in shard_all(_hf("Llama-3.1-8B"), ParallelLayout(tp=tp)):
        got = _shapes(shard.module)
        attn, mlp = "model.layers.7.self_attn", "model.layers.7.mlp"
        assert got[f"{attn}.qkv_proj.weight"] == ((heads // tp + 2 * kv // tp) * hd, h)
        assert got[f"{attn}.o_proj.weight"] == (h, heads * hd // tp)
        assert got[f"{mlp}.gate_up_proj.weight"] == (2 * inter // tp, h)
        assert got[f"{mlp}.down_proj.weight"] == (h, inter // tp)
        assert got["model.embed_tokens.weight"] == got["lm_head.weight"] == (vocab // tp, h)
        assert got["model.layers.7.input_layernorm.weight"] == got["model.norm.weight"] == (h,)
        assert not any(re.search(r"\.(q|k|v|gate|up)_proj\.", n) for n in got)  # fused as vLLM fuses them


def test_qwen3_moe_tp8_holds_one_kv_head_and_splits_each_expert() -> None:
    h, heads, hd, experts, inter, vocab, tp = 2048, 32, 128, 128, 768, 151936, 8
    shards = shard_all(_hf("Qwen3-30B-A3B"), ParallelLayout(tp=tp))
    got = _shapes(shards[5].module)
    layer = "model.layers.20"
    assert got[f"{layer}.self_attn.qkv_proj.weight"] == ((heads // tp + 2 * 1) * hd, h)  # tp 8 > 4 kv heads
    assert got[f"{layer}.self_attn.o_proj.weight"] == (h, heads * hd // tp)
    assert got[f"{layer}.mlp.experts.routed_experts.gate_up_proj"] == (experts, 2 * inter // tp, h)
    assert got[f"{layer}.mlp.experts.routed_experts.down_proj"] == (experts, h, inter // tp)
    assert got[f"{layer}.mlp.gate.weight"] == (experts, h)
    assert got[f"{layer}.self_attn.k_norm.weight"] == (hd,)
    assert got["model.embed_tokens.weight"] == (vocab // tp, h)
    qkv = next(t for t in shards[5].tensors if t.name.endswith("20.self_attn.qkv_proj.weight"))
    assert qkv.members == tuple(f"{layer}.self_attn.{p}_proj.weight" for p in "qkv")


def test_qwen3_moe_tp8_ep8_holds_whole_experts() -> None:
    h, experts, inter, tp = 2048, 128, 768, 8
    shards = shard_all(_hf("Qwen3-30B-A3B"), ParallelLayout.from_sizes(tp=tp, ep=8))
    for shard in shards:
        got = _shapes(shard.module)
        assert got["model.layers.0.mlp.experts.routed_experts.gate_up_proj"] == (experts // 8, 2 * inter, h)
        assert got["model.layers.0.mlp.experts.routed_experts.down_proj"] == (experts // 8, h, inter)
        assert got["model.layers.0.self_attn.o_proj.weight"] == (h, 32 * 128 // tp)


@pytest.mark.parametrize("ep", [False, True])
def test_deepseek_v3_tp8_and_ep8_shapes(ep: bool) -> None:
    h, heads, q_rank, kv_rank, nope, rope, v_dim = 7168, 128, 1536, 512, 128, 64, 128
    inter, experts, moe_inter, vocab, dense = 18432, 256, 2048, 129280, 3
    layout = ParallelLayout.from_sizes(ep=8) if ep else ParallelLayout(tp=8)
    tp = layout.tp
    clock = FakeClock()
    counts = count_deployment(_hf("DeepSeek-V3"), layout, clock=clock)
    assert len(counts.ranks) == 8
    shard = Sharder(_hf("DeepSeek-V3"), layout).build(layout.coords()[3])
    got = _shapes(shard.module)
    attn = "model.layers.40.self_attn"
    assert got[f"{attn}.fused_qkv_a_proj.weight"] == (q_rank + kv_rank + rope, h)  # replicated, as vLLM
    assert got[f"{attn}.q_b_proj.weight"] == (heads // tp * (nope + rope), q_rank)
    assert got[f"{attn}.kv_b_proj.weight"] == (heads // tp * (nope + v_dim), kv_rank)
    assert got[f"{attn}.o_proj.weight"] == (h, heads // tp * v_dim)
    assert got["model.layers.0.mlp.gate_up_proj.weight"] == (2 * inter // tp, h)
    assert got["model.layers.0.mlp.down_proj.weight"] == (h, inter // tp)
    per_rank, moe_tp = (experts // 8, 1) if ep else (experts, 8)
    assert got["model.layers.40.mlp.experts.routed_experts.gate_up_proj"] == (per_rank, 2 * moe_inter // moe_tp, h)
    assert got["model.layers.40.mlp.experts.routed_experts.down_proj"] == (per_rank, h, moe_inter // moe_tp)
    assert got["model.layers.40.mlp.shared_experts.gate_up_proj.weight"] == (2 * moe_inter // tp, h)
    assert got["model.layers.40.mlp.gate.weight"] == (experts, h)
    assert got["model.layers.40.mlp.gate.e_score_correction_bias"] == (experts,)
    assert got["model.embed_tokens.weight"] == (vocab // tp, h)
    assert sum(1 for n in got if ".mlp.experts." in n) == 2 * (61 - dense)


# ---- the bytes identity -----------------------------------------------------------------

# Written here from the names, not from the library's rules: what every rank of a stage holds whole.
_REPLICATED = re.compile(r"norm|rotary|\.mlp\.gate\.|q_a_proj|kv_a_proj_with_mqa")


def _expected_total(model: nn.Module, layout: ParallelLayout, kv_heads: int | None = None) -> int:
    """The whole model, plus every replicated tensor once per extra rank of its stage, plus duplicated kv heads."""
    total = 0
    per_stage = layout.tp * layout.dp
    for name, t in (*model.named_parameters(), *model.named_buffers()):
        if _REPLICATED.search(name):
            total += t.nbytes * per_stage * (layout.pp if "rotary" in name else 1)
        elif kv_heads and re.search(r"\.(k|v)_proj\.", name) and layout.tp > kv_heads:
            total += t.nbytes * layout.tp // kv_heads
        else:
            total += t.nbytes * (layout.dp if ".mlp.experts." not in name else 1)
    return total


@pytest.mark.parametrize(
    ("config", "sizes", "kv"),
    [
        ("Llama-3.1-8B", {"tp": 2}, 8),
        ("Llama-3.1-8B", {"tp": 4, "pp": 2}, 8),
        ("Qwen3-30B-A3B", {"tp": 8}, 4),
        ("Qwen3-30B-A3B", {"tp": 2, "ep": 4}, 4),
        ("DeepSeek-V3", {"ep": 8}, None),
    ],
)
def test_ranks_add_up_to_the_model_plus_replicated_copies(config: str, sizes: dict[str, int], kv: int | None) -> None:
    model = _hf(config)
    layout = ParallelLayout.from_sizes(**sizes)
    shards = shard_all(model, layout)
    assert sum(s.nbytes for s in shards) == _expected_total(model, layout, kv)
    assert all(t.padding_bytes == 0 for s in shards for t in s.tensors)  # these vocabularies are multiples of 64


def test_padded_vocabulary_is_counted_as_padding() -> None:
    with META:
        model = dense_decoder(layers=2, vocab=1000, tie=False)
    layout = ParallelLayout(tp=4)
    shards = shard_all(model, layout, None)
    rows = [dict((t.name, t.shape) for t in s.tensors)["model.embed_tokens.weight"][0] for s in shards]
    assert rows == [256] * 4  # 1000 padded to 1024, then split
    padding = [sum(t.padding_bytes for t in s.tensors) for s in shards]
    row_bytes = 256 * 2  # hidden 256, bfloat16
    assert padding == [0, 0, 0, 2 * 24 * row_bytes]  # embed and head: the last rank holds 24 padded rows of each
    whole = sum(t.nbytes for t in model.parameters())
    replicated = sum(t.nbytes for n, t in model.named_parameters() if "norm" in n)
    buffers = sum(b.nbytes for b in model.buffers())
    assert sum(s.nbytes for s in shards) == whole + 3 * replicated + 4 * buffers + sum(padding)


# ---- pipeline stages, ties and expert modules ----------------------------------------------


def test_pipeline_stages_hold_contiguous_layers_embedding_first_head_last() -> None:
    with META:
        model = dense_decoder(layers=5, tie=True)
    shards = shard_all(model, ParallelLayout(pp=4))
    layers = [sorted({int(m) for m in re.findall(r"layers\.(\d+)\.", " ".join(_shapes(s.module)))}) for s in shards]
    assert layers == [[0], [1], [2, 3], [4]]
    assert [s.layers for s in shards] == [(0, 1), (1, 2), (2, 4), (4, 5)]
    names = [set(_shapes(s.module)) for s in shards]
    assert "model.embed_tokens.weight" in names[0] and "lm_head.weight" not in names[0]
    assert "model.norm.weight" in names[3] and "model.norm.weight" not in names[1]
    # Tied: the last stage holds the embedding too (vLLM builds it there), one storage with two owners.
    last = shards[3].module
    assert last.lm_head.weight is last.model.embed_tokens.weight
    assert "model.embed_tokens.weight" not in names[1]


def test_expert_parallel_keeps_whole_expert_modules() -> None:
    with META:
        model = moe_decoder(layers=1, experts=10, hidden=128, heads=4, kv_heads=2)
    layout = ParallelLayout.from_sizes(ep=4)
    kept = [
        sorted({int(i) for i in re.findall(r"experts\.(\d+)\.", " ".join(_shapes(s.module)))})
        for s in shard_all(model, layout, None)
    ]
    assert kept == [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]
    tp = shard_all(model, ParallelLayout(tp=2), None)[1]
    got = _shapes(tp.module)
    assert got["model.layers.0.mlp.experts.9.gate_up_proj.weight"] == (2 * 64 // 2, 128)
    assert got["model.layers.0.mlp.experts.9.down_proj.weight"] == (128, 64 // 2)


def test_fp8_block_scales_follow_their_weight() -> None:
    pytest.importorskip("torch", reason="fp8")
    from dummyprof.models.presets import HAS_FP8, deepseek_v4_like

    if not HAS_FP8:
        pytest.skip("no float8_e4m3fn")
    with META:
        model = deepseek_v4_like(hidden=256, expert_intermediate=256, engram_rows=1001, engram_tables=1)
    shard = shard_all(model, ParallelLayout(tp=2), None)[1]
    got = _shapes(shard.module)
    assert got["model.layers.0.mlp.gate_up_proj.weight"] == (2 * 1024 // 2, 256)
    assert got["model.layers.0.mlp.gate_up_proj.weight_scale_inv"] == (1024 // 128, 2)
    assert got["model.layers.0.mlp.down_proj.weight_scale_inv"] == (2, 1024 // 2 // 128)
    # vLLM's ParallelEngramEmbedding: 16 hash heads of 63 (the first 9) or 62 rows, rank 1 heads 8..15: 63 + 7 x 62
    assert got["model.engram.0.weight"] == (497, 256) and got["model.engram.0.weight_scale_inv"] == (497, 8)
    assert getattr(shard.module.model.engram, "0").weight.dummy_weight_value == 1.0  # declared values survive


def test_engram_tables_in_a_model_shard_by_whole_hash_heads_as_vllm_does() -> None:
    from dummyprof.models.engram import EngramTable

    model = nn.Module()
    model.engram = EngramTable(1000, 64, device="meta", heads=10)
    rows = [shard.module.engram.weight.shape[0] for shard in shard_all(model, ParallelLayout(tp=2, dp=2), None)]
    # ceil(10 / 4) = 3 heads of 100 rows per shard, TP-major: rank 1 (tp 1, dp 0) is shard 2, rank 3 the last (1 head)
    assert rows == [300, 300, 300, 100]
    model.engram = EngramTable(1000, 64, device="meta", heads=5)
    with pytest.raises(UsageError) as refused:  # 2 heads per shard leaves the fourth none: vLLM asserts
        shard_all(model, ParallelLayout(tp=4), None)
    assert refused.value.flag == "--tp"
    assert "leaves ranks without hash heads: 5 heads over 4 shards (vLLM refuses it)" in refused.value.message


# ---- exact counts -----------------------------------------------------------------------------


def test_per_rank_counts_are_exact_for_llama_tp2() -> None:
    layout = ParallelLayout(tp=2)
    counts = count_deployment(_hf("Llama-3.1-8B"), layout, clock=FakeClock())
    assert counts.shards_walked == 1 and [r.counted_as for r in counts.ranks] == [0, 0]
    rank = counts.ranks[1]
    h, kv_rows, inter, vocab, layers = 4096, (16 + 8) * 128, 14336, 128256, 32
    # qkv, o, gate_up, down, two norms; and vLLM's attention's four float32 kv scales (self_attn.attn)
    per_layer_tensors, kv_scales = 6, 4
    per_layer_bytes = 2 * (kv_rows * h + h * h // 2 + 2 * inter // 2 * h + h * inter // 2 + 2 * h)
    expected_bytes = layers * per_layer_bytes + 2 * 2 * (vocab // 2 * h) + 2 * h
    per_layer = rank.strategy("per-layer")
    assert (per_layer.visits, per_layer.redundant_visits) == (layers * (per_layer_tensors + kv_scales) + 3, 0)
    assert per_layer.bytes_written == expected_bytes + layers * kv_scales * 4
    # legacy: a tensor k modules deep is visited k + 1 times (model.layers.N.self_attn.qkv_proj: depth 5)
    legacy = rank.strategy("legacy")
    depth_visits = layers * (4 * 6 + 2 * 5 + kv_scales * 6) + 3 + 3 + 2  # self_attn.attn._k_scale: depth 5
    assert legacy.visits == depth_visits
    assert legacy.redundant_visits == depth_visits - per_layer.visits
    assert rank.held_bytes == expected_bytes + 2 * 64 * 4  # plus the two rotary float32 buffers; kv scales apart
    assert rank.replicated_bytes == 2 * (layers * 2 * h + h) + 2 * 64 * 4


def test_counting_reuses_identical_shards_only() -> None:
    with META:
        model = moe_decoder(layers=2, experts=10)
    counts = count_deployment(model, ParallelLayout.from_sizes(ep=4), options={"heads": 4, "kv_heads": 2})
    visits = [r.strategy("per-layer").visits for r in counts.ranks]
    per_expert = 2  # gate_up, down
    rest = visits[0] - 2 * 3 * per_expert
    assert visits == [rest + 2 * n * per_expert for n in (3, 3, 2, 2)]
    assert counts.shards_walked == 4


# ---- errors -----------------------------------------------------------------------------------


def test_a_tp_vllm_refuses_is_one_line_naming_tp() -> None:
    with pytest.raises(
        UsageError, match=r"^tp: 32 attention heads and 8 kv heads do not split over 3 ranks .*; try --tp 2 or --tp 4$"
    ) as err:
        Sharder(_hf("Llama-3.1-8B"), ParallelLayout(tp=3))
    assert err.value.field == "tp"
    with META:
        model = dense_decoder(heads=8, kv_heads=8, intermediate=600)
    with pytest.raises(
        UsageError,
        match=r"^tp: model\.layers\.0\.mlp\.down_proj\.weight has 600 along .*\(vLLM requires it\); try --tp 8$",
    ):
        shard_all(model, ParallelLayout(tp=16), None)


def test_pipeline_needs_one_layer_list() -> None:
    with META:
        model = torch_transformer()
    with pytest.raises(UsageError, match=r"^pp: pipeline stages need one decoder layer list; this model has"):
        Sharder(model, ParallelLayout(pp=2))
    with META:
        four = dense_decoder(layers=4)
    with pytest.raises(UsageError, match=r"^pp: 8 pipeline stages for 4 layers; give at most 4"):
        shard_all(four, ParallelLayout(pp=8))


def test_nothing_below_deploy_imports_it() -> None:
    from tests.test_import_rules import all_imports

    below = {"loaders", "measure", "models", "anatomy", "usercode", "results", "reports", "distributed"}
    wrong = [
        f"{i.importer} imports {i.target}"
        for i in all_imports()
        if i.importer.split(".")[1:2] and i.importer.split(".")[1] in below and i.target.startswith("dummyprof.deploy")
    ]
    assert wrong == []


@pytest.mark.parametrize(
    ("build", "sizes"),
    [
        (
            lambda: dense_decoder(layers=3, hidden=64, heads=4, kv_heads=2, intermediate=96, vocab=100),
            {"tp": 4, "pp": 2},
        ),
        (lambda: moe_decoder(layers=1, hidden=64, experts=6, expert_intermediate=32, vocab=100), {"tp": 2, "ep": 4}),
    ],
)
def test_a_real_fill_of_each_shard_does_what_the_meta_count_says(
    build: Callable[[], nn.Module], sizes: dict[str, int]
) -> None:
    from dummyprof.loaders.strategies import STRATEGIES, run_strategy
    from dummyprof.measure.recorder import VisitRecorder
    from dummyprof.models.loading import materialize

    with META:
        model = build()
    layout = ParallelLayout.from_sizes(**sizes)
    counts = count_deployment(model, layout, options={"heads": 4, "kv_heads": 2})
    sharder = Sharder(model, layout, ModelDims(heads=4, kv_heads=2))
    for coord, rank in zip(layout.coords(), counts.ranks, strict=True):
        shard = sharder.build(coord).module
        materialize(shard, torch.device("cpu"))
        for strategy in STRATEGIES.values():
            recorder = VisitRecorder(shard)
            run_strategy(shard, strategy, recorder=recorder)
            visited = [r for r in recorder.records.values() if r.visits]
            want = rank.strategy(strategy.name)
            assert recorder.visits == want.visits
            assert sum(r.bytes_written for r in visited) == want.bytes_written
            assert sum(r.visits - 1 for r in visited) == want.redundant_visits


# ---- issue #24.3: placement per architecture, as vLLM 0.33's model classes build it ------------------------------


def _tiny(kind: str, **extra: object) -> nn.Module:
    """A small transformers model of architecture ``kind`` on meta, bfloat16 (the sizes only serve the split)."""
    transformers = pytest.importorskip("transformers")
    sizes: dict[str, object] = {
        "vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    }  # fmt: skip
    if kind == "gpt2":
        sizes = {"vocab_size": 1000, "n_embd": 64, "n_layer": 4, "n_head": 4, "n_positions": 128}
    config = transformers.AutoConfig.for_model(kind, **(sizes | extra))
    with META:
        return transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)


def _parts(shard: object) -> set[str]:
    """Which of the embedding, the final norm and the head a shard holds (names of the whole model)."""
    names = {m for t in shard.tensors for m in t.members}  # type: ignore[attr-defined]
    found = {"embed": ("embed_tokens.weight", "wte.weight"), "norm": ("model.norm.weight", "ln_f.weight")}
    held = {part for part, ends in found.items() if any(n.endswith(ends) for n in names)}
    return held | ({"head"} if "lm_head.weight" in names else set())


@pytest.mark.parametrize(
    ("kind", "extra", "first", "last"),
    [
        ("llama", {}, {"embed"}, {"norm", "head"}),  # LlamaForCausalLM: PPMissingLayer off the stage
        ("llama", {"tie_word_embeddings": True}, {"embed"}, {"embed", "norm"}),  # tied: the embedding is the head
        ("qwen2", {}, {"embed"}, {"norm", "head"}),
        ("mistral", {}, {"embed"}, {"norm", "head"}),
        ("mixtral", {"num_local_experts": 4}, {"embed", "norm", "head"}, {"embed", "norm", "head"}),
        ("olmoe", {"num_experts": 4}, {"embed", "norm", "head"}, {"embed", "norm", "head"}),
        ("qwen2_moe", {"num_experts": 4}, {"embed", "norm", "head"}, {"embed", "norm", "head"}),
        ("gemma2", {}, {"embed", "norm"}, {"embed", "norm"}),  # tied head: one storage, every stage
        ("gpt2", {}, {"embed", "norm"}, {"embed", "norm"}),
    ],
)
def test_pipeline_stages_hold_embedding_norm_and_head_as_vllm_builds_each_architecture(
    kind: str, extra: dict[str, object], first: set[str], last: set[str]
) -> None:
    model = _tiny(kind, **extra)
    layout = ParallelLayout(pp=2)
    sharder = Sharder(model, layout)
    stages = [sharder.build(c) for c in layout.coords()]
    assert (_parts(stages[0]), _parts(stages[1])) == (first, last)
    assert sharder.stage_rule.known and not sharder.notices


def test_deepseek_keeps_the_embedding_on_the_first_stage_only() -> None:
    model = _hf("DeepSeek-V3")
    layout = ParallelLayout(pp=2)
    sharder = Sharder(model, layout)
    assert sharder.stage_rule.split == ("embed", "norm", "head") and not sharder.stage_rule.tied_on_last
    assert [_parts(sharder.build(c)) for c in layout.coords()] == [{"embed"}, {"norm", "head"}]


def test_an_architecture_not_in_the_table_says_which_rule_was_applied() -> None:
    with META:
        model = dense_decoder()
    sharder = Sharder(model, ParallelLayout(pp=2))
    assert not sharder.stage_rule.known
    assert sharder.notices == [
        f"pipeline stages: {type(model).__name__} is not in dummyprof's table of vLLM 0.33 architectures; applied "
        "vLLM's Llama rule (embedding on the first stage, and on the last too when tied to the head; final norm and "
        "head on the last)"
    ]


def test_gpt2_shards_as_vllm_builds_it_padded_vocabulary_and_linears_out_by_in() -> None:
    """vLLM's GPT-2: VocabParallelEmbedding wte (50257 padded to 50304), c_attn QKVParallelLinear [3h/tp, h], c_proj
    RowParallelLinear [h, h/tp] (bias whole), c_fc column [4h/tp, h], mlp.c_proj row [h, 4h/tp]; lm_head tied."""
    model = _tiny("gpt2", vocab_size=50257)
    h, tp, layers, positions = 64, 2, 4, 128
    shard = Sharder(model, ParallelLayout(tp=tp)).build(ParallelLayout(tp=tp).coords()[1])
    shapes = {t.name: t.shape for t in shard.tensors}
    assert shapes["transformer.wte.weight"] == (50304 // tp, h)
    assert shapes["transformer.wpe.weight"] == (positions, h)
    assert shapes["transformer.h.0.attn.c_attn.weight"] == (3 * h // tp, h)
    assert shapes["transformer.h.0.attn.c_attn.bias"] == (3 * h // tp,)
    assert shapes["transformer.h.0.attn.c_proj.weight"] == (h, h // tp)
    assert shapes["transformer.h.0.attn.c_proj.bias"] == (h,)
    assert shapes["transformer.h.0.mlp.c_fc.weight"] == (4 * h // tp, h)
    assert shapes["transformer.h.0.mlp.c_proj.weight"] == (h, 4 * h // tp)
    assert "lm_head.weight" not in shapes  # tied to wte: one storage
    per_layer = 4 * h + (3 * h * h + 3 * h + h * h + 4 * h * h + 4 * h + 4 * h * h) // tp + 2 * h
    assert shard.nbytes == 2 * (50304 // tp * h + positions * h + layers * per_layer + 2 * h)
    assert shard.tensors[0].padding_bytes == 2 * (50304 - 50257) * h  # the last rank's padded rows


def test_gpt2_pipeline_stages_split_transformer_h() -> None:
    layout = ParallelLayout(pp=2)
    sharder = Sharder(_tiny("gpt2"), layout)
    assert (sharder.layer_list, [sharder.build(c).layers for c in layout.coords()]) == (
        "transformer.h",
        [(0, 2), (2, 4)],
    )


def _deepseek_v2_lite(layers: int = 2) -> nn.Module:
    """DeepSeek-V2-Lite's numbers (its published config.json), 2 layers: one dense, one MoE."""
    return _tiny(
        "deepseek_v2", vocab_size=102400, hidden_size=2048, intermediate_size=10944, moe_intermediate_size=1408,
        num_hidden_layers=layers, num_attention_heads=16, num_key_value_heads=16, n_shared_experts=2,
        n_routed_experts=64, num_experts_per_tok=6, first_k_dense_replace=1, kv_lora_rank=512, q_lora_rank=None,
        qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, head_dim=192,
    )  # fmt: skip


def test_sequence_parallel_moe_builds_shared_experts_whole() -> None:
    """tp 2, dp 2, ep 4: vLLM's use_sequence_parallel_moe, shared experts disable_tp: 3 x 2816 x 2048 bf16 whole
    (34,603,008 bytes) where tp 2 x ep 2 (dp 1) holds half: +17,301,504 bytes per MoE layer."""
    model = _deepseek_v2_lite()
    held = {}
    for sizes in ({"tp": 2, "ep": 4, "dp": 2}, {"tp": 2, "ep": 2}):
        layout = ParallelLayout.from_sizes(**sizes)
        shard = Sharder(model, layout).build(layout.coords()[0])
        held[layout.dp] = sum(t.nbytes for t in shard.tensors if ".shared_experts." in t.name)
    assert held == {2: 34_603_008, 1: 17_301_504}
    assert held[2] - held[1] == 17_301_504


def _table_of(shard: RankShard, part: str) -> dict[str, tuple[tuple[int, ...], str]]:
    return {t.name.split(part, 1)[1]: (t.shape, t.dtype) for t in shard.tensors if part in t.name}


def test_sequence_parallel_moe_splits_qwen2_moe_shared_experts_over_tp() -> None:
    """vLLM 0.33's Qwen2MoeSparseMoeBlock builds its shared expert without ``is_sequence_parallel`` (its MLP's
    ``disable_tp`` stays False), so Qwen1.5-MoE-A2.7B at tp 2, dp 2, ep 4 splits it over tp as in every layout:
    gate_up [2 x 2816, 2048], down [2048, 2816] per rank, where DeepSeek-V2's DeepseekV2MoE holds it whole."""
    model = _tiny(
        "qwen2_moe", vocab_size=151936, hidden_size=2048, intermediate_size=5632, moe_intermediate_size=1408,
        shared_expert_intermediate_size=5632, num_experts=60, num_experts_per_tok=4, num_hidden_layers=2,
        num_attention_heads=16, num_key_value_heads=16, head_dim=128, decoder_sparse_step=1,
    )  # fmt: skip
    layout = ParallelLayout.from_sizes(tp=2, ep=4, dp=2)
    sharder = Sharder(model, layout)
    assert sharder.sequence_parallel_moe and not sharder.shared_experts_whole
    h, bf16 = 2048, 2
    layer = (3 * h // 2 * h + 3 * h // 2) * bf16 + h * h // 2 * bf16  # qkv (with its bias), o_proj
    layer += 60 * h * bf16 + 15 * 3 * 1408 * h * bf16  # the router; 15 whole experts (gate_up and down)
    layer += 3 * 2816 * h * bf16 + h * bf16 + 2 * h * bf16  # the shared expert split over tp, its gate, two norms
    for coord in layout.coords():
        shard = sharder.build(coord)
        assert _table_of(shard, "layers.1.mlp.shared_expert") == {
            ".gate_up_proj.weight": ((2 * 2816, h), "bfloat16"),
            ".down_proj.weight": ((h, 2816), "bfloat16"),
            "_gate.weight": ((1, h), "bfloat16"),
        }
        weights = [t for t in shard.tensors if "rotary_emb" not in t.name]
        assert sum(t.nbytes for t in weights) == 2 * layer + 2 * 151936 // 2 * h * bf16 + h * bf16
        assert len(weights) == 2 * 11 + 3  # qkv weight and bias, o, router, 2 experts, 3 shared, 2 norms
    deepseek = Sharder(_deepseek_v2_lite(), layout)
    assert deepseek.shared_experts_whole  # the DeepSeek-V2-Lite test above: 34,603,008 bytes whole per MoE layer


def test_expert_parallel_a_vllm_accepts_but_wastes_is_named() -> None:
    with META:
        dense, moe = dense_decoder(), moe_decoder(experts=4)
    assert Sharder(dense, ParallelLayout.from_sizes(ep=2)).notices == [
        "expert parallel (ep 2) on a model with no experts: vLLM accepts it and it changes nothing here; the tp x dp "
        "ranks are data parallel"
    ]
    layout = ParallelLayout.from_sizes(ep=8)
    sharder = Sharder(moe, layout)
    assert sharder.notices == [
        "ep 8 over 4 experts: vLLM accepts it, and 4 ranks of each stage's expert group hold no experts"
    ]
    assert [sum(".experts." in t.name for t in sharder.build(c).tensors) > 0 for c in layout.coords()] == [True] * 4 + [
        False
    ] * 4


# ---- issue #26.3: ranks that hold one shard are built and counted once, as a group --------------------------------


def _builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ranks whose shard was built, in order (Sharder.build is counted, then runs)."""
    built: list[int] = []
    real = Sharder.build

    def counting(self: Sharder, coord: object, *args: object, **kwargs: object) -> object:
        built.append(coord.rank)  # type: ignore[attr-defined]
        return real(self, coord, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Sharder, "build", counting)
    return built


def test_dp_replicas_are_one_entry_built_once_whatever_the_world(monkeypatch: pytest.MonkeyPatch) -> None:
    with META:
        model = dense_decoder()
    built = _builds(monkeypatch)
    counts = count_deployment(model, ParallelLayout(tp=2, dp=32_768), strategies=["per-layer"])
    assert built == [0, 1]  # two distinct shards for 65,536 ranks
    assert [(r.rank, r.dp_rank, r.tp_rank, r.copies) for r in counts.ranks] == [(0, 0, 0, 32_768), (1, 0, 1, 32_768)]
    assert list(counts.ranks[1].rank_numbers(2))[:3] == [1, 3, 5] and counts.ranks[1].rank_numbers(2)[-1] == 65_535
    one = count_deployment(model, ParallelLayout(tp=2), strategies=["per-layer"])
    assert [r.held_bytes for r in counts.ranks] == [r.held_bytes for r in one.ranks]


def test_expert_ranks_with_no_experts_are_one_group(monkeypatch: pytest.MonkeyPatch) -> None:
    with META:
        model = moe_decoder(experts=4)
    built = _builds(monkeypatch)
    counts = count_deployment(model, ParallelLayout.from_sizes(ep=64), strategies=["per-layer"])
    assert built == [0, 1, 2, 3, 4]  # one expert each, then the 60 ranks with none
    assert [(r.rank, r.copies) for r in counts.ranks] == [(0, 1), (1, 1), (2, 1), (3, 1), (4, 60)]


@pytest.mark.parametrize(("sizes", "experts"), [({"tp": 2, "dp": 2}, 6), ({"tp": 2, "ep": 6}, 2), ({"ep": 8}, 6)])
def test_groups_stand_for_exactly_the_ranks_one_by_one(sizes: dict[str, int], experts: int) -> None:
    """Expanded, the grouped entries give every rank the same shard bytes and counts as one entry per rank does."""
    with META:
        model = moe_decoder(experts=experts)
    layout = ParallelLayout.from_sizes(**sizes)
    grouped = count_deployment(model, layout, strategies=["per-layer"])
    single = count_deployment(model, layout, strategies=["per-layer"], grouped=False)
    expanded = {n: r for r in grouped.ranks for n in r.rank_numbers(layout.tp)}
    assert sorted(expanded) == list(range(layout.world)) == [r.rank for r in single.ranks]
    for r in single.ranks:
        g = expanded[r.rank]
        assert (g.held_bytes, g.storages, g.strategies[0].visits) == (r.held_bytes, r.storages, r.strategies[0].visits)
    assert len(grouped.ranks) < layout.world


# ---- issue #24.3: non-weight device bytes vLLM allocates per rank at load -------------------------------------


def test_llama_tp2_load_buffers_are_the_rotary_cache_and_kv_scales() -> None:
    """Llama-3.1-8B: cos_sin_cache [131072 positions, 128] bf16 once per rank (get_rope shares it), four float32 kv
    scales on each of 32 attention layers; no expert map (dense)."""
    counts = count_deployment(_hf("Llama-3.1-8B"), ParallelLayout(tp=2), strategies=["per-layer"])
    for r in counts.ranks:
        assert (r.rotary_cache_bytes, r.expert_map_bytes, r.kv_scale_bytes) == (131_072 * 128 * 2, 0, 32 * 4 * 4)
        assert r.device_bytes == r.held_bytes + 33_554_944
    assert counts.not_counted == ()


def test_qwen3_moe_ep8_adds_an_int32_expert_map_per_moe_layer() -> None:
    """Qwen3-30B-A3B ep 8: 40960 x 128 bf16 rotary cache; 48 MoE layers x 128 experts int32; 48 x 16 kv scales."""
    counts = count_deployment(_hf("Qwen3-30B-A3B"), ParallelLayout.from_sizes(ep=8), strategies=["per-layer"])
    r = counts.ranks[0]
    assert (r.rotary_cache_bytes, r.expert_map_bytes, r.kv_scale_bytes) == (40_960 * 128 * 2, 48 * 128 * 4, 48 * 16)
    tp = count_deployment(_hf("Qwen3-30B-A3B"), ParallelLayout(tp=8), strategies=["per-layer"]).ranks[0]
    assert tp.expert_map_bytes == 0  # no expert map without expert parallel


def test_deepseek_v3_yarn_rotary_cache_is_vllms() -> None:
    """DeepseekScalingRotaryEmbedding: [original 4096 x factor 40 = 163840 positions, qk_rope_head_dim 64], cast to
    the model's bfloat16, one per rank (every stage has attention layers)."""
    counts = count_deployment(_hf("DeepSeek-V3"), ParallelLayout(pp=2), strategies=["per-layer"])
    assert counts.not_counted == ()
    assert [(r.rotary_cache_bytes, r.kv_scale_bytes) for r in counts.ranks] == [
        (163_840 * 64 * 2, 31 * 16),
        (163_840 * 64 * 2, 30 * 16),
    ]


def test_a_model_without_a_config_has_no_load_buffers() -> None:
    with META:
        model = dense_decoder()
    assert count_deployment(model, ParallelLayout(tp=2), strategies=["per-layer"]).ranks[0].engine_bytes == 0
