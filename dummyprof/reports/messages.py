"""Every reason, notice, warning and advice a report says: a code and one template each.

Results carry codes and numbers (a reason code on an ``Estimate``, a noise warning's code, a plan's reason,
a contention reason); the reporters look the words up here with :func:`say`. A code this version does not
know (a newer file) is shown as it is. Add a message as one entry: its code (``area.code``, the area naming
what the code belongs to) and its template, whose ``{fields}`` the caller passes as data.
"""

from __future__ import annotations

MESSAGES: dict[str, str] = {
    # Why a figure is unavailable (an Estimate's reason); ``{kind}``: the kind of memory used.
    "unavailable.dry-run": "dry run: nothing allocated",
    "unavailable.not-allocated": "full tables not allocated here",
    "unavailable.not-allocated-computed": "full tables not allocated here (see the computed figure)",
    "unavailable.not-allocated-projected": "full tables not allocated here (projected run)",
    "unavailable.no-host-memory-stats": "torch.cuda.host_memory_stats() reports no bytes",
    "unavailable.no-anon-huge-pages": "/proc/self/smaps_rollup has no AnonHugePages",
    "unavailable.faster-than-floor": "over!: measured faster than this run's fastest memset floor, which no fill "
    "can be: the floor readings were disturbed (CPU contention?); rerun on a quiet machine",
    "unavailable.no-reserved-figure": "{kind} memory: only torch's CUDA pinned allocator reports reserved bytes",
    "unavailable.no-huge-pages-asked": "{kind} memory: no huge pages asked",
    # Why the machine was contended (a Contention's reason codes).
    "contention.cpu-pressure": "other tasks waited for a CPU",
    "contention.load-above-cores": "load average above the cores",
    "contention.cpu-steal": "the hypervisor took CPU time",
    "contention.quiet": "machine while {what}: quiet ({figures})",
    "contention.contended": "CONTENDED while {what} ({figures}; {why}): these times are slower than this machine "
    "can do and another run will not reproduce them",
    "contention.no-verdict": "no verdict on the {limit}: the machine was busy while the times were taken{read}, so "
    "they are slower than it can do; rerun on a quiet machine",
    # A verdict against a limit (results/verdict.py's codes); ``short.*``: the word for a narrow column.
    "verdict.met": "{limit} met, {spare} to spare",
    "verdict.missed": "{limit} missed by {gap}",
    "verdict.uncertain": "{limit} uncertain: {low} to {high}",
    "verdict.contended": "{limit}: no verdict",
    "short.met": "met",
    "short.missed": "missed",
    "short.uncertain": "uncertain",
    "short.contended": "no verdict",
    # Fills and their projections, shared by compare, engram and the deployment.
    "fill.generator-bound": "bound by the random generator, not by memory: on CPU, torch's uniform_ draws on one "
    "thread behind the generator's lock (and fp8 goes through an fp16 temporary), whatever the memory system "
    "could take",
    "fill.first-touch-no-room": "FIRST TOUCH NOT PROBED: --max-memory leaves no room for fresh pages, so the "
    "projection leaves out the first write to {needed} of them and reads low by its page faults; --max-memory "
    "{memory} or more probes them",
    "fill.first-touch-short": "FIRST TOUCH PARTLY SAMPLED for lack of time: the pages past the probe are priced at "
    "its last pages' rate (the interval: its cheapest and dearest); --time-budget {budget}s or more probes {covered}",
    "fill.first-touch-all": "them all",
    "fill.first-touch-room": "the {room} its room holds (half of the memory budget) of the {needed} the fill "
    "first-touches",
    "fill.projected-mark": "~: projected from smaller samples, not measured",
    # compare: why the run projected (its size's reason), how --repeat auto stopped, and hyperfine's warnings.
    "size.memory": "one model plus its largest temporary does not fit the memory budget",
    "size.time": "the measured rounds are predicted to overrun the time budget",
    "size.projected": "fill times and memory: PROJECTED, not measured: {reason} ({need}); projected from calibration "
    "fills made in this run",
    "size.repeats-reduced": "repeats REDUCED from {asked} to {repeat} to fit the time budget: measured rounds "
    "predicted at {predicted}{budget}; raise --time-budget for all of them",
    "size.measured": "fill times and memory: measured ({need})",
    "size.counts-meta": "counts: exact for the full model (each strategy's traversal run on the meta device; "
    "nothing allocated)",
    "size.counts-exact": "counts: exact (recorded in the real fills; equal to the counting pass on the meta device)",
    "auto-stop.tight": "stopped once every speedup's 95% interval was within 5% of it",
    "auto-stop.budget": "stopped because one more round would overrun the time budget (intervals may still be wide)",
    "auto-stop.max": "stopped at the most rounds it takes",
    "auto-stop.fewer-rounds": "FEWER ROUNDS THAN PROMISED: --time-budget promises {promised} measured rounds, and "
    "{repeat} fit: the rounds took longer than calibrated (a slower or busier machine); no speedup interval from "
    "under {promised} rounds; raise --time-budget",
    "noise.first-round-slow": "warning: {subject}: the first measured round was significantly slower than the "
    "rest{times}: a cold start (caches, page faults, lazy initialization) that warm-up did not absorb; raise --warmup",
    "noise.statistical-outliers": "warning: {subject}: statistical outliers were detected ({count} outside 1.5 IQR "
    "of the quartiles{moved}); consider re-running on a quiet machine without other programs competing",
    "noise.speedup-uncertain": "warning: {subject}: the speedup vs {baseline} is uncertain: its 95% interval "
    "{low:.2f}–{high:.2f}x includes 1.0 (no difference); raise --repeat or quiet the machine",
    "noise.faster-than-floor": "warning: {subject}: filled faster than the memset floor measured in this run{share}, "
    "which no fill can: the floor's readings were slowed (contention), so its %memset is not shown; rerun quiet",
    "compare.nothing-to-fill": "speedup: n/a: nothing was filled (the model has no tensor with bytes to write), so "
    "each time is only the walk's overhead and a ratio of them says nothing about filling",
    # engram: why a method was projected, or how a dry run plans it.
    "planned.fits": "fits: measured in full unless the calibration at start-up says one round exceeds the time budget",
    "planned.memory": "does not fit in memory: will be projected from samples",
    "projected.memory": "does not fit in memory",
    "projected.time": "one full-size fill would take {about}, over the time budget",
    "engram.intervals": "note: intervals run from the least to the steepest slope of the samples' lines (an "
    "allocation that does not grow with size: its fastest to slowest reading); no projection is faster than this "
    "run's memset floor (first touch: nor than its own fastest sample)",
    "engram.huge-pages-sampled": "huge-page bytes were read back on the largest sample, not the full table",
    "engram.rounds-cut": "measured {rounds} of {repeat} rounds at full size for {methods}: one round takes about "
    "{round} and the time budget is {budget}",
    "engram.sizes-cut": "sample sizes of {rows} rows left out: predicted to end after the time budget (the machine "
    "was slower than at calibration); the projections use the sizes measured",
    "engram.over-budget": "OVER THE TIME BUDGET: sampling ended {over} after the {budget} budget{when}; the three "
    "sample sizes per group a projection needs are measured however late: raise --time-budget, or run on a "
    "quieter machine",
    # The deployment: why its shards were not timed.
    "not-timed.no-cuda-device-here": "not timed: no CUDA device here. The layout is for a GPU (--device cuda or "
    "--device-memory) and a CPU time is not a GPU start-up time; the bytes and visits per rank are exact. Time it "
    "with --device cuda on a machine with one, or give --device cpu for a CPU deployment",
    # The deployment's work table: what its host, own-rank and fill columns hold.
    "deployment.host-columns": "host visits, host written, host fill: the CPU-offloaded tables (host-resident), "
    "filled on this host's {device} with their declared value in fresh memory (median of the rounds; ~ projected "
    "from a probe fill or scaled by the bytes a strategy writes more than once); the rest of visits and written is "
    "device-resident",
    "deployment.ranks-failed": "own rank: ranks finished: {finished} of {nproc}; the others did not ({why}): their "
    "own-rank figures are missing, everything else is whole",
    "deployment.own-rank": "own rank: each rank's fill in its own process, {nproc} ranks ({backend}) filling at "
    "once on this host's cpu; fill: one rank alone (the model of the deployment from one rank){gpu}",
    "deployment.own-rank-gpu": "; a GPU layout: own rank is the whole shard filled on cpu, a CPU time, not the GPU "
    "start-up",
    "deployment.device-part": "device-resident part (visits less host visits, written less host written)",
    "deployment.fill-timed": "fill: median; rank {ranks}'s shard{part} {how} on {device} with the real initializers "
    "(ranks alike share its figures); ~ projected from calibration fills (interval in range, never below this run's "
    "memset floor)",
    # Notices written from the data (reports/notices.py), and the backing's note as a dry run reads it.
    "notice.loaders-traced": "loaders are traced (every operator that writes in place is seen); a visit that writes "
    "nothing cannot be seen; {values}",
    "notice.loader-initializer": "their final bytes are compared with every filler using {declared}, as declared by "
    "--loader-initializer",
    "notice.no-loader-initializer": "their values are compared with no other filler unless --loader-initializer "
    "declares one",
    "notice.meta-build": "built on the meta device: sizes come from shapes and dtypes, visits from walking each "
    "strategy with a no-op initializer; {allocated}",
    "notice.meta-real-tensors": "nothing was written, but the callable put {real} tensor(s) on a real device itself "
    "(an explicit device=)",
    "notice.meta-nothing": "nothing was allocated or written",
    "notice.not-measured": "scenario {name!r} could not be measured: {error}",
    "notice.not-recorded": "could not record: {what}",
    "notice.measured-instead": "; measured pageable instead",
    "notice.dry-run-instead": "; a run would measure pageable instead (dry run: nothing was measured)",
    # Which engine wrote random-fast's values (the environment line).
    "engine.kernel": "C kernel",
    "engine.numpy": "numpy engine (no C kernel built: slower, see BENCHMARKS.md)",
    # An audit's findings (results/audit.py's kinds).
    "finding.missed": "{tensor} ({dtype}) is written by {written_by} but not by {fillers}",
    "finding.repeated": "{filler} writes {tensor} {count} times",
    "finding.values-differ": "{tensor}: final bytes differ ({groups}) with the same initializer",
    "finding.non-persistent-written": "{filler} overwrites non-persistent buffer {tensor} (computed at construction, "
    "never in a checkpoint; vLLM's per-layer fill leaves it alone)",
    "finding.non-persistent-restored": "{filler} writes non-persistent buffer {tensor} back to the values its module "
    "computes at construction (bitwise equal): a restore, not a problem",
    "finding.unregistered": "{tensor} ({dtype} {shape}, {nbytes:,} bytes) is held by its module but not registered "
    "as a parameter or buffer: no parameters()/state_dict() traversal fills it",
    "finding.replaced": "{filler} replaced {tensor} instead of writing it in place",
    "finding.recorder-mismatch": "{filler}: recorder counts {recorded:,} bytes written to {tensor}, tracing saw "
    "{traced:,}",
    "finding.shared-storage": "{names}: {shared}",
    "finding.untouched": "{count_names} tensor(s) written by no filler: {untouched}",
    "finding.persistence": "{detail}",
    "finding.untraced-write": "{filler}: {tensor} changed although no operator wrote it (a numpy view or a raw "
    "pointer); counted as written once",
    # The gate's outcome, by its exit code and what it found.
    "gate.0": "PASS",
    "gate.1": "FAIL: regression",
    "gate.3": "INCOMPLETE: could not measure or not comparable",
    "gate.not-judged": "INCOMPLETE: times not judged (--strict)",
    "gate.skipped": "PASS, timings skipped",
    "gate.unrecorded": "COULD NOT RECORD: {verdict} but a report could not be written",
}


def say(code: str, **fields: object) -> str:
    """The words for ``code`` with ``fields`` in its template; an unknown code as it is (a newer file's)."""
    template = MESSAGES.get(code)
    if template is None:
        return code.partition(".")[2] or code
    return template.format(**fields) if fields else template


def known(code: str) -> bool:
    return code in MESSAGES
