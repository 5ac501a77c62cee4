from __future__ import annotations

from dummyprof.cli import run

run()
