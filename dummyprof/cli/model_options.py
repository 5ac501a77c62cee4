"""The files a command's ``--model`` and ``--loader`` name: inputs that no output may overwrite."""

from __future__ import annotations

from pathlib import Path


def code_files(model: str | None, loaders: list[str] | None = None) -> dict[str, Path | None]:
    """The files named by --model and --loader (``./file.py:callable``): inputs no output may overwrite."""
    files: dict[str, Path | None] = {}
    for flag, specs in (("--model", [model] if model else []), ("--loader", loaders or [])):
        for i, spec in enumerate(specs):
            target = spec.rsplit(":", 1)[0] if ":" in spec else spec
            if target.endswith(".py") or "/" in target:
                files[flag if i == 0 else f"{flag} #{i + 1}"] = Path(target)
    return files
