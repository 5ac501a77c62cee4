"""``dummyprof audit``: what each strategy or loader writes, and what it gets wrong."""

from __future__ import annotations

from dummyprof.cli.inputs import run_inputs
from dummyprof.cli.output import DETAIL, ForceOpt, HtmlOpt, JsonOpt, QuietOpt, check_outputs, emit, measuring
from dummyprof.cli.schema_command import with_options
from dummyprof.scenarios.audit.options import AuditOptions, validate
from dummyprof.scenarios.deployment.options import DEPLOYMENT_FIELDS
from dummyprof.scenarios.options import LOADER_FIELDS, MODEL_FIELDS, SMALL_TREE_FIELDS

HELP = """\
Trace every write each strategy or loader makes, and report what is wrong.

Each filler runs once on its own freshly built model under a tracer that sees
every in-place write (fill_, uniform_, copy_, out= ...). Findings (exit 1):

  missed                  one filler writes a tensor, another does not
  repeated                one filler writes a tensor more than once
  values-differ           same initializer, different final bytes
  non-persistent-written  a non-persistent buffer (rotary inv_freq) written
                          with values other than its construction's
  unregistered            a tensor kept in a plain attribute, list or dict,
                          where no traversal reaches it
  replaced                a loader replaced a tensor instead of writing it
  recorder-mismatch       a strategy's recorder disagrees with the tracer

Tied and aliased storages, tensors nobody writes, persistence questions and
non-persistent buffers restored to their construction values (transformers'
init recomputes inv_freq) are shown as notes and never fail. Exit codes: 0 clean, 1 findings, 2 bad input.

Plain `dummyprof audit` (a depth-3 synthetic tree, per-layer and unique) exits 1
on purpose: it shows the finding vLLM's fill makes on every tied model, per-layer
writing the tied embedding twice, which unique writes once. Accept a known
finding with --ignore KIND (then it exits 0).

Examples:
  dummyprof audit --preset dense-decoder
  dummyprof audit --model tests/fixtures/models.py:build
  dummyprof audit --model ./m.py:build -s per-layer --loader ./fill.py:fill
  dummyprof audit --preset moe-decoder -s legacy --ignore repeated
"""


FIELDS = (  # audit's groups, in the order --help lists their flags
    *MODEL_FIELDS,  # model
    *("strategies", *LOADER_FIELDS, "loader_initializer", "initializer", "ignore"),  # fill, and what is judged
    *SMALL_TREE_FIELDS,  # tree
    *("device", "max_memory"),  # budget
    *DEPLOYMENT_FIELDS,  # layout
)


@with_options(AuditOptions, FIELDS, flags={"detail": DETAIL})
def audit(
    options: AuditOptions,
    given: frozenset[str],
    json_path: JsonOpt = None,
    html: HtmlOpt = None,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    detail: bool = False,
) -> int:
    if "strategies" not in given and options.loaders:
        options.strategies = []  # --loader alone audits the loaders, not the default strategies too
    validate(options)  # bad flags are refused before torch is imported (the scenario checks again)
    inputs = run_inputs(model=options.model, loaders=options.loaders)
    reports = check_outputs({"--json": json_path, "--html": html}, force=force, inputs=inputs, command="audit")
    from dummyprof.scenarios.audit import run as scenario

    with measuring(None, quiet=quiet, json_path=json_path):
        results = scenario.run(options)
    code = emit(results, json_path=json_path, quiet=quiet, force=force, reports=reports, detail=detail, command="audit")
    if code:
        return code  # never 1: a finding that was not recorded is not a verdict CI can trust
    assert results.audit is not None
    return 0 if results.audit.clean else 1
