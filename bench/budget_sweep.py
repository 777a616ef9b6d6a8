"""Latency and measured peak memory across budgets, as FlexNN's curves. Each point runs in a
fresh process: the cache is built first (unlimited run), then for each budget the peak RSS
increase over the process before the Interpreter (VmHWM) and the min/median latency of K
invokes; then the latency ratio to the unlimited run, measured side by side in one process
(medians of K alternating invokes). The budget bounds peak - fixed, with `fixed` the stock interpreter's fixed cost: both
the tiny-model figure and this model's own (building its Interpreter: no arena, no weights)
are reported; `within` uses the larger.

    python bench/budget_sweep.py [--models mobilenet_v2 resnet152 vgg19] [--iters 8] [--out DIR]"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from build_models import model_dir  # noqa: E402

BUDGETS = {"mobilenet_v2": [12, 14, 16, 20, 0], "resnet152": [35, 60, 100, 200, 400, 600, 0],
           "vgg19": [60, 100, 200, 400, 600, 1000, 0], "resnet50": [25, 40, 60, 100, 0]}

WORKER = r'''
import json, sys, time
import numpy as np
from flexdelegate import load_flex
from flexdelegate.memstat import peak_rss_bytes, rss_bytes
from flexdelegate.run import make_interpreter, random_inputs
import flexdelegate.planner.bridge, flexdelegate.planner.arena
model, budget, cache, iters, threads = sys.argv[1], float(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
open("/proc/self/clear_refs", "w").write("5")
r0 = rss_bytes()
if budget == -1:  # the stock interpreter's fixed cost: a tiny model
    from flexdelegate.tflite.demo_model import build_demo_model
    it = make_interpreter(build_demo_model(), num_threads=1)
elif budget == -2:  # this model's stock fixed cost: building the interpreter, no arena, no weights
    from flexdelegate.runtime import detect
    rt = detect()
    rt.Interpreter(model_path=model, experimental_op_resolver_type=rt.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    print(json.dumps({"peak": peak_rss_bytes() - r0, "min_ms": 0, "median_ms": 0}))
    sys.exit(0)
else:
    it = make_interpreter(model, delegate=load_flex(budget=budget, cache_path=cache, num_threads=threads), num_threads=threads)
x = random_inputs(it)
for d, v in zip(it.get_input_details(), x): it.set_tensor(d["index"], v)
ts = []
for _ in range(iters + 1):
    t0 = time.perf_counter(); it.invoke(); ts.append((time.perf_counter() - t0) * 1e3)
ts = ts[1:]
print(json.dumps({"peak": peak_rss_bytes() - r0, "min_ms": min(ts), "median_ms": float(np.median(ts))}))
'''


# Latency against the unlimited run, side by side: both interpreters in one process, rounds
# alternating, so the shared machine's noise hits both alike (separate processes at separate
# times differ by more than the effect measured).
PAIR = r'''
import json, statistics, sys, time
from flexdelegate import load_flex
from flexdelegate.run import make_interpreter, random_inputs, invoke
model, budget, cache, iters, threads = sys.argv[1], float(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
its = [make_interpreter(model, delegate=load_flex(cache_path=cache, num_threads=threads, **({"budget": b} if b else {})),
                        num_threads=threads) for b in (0, budget)]
x = random_inputs(its[0])
for it in its:
    invoke(it, x)
times = [[], []]
for _ in range(iters):
    for k, it in enumerate(its):
        t0 = time.perf_counter(); it.invoke(); times[k].append((time.perf_counter() - t0) * 1e3)
print(json.dumps({"ratio": statistics.median(times[1]) / statistics.median(times[0])}))
'''


def pair_ratio(model, budget, cache, iters, threads):
    r = subprocess.run([sys.executable, "-c", PAIR, str(model), str(budget), cache, str(iters), str(threads)],
                       capture_output=True, text=True, timeout=3600)
    return None if r.returncode else json.loads(r.stdout.strip().splitlines()[-1])["ratio"]


def point(model, budget, cache, iters, threads):
    r = subprocess.run([sys.executable, "-c", WORKER, str(model), str(budget), cache, str(iters), str(threads)],
                       capture_output=True, text=True, timeout=3600)
    if r.returncode:
        return {"error": r.stderr.strip().splitlines()[-1][:200]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="*", default=["mobilenet_v2", "resnet152", "vgg19"])
    ap.add_argument("--iters", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--budgets", nargs="*", type=float, help="override the budgets (MB; 0 = unlimited)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    fixed = point("", -1, "", 2, 1)["peak"]
    print(f"stock interpreter fixed cost (tiny model): {fixed / 2**20:.1f} MB")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            model = model_dir() / f"{name}.tflite"
            if not model.exists():
                print(f"{name}: missing {model}; run bench/build_models.py {name}")
                continue
            cache = os.path.join(tmp, f"{name}.fxc")
            point(model, 0, cache, 1, args.threads)  # build the cache
            model_fixed = point(model, -2, "", 1, 1)["peak"]
            fixed_used = max(fixed, model_fixed)
            print(f"{name}: stock fixed cost of this model {model_fixed / 2**20:.1f} MB")
            budgets = args.budgets if args.budgets else BUDGETS[name]
            for budget in sorted(budgets, key=lambda b: b or 1e9, reverse=True):
                r = point(model, budget, cache, args.iters, args.threads)
                row = {"model": name, "budget_mb": budget, **r}
                if "peak" in r:
                    row["peak_minus_tiny_fixed_mb"] = (r["peak"] - fixed) / 2**20
                    row["peak_minus_fixed_mb"] = (r["peak"] - fixed_used) / 2**20
                    row["within_budget"] = budget == 0 or row["peak_minus_fixed_mb"] <= budget
                    if budget:
                        row["latency_vs_unlimited"] = pair_ratio(model, budget, cache, args.iters, args.threads)
                rows.append(row)
                b = "unlimited" if budget == 0 else f"{budget} MB"
                if "error" in r:
                    print(f"{name:14s} {b:>10s}  ERROR {r['error']}")
                else:
                    print(f"{name:14s} {b:>10s}  peak-fixed {row['peak_minus_fixed_mb']:7.1f} MB "
                          f"(-tiny {row['peak_minus_tiny_fixed_mb']:7.1f})  "
                          f"min {r['min_ms']:8.1f} ms  median {r['median_ms']:8.1f} ms  "
                          f"x{row.get('latency_vs_unlimited') or 1:.3f}  {'ok' if row['within_budget'] else 'OVER'}",
                          flush=True)
    with open(os.path.join(args.out, "budget_sweep.json"), "w") as f:
        json.dump({"fixed_bytes": fixed, "rows": rows}, f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, len(args.models), figsize=(5 * len(args.models), 4), squeeze=False)
    for ax, name in zip(axes[0], args.models):
        pts = [r for r in rows if r["model"] == name and "min_ms" in r and r["budget_mb"]]
        if not pts:
            continue
        ax.plot([r["budget_mb"] for r in pts], [r["min_ms"] for r in pts], "o-", label="latency (min)")
        ax2 = ax.twinx()
        ax2.plot([r["budget_mb"] for r in pts], [r["peak_minus_fixed_mb"] for r in pts], "s--", color="C1",
                 label="peak - fixed (MB)")
        ax2.plot([r["budget_mb"] for r in pts], [r["budget_mb"] for r in pts], ":", color="gray", label="budget")
        ax.set_xscale("log")
        ax.set_title(name)
        ax.set_xlabel("budget (MB)")
        ax.set_ylabel("ms")
        ax2.set_ylabel("MB")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "budget_sweep.png"), dpi=110)


if __name__ == "__main__":
    main()
