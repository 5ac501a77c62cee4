"""Results of ``dummyprof audit``: what each strategy or loader wrote, and what is wrong with it."""

from __future__ import annotations

from msgspec import field

from dummyprof.results.common import Count, Record
from dummyprof.results.compare import ModelSummary

# Kinds of finding; each fails the audit (exit 1) unless ignored with --ignore.
FINDING_KINDS: dict[str, str] = {
    "missed": "a tensor vLLM's per-layer fill writes (or another filler writes) that a filler leaves untouched",
    "repeated": "a tensor written more than once by one filler",
    "values-differ": "two fillers with the same initializer leave different bytes",
    "non-persistent-written": "a non-persistent buffer (computed at construction) overwritten",
    "unregistered": "a tensor held by a module as a plain attribute, list or dict: no traversal reaches it",
    "replaced": "a loader replaced a tensor instead of writing it in place",
    "recorder-mismatch": "a built-in strategy's visit recorder disagrees with the write tracer",
}
# Informational kinds: reported, never fail the audit.
INFO_KINDS: dict[str, str] = {
    "shared-storage": "tied parameters or aliased views: several names, one storage",
    "untouched": "written by no filler and not by vLLM's fill either (integer indices, meta tensors...)",
    "persistence": "_non_persistent_buffers_set and state_dict() disagree, or one is missing",
    "non-persistent-restored": (
        "a non-persistent buffer written back to exactly the values its module computes at construction "
        "(transformers' init recomputes rotary inv_freq): intended"
    ),
    "untraced-write": "bytes changed with no operator writing them (numpy view, raw pointer): counted as one write",
}


class Finding(Record):
    """What the audit found, as data (reporters write the sentence); beside each field, the kinds that fill it."""

    kind: str = ""
    tensor: str = ""  # the tensor it is about (canonical name); untouched: the first of ``names``
    fillers: list[str] = []  # the fillers at fault (missed: those that did not write it)
    ignored: bool = False
    names: list[str] = []  # shared-storage: every name of the storage; untouched: every tensor
    written_by: list[str] = []  # missed: the fillers that did write it
    count: Count = 0  # repeated: how many times one filler wrote it
    tied: bool = False  # shared-storage: one tensor object with several owners (else views of one storage)
    dtype: str = ""  # missed, unregistered
    shape: list[Count] = []  # unregistered
    nbytes: Count = 0  # unregistered
    recorded_bytes: Count = 0  # recorder-mismatch: what the visit recorder counted
    traced_bytes: Count = 0  # recorder-mismatch: what the write tracer saw
    groups: list[list[str]] = []  # values-differ: fillers that left identical bytes
    detail: str = ""  # persistence: what the model's structure showed (anatomy's note)

    @property
    def informational(self) -> bool:
        return self.kind in INFO_KINDS


class FillerSummary(Record):
    """One strategy or loader, as traced."""

    name: str = ""
    kind: str = "strategy"  # strategy or loader
    initializer: str | None = None  # None for loaders: their values are not compared
    writes: Count = 0
    tensors_written: Count = 0
    bytes_written: Count = 0
    repeated_tensors: Count = 0
    outside_writes: Count = 0  # writes to storages the model does not register (temporaries, unregistered tensors)


class AuditTensor(Record):
    names: list[str] = []
    kinds: list[str] = []
    dtype: str = ""
    shape: list[Count] = []
    nbytes: Count = 0
    device: str = ""
    writes: dict[str, Count] = {}
    bytes_written: dict[str, Count] = {}
    ops: dict[str, list[str]] = {}
    digests: dict[str, str] = {}  # blake2b of the final bytes, written tensors only
    vllm_fills: bool = False  # persistent, and vLLM's per-layer fill writes it: every filler must (older files: False)


class UnregisteredTensor(Record):
    name: str = ""
    shape: list[Count] = []
    dtype: str = ""
    nbytes: Count = 0


class AuditResult(Record):
    model: ModelSummary = field(default_factory=ModelSummary)
    fillers: list[FillerSummary] = []
    tensors: dict[str, AuditTensor] = {}  # keyed by canonical name
    findings: list[Finding] = []
    unregistered: list[UnregisteredTensor] = []
    value_groups: list[list[str]] = []  # fillers whose final values were compared

    @property
    def failing(self) -> list[Finding]:
        return [f for f in self.findings if not f.informational and not f.ignored]

    @property
    def clean(self) -> bool:
        return not self.failing
