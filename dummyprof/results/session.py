"""The one results document every command produces and every reporter renders."""

from __future__ import annotations

import datetime as _dt

from msgspec import field

from dummyprof._version import __version__
from dummyprof.results.audit import AuditResult
from dummyprof.results.common import Count, Environment, Record
from dummyprof.results.compare import CompareResult
from dummyprof.results.deployment import DeploymentResult
from dummyprof.results.engram import EngramResult
from dummyprof.results.gate import GateResult
from dummyprof.results.inspect import InspectResult
from dummyprof.results.ranks import RankRecord, RanksAggregate
from dummyprof.results.sweep import SweepResult

# Files of any other schema are refused (results/store.py): docs/architecture.md, "Results schema".
SCHEMA_VERSION = 6
# Each kind of Results (``command``) and the section it fills (a file without it is refused): every per-kind key.
SECTIONS = {name: name for name in ("compare", "audit", "inspect", "engram", "gate", "sweep", "deployment")}
SECTIONS["baseline"] = "gate"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


class Results(Record):
    """A run of one command, torch-free: each command fills its own section and leaves the others ``None``."""

    command: str = ""
    schema_version: Count = SCHEMA_VERSION
    dummyprof_version: str = __version__
    created_at: str = field(default_factory=_now)
    environment: Environment = field(default_factory=Environment)
    notices: list[str] = []  # what a model source or loader said; none a reporter derives
    compare: CompareResult | None = None
    audit: AuditResult | None = None
    inspect: InspectResult | None = None
    gate: GateResult | None = None  # baseline and gate
    engram: EngramResult | None = None
    # Multi-rank runs (torchrun, --nproc): every rank once, and the aggregate; empty for one process.
    ranks: list[RankRecord] = []
    ranks_aggregate: RanksAggregate | None = None
    sweep: SweepResult | None = None
    deployment: DeploymentResult | None = None  # compare/inspect/audit with --tp/--ep/--pp/--dp or --online-quant
