"""The import rules of docs/architecture.md, checked by reading the source (AST), not by trusting comments.

Every ``import``/``from ... import`` in ``dummyprof/`` is read, at module level and
inside functions. Imports under ``if TYPE_CHECKING:`` never run, so they count
for the floors and the cycles alone: a type named from a floor above, or from a module
that imports this one, is a dependency all the same.
Relative imports are not used in this package; the scan would miss them, so one rule
forbids them.
"""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "dummyprof"

# What a folder holds decides what it may import. Folders below a line never import those above it:
#   cli, api                      the edges: parse flags, call the library, choose a reporter
#   gate                          runs scenarios, checks their Results
#   scenarios                     one package per command: options, validate, run -> Results
#   ranks                         a torch.distributed world: launching, joining, barriers, gathering (any scenario)
#   loaders | measure | models    fills | instruments | model sources
#   allocation                    host memory allocated on purpose (backings, arenas), for scenarios
#   anatomy, usercode             the tensor walk (torch only) | a user's code by spec (no torch)
#   results, reports              the torch-free data model | reporters that render it
#   files                         the user's files: bounded reads (for all), what a run reads and writes (edges only)
# Every folder of the package, and the modules that rank as one.
LAYERS = frozenset(
    {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"} | {"api", "usercode", "layout"}
)
FORBIDDEN: dict[str, set[str]] = {
    "anatomy": set(LAYERS - {"anatomy"}),  # imports no other dummyprof package
    "usercode": {"cli", "api", "gate", "scenarios", "ranks", "loaders", "measure", "models", "anatomy", "reports"},
    "results": {"cli", "api", "gate", "scenarios", "ranks", "loaders", "measure", "models", "anatomy", "reports"},
    "reports": {"cli", "api", "gate", "scenarios", "ranks", "loaders", "measure", "models", "anatomy"},
    "models": {"cli", "api", "gate", "scenarios", "ranks", "loaders", "measure", "allocation", "reports"},
    "measure": {"cli", "api", "gate", "scenarios", "ranks", "loaders", "models", "allocation", "reports"},
    "loaders": {"cli", "api", "gate", "scenarios", "ranks", "models", "allocation", "reports"},
    # Allocation sits beside measure: it reserves memory, it does not build models or time anything.
    "allocation": {"cli", "api", "gate", "scenarios", "ranks", "loaders", "measure", "models", "anatomy", "reports"},
    # The one parallel layout (issue #28): errors only, so options, models and deploy all take the same object.
    "layout": set(LAYERS - {"layout"}),
    # Generic ranks (issue #28): torch.distributed and errors only; what a rank does is its scenario's.
    "ranks": set(LAYERS - {"ranks"}),
    "scenarios": {"cli", "api", "gate", "reports"},
    "gate": {"cli", "api", "reports"},
    # Below everything: it may use only errors and units, so that any layer may read a file through it.
    "files": set(LAYERS - {"files"}),
    "deploy": {"cli", "api", "gate", "scenarios", "ranks", "reports"},  # per-rank shards: on loaders, models, anatomy
}
# File policy at the edge (issue #18): only these folders decide what a run reads and how its outputs are written.
EDGE_ONLY = {"dummyprof.files.inputs": {"cli", "api", "gate"}, "dummyprof.files.outputs": {"cli", "api", "gate"}}
# Known exceptions, each with the work that removes it.
ALLOWED: set[tuple[str, str]] = set()
TORCH_FREE = ("results", "reports", "usercode", "files", "layout")


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name, e.g. dummyprof.models.loading
    target: str  # dotted module name as written, e.g. dummyprof.anatomy
    names: tuple[str, ...]  # for ``from X import a, b``: a, b
    module_level: bool
    line: int
    relative: bool = False


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path, typing: bool) -> Iterator[Import]:
    return _imports_of(path, path.read_text(), typing)


def _imports_of(path: Path, text: str, typing: bool) -> Iterator[Import]:
    """The imports of ``text``, read as the module at ``path``."""
    name = _module_name(path)

    def visit(node: ast.AST, module_level: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                branches = (*child.body, *child.orelse) if typing else child.orelse
                yield from (imp for stmt in branches for imp in visit_one(stmt, module_level))
                continue
            yield from visit_one(child, module_level)

    def visit_one(node: ast.AST, module_level: bool) -> Iterator[Import]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(name, alias.name, (), module_level, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            names = tuple(a.name for a in node.names)
            yield Import(name, node.module or "", names, module_level, node.lineno, relative=node.level > 0)
        else:
            inner = module_level and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            yield from visit(node, inner)

    yield from visit(ast.parse(text, filename=str(path)), True)


def all_imports(typing: bool = False) -> list[Import]:
    """Every import; with ``typing``, those under ``if TYPE_CHECKING:`` too."""
    return list(_scan(typing))


@functools.cache
def _scan(typing: bool) -> tuple[Import, ...]:
    """The package read once per run of the tests (a dozen of them read it; it does not change meanwhile)."""
    return tuple(imp for path in sorted(PACKAGE.rglob("*.py")) for imp in _imports(path, typing))


def _folder(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _where(imp: Import) -> str:
    return f"{imp.importer}:{imp.line} imports {imp.target}"


def test_the_scan_sees_imports_at_every_level() -> None:
    found = all_imports()
    assert any(i.importer == "dummyprof.cli.compare" and i.target.startswith("dummyprof.scenarios") for i in found)
    assert any(not i.module_level for i in found) and any(i.module_level for i in found)
    # imports under ``if TYPE_CHECKING:`` are counted only when asked for (the floors)
    assert len(all_imports(typing=True)) > len(found)


def test_no_relative_imports() -> None:
    assert [_where(i) for i in all_imports() if i.relative] == []


def test_folders_import_only_what_sits_below_them() -> None:
    broken = []
    for imp in all_imports(typing=True):  # a type from a floor above is a dependency on it too
        if not imp.target.startswith("dummyprof."):
            continue
        banned = FORBIDDEN.get(_folder(imp.importer), set())
        if _folder(imp.target) in banned and (imp.importer, imp.target) not in ALLOWED:
            broken.append(_where(imp))
    assert broken == []


def test_library_never_imports_the_cli_and_only_the_edges_choose_reporters() -> None:
    library = {
        "anatomy",
        "usercode",
        "results",
        "models",
        "measure",
        "allocation",
        "loaders",
        "scenarios",
        "gate",
        "testing",
    }
    found = all_imports()
    to_cli = [_where(i) for i in found if _folder(i.importer) in library | {"reports"} and _folder(i.target) == "cli"]
    to_reports = [_where(i) for i in found if _folder(i.importer) in library and _folder(i.target) == "reports"]
    assert to_cli == [] and to_reports == []


def test_only_the_edges_compute_inputs_and_write_output_files() -> None:
    found = all_imports()
    targets = [(i, t) for i in found for t in {i.target} | {f"{i.target}.{n}" for n in i.names} if t in EDGE_ONLY]
    broken = [_where(i) for i, t in targets if _folder(i.importer) not in EDGE_ONLY[t] | {"files"}]
    assert broken == []
    assert any(i.importer == "dummyprof.cli.output" for i, _ in targets)  # the scan sees them


def test_results_and_reports_never_import_torch() -> None:
    torch = [
        _where(i)
        for i in all_imports()
        if _folder(i.importer) in TORCH_FREE and (i.target == "torch" or i.target.startswith("torch."))
    ]
    assert torch == []


def test_importing_the_cli_loads_no_torch() -> None:
    code = "import sys, dummyprof.cli, dummyprof.cli.app; print(sorted(m for m in sys.modules if m[:5] == 'torch'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# What a command line loads before it answers: help and flag errors answer in a fraction of a second
# only if none of these heavy packages is imported (numpy alone costs ~0.2 s at start, torch seconds; rich
# ~0.1 s: the report is drawn with it, help is not).
# One process runs every command line in turn: what any of them loads stays loaded, so the union is checked.
_LOADED = """
import contextlib, io, json, sys
import dummyprof.cli
codes = []
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        codes.append(sys.modules["dummyprof.cli.app"].main(argv))
print(codes, sorted({m.split(".")[0] for m in sys.modules} & {"numpy", "torch", "transformers", "rich", "scipy"}))
"""


def _loaded(*argvs: list[str]) -> str:
    code = [sys.executable, "-c", _LOADED, json.dumps(argvs)]
    return subprocess.run(code, capture_output=True, text=True, check=True).stdout.strip()


def test_help_and_flag_errors_import_no_numpy_torch_or_transformers() -> None:
    from dummyprof.cli.app import COMMANDS

    commands = tuple(name for name, *_ in COMMANDS)
    assert set(commands) >= {"audit", "baseline", "compare", "engram", "gate", "inspect", "report", "sweep"}
    errors = (
        ["bogus"],
        *([name, "--bogus"] for name in commands),  # an unknown flag, on every command
        ["audit", "--depth", "x"],  # a value that does not parse, or is out of bounds, on every command
        ["baseline", "--repeat", "x"],
        ["compare", "--depth", "x"],
        ["compare", "--tp", "0"],
        ["compare", "--max-memory", "1XB"],
        ["engram", "--rows", "x"],
        ["engram", "--rows", "0"],
        ["gate", "--repeat", "x"],
        ["inspect", "--tp", "x"],
        ["sweep", "--depth", "1:x"],
    )
    out = _loaded(["--help"], *([name, "--help"] for name in commands), *errors)
    assert out == f"{[0] * (1 + len(commands)) + [2] * len(errors)} []"


def test_an_unknown_report_format_is_refused_before_numpy_or_torch() -> None:
    # report's values are checked against the reporters' registry (others may register theirs): it loads them
    assert _loaded(["report", "--format", "nope", "x.json"]) == "[2] ['rich']"


def test_an_audit_option_error_is_refused_before_torch() -> None:
    assert _loaded(["audit", "--ignore", "bogus"]) in ("[2] []", "[2] ['numpy']")  # numpy: reading results files


def _module_graph(imports: list[Import], modules: set[str]) -> dict[str, set[str]]:
    """Imports between dummyprof modules, at module level, inside functions and under ``if TYPE_CHECKING:`` alike:
    a function-level or type-only import hides a cycle from Python at import time, not from the design.
    ``from pkg import mod`` counts as importing ``pkg.mod``."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for imp in imports:
        if not imp.target.startswith("dummyprof"):
            continue
        submodules = {f"{imp.target}.{n}" for n in imp.names} & modules
        # ``from pkg import mod`` imports the submodule (running pkg/__init__.py, as any import of pkg.x does)
        targets = submodules if submodules and len(submodules) == len(imp.names) else {imp.target} | submodules
        graph[imp.importer] |= {t for t in targets if t in modules and t != imp.importer}
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively; components of more than one module are import cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert [c for c in strongly_connected(graph) if len(c) > 1] == [["a", "b", "c"]]


def test_no_import_cycles_between_modules() -> None:
    modules = {_module_name(p) for p in PACKAGE.rglob("*.py")}
    cycles = [c for c in strongly_connected(_module_graph(all_imports(typing=True), modules)) if len(c) > 1]
    assert cycles == []


def test_a_type_checking_import_closes_a_cycle() -> None:
    """The scan sees a cycle that only a type annotation closes, as ``deploy/quant.py`` and ``deploy/shards.py`` once
    had: each module's imports are read from a file, the second one under ``if TYPE_CHECKING:``."""
    source = {
        "a": "from dummyprof import b\n",
        "b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from dummyprof.a import Thing\n",
    }
    found: list[Import] = []
    for name, text in source.items():
        path = PACKAGE / f"{name}.py"
        found += [i for i in _imports_of(path, text, typing=True)]
    a, b = "dummyprof.a", "dummyprof.b"
    assert [c for c in strongly_connected(_module_graph(found, {a, b})) if len(c) > 1] == [[a, b]]
    without_types = [i for name, text in source.items() for i in _imports_of(PACKAGE / f"{name}.py", text, False)]
    assert [c for c in strongly_connected(_module_graph(without_types, {a, b})) if len(c) > 1] == []


def test_an_import_inside_a_function_closes_a_cycle() -> None:
    a, b = "dummyprof.a", "dummyprof.b"
    imports = [Import(a, b, (), module_level=True, line=1), Import(b, a, (), module_level=False, line=9)]
    assert [c for c in strongly_connected(_module_graph(imports, {a, b})) if len(c) > 1] == [[a, b]]


def test_allocation_lives_outside_model_sources() -> None:
    """Issue #18: backings reserve host memory; they are not a way to build a model."""
    assert not (PACKAGE / "models" / "backings.py").exists()
    assert (PACKAGE / "allocation" / "backings.py").exists()


def test_ranks_live_in_their_own_room() -> None:
    """Issue #28: launching, the world and barriers are generic; deployments never reach into Engram's scenario."""
    found = all_imports()
    assert not (PACKAGE / "scenarios" / "engram" / "ranks" / "world.py").exists()
    assert any(i.importer.startswith("dummyprof.scenarios.deployment") and _folder(i.target) == "ranks" for i in found)
    into_engram = [
        _where(i)
        for i in found
        if i.importer.startswith("dummyprof.scenarios.deployment") and i.target.startswith("dummyprof.scenarios.engram")
    ]
    assert into_engram == []


def _names(tree: ast.AST, names: set[str]) -> bool:
    """Whether code (not a comment) names one of ``names``: a name, attribute, keyword, argument or string key."""
    for node in ast.walk(tree):
        said = (
            getattr(node, "id", None) if isinstance(node, ast.Name) else
            node.attr if isinstance(node, ast.Attribute) else
            node.arg if isinstance(node, ast.keyword | ast.arg) else
            node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
        )  # fmt: skip
        if said in names:
            return True
    return False


def test_internals_counts_the_files_that_name_tp() -> None:
    """docs/internals.md's figure of files that name ``tp`` or ``tp_size``, in its walk of ``--tp``."""
    text = (PACKAGE.parent / "docs" / "internals.md").read_text(encoding="utf-8")
    said = int(text.split("Over the whole package ", 1)[1].split(" files name `tp`", 1)[0])
    counted = [p for p in PACKAGE.rglob("*.py") if _names(ast.parse(p.read_text(encoding="utf-8")), {"tp", "tp_size"})]
    assert said == len(counted), sorted(str(p.relative_to(PACKAGE)) for p in counted)
