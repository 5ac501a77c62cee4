"""Standard output, for every command and every writer (reports, ``--json -``, ``--help``, ``--version``): a write
that fails (a full disk, ``> /dev/full``, a full non-blocking pipe, a closed descriptor) is one line and exit 2,
never a traceback; a reader that went away (``| head -1``, EPIPE) ends the output quietly, with the command's own
exit code (docs/promises.md, "Terminals
and pipes")."""

from __future__ import annotations

import errno
import io
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, TextIO

from dummyprof.errors import DummyprofError
from dummyprof.files.undecodable import spelled


class StandardOutputError(DummyprofError):
    """Standard output could not be written: exit 2, the files the run wrote are kept."""


class ReaderGone(Exception):
    """The reader of a pipe went away (EPIPE): not an error of ours. Not an ``OSError``, which click would turn
    into exit 1 on its way out."""


def _failed(exc: OSError) -> Exception:
    if isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE:
        return ReaderGone()  # main() ends quietly with the command's own code
    why = exc.strerror or str(exc) or type(exc).__name__
    return StandardOutputError(f"standard output: could not write: {why}; send it to a file or a reader with room")


def _write_raw(stream: TextIO, raw: io.RawIOBase, text: str) -> int:
    """``text`` written to an unbuffered stream's raw file to the last byte, or an OSError (EAGAIN included)."""
    stream.flush()
    view = memoryview(text.encode(stream.encoding, stream.errors or "strict"))
    while view:
        done = raw.write(view)
        if done is None:  # a non-blocking descriptor with no room: the bytes would be lost
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        view = view[done:]
    return len(text)


class GuardedStream:
    """``sys.stdout`` as seen by dummyprof while a command runs: every write and flush that fails is a
    :class:`StandardOutputError` (EPIPE is :class:`ReaderGone`); everything else is the stream's own."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream

    def _target(self) -> TextIO:
        if self._stream is None:  # started with descriptor 1 closed (``>&-``): Python gives sys.stdout = None
            raise StandardOutputError("standard output: could not write: it is closed; send it to a file or /dev/null")
        return self._stream

    def write(self, text: str) -> int:
        target = self._target()
        try:
            raw = getattr(target, "buffer", None)
            if isinstance(raw, io.RawIOBase):  # unbuffered (python -u): TextIOWrapper drops a short write silently
                return _write_raw(target, raw, spelled(text))
            try:
                return target.write(text)
            except UnicodeEncodeError:  # a name that was not UTF-8 (strict stdout): spelled, as in every file
                return target.write(spelled(text))
        except OSError as exc:
            raise _failed(exc) from None

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._stream is None:
            return
        try:
            self._stream.flush()
        except OSError as exc:
            raise _failed(exc) from None

    def isatty(self) -> bool:
        return self._stream is not None and self._stream.isatty()

    def __getattr__(self, name: str) -> Any:
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


@contextmanager
def guarded_stdout() -> Iterator[GuardedStream]:
    """``sys.stdout`` guarded while inside. The caller flushes it before leaving (``flush_at_end``), so a failure
    at the last flush is one line too, and the interpreter's own flush at exit finds nothing left to fail on."""
    saved = sys.stdout
    guard = GuardedStream(saved)
    sys.stdout = guard
    try:
        yield guard
    finally:
        if sys.stdout is guard:
            sys.stdout = saved


def silence_stdout() -> None:
    """Send the rest of stdout, and the flush at exit, to /dev/null: a stream that failed once is not written
    again, and a closed pipe is not worth a traceback."""
    with suppress(OSError, ValueError, AttributeError):  # no descriptor (captured in tests): nothing to flush
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def flush_at_end(stream: GuardedStream) -> None:
    """The last flush of a command's output: a reader gone by now changes nothing (the exit code stands)."""
    try:
        stream.flush()
    except ReaderGone:
        silence_stdout()
