"""A parallel layout (tp, pp, dp, expert parallel) and the arithmetic vLLM uses to place work on its ranks.

Torch-free: ranks, pipeline stages (vLLM's ``get_pp_indices``), padded vocabularies
(``pad_vocab_size``), expert placement (``determine_expert_map``, linear) and the
MoE groups of ``FusedMoEParallelConfig.make``. Each function states the vLLM rule it follows.
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

    def coords(self) -> list[RankCoord]:
        """Every rank, stage-major then dp then tp (vLLM's order: tp fastest, pp slowest)."""
        per_stage = self.tp * self.dp
        return [
            RankCoord(
                rank=stage * per_stage + dp_rank * self.tp + tp_rank, stage=stage, dp_rank=dp_rank, tp_rank=tp_rank
            )
            for stage in range(self.pp)
            for dp_rank in range(self.dp)
            for tp_rank in range(self.tp)
        ]


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
