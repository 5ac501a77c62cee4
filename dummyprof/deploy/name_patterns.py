"""Module-name patterns from a checkpoint's config (compressed-tensors ``re:``, GPTQ ``dynamic`` keys), matched
without backtracking.

vLLM matches them with Python's ``re``, which backtracks: a pattern such as ``(a*)*b`` takes time exponential in
the name's length, and the pattern comes from a file anyone can edit. Here the same pattern is read by Python's
own parser (the same syntax, the same errors) and run as a Thompson automaton (a Pike VM): every state is visited
at most once per character, so one match costs at most (states x characters) steps whatever the pattern. Whether a
name matches is the same as ``re.match`` gives (greedy or lazy changes which match, never whether one exists).
What an automaton cannot run is refused, naming why: backreferences, conditionals, lookarounds, atomic groups and
possessive quantifiers (each can change whether a match exists and needs backtracking). The pattern's length and
the automaton's states are bounded, so a counted repeat (``a{1000}{1000}``) cannot make it huge.
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Callable
from typing import Any

if sys.version_info >= (3, 11):
    from re import _constants as _c  # type: ignore[attr-defined]
    from re import _parser as _p  # type: ignore[attr-defined]
else:  # pragma: no cover - Python 3.10
    import sre_constants as _c
    import sre_parse as _p

MAX_PATTERN_CHARS = 1000  # the longest pattern in a published config is under 100 characters
MAX_STATES = 10_000  # automaton states, after counted repeats are unrolled

_IGNORECASE, _DOTALL, _MULTILINE, _ASCII = 2, 16, 8, 256  # re.I, re.S, re.M, re.A
_NOT_REGULAR = {
    "GROUPREF": "a backreference",
    "GROUPREF_EXISTS": "a conditional group",
    "ASSERT": "a lookahead or lookbehind",
    "ASSERT_NOT": "a negative lookahead or lookbehind",
    "ATOMIC_GROUP": "an atomic group",
    "POSSESSIVE_REPEAT": "a possessive quantifier",
}


class PatternError(ValueError):
    """A pattern that is not a regular expression, or that this matcher does not run; the message says why."""


class _State:
    __slots__ = ("at", "out", "test")

    def __init__(
        self, test: Callable[[str], bool] | None = None, at: str | None = None, out: list[_State] | None = None
    ) -> None:
        self.test = test  # consumes one character when it holds
        self.at = at  # a zero-width assertion (AT_*)
        self.out: list[_State] = out or []  # the next states (several: a split)


_MATCH = _State()


def _word(ch: str, ascii_only: bool) -> bool:
    return ch == "_" or (ch.isalnum() and (ch.isascii() or not ascii_only))


def _category(name: str, ascii_only: bool) -> Callable[[str], bool]:
    tests: dict[str, Callable[[str], bool]] = {
        "DIGIT": lambda ch: ch.isdecimal() and (ch.isascii() or not ascii_only),
        "SPACE": lambda ch: ch.isspace() and (ch.isascii() or not ascii_only),
        "WORD": lambda ch: _word(ch, ascii_only),
    }
    negated = name.startswith("CATEGORY_NOT_")
    test = tests.get(name.removeprefix("CATEGORY_NOT_").removeprefix("CATEGORY_"))
    if test is None:
        raise PatternError(f"the character class {name} is not supported")
    return (lambda ch: not test(ch)) if negated else test


def _same(a: str, b: str, fold: bool) -> bool:
    return a == b or (fold and a.casefold() == b.casefold())


def _in_range(low: str, high: str, ch: str, *, fold: bool) -> bool:
    return any(low <= c <= high for c in ((ch, ch.lower(), ch.upper()) if fold else (ch,)))


def _in_set(items: list[tuple[Any, Any]], flags: int) -> Callable[[str], bool]:
    fold, ascii_only = bool(flags & _IGNORECASE), bool(flags & _ASCII)
    negate, tests = False, list[Callable[[str], bool]]()
    for op, arg in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            tests.append(functools.partial(_same, chr(arg), fold=fold))
        elif name == "RANGE":
            tests.append(functools.partial(_in_range, chr(arg[0]), chr(arg[1]), fold=fold))
        elif name == "CATEGORY":
            tests.append(_category(str(arg), ascii_only))
        else:
            raise PatternError(f"the set item {name} is not supported")
    return lambda ch: any(t(ch) for t in tests) != negate


class _Builder:
    def __init__(self) -> None:
        self.states = 0

    def state(self, test: Callable[[str], bool] | None = None, at: str | None = None, *, then: list[_State]) -> _State:
        """A new state, followed by ``then``."""
        self.states += 1
        if self.states > MAX_STATES:
            raise PatternError(f"it unrolls to more than {MAX_STATES:,} states (a counted repeat too large)")
        return _State(test, at, then)

    def sequence(self, items: Any, flags: int, then: _State) -> _State:
        for op, arg in reversed(list(items)):
            then = self.item(str(op), arg, flags, then)
        return then

    def item(self, op: str, arg: Any, flags: int, then: _State) -> _State:
        if op in _NOT_REGULAR:
            raise PatternError(f"it has {_NOT_REGULAR[op]}, which needs a backtracking matcher")
        if op in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
            if op == "IN":
                test = _in_set(arg, flags)
            elif op == "ANY":
                test = (lambda ch: True) if flags & _DOTALL else (lambda ch: ch != "\n")
            else:
                same = functools.partial(_same, chr(arg), fold=bool(flags & _IGNORECASE))
                test = same if op == "LITERAL" else (lambda ch: not same(ch))
            return self.state(test, then=[then])
        if op == "AT":
            return self.state(at=str(arg) + ("_LINE" if flags & _MULTILINE else ""), then=[then])
        if op == "SUBPATTERN":
            _group, add, remove, body = arg
            return self.sequence(body, (flags | add) & ~remove, then)
        if op == "BRANCH":
            return self.state(then=[self.sequence(alternative, flags, then) for alternative in arg[1]])
        if op in ("MAX_REPEAT", "MIN_REPEAT"):
            low, high, body = arg
            if high == _c.MAXREPEAT:  # body*: a split that loops back through the body
                tail = self.state(then=[])  # a loop: its way into the body is the body leading back to it
                tail.out = [self.sequence(body, flags, tail), then]
            else:  # body{0,high-low}: nested optional copies
                tail = then
                for _ in range(high - low):
                    tail = self.state(then=[self.sequence(body, flags, tail), then])
            for _ in range(low):
                tail = self.sequence(body, flags, tail)
            return tail
        raise PatternError(f"the construct {op} is not supported")


def _holds(at: str, text: str, pos: int) -> bool:
    before, after = text[pos - 1 : pos], text[pos : pos + 1]
    if at in ("AT_BEGINNING", "AT_BEGINNING_STRING", "AT_BEGINNING_STRING_LINE"):
        return pos == 0
    if at == "AT_BEGINNING_LINE":
        return pos == 0 or before == "\n"
    if at == "AT_END":  # $: the end, or before a newline that ends the text
        return pos == len(text) or (pos == len(text) - 1 and after == "\n")
    if at == "AT_END_LINE":
        return pos == len(text) or after == "\n"
    if at in ("AT_END_STRING", "AT_END_STRING_LINE"):
        return pos == len(text)
    word = (bool(before) and _word(before, False)) != (bool(after) and _word(after, False))
    if at.startswith("AT_BOUNDARY"):
        return word
    if at.startswith("AT_NON_BOUNDARY"):
        return not word
    raise PatternError(f"the anchor {at} is not supported")


class NamePattern:
    """One compiled pattern; :meth:`match` is ``re.match(pattern, name) is not None``, in bounded time."""

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise PatternError(f"{text!r} is not a string")
        if len(text) > MAX_PATTERN_CHARS:
            raise PatternError(f"it is {len(text):,} characters, over {MAX_PATTERN_CHARS:,}")
        try:
            with warnings.catch_warnings():  # "possible nested set": the pattern's own business, not the run's
                warnings.simplefilter("ignore", FutureWarning)
                parsed = _p.parse(text, 0)
        except (_c.error, OverflowError, RecursionError) as exc:
            raise PatternError(f"it is not a regular expression ({exc})") from None
        self.text = text
        self.start = _Builder().sequence(parsed, parsed.state.flags, _MATCH)

    def _closure(self, states: list[_State], text: str, pos: int) -> list[_State]:
        seen: set[int] = set()
        out: list[_State] = []
        stack = list(reversed(states))
        while stack:
            state = stack.pop()
            if id(state) in seen:
                continue
            seen.add(id(state))
            if state.test is not None or state is _MATCH:
                out.append(state)
            elif state.at is None or _holds(state.at, text, pos):
                stack.extend(reversed(state.out))
        return out

    def match(self, name: str) -> bool:
        current = self._closure([self.start], name, 0)
        for pos, ch in enumerate(name):
            if _MATCH in current:
                return True
            moved = [s.out[0] for s in current if s.test is not None and s.test(ch)]
            current = self._closure(moved, name, pos + 1)
            if not current:
                return False
        return _MATCH in current


@functools.lru_cache(maxsize=1024)
def compiled(text: str) -> NamePattern:
    """The pattern, compiled once (a config's few patterns are matched against every module name)."""
    return NamePattern(text)


def match(pattern: str, name: str) -> bool:
    """``re.match(pattern, name) is not None`` without backtracking; :class:`PatternError` for what cannot run."""
    return compiled(pattern).match(name)
