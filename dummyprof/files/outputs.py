"""Every file a command writes, by docs/promises.md ("Files: never clobbered, never lost"): probed before
measuring; never an input of the run or another output; ``-`` only where a flag says so; published exclusively,
or with ``--force`` replaced atomically; only the CI step summary appended to; a failed write returned as a
message (the caller exits 2, the gate 3)."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from dummyprof.errors import UsageError
from dummyprof.files.inputs import RunInput, imported_sources
from dummyprof.files.undecodable import ERRORS as UNDECODABLE

STDOUT = "-"
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


@dataclass(frozen=True)
class Output:
    flag: str
    path: Path
    append: bool = False  # appended, never truncated: only the CI step summary (is_step_summary)
    stdout: bool = False  # the flag documents '-' as standard output (--json)
    own: frozenset[str] = frozenset()  # kinds of file (own_kind) this output replaces without --force

    @property
    def is_stdout(self) -> bool:
        return self.stdout and str(self.path) == STDOUT


def _stat(path: Path | str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def _is_stream(mode: int) -> bool:
    # FIFOs, character devices and sockets: written through, nothing there to clobber
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


def new_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _probe_folder(flag: str, folder: Path, path: Path) -> None:
    """Create and remove a temporary file in ``folder``: the later write, done now. A missing folder is created, as
    pytest's ``--junitxml`` creates its own (``out/junit.xml``)."""
    if not folder.is_dir():
        if folder.exists():
            raise UsageError(flag, f"cannot create {path}: {folder} is a file, not a directory")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise UsageError(flag, f"cannot create {path}: a folder in its path is a file") from None
        except OSError as exc:
            raise UsageError(flag, f"cannot create the folder {folder} for {path}: {exc.strerror or exc}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(flag, f"cannot create {path}: no permission to write in {folder}")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".dummyprof-probe.", dir=folder)
    except OSError as exc:
        raise UsageError(flag, f"cannot create {path}: {exc.strerror or exc}") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def _probe_open(flag: str, path: Path) -> None:
    if not os.access(path, os.W_OK):
        raise UsageError(flag, f"cannot write {path}: permission denied")


def _refuse_dash(output: Output) -> None:
    if str(output.path) == STDOUT and not output.stdout:
        raise UsageError(
            output.flag,
            f"'-' (standard output) is not supported here; give a file name "
            f"(a file named '-' in this folder: {os.path.abspath(STDOUT)})",
        )


# A file name each output flag could take, for the messages that ask for one.
EXAMPLE_NAMES = {
    "--markdown": "summary.md",
    "--junit": "junit.xml",
    "--benchmark-json": "bench.json",
    "--html": "report.html",
    "--trace": "trace.json",
}


def example_name(flag: str) -> str:
    return EXAMPLE_NAMES.get(flag, "results.json")


# A file dummyprof wrote, told by its first bytes: the kind of report ("json", "junit", "benchmark", "markdown",
# "html") and the command it records. A file of a kind an output lists in ``own`` (its earlier run's) is replaced
# without --force, as a test runner replaces its own JUnit file; any other existing file still needs --force.
HEAD_BYTES = 4096
OWN_HEADS = (
    ("json", re.compile(r'\{\s*"command": "([a-z-]+)",\s*"schema_version": \d+,\s*"dummyprof_version": "')),
    ("junit", re.compile(r'(?:<\?xml[^>]*\?>\s*)?<testsuites name="dummyprof (gate)"')),
    ("benchmark", re.compile(r'\[\s*\{\s*"dummyprof": "([a-z-]+)",')),
    ("markdown", re.compile(r"## dummyprof ([a-z-]+)\n")),
    ("html", re.compile(r"<!DOCTYPE html>.*?<title>dummyprof ([a-z-]+)</title>", re.DOTALL | re.IGNORECASE)),
)


def own_kind(path: Path | str) -> str | None:
    """``json:gate``, ``junit:gate``, ``markdown:compare``...: the report dummyprof wrote at ``path``; None for any
    other file (or one that cannot be read)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    for kind, pattern in OWN_HEADS:
        found = pattern.match(head)
        if found:
            return f"{kind}:{found[1]}"
    return None


def _is_own(output: Output, path: Path | str) -> bool:
    return bool(output.own) and own_kind(path) in output.own


def path_of(flag: str, text: str) -> Path:
    """The path a flag names; an empty value (an unset ``$VAR``) is refused by name."""
    if not text.strip():
        unset = " ($GITHUB_STEP_SUMMARY unset, off CI?)" if flag == "--markdown" else ""
        raise UsageError(flag, f"an empty value{unset}; give a file name such as {example_name(flag)}")
    return Path(text)


def probe_output(output: Output, *, force: bool) -> None:
    """UsageError (exit 2) now if ``output`` could not be written after the run."""
    if output.is_stdout:
        return
    _refuse_dash(output)
    flag, path = output.flag, output.path
    try:
        st = _stat(path)
    except NotADirectoryError:
        raise UsageError(flag, f"cannot create {path}: a folder in its path is a file") from None
    except OSError as exc:
        raise UsageError(flag, f"cannot use {path}: {exc.strerror or exc}") from None
    if st is None:  # nothing there yet (or a dangling symlink, whose target we would create)
        real = Path(os.path.realpath(path))
        _probe_folder(flag, real.parent, path)
        return
    if stat.S_ISDIR(st.st_mode):
        raise UsageError(flag, f"{path} is a directory; give a file name such as {path / example_name(flag)}")
    if _is_stream(st.st_mode) or output.append:
        _probe_open(flag, path)
        return
    if not force and not (stat.S_ISREG(st.st_mode) and _is_own(output, path)):
        raise UsageError(flag, f"{path} already exists; pass --force to overwrite it or choose another name")
    if stat.S_ISREG(st.st_mode):  # replaced by a rename in the target's own folder
        _probe_folder(flag, Path(os.path.realpath(path)).parent, path)
    else:  # a block device: written in place
        _probe_open(flag, path)


def _identity(path: Path) -> tuple[object, ...] | None:
    """What a write to ``path`` touches; None for streams, which may be shared (two reports to /dev/null)."""
    try:
        st = _stat(path)
    except OSError:
        st = None
    if st is None:
        return ("path", os.path.realpath(path))
    if _is_stream(st.st_mode):
        return None
    return ("inode", st.st_dev, st.st_ino)


def is_step_summary(path: Path | str) -> bool:
    """Whether ``path`` is the CI step summary (``$GITHUB_STEP_SUMMARY``), the one file appended to."""
    named = os.environ.get(STEP_SUMMARY)
    if not named or str(path) == STDOUT:
        return False
    return _identity(Path(path)) == _identity(Path(named))


def _read_by_run(inputs: Iterable[RunInput]) -> dict[tuple[object, ...], str]:
    """What each file the run reads is, by identity: the inputs named, then every module imported so far."""
    read: dict[tuple[object, ...], str] = {}
    for run_input in itertools.chain(inputs, imported_sources()):
        key = _identity(run_input.path)
        if key is not None:
            read.setdefault(key, run_input.what)
    return read


def _read_by_run_text(output: Output, what: str) -> str:
    return (
        f"{output.path} is also {what}; dummyprof never writes a file the run reads, even with --force. "
        "Choose another file"
    )


def check_outputs(outputs: Sequence[Output], *, force: bool, inputs: Iterable[RunInput] = ()) -> None:
    """Probe every output; refuse one that the run reads (``inputs``, with or without ``force``, checked before the
    probe so an input is not answered with "pass --force") or another output (UsageError, exit 2)."""
    read = _read_by_run(inputs)
    written: dict[tuple[object, ...], str] = {}
    for output in outputs:
        if output.is_stdout:
            continue
        _refuse_dash(output)
        key = _identity(output.path)
        if key is not None and key in read:
            raise UsageError(output.flag, _read_by_run_text(output, read[key]))
        probe_output(output, force=force)
        if key is not None:
            if key in written:
                raise UsageError(output.flag, f"{output.path} is also {written[key]}; choose another file")
            written[key] = f"the {output.flag} output"


def publish(path: Path, text: str, *, replace: bool) -> None:
    """``text`` to a temporary file in ``path``'s folder, moved into place: renamed over what is there (``replace``,
    keeping a regular file's mode) or linked (FileExistsError if anything is there); never half a file. A name that
    was not UTF-8 is written as a visible escape (files/undecodable.py), never as a UnicodeEncodeError."""
    st = _stat(path) if replace else None
    mode = stat.S_IMODE(st.st_mode) if st is not None and stat.S_ISREG(st.st_mode) else new_file_mode()
    if not path.parent.is_dir():  # created when probed; made again if it went while the run measured
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors=UNDECODABLE) as handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), mode)  # mkstemp makes 0600; give the file the mode open() would
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, path)
            return
        try:
            os.link(tmp, path)  # atomic, and fails if the name exists
        except FileExistsError:
            raise
        except OSError:  # no hard links on this file system: exclusive create, written in place
            with os.fdopen(
                os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), "w", encoding="utf-8", errors=UNDECODABLE
            ) as out:
                out.write(text)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def write_output(output: Output, text: str, *, force: bool) -> None:
    real = Path(os.path.realpath(output.path))  # through symlinks: the link stays, its target is written
    st = _stat(real)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, "Is a directory", str(output.path))
    # Appended to (the step summary), or a FIFO or device: written into, never replaced.
    if output.append or (st is not None and not stat.S_ISREG(st.st_mode)):
        with open(real, "a" if output.append else "w", encoding="utf-8", errors=UNDECODABLE) as handle:
            handle.write(text)
    else:
        publish(real, text, replace=force or (st is not None and _is_own(output, real)))


def write_outputs(items: Sequence[tuple[Output, str]], *, force: bool) -> list[str]:
    """Every file written; a line naming the flag for each that could not be (the rest are still written)."""
    failures: list[str] = []
    read = _read_by_run(())  # the user's code has run since the outputs were checked: what it imported is read too
    for output, text in items:
        key = None if output.is_stdout else _identity(output.path)
        try:
            if key is not None and key in read:
                failures.append(f"{output.flag}: {_read_by_run_text(output, read[key])}")
            else:
                write_output(output, text, force=force)
        except FileExistsError:
            failures.append(
                f"{output.flag}: {output.path} appeared while dummyprof was running and was not overwritten; "
                "pass --force to replace it"
            )
        except OSError as exc:
            failures.append(f"{output.flag}: could not write {output.path}: {exc.strerror or exc}")
    return failures
