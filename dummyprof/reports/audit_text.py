"""The sentence for each kind of audit finding, written from the finding's data (terminal and Markdown alike)."""

from __future__ import annotations

from collections.abc import Callable

from dummyprof.results.audit import Finding

UNTOUCHED_SHOWN = 6


def _filler(f: Finding) -> str:
    return f.fillers[0] if f.fillers else "?"


def untouched_names(f: Finding) -> str:
    shown = ", ".join(f.names[:UNTOUCHED_SHOWN])
    more = len(f.names) - UNTOUCHED_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


SENTENCES: dict[str, Callable[[Finding], str]] = {
    "missed": lambda f: (
        # No filler wrote it: vLLM's per-layer fill is the reference (a lone --loader that skips a tensor).
        f"{f.tensor} ({f.dtype}) is written by {', '.join(f.written_by) or 'vLLM' + chr(39) + 's per-layer fill'} "
        f"but not by {', '.join(f.fillers)}"
    ),
    "repeated": lambda f: f"{_filler(f)} writes {f.tensor} {f.count} times",
    "values-differ": lambda f: (
        f"{f.tensor}: final bytes differ ({' vs '.join(' = '.join(g) for g in f.groups)}) with the same initializer"
    ),
    "non-persistent-written": lambda f: (
        f"{_filler(f)} overwrites non-persistent buffer {f.tensor} (computed at construction, never in a "
        "checkpoint; vLLM's per-layer fill leaves it alone)"
    ),
    "unregistered": lambda f: (
        f"{f.tensor} ({f.dtype} {f.shape}, {f.nbytes:,} bytes) is held by its module but not registered as a "
        "parameter or buffer: no parameters()/state_dict() traversal fills it"
    ),
    "replaced": lambda f: f"{_filler(f)} replaced {f.tensor} instead of writing it in place",
    "recorder-mismatch": lambda f: (
        f"{_filler(f)}: recorder counts {f.recorded_bytes:,} bytes written to {f.tensor}, "
        f"tracing saw {f.traced_bytes:,}"
    ),
    "shared-storage": lambda f: (
        f"{', '.join(f.names)}: "
        + ("tied (one tensor, several owners)" if f.tied else "aliased (views of one storage)")
    ),
    "untouched": lambda f: f"{len(f.names)} tensor(s) written by no filler: {untouched_names(f)}",
    "persistence": lambda f: f.detail,
    "untraced-write": lambda f: (
        f"{_filler(f)}: {f.tensor} changed although no operator wrote it (a numpy view or a raw pointer); "
        "counted as written once"
    ),
}


def finding_text(f: Finding) -> str:
    """What the finding says; a finding from a schema-1 file keeps the sentence it was saved with."""
    if f.legacy_message:
        return f.legacy_message
    sentence = SENTENCES.get(f.kind)
    return sentence(f) if sentence is not None else f"{f.kind}: {f.tensor}"


def finding_subject(f: Finding) -> str:
    """The tensor a row of findings names (untouched: the list, as shown)."""
    return untouched_names(f) if f.kind == "untouched" and not f.legacy_message else f.tensor
