"""``--json``, ``--force`` and ``--quiet``: declared once, the same flag in every command that writes results."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dummyprof.cli.output import FORCE_HELP, JSON_HELP, QUIET_HELP

JsonOpt = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional on Python 3.10
    typer.Option("--json", metavar="PATH", help=JSON_HELP),
]
ForceOpt = Annotated[bool, typer.Option("--force", help=FORCE_HELP)]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help=QUIET_HELP)]
