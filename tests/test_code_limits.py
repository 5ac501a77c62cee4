"""The package's size limits, measured on its source: no line over 120 columns, no function over 80 lines, no
function over cyclomatic complexity 25.

Complexity is radon's (``radon.complexity.cc_visit``): the measure the limit is stated in, so the test and a reader
running ``radon cc`` agree at the threshold. Every function counts, methods and nested functions too; a nested
function's branches count for it alone, not for the function around it (radon's rule).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Class, Function

PACKAGE = Path(__file__).resolve().parent.parent / "dummyprof"
MAX_COLUMNS = 120
MAX_LINES = 80
MAX_COMPLEXITY = 25


def _functions(blocks: list[Function | Class]) -> Iterator[Function]:
    for block in blocks:
        if isinstance(block, Class):
            yield from _functions(list(block.methods))
            yield from _functions(list(block.inner_classes))
            continue
        yield block
        yield from _functions(list(block.closures))


def _measured(text: str) -> dict[str, tuple[int, int]]:
    """Each function of ``text`` by its full name (``Class.method``; a nested one under its own name): its lines
    (``def`` to its last line) and its complexity."""
    # cc_visit lists a class's methods twice (in the class, and as functions of the module): one entry each.
    return {f.fullname: (f.endline - f.lineno + 1, f.complexity) for f in _functions(cc_visit(text))}


def _over() -> dict[str, str]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        text = path.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            if len(line) > MAX_COLUMNS:
                found[f"{where}:{number}"] = f"{len(line)} columns"
        for name, (lines, complexity) in _measured(text).items():
            if lines > MAX_LINES or complexity > MAX_COMPLEXITY:
                found[f"{where}:{name}"] = f"{lines} lines, complexity {complexity}"
    return found


def test_no_line_or_function_over_the_limits() -> None:
    assert _over() == {}


def test_the_measure_counts_branches_lines_and_nested_functions() -> None:
    text = """
class Shape:
    def area(self, a, b):
        if a and b:
            return a * b
        return 0


def outer(xs):
    def inner(x):
        return x if x > 0 else -x
    total = 0
    for x in xs:
        while x > 1:
            x //= 2
        total += sum(y for y in xs if y)
    try:
        pass
    except ValueError:
        pass
    return total
"""
    assert _measured(text) == {
        "Shape.area": (4, 3),  # if (+1), and (+1)
        "outer": (13, 6),  # for, while, comprehension's for and its if, except: +5, not inner's ternary
        "inner": (2, 2),
    }
