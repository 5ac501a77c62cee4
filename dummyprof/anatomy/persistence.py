"""Which buffers a checkpoint would hold: persistence as ``state_dict()`` really decides it.

Persistence is decided by what ``state_dict()`` selects, cross-checked with
torch's private ``_non_persistent_buffers_set``: a state-dict hook or an
overridden ``_save_to_state_dict`` can drop a buffer the private set does not
list, and a module may lack the private set altogether.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import nn

from dummyprof.anatomy.tensors import qualified_name


@dataclass
class Persistence:
    non_persistent: set[str] = field(default_factory=set)  # qualified buffer names
    notes: list[str] = field(default_factory=list)


def buffer_persistence(model: nn.Module) -> Persistence:
    """Qualified names of non-persistent buffers, and where the two sources of truth disagree."""
    result = Persistence()
    try:
        saved: set[str] | None = set(model.state_dict(keep_vars=True))
    except Exception as exc:  # a module whose state_dict() cannot run: fall back on the private set
        saved = None
        result.notes.append(
            f"state_dict() raised {type(exc).__name__}: {exc}; persistence from _non_persistent_buffers_set"
        )
    for path, module in model.named_modules(remove_duplicate=False):
        private = getattr(module, "_non_persistent_buffers_set", None)
        missing_private_noted = False
        for local, buffer in module._buffers.items():
            if buffer is None:
                continue
            name = qualified_name(path, local)
            by_private = None if private is None else local in private
            by_state_dict = None if saved is None else name not in saved
            non_persistent = by_state_dict if by_state_dict is not None else bool(by_private)
            if by_private is None and by_state_dict is not None and not missing_private_noted:
                result.notes.append(
                    f"{path or '<root>'} ({type(module).__name__}) has no _non_persistent_buffers_set; "
                    "persistence of its buffers taken from state_dict()"
                )
                missing_private_noted = True
            elif by_private is not None and by_state_dict is not None and by_private != by_state_dict:
                said = "non-persistent" if by_private else "persistent"
                result.notes.append(
                    f"{name}: _non_persistent_buffers_set says {said} but state_dict() "
                    f"{'leaves it out' if by_state_dict else 'includes it'}; following state_dict()"
                )
            if non_persistent:
                result.non_persistent.add(name)
    return result
