"""One process's place in a torch.distributed run: torchrun's environment, the group, keeping in step.

A collective blocks until every rank calls it, so every step starts with a barrier on the store that watches for
failures: a failing rank writes its error there (``fail``), the others see it at once, rank 0 reports it by rank
and nobody enters a collective that cannot complete. A rank that never arrives is named after ``timeout_s``.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, TypeVar

from dummyprof.errors import DummyprofError, UsageError

T = TypeVar("T")

LAUNCH_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
BACKENDS = ("auto", "gloo", "nccl")
POLL_S = (0.0005, 0.01)  # first and longest sleep between looks at the store: prompt, yet nearly idle
FAILURE_GRACE_S = 0.3  # after a first failure, wait this long for others to land, then report them all
EXIT_FAILED = 1


@dataclass(frozen=True)
class LaunchEnv:  # what torchrun (or a launcher following it) put in the environment
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    master_addr: str
    master_port: int


def launch_env(environ: Mapping[str, str] | None = None) -> LaunchEnv | None:
    """None when this process was started alone."""
    env = os.environ if environ is None else environ
    if "WORLD_SIZE" not in env and "RANK" not in env:
        return None
    missing = [k for k in LAUNCH_ENV if k not in env]
    if missing:
        raise UsageError(
            None,
            f"torch.distributed environment is incomplete: {', '.join(missing)} not set; "
            "start ranks with torchrun (or dummyprof ... --nproc N)",
        )

    def number(key: str, default: str | None = None) -> int:
        text = env.get(key, default)
        try:
            return int(text or "")
        except ValueError:
            raise UsageError(None, f"torch.distributed environment: {key}={text!r} is not an integer") from None

    world = number("WORLD_SIZE")
    return LaunchEnv(
        rank=number("RANK"),
        world_size=world,
        local_rank=number("LOCAL_RANK"),
        local_world_size=number("LOCAL_WORLD_SIZE", str(world)),
        master_addr=env["MASTER_ADDR"],
        master_port=number("MASTER_PORT"),
    )


class RanksFailed(DummyprofError):  # ranks failed or never arrived; rank 0 says which and why
    def __init__(self, message: str, *, exit_code: int = EXIT_FAILED, quiet: bool = False) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.quiet = quiet  # another rank (rank 0) reports it; this one only exits non-zero
        self.values: dict[int, Any] = {}  # spawn: what the ranks that finished returned, by rank


@dataclass
class World:  # this rank's view: barriers that notice failures, Python objects exchanged
    env: LaunchEnv
    store: Any
    backend: str
    timeout_s: float
    _: KW_ONLY
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    host: str = field(init=False, default_factory=socket.gethostname)
    steps: list[str] = field(init=False, default_factory=list)  # every barrier passed, in order: ranks compare them
    _count: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.rank = self.env.rank
        self.world_size = self.env.world_size
        self.local_rank = self.env.local_rank
        self.local_world_size = self.env.local_world_size

    def _raise_failures(self) -> None:
        """Once any rank has failed (``fail`` writes its key, then counts it): raise naming each."""
        if int(self.store.add("failures", 0)) == 0:
            return
        self.sleep(FAILURE_GRACE_S)
        lines, usage = [], []
        for r in range(self.world_size):
            key = f"failed/{r}"
            if self.store.check([key]):  # as ``fail`` wrote it: usage, host, message
                bad_input, host, message = self.store.get(key).decode().split("\t", 2)
                lines.append(f"rank {r} ({host}) failed: {message}")
                usage.append(bad_input == "1")
        code = 2 if all(usage) else EXIT_FAILED  # bad input everywhere: exit 2 as the single-process command does
        raise RanksFailed("; ".join(lines), exit_code=code, quiet=self.rank != 0)

    def fail(self, message: str, *, usage: bool) -> bool:
        """Tell the others this rank failed; True once rank 0 has reported it (so this rank can stay quiet)."""
        try:
            self.store.set(f"failed/{self.rank}", f"{int(usage)}\t{self.host}\t{message}")
            self.store.add("failures", 1)
        except Exception:  # the store may be gone with rank 0: report locally instead
            return False
        return self.rank != 0 and self.wait_reported()

    def reported(self) -> None:
        """Rank 0 has written the error: the others, which wait for this (a launcher stops every rank as soon as
        one exits), may exit now."""
        with contextlib.suppress(Exception):  # the store went away: nobody left to tell
            self.store.set("reported", "1")

    def wait_reported(self) -> bool:
        """Wait (at most the timeout) until rank 0 has reported; False if it never did."""
        deadline = self.clock() + self.timeout_s
        try:
            while self.clock() < deadline:
                if self.store.check(["reported"]):
                    return True
                self.sleep(POLL_S[1])
        except Exception:  # the store went away with rank 0
            return False
        return False

    def barrier(self, label: str) -> None:
        """Wait until every rank reaches this step (same label, same count), or raise naming who did not."""
        self._count += 1
        step = f"{self._count}:{label}"
        self.steps.append(label)
        self.store.set(f"at/{self.rank}", step)
        key = f"barrier/{step}"
        if int(self.store.add(key, 1)) == self.world_size:
            self.store.set(f"{key}/open", "1")
        deadline = self.clock() + self.timeout_s
        pause = POLL_S[0]
        while not self.store.check([f"{key}/open"]):
            self._raise_failures()
            if self.clock() > deadline:
                self._raise_timeout(label)
            self.sleep(pause)
            pause = min(POLL_S[1], pause * 2)
        self._release()

    def _release(self) -> None:
        """Leave together: the store was polled, the group's own barrier lets all go at once."""
        import torch.distributed as dist

        dist.barrier()

    def _raise_timeout(self, label: str) -> None:
        behind = []
        for r in range(self.world_size):
            where = self.store.get(f"at/{r}").decode() if self.store.check([f"at/{r}"]) else "0:start"
            count, _, at = where.partition(":")
            if int(count) < self._count or at != label:
                behind.append(f"rank {r} at step {count} ({at})")
        raise RanksFailed(
            f"step {self._count} ({label}) not reached by every rank within {self.timeout_s:g} s "
            f"(--dist-timeout): {'; '.join(behind) or 'no rank named'}",
            quiet=self.rank != 0,
        )

    def _past(self, label: str) -> Any:
        """``torch.distributed``, once every rank has passed the barrier ``label``: for one collective."""
        import torch.distributed as dist

        self.barrier(label)
        return dist

    def all_gather(self, label: str, value: T) -> list[T]:
        out: list[Any] = [None] * self.world_size
        self._past(label).all_gather_object(out, value)
        return out

    def gather(self, label: str, value: T) -> list[T] | None:
        out: list[Any] | None = [None] * self.world_size if self.rank == 0 else None
        self._past(label).gather_object(value, out, dst=0)
        return out

    def broadcast(self, label: str, value: T) -> T:
        box: list[Any] = [value]
        self._past(label).broadcast_object_list(box, src=0)
        return box[0]

    def close(self) -> None:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()


def pick_backend(requested: str, *, offload: bool, device: str) -> str:
    """``auto``: nccl when the tables are on GPUs, gloo otherwise."""
    if requested not in BACKENDS:
        raise UsageError.for_field("dist_backend", f"unknown backend {requested!r}; choose from: {', '.join(BACKENDS)}")
    if requested != "auto":
        return requested
    if offload or device == "cpu":
        return "gloo"
    import torch

    return "nccl" if torch.cuda.is_available() else "gloo"


def join(env: LaunchEnv, backend: str, timeout_s: float, *, client: bool = False) -> World:
    """The process group, joined within ``timeout_s``: through torchrun's store (``env://``), or as a ``client`` of
    ``launch.spawn``'s parent's store."""
    import torch
    import torch.distributed as dist

    if not dist.is_available():
        raise UsageError(None, f"this torch {torch.__version__} was built without torch.distributed")
    if backend == "nccl":
        if not dist.is_nccl_available() or not torch.cuda.is_available():
            raise UsageError.for_field("dist_backend", "nccl needs CUDA GPUs; use gloo")
        torch.cuda.set_device(env.local_rank)
    elif backend == "gloo" and not dist.is_gloo_available():
        raise UsageError.for_field("dist_backend", f"this torch {torch.__version__} has no gloo; try nccl")
    timeout = datetime.timedelta(seconds=timeout_s)
    if client:
        store = dist.TCPStore(env.master_addr, env.master_port, env.world_size, False, timeout=timeout)
    else:
        store, _, _ = next(dist.rendezvous("env://", timeout=timeout))
        store.set_timeout(timeout)
    dist.init_process_group(
        backend, store=dist.PrefixStore("pg/", store), rank=env.rank, world_size=env.world_size, timeout=timeout
    )
    # The launcher's store is shared with torch's own keys and with earlier runs of the same job id.
    return World(env, dist.PrefixStore("dummyprof/", store), backend, timeout_s)


def _differing(flags: list[dict[str, str]]) -> list[str]:
    names = sorted({name for f in flags for name in f})
    out = []
    for name in names:
        values = [f.get(name, "(not given)") for f in flags]
        if len(set(values)) > 1:
            shown = ", ".join(f"rank {r}: {v}" for r, v in enumerate(values))
            out.append(f"{name} ({shown})")
    return out


def check_ranks(world: World, error: str | None, flags: dict[str, str]) -> None:
    """Every rank's bad input and flags, compared on every rank: one error on rank 0, exit 2 everywhere."""
    seen = world.all_gather("check", (error, flags))
    by_message: dict[str, list[int]] = {}
    for r, (message, _) in enumerate(seen):
        if message is not None:
            by_message.setdefault(message, []).append(r)
    if by_message:
        errors = [
            f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}: {message}"
            for message, ranks in by_message.items()
        ]
        raise RanksFailed("; ".join(errors), exit_code=2, quiet=world.rank != 0)
    differ = _differing([f for _, f in seen])
    if differ:
        raise RanksFailed(
            f"flags differ between ranks: {'; '.join(differ)}; give every rank the same flags",
            exit_code=2,
            quiet=world.rank != 0,
        )


def run_checked(world: World, body: Callable[[], T], describe: Callable[[DummyprofError], str] = str) -> T:
    """Run ``body`` on this rank; on failure tell the others, so rank 0 reports it by rank and nobody hangs."""
    try:
        return body()
    except RanksFailed:
        raise
    except Exception as exc:
        usage = isinstance(exc, UsageError)
        message = describe(exc) if isinstance(exc, DummyprofError) else f"{type(exc).__name__}: {exc}"
        reported = world.fail(message, usage=usage)
        raise RanksFailed(
            f"rank {world.rank} ({world.host}) failed: {message}",
            exit_code=2 if usage else EXIT_FAILED,
            quiet=reported,
        ) from exc
