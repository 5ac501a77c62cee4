"""N ranks on this host as spawned processes that call a function with data; what each returns comes back pickled.

The parent holds the rendezvous store; each rank gets torchrun's environment and joins as a client. When the run
ends, fails, passes its limit or the parent is stopped (Ctrl-C, SIGTERM: exit 143), every rank still running is
stopped (SIGTERM, then SIGKILL); a rank whose parent dies gets SIGINT (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing.process import BaseProcess
from typing import Any

from dummyprof.errors import DummyprofError
from dummyprof.ranks.world import LaunchEnv, RanksFailed

HOST = "127.0.0.1"
POLL_S = 0.05
STOP_GRACE_S = 5.0  # a rank told to stop (SIGTERM) gets this long before SIGKILL
EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(DummyprofError):  # SIGTERM while the ranks ran: they were stopped
    exit_code = EXIT_TERMINATED


Finished = Callable[[dict[int, Any]], bool]


def spawn(
    entry: Callable[..., Any], args: tuple[Any, ...], nproc: int, *, limit_s: float, finished: Finished | None = None
) -> dict[int, Any]:
    """``entry(env, *args)`` on ``nproc`` local ranks: each rank's return value by rank, once all returned or
    ``finished(values so far)`` says so. ``RanksFailed`` (its ``values``: what did come back) for a rank that died
    without returning, or past ``limit_s``."""
    import torch.distributed as dist
    import torch.multiprocessing as mp

    store = dist.TCPStore(HOST, 0, nproc, True, timeout=datetime.timedelta(seconds=limit_s), wait_for_workers=False)
    queue = mp.get_context("spawn").SimpleQueue()
    with _sigterm_raises():
        context = mp.start_processes(
            _main, args=(entry, args, nproc, store.port, queue), nprocs=nproc, join=False, start_method="spawn"
        )
        values: dict[int, Any] = {}
        try:
            _collect(context, queue, nproc, time.monotonic() + limit_s, limit_s, finished, values)
        except RanksFailed as failed:
            failed.values = values  # what the ranks that finished returned: a caller may keep it
            raise
        finally:  # ranks that all returned are exiting: let them; any other end stops them at once
            _stop(context.processes, exit_s=STOP_GRACE_S if len(values) == nproc else 0.0)
    return values


def _main(local_rank: int, entry: Callable[..., Any], args: tuple[Any, ...], nproc: int, port: int, queue: Any) -> None:
    env = LaunchEnv(local_rank, nproc, local_rank, nproc, HOST, port)
    os.environ.update({name.upper(): str(value) for name, value in dataclasses.asdict(env).items()})  # RANK, ...
    queue.put((local_rank, entry(env, *args)))


def _collect(
    context: Any,
    queue: Any,
    nproc: int,
    deadline: float,
    limit_s: float,
    finished: Finished | None,
    values: dict[int, Any],
) -> dict[int, Any]:
    from torch.multiprocessing import ProcessExitedException, ProcessRaisedException

    def read() -> bool:
        while not queue.empty():
            rank, value = queue.get()
            values[rank] = value
        return len(values) == nproc or (finished is not None and finished(values))

    while not read():
        try:
            context.join(timeout=POLL_S)
        except ProcessExitedException as exc:
            if read():  # it may have said why before dying
                return values
            how = f"was killed by {exc.signal_name}" if exc.signal_name else f"exited with {exc.exit_code}"
            raise RanksFailed(f"rank {exc.error_index} {how}") from None
        except ProcessRaisedException as exc:
            last = str(exc).strip().splitlines()[-1]
            raise RanksFailed(f"rank {exc.error_index} failed: {last}") from None
        # A rank that ended without returning did not finish its work: a failed rank, whatever its exit
        # status (os._exit(0) in user code, a KeyboardInterrupt that torch's wrapper turns into 0).
        dead = [r for r, p in enumerate(context.processes) if not p.is_alive()]
        if read():  # a rank's value is in the pipe before it exits: read what the dead ones sent
            break
        ended = [r for r in dead if r not in values]
        if ended:
            code = context.processes[ended[0]].exitcode
            raise RanksFailed(f"rank {ended[0]} left with exit status {code} before finishing its work")
        if time.monotonic() > deadline:
            raise RanksFailed(f"{nproc} ranks did not finish within {limit_s:g} s")
    return values


def _stop(processes: list[Any], *, exit_s: float = 0.0) -> None:
    """After ``exit_s``, SIGTERM every rank still running, then SIGKILL; reap them all."""
    for wait_s, stop in ((exit_s, BaseProcess.terminate), (STOP_GRACE_S, BaseProcess.kill)):
        end = time.monotonic() + wait_s
        for process in processes:
            process.join(max(0.0, end - time.monotonic()))
        for process in processes:
            if process.is_alive():
                stop(process)
    for process in processes:
        process.join()


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise Terminated("terminated (SIGTERM): every rank was stopped")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
