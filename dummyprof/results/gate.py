"""Results of ``dummyprof baseline`` (the measured scenarios) and ``dummyprof gate`` (and a verdict per check)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from msgspec import field

from dummyprof.results.common import Contention, Count, Estimate, Record

PASS = "pass"
REGRESSED = "regressed"
IMPROVED = "improved"
NOT_SIGNIFICANT = "not significant"
NOT_COMPARABLE = "not comparable"
NOT_MEASURED = "could not measure"
NOT_JUDGED = "not judged"  # a time measured while the machine was contended: skipped, neither passed nor failed
VERDICTS = (PASS, REGRESSED, IMPROVED, NOT_SIGNIFICANT, NOT_COMPARABLE, NOT_MEASURED, NOT_JUDGED)

EXIT_PASS = 0
EXIT_REGRESSION = 1
EXIT_INCOMPLETE = 3  # could not measure, not comparable, or (--strict) not judged


class Fingerprint(Record):
    """What must match for two measurements of one scenario to be compared."""

    scenario: str = ""
    command: str = ""
    options: dict[str, Any] = {}  # the flags that define the measured work
    torch_version: str = ""
    device: str = ""
    cpu_model: str = ""
    torch_threads: Count = 0

    @property
    def torch_release(self) -> str:  # ``2.13.0`` for ``2.13.0+cpu``: counters compare releases (gate/fingerprint.py)
        return self.torch_version.split("+", 1)[0]


class Metric(Record):
    """One measured quantity. Counters are exact; a time keeps every measured round and the machine's reading."""

    kind: str = "counter"  # counter, time or fit
    unit: str = ""
    value: float = 0.0  # the count, or the time's median
    time: Estimate | None = None  # a time: its rounds and how busy the machine was

    @property
    def samples(self) -> list[float]:
        return self.time.samples if self.time is not None else []

    @property
    def contended(self) -> list[str]:  # a time's contention reason codes (results.common)
        c = self.time.contention if self.time is not None else None
        return list(c.reasons) if c is not None else []


class ScenarioRun(Record):
    name: str = ""
    command: str = ""
    fingerprint: Fingerprint = field(default_factory=Fingerprint)
    metrics: dict[str, Metric] = {}
    error: str | None = None  # why the scenario could not be measured (a crash is never a regression)
    contention: Contention | None = None  # how busy the machine was while the scenario timed its rounds


class CheckResult(Record):
    scenario: str = ""
    name: str = ""  # e.g. "per-layer.visits" or "per-layer.time / legacy.time"
    kind: str = ""  # counter, limit, ratio or timing
    unit: str = ""
    baseline: float | None = None
    current: float | None = None
    change: float | None = None  # current / baseline
    threshold: str = ""  # the rule, in words: "== baseline", "<= 0.6", "> x1.10 and p < 0.05"
    p_value: float | None = None
    verdict: str = PASS
    detail: str = ""


class GateResult(Record):
    config_path: str = ""
    baseline_path: str = ""
    factor: float = 1.10
    alpha: float = 0.05
    scenarios: list[ScenarioRun] = []
    checks: list[CheckResult] = []
    exit_code: Count = EXIT_PASS
    unrecorded: list[str] = []  # reports or the baseline that could not be written, and why
    strict: bool = False  # --strict: a check not judged (a contended timing) fails the gate (exit 3)

    def counts(self) -> dict[str, Count]:
        return dict.fromkeys(VERDICTS, 0) | Counter(check.verdict for check in self.checks)


def gate_exit_code(checks: list[CheckResult], *, strict: bool = False) -> int:
    """1 for a regression (a definite finding wins), else 3 if anything could not be measured or compared, else 0.
    A time not judged (measured under contention) is skipped: 0, unless ``strict`` (then 3)."""
    verdicts = {c.verdict for c in checks}
    if REGRESSED in verdicts:
        return EXIT_REGRESSION
    if verdicts & {NOT_COMPARABLE, NOT_MEASURED} or (strict and NOT_JUDGED in verdicts):
        return EXIT_INCOMPLETE
    return EXIT_PASS
