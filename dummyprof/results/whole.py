"""Results checked whole once decoded, refused naming the field rather than rendered wrong: every reference
resolves, every list a report indexes has what it indexes, every identity a report prints holds."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from dummyprof.errors import ImpossibleFigure
from dummyprof.results.session import Results
from dummyprof.units import MAX_NESTING, MAX_WORLD_RANKS, nesting_depth


class Refused(ValueError):
    """A results file whose parts disagree; the message names the field."""


def _unique(names: Iterable[Any], where: str) -> set[Any]:
    seen: set[Any] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise Refused(f"{where}[{i}]: {name!r} is named twice")
        seen.add(name)
    return seen


def _names(value: Any, known: set[Any], where: str, what: str) -> None:
    if value not in known:
        raise Refused(f"{where}: {value!r} names no {what} of this file")


def _deployment(d: Any, where: str) -> None:
    if not d.ranks:
        raise Refused(f"{where}.ranks: a deployment has at least one rank")
    if not 0 < d.world == d.tp * d.pp * d.dp <= MAX_WORLD_RANKS:
        raise Refused(
            f"{where}.world: {d.world} ranks, but tp x pp x dp = {d.tp * d.pp * d.dp} (at most {MAX_WORLD_RANKS})"
        )
    if sum(r.copies for r in d.ranks) != d.world:  # before the ranks an entry stands for are listed
        raise Refused(f"{where}.ranks: entries for {sum(r.copies for r in d.ranks)} ranks in a world of {d.world}")
    covered: list[int] = []
    for i, r in enumerate(d.ranks):
        if r.copies < 1:
            raise Refused(f"{where}.ranks[{i}].copies: an entry stands for at least one rank")
        covered += r.rank_numbers(d.tp)
    if sorted(covered) != list(range(d.world)):
        raise Refused(f"{where}.ranks: the entries' ranks are not each rank 0 to {d.world - 1} once")
    ranks = set(covered)
    _rank_entries(d, where, ranks)
    for i, n in enumerate(d.nodes):
        if not n.ranks:
            raise Refused(f"{where}.nodes[{i}].ranks: a node has at least one rank")
        for j, rank in enumerate(n.ranks):
            _names(rank, ranks, f"{where}.nodes[{i}].ranks[{j}]", "rank")
    for i, rank in enumerate(d.ranks_finished):
        _names(rank, ranks, f"{where}.ranks_finished[{i}]", "rank")
    if d.other_extra_bytes < 0:
        raise Refused(
            f"{where}.ranks: their {d.held_bytes} bytes are fewer than the model's {d.model_bytes} + replicated "
            f"{d.replicated_extra_bytes} + padding {d.padding_bytes}"
        )
    if d.slowest_rank is not None:
        _names(d.slowest_rank, ranks, f"{where}.slowest_rank", "rank")
        strategies = {s.strategy for s in d.rank(d.slowest_rank).strategies}
        _names(d.slowest_strategy, strategies, f"{where}.slowest_strategy", f"strategy of rank {d.slowest_rank}")


def _rank_entries(d: Any, where: str, ranks: set[int]) -> None:
    """Each rank entry's layers, the ranks and node it names, and bytes that can be: none held below its parts,
    no room larger than the device."""
    nodes = _unique((n.node for n in d.nodes), f"{where}.nodes")
    for i, r in enumerate(d.ranks):
        at = f"{where}.ranks[{i}]"
        if len(r.layers) != 2 or not r.layers[0] <= r.layers[1] <= d.layer_count:
            raise Refused(f"{at}.layers: {r.layers} is not [start, end) within the {d.layer_count} layers")
        _names(r.counted_as, ranks, f"{at}.counted_as", "rank")
        if r.filled_as is not None:
            _names(r.filled_as, ranks, f"{at}.filled_as", "rank")
        if nodes:
            _names(r.node, nodes, f"{at}.node", "node")
        if r.replicated_bytes + r.padding_bytes > r.held_bytes or r.offloaded_bytes > r.held_bytes:
            raise Refused(f"{at}.held_bytes: {r.held_bytes} is less than the replicated, padding or offloaded bytes")
        _unique((s.strategy for s in r.strategies), f"{at}.strategies")
        room, device = r.device_room_bytes, d.device_memory_bytes
        if room is not None and (device is None or room > device):
            raise Refused(f"{at}.device_room_bytes: {room} is more than the device's {device} bytes")


def _shallow(value: Any, where: str) -> None:
    if nesting_depth(value) > MAX_NESTING:
        raise Refused(f"{where}: nested more than {MAX_NESTING} levels deep (corrupt?)")


def _free_values(results: Results) -> Iterable[tuple[Any, str]]:
    for section in ("compare", "audit", "inspect"):
        value = getattr(results, section)
        if value is not None:
            yield value.model.options, f"$.{section}.model.options"
    if results.sweep is not None:
        yield results.sweep.base_options, "$.sweep.base_options"
    for i, run in enumerate(results.gate.scenarios if results.gate is not None else []):
        yield run.fingerprint.options, f"$.gate.scenarios[{i}].fingerprint.options"


# Per section, by the name of the kind that fills it (results/session.py SECTIONS): the rules it is held to.
CHECKS: dict[str, Callable[[Any, str], None]] = {"deployment": _deployment}


def check_whole(results: Results) -> None:
    for value, where in _free_values(results):
        _shallow(value, where)
    for section, check in CHECKS.items():
        value = getattr(results, section)
        if value is not None:
            check(value, f"$.{section}")


def check_possible(results: Results) -> None:
    """Results as a run built them, held to what ``report`` holds their file to (no byte count below zero, every
    identity true, no room beyond the device): what fails is a bug, refused rather than shown or written."""
    try:
        msgspec.convert(msgspec.to_builtins(results), type(results))  # the records' bounds: Count, Int64
        check_whole(results)
    except (msgspec.ValidationError, Refused) as exc:
        raise ImpossibleFigure(str(exc)) from None
