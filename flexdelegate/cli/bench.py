"""`flexdelegate bench MODEL --vs xnnpack`: invoke latency of flexdelegate against stock TFLite
(with its XNNPack delegate, or the reference kernels), in the spirit of TFLite's benchmark_model.

Both interpreters live in one process and take turns: R rounds of K invokes each, the order
flipping every round, so drift (thermal, frequency, noisy neighbours) hits both engines alike.
Reports min and median per engine and the ratio flex/stock of the medians (< 1: flex faster)."""
from __future__ import annotations

import sys
import time

from . import common
from .common import Bar, CommandError


def _timed_round(it, iterations: int, samples: list, bar: Bar, done: int) -> int:
    clock, invoke = time.perf_counter_ns, it.invoke
    for _ in range(iterations):
        t0 = clock()
        invoke()
        samples.append((clock() - t0) / 1e3)
        done += 1
        if bar.enabled:
            bar.update(done)
    return done


def bench(model: str, *, vs: str = "xnnpack", threads: int = 1, iterations: int = 20,
          rounds: int = 5, warmup: int = 2, progress: bool = False) -> dict:
    """{engine name: [latencies in us]} for the stock engine and flexdelegate."""
    import numpy as np

    from .. import load_flex
    from ..run import make_interpreter, random_inputs
    try:
        engines = {vs: make_interpreter(model, stock=vs, num_threads=threads)}
        engines["flexdelegate"] = make_interpreter(
            model, delegate=load_flex(num_threads=threads), num_threads=threads)
    except (ValueError, RuntimeError) as e:  # e.g. a delegate that refuses the model
        raise CommandError(f"loading {model}: {e}") from None
    inputs = random_inputs(engines[vs])
    for it in engines.values():
        for d, x in zip(it.get_input_details(), inputs):
            it.set_tensor(d["index"], x)
        for _ in range(warmup):  # lazy allocations and first-touch page faults
            it.invoke()
    samples = {name: [] for name in engines}
    names = list(engines)
    bar = Bar("bench", 2 * rounds * iterations, progress)
    done = 0
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            done = _timed_round(engines[name], iterations, samples[name], bar, done)
    bar.close()
    stats = {name: {"min_us": float(np.min(s)), "median_us": float(np.median(s))}
             for name, s in samples.items()}
    stats["ratio"] = stats["flexdelegate"]["median_us"] / stats[vs]["median_us"]
    return stats


def main(argv=None) -> int:
    ap = common.parser("flexdelegate bench", __doc__, threads_help="for both engines", iterations=20,
                       iterations_help="invokes per round", warmup=True, raw=True)
    ap.add_argument("--vs", choices=("xnnpack", "reference"), default="xnnpack",
                    help="the stock engine to compare with (default: xnnpack)")
    ap.add_argument("--rounds", type=int, default=5, metavar="R",
                    help="rounds of K invokes per engine, alternating (default 5)")
    return common.main(ap, _run, argv)


def _run(args) -> int:
    common.positive("--rounds", args.rounds)
    common.check_options(num_threads=args.threads)
    stats = bench(args.model, vs=args.vs, threads=args.threads, iterations=args.iterations, rounds=args.rounds,
                  warmup=args.warmup_runs, progress=sys.stderr.isatty())
    _print(args, stats)
    return 0


def _print(args, stats: dict) -> None:
    print(f"model:   {args.model}")
    print(f"runs:    {args.rounds} rounds x {args.iterations} invokes per engine, alternating, "
          f"{args.threads} thread(s)")
    print(f"{'engine':14s} {'min':>12s} {'median':>12s}")
    for name in (args.vs, "flexdelegate"):
        s = stats[name]
        print(f"{name:14s} {s['min_us'] / 1e3:9.3f} ms {s['median_us'] / 1e3:9.3f} ms")
    ratio = stats["ratio"]
    verdict = "faster" if ratio < 1 else "slower" if ratio > 1 else "even"
    print(f"ratio flex/{args.vs} (medians): {ratio:.3f} (flexdelegate {verdict})")
