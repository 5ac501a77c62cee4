"""Model anatomy: the one walk over a module tree's registered tensors, and what it finds.

Torch only: no other dummyprof package is imported here, so models, loaders,
instruments and scenarios can all build on it without importing each other.
"""

from __future__ import annotations

from dummyprof.anatomy.persistence import Persistence, buffer_persistence
from dummyprof.anatomy.storages import (
    allocated_bytes,
    canonical_name,
    has_meta,
    largest_low_precision_elements,
    model_bytes,
    name_keys,
    persistent_first,
    storage_owners,
    storage_tensors,
)
from dummyprof.anatomy.tensors import describe, dtype_name, module_depth, qualified_name, storage_key
from dummyprof.anatomy.unregistered import unregistered_tensors
from dummyprof.anatomy.walk import (
    BUFFER,
    NON_PERSISTENT,
    PARAMETER,
    Registered,
    own_registered,
    own_tensors,
    registered_tensors,
    walk,
)

__all__ = [
    "BUFFER",
    "NON_PERSISTENT",
    "PARAMETER",
    "Persistence",
    "Registered",
    "allocated_bytes",
    "buffer_persistence",
    "canonical_name",
    "describe",
    "dtype_name",
    "has_meta",
    "largest_low_precision_elements",
    "model_bytes",
    "module_depth",
    "name_keys",
    "own_registered",
    "own_tensors",
    "persistent_first",
    "qualified_name",
    "registered_tensors",
    "storage_key",
    "storage_owners",
    "storage_tensors",
    "unregistered_tensors",
    "walk",
]
