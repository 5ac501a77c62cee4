"""A parallel layout (tp, pp, dp, expert parallel) and the arithmetic vLLM uses to place work on its ranks.

The one layout object of every command: built once from the options (``--tp/--ep/--pp/--dp``, engram's
``--tp/--dp`` too) and handed as an object to what places work on ranks (``deploy``, the Engram
tables of ``models.engram``, the ranks of a run). Torch-free, so the options and ``--help`` may use it:
ranks, pipeline stages (vLLM's ``get_pp_indices``), padded vocabularies (``pad_vocab_size``), expert
placement (``determine_expert_map``, linear), the MoE groups of ``FusedMoEParallelConfig.make`` and the
Engram tables' vocabulary ranges (``ParallelEngramEmbedding``). Each function states the vLLM rule it follows.
"""

from __future__ import annotations

from dataclasses import dataclass

from dummyprof.errors import UsageError

VOCAB_PADDING = 64  # vLLM's DEFAULT_VOCAB_PADDING_SIZE


def _check_ranks(**sizes: int) -> None:
    for name, value in sizes.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise UsageError.for_field(name, f"must be a whole number of ranks >= 1, got {value!r}")


@dataclass(frozen=True)
class RankCoord:
    """One rank of the deployment: its global index and its place in each group."""

    rank: int
    stage: int  # pipeline stage
    dp_rank: int
    tp_rank: int

    def moe_rank(self, tp: int) -> int:
        """The rank inside the MoE group of its stage (vLLM flattens tp across dp: dp_rank * tp + tp_rank)."""
        return self.dp_rank * tp + self.tp_rank


@dataclass(frozen=True)
class ParallelLayout:
    """``tp`` x ``dp`` ranks per pipeline stage, ``pp`` stages; experts spread over tp x dp when ``expert_parallel``.

    vLLM's ``--enable-expert-parallel`` makes the expert group the tp x dp ranks of a stage
    (``ep == tp * dp``); without it the MoE layers split each expert's intermediate dimension
    over those same tp x dp ranks. Use :meth:`from_sizes` to build one from ``--tp/--ep/--pp/--dp``.
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    expert_parallel: bool = False

    def __post_init__(self) -> None:
        _check_ranks(tp=self.tp, pp=self.pp, dp=self.dp)

    @classmethod
    def from_sizes(cls, *, tp: int = 1, ep: int = 1, pp: int = 1, dp: int = 1) -> ParallelLayout:
        """The layout for ``--tp/--ep/--pp/--dp``: ``ep`` > 1 must equal ``tp * dp``; with ``dp`` 1 and a multiple
        of ``tp``, ``dp`` becomes ``ep / tp`` (``--ep 8`` is ``--data-parallel-size 8 --enable-expert-parallel``)."""
        _check_ranks(tp=tp, ep=ep, pp=pp, dp=dp)
        if ep > 1 and dp == 1 and ep % tp == 0:
            dp = ep // tp
        if ep > 1 and ep != tp * dp:
            raise UsageError.for_field(
                "ep",
                f"{ep} experts ranks but tp {tp} x dp {dp} = {tp * dp}; vLLM spreads experts over the "
                "tp x dp ranks of a stage: give an ep equal to tp x dp",
            )
        return cls(tp=tp, pp=pp, dp=dp, expert_parallel=ep > 1)

    @property
    def world(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def ep(self) -> int:
        """Ranks that share out the experts (1: every rank holds every expert)."""
        return self.tp * self.dp if self.expert_parallel else 1

    @property
    def moe_tp(self) -> int:
        """Ranks that split each expert's intermediate dimension (1 under expert parallelism)."""
        return 1 if self.expert_parallel else self.tp * self.dp

    def coord(self, rank: int) -> RankCoord:
        """Rank ``rank``'s place: stage-major then dp then tp (vLLM's order: tp fastest, pp slowest)."""
        stage, within = divmod(rank, self.tp * self.dp)
        dp_rank, tp_rank = divmod(within, self.tp)
        return RankCoord(rank=rank, stage=stage, dp_rank=dp_rank, tp_rank=tp_rank)

    def coords(self) -> list[RankCoord]:
        return [self.coord(rank) for rank in range(self.world)]


def pp_partition(layers: int, pp: int) -> list[int]:
    """Layers per stage as vLLM's ``get_pp_indices`` splits them (no ``VLLM_PP_LAYER_PARTITION``).

    Every stage gets ``layers // pp``; the remainder goes one each to the stages before the
    last, counting back from the second to last (the last stage also holds the head).
    """
    if pp > layers:
        raise UsageError.for_field("pp", f"{pp} pipeline stages for {layers} layers; give at most {layers}")
    parts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        parts[-i] += 1
    return parts


def pp_range(layers: int, pp: int, stage: int) -> tuple[int, int]:
    """``[start, end)`` of the layers stage ``stage`` holds."""
    parts = pp_partition(layers, pp)
    start = sum(parts[:stage])
    return start, start + parts[stage]


def pad_vocab(vocab: int, padding: int = VOCAB_PADDING) -> int:
    """vLLM's ``pad_vocab_size``: the vocabulary rounded up to a multiple of ``padding``."""
    return -(-vocab // padding) * padding


def expert_range(experts: int, ep: int, ep_rank: int) -> tuple[int, int]:
    """``[start, end)`` of the experts rank ``ep_rank`` holds (vLLM's linear placement).

    Every rank holds ``experts // ep``; the first ``experts % ep`` ranks hold one more.
    """
    base, extra = divmod(experts, ep)
    start = ep_rank * base + min(ep_rank, extra)
    return start, start + base + (1 if ep_rank < extra else 0)


@dataclass(frozen=True)
class EngramRange:
    """The hash heads ``[first_head, first_head + heads)`` of a table one rank holds, and their rows:
    ``[vocab_start, vocab_start + part_rows)`` (vLLM's ``engram_vocab_start`` and ``part_num_embeddings``)."""

    first_head: int
    heads: int
    vocab_start: int
    part_rows: int


def head_rows(rows: int, heads: int, first: int, count: int) -> int:
    """Rows of heads ``first .. first + count - 1`` when ``rows`` are split over ``heads`` as evenly as whole
    rows allow (the first ``rows % heads`` heads one more), without listing every head."""
    base, extra = divmod(rows, heads)
    return count * base + max(0, min(first + count, extra) - first)


def engram_shards(layout: ParallelLayout) -> int:
    """Ranks one Engram table is split over: tp x dp (vLLM's Engram DP group: the dp replicas share a table)."""
    return layout.tp * layout.dp


def engram_heads_problem(heads: int, layout: ParallelLayout) -> str | None:
    """Why vLLM refuses to split ``heads`` hash heads over the layout (None when it splits them)."""
    shards = engram_shards(layout)
    if (shards - 1) * -(-heads // shards) < heads:
        return None
    return f"Engram sharding leaves ranks without hash heads: {heads} heads over {shards} shards"


def engram_range(rows: int, heads: int, layout: ParallelLayout, coord: RankCoord) -> EngramRange:
    """What rank ``coord`` holds of a table of ``rows`` split over ``heads`` hash heads, by vLLM 0.33's rule
    (``ParallelEngramEmbedding.__init__``): each of the tp x dp shards takes ``ceil(heads / shards)`` whole
    heads in order (the last shard the rest), the shard's index TP-major (``engram_head_shard_rank``:
    ``tp_rank * dp + dp_rank``); its rows are those heads' rows, from the sum of the heads before them.
    A layout that leaves a shard without heads is refused first (``engram_heads_problem``)."""
    per = -(-heads // engram_shards(layout))
    first = min(heads, (coord.tp_rank * layout.dp + coord.dp_rank) * per)
    count = min(per, heads - first)
    return EngramRange(first, count, head_rows(rows, heads, 0, first), head_rows(rows, heads, first, count))


def engram_split_refusal(rows: int, heads: int | None, layout: ParallelLayout, rank: int) -> UsageError | None:
    """Why tables of ``rows`` rows in ``heads`` hash heads (None: one per rank) cannot be split over ``layout`` as
    vLLM splits them, or built as ``rank``: the error naming the field and its fix, or None. Torch-free, so a value a
    flag's refusal offers is checked against the other flags while they are parsed."""
    ranks = layout.world
    if not rank < ranks:
        return UsageError.for_field(
            "rank", f"must be between 0 and {ranks - 1} (tp {layout.tp} x dp {layout.dp} ranks), got {rank}"
        )
    if rows < ranks:  # not one row, so not one head, for every rank: no --heads can help (--heads not given)
        return UsageError.for_field(
            "rows",
            f"{rows} rows cannot give each of {ranks} ranks a hash head; use --rows {ranks} or more, or at most "
            f"{rows} ranks",
        )
    # A multiple of the ranks, at most the rows, is a --heads that passes both checks below.
    fits = rows // ranks * ranks
    heads = ranks if heads is None else heads
    problem = engram_heads_problem(heads, layout)
    if problem is not None:  # vLLM's own refusal
        return UsageError.for_field(
            "heads", f"{problem} (tp {layout.tp} x dp {layout.dp}); use --heads {ranks} or a multiple of it"
        )
    if heads > rows:
        fix = f"at most --heads {rows}" if ranks == 1 else f"--heads {fits}"
        return UsageError.for_field("heads", f"{heads} heads is more than the {rows} rows; use {fix}")
    return None
