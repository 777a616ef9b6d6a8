"""Measured peak memory and latency across memory budgets, as FlexNN's curves.

Peak (what the budget bounds) is defined as
    peak = VmHWM at the end - VmRSS before the delegate and Interpreter exist - fixed
over the WHOLE process (delegate library pages, the Python planner's allocations, loader
buffers, arena, resident and streamed weights, pages of the model or cache mapping touched
while hashing, packing or verifying: everything), where
    fixed = the same figure for the stock interpreter (no delegate) running a tiny model read
            from a file: the runtime's own code pages and interpreter structures, which the
            process pays with or without flexdelegate. Measured in its own process each sweep.
The modules the measurement imports (flexdelegate's planner and numpy) are imported before the
baseline is read. Each budget is run COLD first (a fresh cache path: the load hashes, packs and
writes the cache file) and then WARM (the file just written); both peaks must be <= budget.
The model file leaves the page cache before every run (run()).
The model's own stock fixed cost (its Interpreter built, no tensors allocated) is reported too.

Latency: median of K invokes (after one) in the warm process, and the ratio to the unlimited
plan measured side by side in one process (both interpreters, rounds alternating, medians), so
the shared machine's noise hits both alike.

    python bench/budget_sweep.py [--models mobilenet_v2 resnet152 vgg19] [--budgets 12 20 0]
                                 [--iters 8] [--out DIR] [--plot]
--plot draws latency (x unlimited) and peak against the budget per model, with FlexNN's
published evaluation budgets and headline marked (REFERENCE.md), into DIR/budget_sweep.png."""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from build_models import model_dir  # noqa: E402
from flexdelegate.memstat import drop_page_cache  # noqa: E402

BUDGETS = {"mobilenet_v2": [5, 12, 14, 16, 20, 0], "resnet152": [12, 35, 60, 100, 200, 400, 600, 0],
           "vgg19": [20, 60, 100, 200, 400, 600, 1000, 0], "resnet50": [20, 25, 40, 60, 100, 0],
           # int8 (full-integer, bench/build_models.py): minimum (AVX2), 2x it, the 10 MB
           "resnet50_int8": [5.38, 10, 20, 0], "mobilenet_v2_int8": [4.52, 9.04, 0]}

# FlexNN (MobiCom 2024) as published: the budgets it evaluates each model at (MB) and its
# headline, ResNet-152 with -93.81 % peak memory for +3.64 % latency (at its smallest budget).
FLEXNN_BUDGETS = {"vgg19": (60, 1000), "resnet152": (35, 600), "mobilenet_v2": (12, 20)}
FLEXNN_HEADLINE = {"resnet152": (35, 1.0364)}

WORKER = r'''
import json, sys, time
import numpy as np
from flexdelegate import load_flex
from flexdelegate.memstat import peak_rss_bytes, rss_bytes
from flexdelegate.run import make_interpreter, random_inputs
import flexdelegate.planner.bridge, flexdelegate.planner.arena  # imported before the baseline
model, budget, cache, iters, threads = sys.argv[1], float(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
if budget == -1:  # the stock runtime's fixed cost: a tiny model from a file, no delegate
    from flexdelegate.tflite.demo_model import build_demo_model
    open(model, "wb").write(build_demo_model())
# random_inputs' first draws load numpy.random's code (NumPy 2, ai-edge-litert's: ~2 MB of pages,
# NumPy 1 under 1 MB), which the model's fixed cost (budget -2: no inputs) would not count
rng = np.random.default_rng(0)
rng.standard_normal(4).astype(np.float32), rng.integers(0, 4, size=4)
open("/proc/self/clear_refs", "w").write("5")
r0 = rss_bytes()
if budget == -1:
    it = make_interpreter(model, num_threads=1)
elif budget == -2:  # this model's stock fixed cost: its interpreter built, no arena, no weights read
    from flexdelegate.runtime import detect
    rt = detect()
    rt.Interpreter(model_path=model, experimental_op_resolver_type=rt.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    print(json.dumps({"peak": peak_rss_bytes() - r0, "min_ms": 0, "median_ms": 0}))
    sys.exit(0)
else:
    d = load_flex(budget=budget, cache_path=cache, num_threads=threads)
    it = make_interpreter(model, delegate=d, num_threads=threads)
x = random_inputs(it)
for d_, v in zip(it.get_input_details(), x): it.set_tensor(d_["index"], v)
ts = []
for _ in range(iters + 1):
    t0 = time.perf_counter(); it.invoke(); ts.append((time.perf_counter() - t0) * 1e3)
ts = ts[1:]
print(json.dumps({"peak": peak_rss_bytes() - r0, "min_ms": min(ts), "median_ms": float(np.median(ts))}))
'''

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
print(json.dumps({"ratio": statistics.median(times[1]) / statistics.median(times[0]),
                  "unlimited_ms": statistics.median(times[0]), "budget_ms": statistics.median(times[1])}))
'''


def run(code, model, *args):
    # The model's pages leave the page cache before every run: a file just written (the
    # converter's) can sit there in large folios, and then TFLite's own Interpreter(model_path)
    # maps ~150 MB of ViT-B/16 or GPT-2-small by touching its tables (7.5 MB once evicted): a peak
    # of the stock runtime's that would read as the delegate's.
    drop_page_cache(model)
    r = subprocess.run([sys.executable, "-c", code, model, *map(str, args)], capture_output=True, text=True, timeout=3600)
    if r.returncode:
        return {"error": (r.stderr.strip().splitlines() or ["?"])[-1][:200]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def fixed_cost(tmp):
    """The stock runtime's fixed cost (bytes), as defined in the module docstring."""
    return run(WORKER, os.path.join(tmp, "tiny.tflite"), -1, "", 2, 1)["peak"]


def sweep_model(name, model, budgets, fixed, tmp, iters, threads):
    rows = []
    model_fixed = run(WORKER, model, -2, "", 1, 1)["peak"]
    print(f"{name}: stock fixed cost of this model {model_fixed / 2**20:.1f} MB", flush=True)
    warm_cache = os.path.join(tmp, f"{name}.fxc")
    for budget in sorted(budgets, key=lambda b: b or 1e9, reverse=True):
        cold_cache = os.path.join(tmp, f"{name}-{budget:g}-cold.fxc")
        cold = run(WORKER, model, budget, cold_cache, 1, threads)  # the first load ever
        if budget == 0:  # unlimited comes first: its file is the warm cache of every budget
            os.replace(cold_cache, warm_cache)
        for f in pathlib.Path(tmp).glob(f"{name}-{budget:g}-cold.fxc*"):
            f.unlink()
        warm = run(WORKER, model, budget, warm_cache, iters, threads) if "error" not in cold else cold
        row = {"model": name, "budget_mb": budget, "model_fixed_mb": model_fixed / 2**20}
        if "error" in warm:
            row["error"] = warm["error"]
            print(f"{name:14s} {budget or 'unlimited'!s:>9} MB  ERROR {warm['error']}", flush=True)
            rows.append(row)
            continue
        row.update(cold_peak_mb=(cold["peak"] - fixed) / 2**20, warm_peak_mb=(warm["peak"] - fixed) / 2**20,
                   min_ms=warm["min_ms"], median_ms=warm["median_ms"])
        row["within_budget"] = budget == 0 or max(row["cold_peak_mb"], row["warm_peak_mb"]) <= budget
        if budget:
            row.update({k: v for k, v in run(PAIR, model, budget, warm_cache, iters, threads).items()})
        rows.append(row)
        ratio = f"x{row['ratio']:.3f}" if "ratio" in row else ("" if budget == 0 else "x?")
        print(f"{name:14s} {budget or 'unlimited'!s:>9} MB  peak-fixed cold {row['cold_peak_mb']:7.1f} "
              f"warm {row['warm_peak_mb']:7.1f} MB  median {row['median_ms']:8.1f} ms  {ratio:7s} "
              f"{'ok' if row['within_budget'] else 'OVER'}", flush=True)
    return rows


def plot(rows, models, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    models = [m for m in models if any(r["model"] == m and r.get("budget_mb") for r in rows)]
    if not models:
        return
    fig, axes = plt.subplots(1, len(models), figsize=(5.5 * len(models), 4.2), squeeze=False)
    for ax, name in zip(axes[0], models):
        pts = sorted((r for r in rows if r["model"] == name and r["budget_mb"] and "ratio" in r),
                     key=lambda r: r["budget_mb"])
        b = [r["budget_mb"] for r in pts]
        ax.plot(b, [r["ratio"] for r in pts], "o-", label="flexdelegate latency (x unlimited)")
        if name in FLEXNN_BUDGETS:
            lo, hi = FLEXNN_BUDGETS[name]
            ax.axvspan(lo, hi, color="C2", alpha=0.12, label=f"FlexNN's budgets ({lo}-{hi} MB)")
        if name in FLEXNN_HEADLINE:
            hb, hr = FLEXNN_HEADLINE[name]
            ax.plot([hb], [hr], "*", color="C3", markersize=14, label=f"FlexNN headline (x{hr:.4g})")
        ax2 = ax.twinx()
        ax2.plot(b, [max(r["cold_peak_mb"], r["warm_peak_mb"]) for r in pts], "s--", color="C1",
                 label="peak - fixed, cold/warm max (MB)")
        ax2.plot(b, b, ":", color="gray", label="budget")
        for a in (ax, ax2):
            a.set_xscale("log")
            a.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
            a.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xticks(sorted(set(b + list(FLEXNN_BUDGETS.get(name, ())))))
        ax.axhline(1.0, color="gray", linewidth=0.6)
        ax.set_title(name)
        ax.set_xlabel("budget (MB)")
        ax.set_ylabel("latency / unlimited")
        ax2.set_ylabel("MB")
        lines = ax.get_legend_handles_labels(), ax2.get_legend_handles_labels()
        ax.legend(lines[0][0] + lines[1][0], lines[0][1] + lines[1][1], fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="*", default=["mobilenet_v2", "resnet152", "vgg19"])
    ap.add_argument("--iters", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--budgets", nargs="*", type=float, help="override the budgets (MB; 0 = unlimited)")
    ap.add_argument("--plot", action="store_true", help="draw DIR/budget_sweep.png")
    ap.add_argument("--replot", help="only draw the plot from this budget_sweep.json")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.replot:
        rows = json.load(open(args.replot))["rows"]
        plot(rows, list(dict.fromkeys(r["model"] for r in rows)), os.path.join(args.out, "budget_sweep.png"))
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        fixed = fixed_cost(tmp)
        print(f"stock runtime fixed cost (tiny model from a file): {fixed / 2**20:.1f} MB", flush=True)
        for name in args.models:
            model = model_dir() / f"{name}.tflite"
            if not model.exists():
                print(f"{name}: missing {model}; run bench/build_models.py {name}")
                continue
            budgets = args.budgets if args.budgets else BUDGETS[name]
            if 0 not in budgets:
                budgets = [*budgets, 0]  # the unlimited run builds the warm cache and the baseline
            rows += sweep_model(name, model, budgets, fixed, tmp, args.iters, args.threads)
    with open(os.path.join(args.out, "budget_sweep.json"), "w") as f:
        json.dump({"fixed_bytes": fixed, "rows": rows}, f, indent=1)
    if args.plot:
        plot(rows, args.models, os.path.join(args.out, "budget_sweep.png"))


if __name__ == "__main__":
    main()
