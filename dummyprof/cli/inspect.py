"""``dummyprof inspect``: the module tree with sizes and visits per strategy."""

from __future__ import annotations

from dummyprof.cli.inputs import run_inputs
from dummyprof.cli.output import DETAIL, ForceOpt, JsonOpt, QuietOpt, check_outputs, emit, measuring
from dummyprof.cli.schema_command import with_options
from dummyprof.scenarios.deployment.options import DEPLOYMENT_FIELDS
from dummyprof.scenarios.inspect.options import InspectOptions
from dummyprof.scenarios.options import MODEL_FIELDS, SMALL_TREE_FIELDS

HELP = """\
Show the module tree: each module's type, own tensors and bytes, and how many
times each strategy visits it, redundant visits in red.

Nothing is allocated: the model is built on the meta device and each strategy
is walked with a no-op initializer, so even a huge layout inspects instantly.

Examples:
  dummyprof inspect --preset deepseek-v4-like --max-depth 3
  dummyprof inspect --model ./m.py:build --model-arg layers=61 \\
    --min-bytes 1MiB
  dummyprof inspect --preset torch-transformer -s legacy --json tree.json
"""


FIELDS = (  # inspect's groups, in the order --help lists their flags
    *MODEL_FIELDS,  # model
    *("strategies", "max_depth", "min_bytes"),  # fill (counted, not run), and what is shown
    *SMALL_TREE_FIELDS,  # tree
    *DEPLOYMENT_FIELDS,  # layout
)


@with_options(InspectOptions, FIELDS, flags={"detail": DETAIL})
def inspect(
    options: InspectOptions,
    json_path: JsonOpt = None,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    detail: bool = False,
) -> int:
    check_outputs({"--json": json_path}, force=force, inputs=run_inputs(model=options.model), command="inspect")
    from dummyprof.scenarios.inspect import run as scenario

    with measuring(None, quiet=quiet, json_path=json_path):
        results = scenario.run(options)
    return emit(results, json_path=json_path, quiet=quiet, force=force, detail=detail, command="inspect")
