"""One stage of `flexdelegate profile`, run in a fresh process so its load and memory figures
are not blurred by earlier stages:

    python -m flexdelegate.cli._profile_worker STAGE MODEL CACHE [--budget MB] [--threads N]
        [--iterations K] [--progress]

STAGE is compile, first_load, subsequent_load or inference. Prints one JSON line on stdout:
the stage's figures, or {"error": message} with exit status 1. Everything a stage does not
measure (imports, the runtime, the delegate library) is loaded before the measured window."""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time

STAGES = ("compile", "first_load", "subsequent_load", "inference")
# Profiled invokes for the per-op table: per-op times are averages, so a few suffice.
PROFILE_INVOKES = 10
# The parts of delegate.stats() the parent reports.
STATS_KEYS = ("nodes_total", "nodes_delegated", "partitions", "fallback", "cache", "gemm_kernel",
              "threads")


def _delegate(args, profile: bool = False):
    from .. import load_flex
    options = {"cache_path": args.cache, "num_threads": args.threads, "profile": int(profile)}
    if args.budget:
        options["budget"] = args.budget
    return load_flex(**options)


def _measured(fn):
    """Runs fn() between two memory snapshots; returns (fn's result, the stage's figures)."""
    from .. import memstat
    gc.collect()
    memstat.reset_peak()
    before = memstat.snapshot()
    t0 = time.perf_counter_ns()
    result = fn()
    elapsed_ns = time.perf_counter_ns() - t0
    after = memstat.snapshot()
    figures = memstat.stage_memory(before, after)
    figures.update(memstat.sharing())
    figures["time_us"] = elapsed_ns / 1e3
    return result, figures


def _load_stage(args) -> dict:
    from .. import memstat
    from ..run import make_interpreter
    dropped = None
    if args.stage == "first_load":
        dropped = memstat.drop_page_cache(args.model) & memstat.drop_page_cache(args.cache)
    delegate = _delegate(args)
    # Timed: Interpreter construction (the delegate partitions and packs or maps weights)
    # plus allocate_tensors; make_interpreter does exactly these two.
    it, figures = _measured(lambda: make_interpreter(args.model, delegate=delegate,
                                                     num_threads=args.threads))
    if dropped is not None:
        figures["page_cache_dropped"] = bool(dropped)
    stats = delegate.stats()
    figures["stats"] = {k: stats.get(k) for k in STATS_KEYS}
    del it
    return figures


def _inference_stage(args) -> dict:
    import numpy as np

    from ..run import make_interpreter, random_inputs
    from .common import Bar
    delegate = _delegate(args)
    it = make_interpreter(args.model, delegate=delegate, num_threads=args.threads)
    inputs = random_inputs(it)  # generated once, outside the timed loop
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    samples = [0] * args.iterations
    bar = Bar("inference", args.iterations, args.progress)
    clock, invoke = time.perf_counter_ns, it.invoke

    def loop():
        invoke()  # warm-up: first-invoke allocations count in memory, not in the latencies
        for i in range(args.iterations):
            t0 = clock()
            invoke()
            t1 = clock()
            samples[i] = t1 - t0
            if bar.enabled:
                bar.update(i + 1)

    _, figures = _measured(loop)
    bar.close()
    us = np.asarray(samples, dtype=np.float64) / 1e3
    figures.update(min_us=float(us.min()), median_us=float(np.median(us)), max_us=float(us.max()),
                   iterations=args.iterations, samples_us=us.tolist())
    del it

    # Per-op times from a separate profile=1 interpreter: profiling costs a clock read per
    # node, which must stay out of the latencies above.
    pdelegate = _delegate(args, profile=True)
    pit = make_interpreter(args.model, delegate=pdelegate, num_threads=args.threads)
    for d, x in zip(pit.get_input_details(), inputs):
        pit.set_tensor(d["index"], x)
    for _ in range(min(args.iterations, PROFILE_INVOKES) + 1):
        pit.invoke()
    stats = pdelegate.stats()
    figures["ops"] = stats.get("ops", [])
    figures["stats"] = {k: stats.get(k) for k in STATS_KEYS}
    return figures


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flexdelegate.cli._profile_worker")
    ap.add_argument("stage", choices=STAGES)
    ap.add_argument("model")
    ap.add_argument("cache")
    ap.add_argument("--budget", default=None)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args(argv)
    args.progress = args.progress and sys.stderr.isatty()
    try:
        # Import and resolve everything up front: none of it belongs to the stage.
        import numpy  # noqa: F401

        from .. import _native  # noqa: F401
        from ..runtime import detect
        detect()
        result = _inference_stage(args) if args.stage == "inference" else _load_stage(args)
    except Exception as e:  # reported by the parent as one line
        print(json.dumps({"error": str(e) or type(e).__name__, "pid": os.getpid()}))
        return 1
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group; the parent reports it
        return 130
    result["pid"] = os.getpid()
    result["stage"] = args.stage
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
