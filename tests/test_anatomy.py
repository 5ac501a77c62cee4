"""The one tensor walk: names, kinds, storages, canonical names and bytes of a module tree."""

from __future__ import annotations

import torch
from torch import nn

from dummyprof.anatomy import (
    NON_PERSISTENT,
    allocated_bytes,
    buffer_persistence,
    canonical_name,
    model_bytes,
    own_tensors,
    persistent_first,
    storage_owners,
    walk,
)
from tests.fixtures.models import aliased, hooked, tied


def test_walk_lists_every_name_with_its_kind_in_named_modules_order() -> None:
    model = aliased()  # root buffer weight_t views proj.weight
    assert [(e.name, e.kind, e.depth) for e in walk(model)] == [
        ("weight_t", "buffer", 0),
        ("proj.weight", "parameter", 1),
    ]


def test_one_storage_two_names_and_the_two_orders() -> None:
    (owners,) = storage_owners(aliased()).values()
    assert [e.name for e in owners] == ["weight_t", "proj.weight"]
    assert canonical_name(owners) == "proj.weight"  # a checkpoint's key: the parameter
    assert persistent_first(owners)[0].name == "weight_t"  # where a walk first reaches it


def test_tied_weights_share_one_storage() -> None:
    owners = storage_owners(tied())
    shared = [names for names in ([e.name for e in v] for v in owners.values()) if len(names) > 1]
    assert shared == [["embed.weight", "lm_head.weight"]]


def test_state_dict_decides_persistence_when_asked() -> None:
    model = hooked()  # a hook drops the buffer 'scratch' from state_dict(); the private set keeps it
    by_module = {e.name: e.kind for e in walk(model)}
    by_state_dict = {v[0].name: v[0].kind for v in storage_owners(model, buffer_persistence(model)).values()}
    assert by_module["scratch"] == "buffer" and by_state_dict["scratch"] == NON_PERSISTENT
    assert "scratch" in dict(own_tensors(model))  # the per-layer selection reads the module's own rule


def test_model_bytes_counts_meta_and_views_allocated_bytes_only_real_storages() -> None:
    model = nn.Module()
    model.register_buffer("real", torch.zeros(4))  # 16 bytes
    model.register_buffer("wide", torch.zeros(1).expand(8))  # 4 bytes of storage, 32 logical
    model.register_parameter("ghost", nn.Parameter(torch.empty(2, device="meta")))  # 8 bytes, none allocated
    assert model_bytes(model) == 16 + 32 + 8
    assert allocated_bytes(model) == 16 + 4
