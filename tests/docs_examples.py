"""Every ``dummyprof`` command shown in README.md and docs/*.md, read from the docs and run.

A doc that drifts from the code fails CI: `.ci/run` runs ``python -m tests.docs_examples``,
which runs each command as a user would (a fresh process, in a scratch copy of the files
the examples name) and checks its exit code and a line of its output. The commands are
read from fenced code blocks of the Markdown files: a line that starts with ``dummyprof ``
(or ``$ dummyprof `` when the block shows output after it), joined with the lines its
trailing ``\\`` continues.

What a command must do is read from the doc too:

- its exit code: ``exit N`` in the line's trailing ``# comment`` (``# clean: exit 0``),
  else 2 when the output shown under it is an error (``dummyprof: error: ...``: bad input
  exits 2), else 0;
- a line of its output: when the block shows output under a ``$ dummyprof`` line, the
  first line shown must appear in what the command prints, with numbers and runs of
  spaces folded (figures differ between machines, words and layout do not); otherwise
  it must print something and no traceback.

A setup that must hold when run again (CI runs it on every push) is marked right above its block::

    <!-- docs-check: twice "dummyprof.toml" the setup a user's CI runs on every change -->

Its commands then run in a fresh folder holding only the files named (here ``dummyprof.toml``), in order, and
then all again in the same folder, each time with the exit code the doc says.

A command that needs what CI does not have is left out by an HTML comment (invisible in
the rendered page) right above its block, naming a part of the command and why::

    <!-- docs-check: skip "hf:meta-llama" needs the network -->

An exact figure quoted in prose (a count, a size in bytes, a peak by accounting) is
checked against the command it comes from, numbers and all, by a comment right above the
paragraph that quotes it::

    <!-- docs-check: figure "646.19 GiB" from "dummyprof compare --model hf:... --online-quant fp8" -->

The paragraph under the comment must quote the figure, and the command's output (any exit
code) must print it; thousands separators are ignored (``1,140`` is ``1140``). The command
may also be ``python -m pytest --collect-only -q``: the suite's own size, read from the suite.
Measured times are never checked this way: they differ from run to run.

The commands of one block run in order in one scratch folder, as a reader would run
them (``report sweep.json`` after the ``sweep --json sweep.json`` above it); blocks run
in parallel, each in a fresh copy.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("README.md", "docs")
# What a scratch copy holds: the files the examples name (fixtures, configs, the gate's files).
SCRATCH_FILES = ("tests", "dummyprof.toml", "perf", "out")  # out/: where the examples write their files
SKIP = re.compile(r'<!--\s*docs-check:\s*skip\s+"([^"]+)"\s+(.+?)\s*-->')
TWICE = re.compile(r'<!--\s*docs-check:\s*twice\s+"([^"]+)"\s+(.+?)\s*-->')
FIGURE = re.compile(r'<!--\s*docs-check:\s*figure\s+"([^"]+)"\s+from\s+"([^"]+)"\s*-->')
THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
FENCE = re.compile(r"^\s*```")
EXIT = re.compile(r"\bexit (\d+)\b")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# A command's first word is a subcommand or a flag; an output line such as the environment
# line ("dummyprof 0.1.0, torch 2.13.0 ...") starts with "dummyprof" too and is not run.
COMMAND = re.compile(r"^(?:\$ )?dummyprof (?:-|[a-z][a-z-]*(?:\s|$))")


@dataclass
class Example:
    """One documented command and what the doc says it does."""

    doc: str
    line: int
    command: str
    exit_code: int = 0
    shown: str | None = None  # the first output line the doc shows under it
    skip: str | None = None  # why it is not run here
    block: int = 0  # commands of one block run in order in one scratch folder (a later one reads what an earlier wrote)
    figure: str | None = None  # an exact figure the prose quotes: the output must print it (any exit code)
    fresh: tuple[str, ...] | None = None  # twice: the only files of its scratch folder; None: SCRATCH_FILES

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


@dataclass
class Outcome:
    example: Example
    ok: bool
    seconds: float
    problem: str = ""
    output_tail: list[str] = field(default_factory=list)


def doc_files(root: Path = ROOT) -> list[Path]:
    files: list[Path] = []
    for name in DOCS:
        path = root / name
        files.extend(sorted(path.glob("*.md")) if path.is_dir() else [path])
    return files


def _split_comment(line: str) -> tuple[str, str]:
    """A shell line's command and its trailing ``# comment`` (a ``#`` inside quotes is kept)."""
    quote: str | None = None
    for index, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index].rstrip(), line[index + 1 :].strip()
    return line.rstrip(), ""


def examples_in(path: Path, root: Path = ROOT) -> Iterator[Example]:
    """The commands of one Markdown file, in order, with the skips written above their blocks."""
    lines = path.read_text(encoding="utf-8").splitlines()
    doc = str(path.relative_to(root))
    pending_skips: list[tuple[str, str]] = []
    twice: tuple[str, ...] | None = None
    index = 0
    while index < len(lines):
        text = lines[index]
        quoted = FIGURE.search(text)
        if quoted:
            yield _figure_example(doc, lines, index, quoted[1], quoted[2])
            index += 1
            continue
        again = TWICE.search(text)
        if again:
            twice = tuple(again.group(1).split())
            index += 1
            continue
        found = SKIP.search(text)
        if found:
            pending_skips.append((found.group(1), found.group(2)))
            index += 1
            continue
        if not FENCE.match(text):
            index += 1
            continue
        end = index + 1
        while end < len(lines) and not FENCE.match(lines[end]):
            end += 1
        block = list(_block_examples(doc, lines, index + 1, end, pending_skips, block=index + 1))
        if twice is not None:  # the whole block, then all of it again, in one fresh folder
            block = [replace(e, fresh=twice) for e in block] * 2
        yield from block
        pending_skips, twice = [], None
        index = end + 1


def _figure_example(doc: str, lines: Sequence[str], index: int, figure: str, command: str) -> Example:
    """The command a prose figure comes from; the paragraph under the comment must quote the figure."""
    paragraph: list[str] = []
    for line in lines[index + 1 :]:
        if not line.strip() and paragraph:
            break
        if line.strip() and not line.lstrip().startswith("<!--"):
            paragraph.append(line.strip())
    example = Example(doc, index + 1, command, figure=figure, block=-(index + 1))
    if figure not in " ".join(paragraph):
        example.shown = f"the paragraph under line {index + 1} does not quote {figure!r}"
    return example


def _block_examples(
    doc: str, lines: Sequence[str], start: int, end: int, skips: Sequence[tuple[str, str]], *, block: int
) -> Iterator[Example]:
    row = start
    while row < end:
        stripped = lines[row].strip()
        prompt = stripped.startswith("$ dummyprof ")
        if not COMMAND.match(stripped):
            row += 1
            continue
        first = row
        parts = [stripped[2:] if prompt else stripped]
        while parts[-1].endswith("\\") and row + 1 < end:
            parts[-1] = parts[-1][:-1].rstrip()
            row += 1
            parts.append(lines[row].strip())
        command, comment = _split_comment(" ".join(parts))
        shown = None
        if prompt:
            shown = next(
                (
                    line.strip()
                    for line in lines[row + 1 : end]
                    if any(c.isalpha() for c in line) or line.startswith("$ ")
                ),
                None,
            )
            shown = None if shown is None or shown.startswith("$ ") else shown
        wanted = EXIT.search(comment)
        exit_code = int(wanted.group(1)) if wanted else 2 if shown and shown.startswith("dummyprof: error") else 0
        skip = next((reason for pattern, reason in skips if pattern in command), None)
        yield Example(doc, first + 1, command, exit_code, shown, skip, block)
        row += 1


def all_examples(root: Path = ROOT) -> list[Example]:
    return [example for path in doc_files(root) for example in examples_in(path, root)]


def fold(text: str) -> str:
    """Numbers and runs of spaces folded: what stays the same from machine to machine."""
    return " ".join(NUMBER.sub("#", text).split())


def unseparated(text: str) -> str:
    """Thousands separators dropped and runs of spaces folded: ``1,140 tests`` as pytest prints it."""
    return " ".join(THOUSANDS.sub("", text).split())


def check(example: Example, returncode: int, output: str) -> str:
    """What is wrong with a run of ``example`` (empty: nothing)."""
    if example.figure is not None:
        if example.shown is not None:  # the prose no longer quotes the figure it is checked for
            return example.shown
        if unseparated(example.figure) not in unseparated(output):
            return f"the prose quotes {example.figure!r}; the command does not print it"
        return "printed a traceback" if "Traceback (most recent call last)" in output else ""
    if returncode != example.exit_code:
        return f"exit {returncode}, the doc says {example.exit_code}"
    if "Traceback (most recent call last)" in output:
        return "printed a traceback"
    if example.shown is not None:
        if fold(example.shown) not in fold(output):
            return f"the doc shows {example.shown!r}, not in the output"
    elif not output.strip():
        return "printed nothing"
    return ""


def scratch_copy(root: Path, into: Path, names: Sequence[str] = SCRATCH_FILES) -> Path:
    for name in names:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, into / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif source.exists():
            shutil.copy2(source, into / name)
    return into


VARIABLE = re.compile(r"\$\{(\w+):-([^}]*)\}|\$(\w+)")


def expand(word: str, env: dict[str, str]) -> str:
    """``$VAR`` and ``${VAR:-default}`` as the shell expands them (the gate's ``--markdown "$GITHUB_STEP_SUMMARY"``)."""

    def value(m: re.Match[str]) -> str:
        return (env.get(m[1]) or m[2]) if m[1] else env.get(m[3], "")  # ${VAR:-default}: also when VAR is empty

    return VARIABLE.sub(value, word)


def run_example(example: Example, *, cwd: Path, root: Path, timeout: float) -> Outcome:
    summary = cwd / "step-summary.md"  # as a CI runner provides it: the gate's --markdown "$GITHUB_STEP_SUMMARY"
    summary.touch()
    env = dict(os.environ, COLUMNS="80", PYTHONPATH=str(root), NO_COLOR="1", GITHUB_STEP_SUMMARY=str(summary))
    words = [expand(word, env) for word in shlex.split(example.command)]
    argv = [sys.executable, *words[1:]] if words[0] == "python" else [sys.executable, "-m", "dummyprof", *words[1:]]
    if words[0] == "python":  # the suite's size: collected where the suite is configured (pyproject.toml)
        cwd = root
    started = time.monotonic()
    try:
        done = subprocess.run(
            argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return Outcome(example, False, time.monotonic() - started, f"still running after {timeout:.0f} s")
    output = done.stdout + done.stderr
    problem = check(example, done.returncode, output)
    return Outcome(example, not problem, time.monotonic() - started, problem, output.splitlines()[-6:])


def run_block(examples: Sequence[Example], *, root: Path, timeout: float) -> list[Outcome]:
    with tempfile.TemporaryDirectory(prefix="docs-check-") as scratch:
        fresh = examples[0].fresh if examples else None
        cwd = scratch_copy(root, Path(scratch), fresh if fresh is not None else SCRATCH_FILES)
        return [run_example(example, cwd=cwd, root=root, timeout=timeout) for example in examples]


def _print_outcome(outcome: Outcome) -> None:
    mark = "ok  " if outcome.ok else "FAIL"
    print(f"{mark} {outcome.seconds:6.1f} s  {outcome.example.where}: {outcome.example.command}", flush=True)
    if not outcome.ok:
        print(f"       {outcome.problem}")
        for line in outcome.output_tail:
            print(f"       | {line}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.docs_examples", description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list the commands and their skips; run nothing")
    parser.add_argument("--jobs", type=int, default=2, help="commands run at once (default 2)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one command may take (default 300)")
    parser.add_argument("-k", dest="match", default="", help="only commands containing this text")
    parser.add_argument("--figures", action="store_true", help="only the exact figures quoted in prose")
    args = parser.parse_args(argv)
    examples = [e for e in all_examples() if args.match in e.command and (e.figure or not args.figures)]
    runnable = [example for example in examples if example.skip is None]
    if args.list:
        for example in examples:
            why = f"  [skip: {example.skip}]" if example.skip else f"  [exit {example.exit_code}]"
            why += f"  [figure {example.figure!r}]" if example.figure else ""
            print(f"{example.where}: {example.command}{why}")
        return 0
    started = time.monotonic()
    blocks: dict[tuple[str, int], list[Example]] = {}
    for example in runnable:
        blocks.setdefault((example.doc, example.block), []).append(example)
    outcomes: list[Outcome] = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        running = [pool.submit(run_block, block, root=ROOT, timeout=args.timeout) for block in blocks.values()]
        for done in as_completed(running):  # printed as each block ends: a slow or killed run still shows the rest
            for outcome in done.result():
                outcomes.append(outcome)
                _print_outcome(outcome)
    failed = sum(not outcome.ok for outcome in outcomes)
    skipped = len(examples) - len(runnable)
    print(f"ran {len(outcomes)} documented commands in {time.monotonic() - started:.0f} s")
    print(f"docs: {len(outcomes) - failed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
