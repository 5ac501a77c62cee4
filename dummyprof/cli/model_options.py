"""Flags shared by every command that builds a model, the synthetic tree or runs a user loader.

Torch-free: only option declarations and help text live here.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from dummyprof.units import parse_int

PRESET_NAMES = "torch-transformer, dense-decoder, moe-decoder, deepseek-v4-like"

ModelOpt = Annotated[
    Optional[str],  # noqa: UP045 - typer needs Optional on Python 3.10
    typer.Option(
        "--model",
        metavar="PATH",
        help="Your model: package.module:callable or ./file.py:callable returning an nn.Module "
        "(sized on the meta device first; meta models are materialized with to_empty), or a Hugging Face "
        "config: hf:./config.json, hf:FOLDER, hf:ORG/NAME (config.json only; needs dummyprof[hf]).",
    ),
]
PresetOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--preset", metavar="NAME", help=f"A ready-made model: {PRESET_NAMES}. Scale it with --model-arg."),
]
ModelArgOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option(
        "--model-arg",
        metavar="KEY=VALUE",
        help="Keyword argument for --model or --preset, or a config field for hf: models (repeatable); values are "
        "Python literals, e.g. layers=8 or num_hidden_layers=2.",
    ),
]
TrustRemoteCodeOpt = Annotated[
    bool,
    typer.Option(
        "--trust-remote-code",
        help="hf: models only: let transformers run the model's own Python code (auto_map). Off unless given.",
    ),
]
LoaderOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option(
        "--loader",
        metavar="PATH",
        help="Your fill function fn(model, **args) as package.module:callable or ./file.py:callable (repeatable); "
        "its writes are traced in a separate run, its times come from untraced runs.",
    ),
]
LoaderArgOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--loader-arg", metavar="KEY=VALUE", help="Keyword argument passed to every --loader (repeatable)."),
]


# The synthetic tree, for commands where it is the fallback (audit, inspect); compare, whose subject
# the tree is, declares the same flags with help of its own.
TreeDepthOpt = Annotated[
    str, typer.Option("--depth", metavar="INT", help="Synthetic tree (no --model/--preset): levels.")
]
TreeWidthOpt = Annotated[str, typer.Option("--width", metavar="INT", help="Synthetic tree: child blocks per block.")]
TreeHiddenOpt = Annotated[
    str, typer.Option("--hidden", metavar="INT", help="Synthetic tree: weight size; multiple of 32.")
]
TreeDtypeOpt = Annotated[str, typer.Option("--dtype", help="Synthetic tree: float32, bfloat16 or float16.")]


def tree_fields(
    depth: str,
    width: str,
    hidden: str,
    dtype: str,
    *,
    examples: tuple[int, int, int],
    engram_rows: str = "0",
    meta: bool = False,
) -> dict[str, Any]:
    """The synthetic tree's options fields from its flags (``examples``: depth, width, hidden shown in errors)."""
    return {
        "depth": parse_int("--depth", depth, minimum=1, example=str(examples[0])),
        "width": parse_int("--width", width, minimum=1, example=str(examples[1])),
        "hidden": parse_int("--hidden", hidden, minimum=1, example=str(examples[2])),
        "dtype": dtype,
        "meta": meta,
        "engram_rows": parse_int("--engram-rows", engram_rows, minimum=0, example="4096"),
    }


def parse_args_flag(items: list[str] | None, flag: str) -> dict[str, object]:
    from dummyprof.usercode import parse_call_args

    return parse_call_args(items or [], flag=flag)
