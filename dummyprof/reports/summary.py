"""One builder for every kind's one-line summary (``--quiet`` prints only it): its clauses fitted to the width."""

from __future__ import annotations

from dataclasses import dataclass

SUMMARY_WIDTH = 80  # -q prints one line; a line too long drops its least important clauses to fit
ALWAYS = 9  # a clause no line drops: the answer (the fastest, does it fit, the verdict), the device, CONTENDED


@dataclass(frozen=True, eq=False)
class Clause:
    """A piece of a summary line, its separator included. ``keep``: how much it matters (the lowest goes first,
    the last of equals first). ``group``/``stands_for``: a stand-in (" of 3 strategies") shown only once a clause
    of the group it stands for was dropped."""

    text: str
    keep: int = ALWAYS
    group: str = ""
    stands_for: str = ""


def fit(parts: list[Clause | str], width: int = SUMMARY_WIDTH) -> str:
    """The clauses (a string: one kept ``ALWAYS``) as one line of at most ``width`` columns: the least important
    dropped until it fits, then each dropped one put back, the most important first, where it fits after all (a
    group's only after those before it). The clauses kept ``ALWAYS`` stay whatever the width."""
    clauses = [p if isinstance(p, Clause) else Clause(p) for p in parts]
    kept = [c for c in clauses if c.text]
    while len(_joined(clauses, kept)) > width and any(c.keep < ALWAYS for c in kept):
        droppable = [i for i, c in enumerate(kept) if c.keep < ALWAYS]
        del kept[min(droppable, key=lambda i: (kept[i].keep, -i))]
    for back in sorted((c for c in clauses if c.text and c not in kept), key=lambda c: -c.keep):
        tried = [c for c in clauses if c in kept or c is back]
        before = clauses[: clauses.index(back)]
        whole = all(c in kept for c in before if back.group and c.group == back.group)  # a list stays a prefix
        if whole and len(_joined(clauses, tried)) <= width:
            kept = tried
    return _joined(clauses, kept)


def _joined(clauses: list[Clause], kept: list[Clause]) -> str:
    dropped = {c.group for c in clauses if c.group and c not in kept}
    return "".join(c.text for c in kept if not c.stands_for or c.stands_for in dropped)
