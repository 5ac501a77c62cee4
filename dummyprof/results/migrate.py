"""Older results files (schemas 1 to 3) brought up to schema 4 as plain values, so they load and render as they
did: what the reporters now derive is dropped, sentences that cannot be derived are kept as ``legacy_*`` fields,
renamed keys take their new names (docs/architecture.md, "Results schema"; which schemas still load and why:
docs/semantics.md). Anything unexpected is left for msgspec to refuse with the field's name.
"""

from __future__ import annotations

import re
from typing import Any

LOADER_NOTICE = "loaders are traced (every operator that writes in place is seen)"
META_NOTICE = "built on the meta device: "
REAL_TENSORS = re.compile(r"the callable put (\d+) tensor\(s\) on a real device")
NOT_RECORDED = "could not record: "


LAYOUT_NAMES = {"tp_size": "tp", "dp_size": "dp"}  # schema 3's names of engram's layout sizes, and schema 4's

# The sentences schema 2 stored as a method's ``reason``, by how they start, and the code each stands for.
REASON_CODES = (("does not fit in memory", "memory"), ("one full-size fill", "time"), ("fits:", "fits"))


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    version = data.get("schema_version")
    if version == 1:
        data = _from_1(dict(data))
    if version in (1, 2):
        data = _from_2(dict(data))
    if version in (1, 2, 3):
        data = _from_3(dict(data))
    return data


def _from_3(data: dict[str, Any]) -> dict[str, Any]:
    """engram's ``tp`` and ``dp``, as its flags, config keys and options say them (schema 3: ``tp_size``,
    ``dp_size``): in its layout, and in a gate scenario's fingerprint (engram's, engram-ranks', a rows sweep's)."""
    engram = data.get("engram")
    if isinstance(engram, dict) and isinstance(engram.get("layout"), dict):
        data["engram"] = {**engram, "layout": _layout_names(engram["layout"])}
    gate = data.get("gate")
    if isinstance(gate, dict) and isinstance(gate.get("scenarios"), list):
        data["gate"] = {**gate, "scenarios": [_fingerprint_names(run) for run in gate["scenarios"]]}
    return data


def _layout_names(data: Any) -> Any:
    """``tp_size``/``dp_size`` as ``tp``/``dp``; left as it is where a new name is there already (msgspec, or the
    fingerprint's comparison, then names the old key)."""
    if not isinstance(data, dict) or "tp" in data or "dp" in data:
        return data
    return {LAYOUT_NAMES.get(key, key): value for key, value in data.items()}  # each in its place


def _fingerprint_names(run: Any) -> Any:
    fingerprint = run.get("fingerprint") if isinstance(run, dict) else None
    if not isinstance(fingerprint, dict) or not isinstance(fingerprint.get("options"), dict):
        return run
    options, command = fingerprint["options"], fingerprint.get("command")
    if command in ("engram", "engram-ranks"):
        options = _layout_names(options)
    elif command == "sweep" and isinstance(options.get("engram"), dict):
        options = {**options, "engram": _layout_names(options["engram"])}
    return {**run, "fingerprint": {**fingerprint, "options": options}}


def _from_2(data: dict[str, Any]) -> dict[str, Any]:
    engram = data.get("engram")
    if not isinstance(engram, dict):
        return data
    engram = data["engram"] = _renamed(engram, "plan_notes", "legacy_plan_notes")
    if isinstance(engram.get("methods"), list):
        engram["methods"] = [_method_from_2(m) for m in engram["methods"]]
    return data


def _method_from_2(method: Any) -> Any:
    if not isinstance(method, dict) or not isinstance(method.get("reason"), str) or not method["reason"]:
        return method
    sentence = method["reason"]
    code = next((code for start, code in REASON_CODES if sentence.startswith(start)), "")
    return {**method, "reason": code, "legacy_reason": sentence}


def _from_1(data: dict[str, Any]) -> dict[str, Any]:
    data.pop("summary", None)
    notices = data.get("notices")
    kept: list[Any] = list(notices) if isinstance(notices, list) else []
    kept = [n for n in kept if not (isinstance(n, str) and n.startswith(LOADER_NOTICE))]
    audit = data.get("audit")
    if isinstance(audit, dict) and isinstance(audit.get("findings"), list):
        audit = data["audit"] = dict(audit)
        audit["findings"] = [_renamed(f, "message", "legacy_message") for f in audit["findings"]]
    inspect = data.get("inspect")
    meta = [n for n in kept if isinstance(n, str) and n.startswith(META_NOTICE)]
    if isinstance(inspect, dict) and meta:
        real = REAL_TENSORS.search(meta[-1])
        data["inspect"] = {**inspect, "real_device_tensors": int(real.group(1)) if real else 0}
        kept = [n for n in kept if n not in meta]
    gate = data.get("gate")
    if isinstance(gate, dict) and isinstance(gate.get("scenarios"), list):
        gate = data["gate"] = dict(gate)
        runs = gate["scenarios"] = [_renamed(run, "summary") for run in gate["scenarios"]]
        unrecorded = [n for n in kept if isinstance(n, str) and n.startswith(NOT_RECORDED)]
        if unrecorded:
            gate["unrecorded"] = unrecorded[-1][len(NOT_RECORDED) :].split("; ")
            kept = [n for n in kept if n not in unrecorded]
        if data.get("command") == "gate":
            derived = {
                f"scenario {run.get('name')!r} could not be measured: {run.get('error')}"
                for run in runs
                if isinstance(run, dict) and run.get("error") is not None
            }
            kept = [n for n in kept if n not in derived]
    if isinstance(notices, list):
        data["notices"] = kept
    return data


def _renamed(data: Any, old: str, new: str | None = None) -> Any:
    """The object ``data`` with its key ``old`` called ``new`` (dropped without one); anything else as is."""
    if not isinstance(data, dict):
        return data
    renamed = {key: value for key, value in data.items() if key != old}
    if old in data and new is not None:
        renamed[new] = data[old]
    return renamed
