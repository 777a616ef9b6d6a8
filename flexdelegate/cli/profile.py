"""`flexdelegate profile MODEL`: load cost, memory and latency of a model on flexdelegate, in
four stages, each measured in a fresh worker process (flexdelegate.cli._profile_worker):

  compile          first load with an empty cache: partition, pack weights, write the cache
  first_load       load with the cache present, its and the model's pages dropped from the
                   OS page cache first (cold OS)
  subsequent_load  the same load again, OS caches warm
  inference        K invokes of one set of random inputs (min is the headline); the per-op
                   table comes from a separate profile=1 pass in the same worker

JSON (--json OUT), stable keys; extra keys may be added, none removed:
  {"model", "budget_mb" (0 = unlimited), "threads", "runtime", "nodes_total",
   "nodes_delegated", "partitions",
   "stages": {STAGE: {"peak_bytes": [lo, hi], "increase_bytes": [lo, hi], "time_us",
                      "private_bytes", "shared_bytes", "pss_bytes", "anonymous_bytes",
                      "pid", "cache": {blobs_packed, bytes_packed, blobs_mapped, ...}},
              "inference" also: "min_us", "median_us", "max_us", "iterations";
              "first_load" also: "page_cache_dropped"},
   "ops": [{"subgraph", "index", "op", "kernel", "slices", "time_us", "gflops"}],
   "fallback": [{"node", "op", "reason"}]}
Memory ranges: see flexdelegate.memstat. time_us is the stage's wall time (for loads:
Interpreter construction + allocate_tensors); op time_us is the mean per invoke.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

from . import common
from .common import Bar, CommandError, duration, mib

STAGES = ("compile", "first_load", "subsequent_load", "inference")
TOP_OPS = 10


def run_stage(stage: str, model: str, cache: str, *, budget=None, threads=None,
              iterations: int = 10, progress: bool = False) -> dict:
    """Runs one stage in a fresh worker process and returns its JSON figures."""
    cmd = [sys.executable, "-m", "flexdelegate.cli._profile_worker", stage, os.path.abspath(model),
           os.path.abspath(cache), "--iterations", str(iterations)]
    if budget:
        cmd += ["--budget", str(budget)]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    # The worker draws its own bar for the inference loop; the other stages get a ticker here.
    if progress and stage == "inference":
        cmd.append("--progress")
    env = dict(os.environ)
    # The worker must import this very package (installed, or a source tree that is not), never
    # another one that happens to be in the working directory (`python -m` puts the working
    # directory first on sys.path: a source checkout without its built extension): it runs in
    # the directory holding this package, with the paths made absolute.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    ticker = Bar(stage, None, progress and stage != "inference")
    # stdout carries the result; stderr is inherited so native logs and the bar reach the user.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env, cwd=root)
    try:
        while True:
            try:
                out, _ = proc.communicate(timeout=0.2)  # also drains stdout: no pipe stall
                break
            except subprocess.TimeoutExpired:
                ticker.update()
    finally:
        ticker.close()
        if proc.poll() is None:  # interrupted: do not leave our worker behind
            proc.kill()
            proc.wait()
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    result = None
    if lines:
        try:
            result = json.loads(lines[-1])
        except json.JSONDecodeError:
            pass
    if result is None:
        how = (f"was killed by signal {-proc.returncode}" if proc.returncode < 0
               else f"exited with status {proc.returncode}")
        raise CommandError(f"{stage} stage: the worker process {how} without a result")
    if "error" in result:
        raise CommandError(f"{stage} stage: {result['error']}")
    return result


def _stage_entry(result: dict) -> dict:
    keys = ("peak_bytes", "increase_bytes", "time_us", "private_bytes", "shared_bytes",
            "pss_bytes", "anonymous_bytes", "pid", "page_cache_dropped",
            "min_us", "median_us", "max_us", "iterations")
    entry = {k: result[k] for k in keys if k in result}
    entry["cache"] = dict((result.get("stats") or {}).get("cache") or {})
    return entry


def _op_entry(op: dict) -> dict:
    t = float(op.get("time_us") or 0.0)
    # flops are per invoke and time_us the mean per invoke: flops / (us * 1e3) = GFLOP/s.
    return {"subgraph": op.get("subgraph", 0), "index": op["node"], "op": op["op"],
            "kernel": op.get("kernel", ""), "slices": int(op.get("slices", 1)),
            "time_us": t, "gflops": (op.get("flops", 0) / (t * 1e3)) if t > 0 else 0.0}


def profile(model: str, *, budget=None, threads=None, iterations: int = 10,
            progress: bool = False) -> tuple[dict, list]:
    """All four stages; returns (the JSON report, the inference latencies in us)."""
    from ..runtime import detect
    tmp = tempfile.mkdtemp(prefix="flexdelegate-profile-")
    try:
        cache = os.path.join(tmp, "weights.fxc")  # absent: the compile stage builds it
        results = {s: run_stage(s, model, cache, budget=budget, threads=threads,
                                iterations=iterations, progress=progress) for s in STAGES}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    stats = results["compile"]["stats"]
    report = {
        "model": model,
        "budget_mb": budget or 0,
        "threads": threads if threads is not None else stats.get("threads"),
        "runtime": detect().name,
        "nodes_total": stats.get("nodes_total"),
        "nodes_delegated": stats.get("nodes_delegated"),
        "partitions": stats.get("partitions"),
        "stages": {s: _stage_entry(results[s]) for s in STAGES},
        "ops": [_op_entry(op) for op in results["inference"].get("ops", [])],
        "fallback": [{"node": f["node"], "op": f["op"], "reason": f["reason"]}
                     for f in stats.get("fallback") or []],
    }
    return report, results["inference"].get("samples_us", [])


def _range(r) -> str:
    return f"{mib(r[0])}..{mib(r[1])}"


def format_report(report: dict) -> str:
    budget = f"{report['budget_mb']} MB" if report["budget_mb"] else "unlimited"
    lines = [f"model:     {report['model']}",
             f"runtime:   {report['runtime']}, {report['threads']} thread(s), budget {budget}",
             f"delegated: {report['nodes_delegated']}/{report['nodes_total']} nodes in "
             f"{report['partitions']} partition(s)"]
    for f in report["fallback"]:
        lines.append(f"  fallback: node {f['node']} {f['op']}: {f['reason']}")
    lines += ["", "memory in MiB; lo assumes freed malloc space is reused, hi that it is not",
              f"{'stage':16s} {'time':>10s} {'peak lo..hi':>15s} {'increase lo..hi':>17s} "
              f"{'private':>8s} {'shared':>8s}  cache"]
    for name, s in report["stages"].items():
        c = s.get("cache", {})
        cache = (f"packed {c.get('blobs_packed', 0)} ({mib(c.get('bytes_packed', 0))} MiB), "
                 f"mapped {c.get('blobs_mapped', 0)} ({mib(c.get('bytes_mapped', 0))} MiB)")
        lines.append(f"{name:16s} {duration(s['time_us']):>10s} {_range(s['peak_bytes']):>15s} "
                     f"{_range(s['increase_bytes']):>17s} {mib(s['private_bytes']):>8s} "
                     f"{mib(s['shared_bytes']):>8s}  {cache}")
    inf = report["stages"]["inference"]
    lines += ["", f"latency:   min {duration(inf['min_us'])}, median {duration(inf['median_us'])}, "
                  f"max {duration(inf['max_us'])} over {inf['iterations']} invokes"]
    ops = sorted(report["ops"], key=lambda o: -o["time_us"])[:TOP_OPS]
    if ops:
        total = sum(o["time_us"] for o in report["ops"]) or 1.0
        lines += ["", f"top {len(ops)} of {len(report['ops'])} delegated ops by time "
                      "(mean per invoke, profile=1 pass):",
                  f"{'node':>5s}  {'op':20s} {'kernel':36s} {'time':>10s} {'GFLOP/s':>8s} {'share':>6s}"]
        for o in ops:
            lines.append(f"{o['index']:5d}  {o['op'][:20]:20s} {o['kernel'][:36]:36s} "
                         f"{duration(o['time_us']):>10s} {o['gflops']:8.2f} {100 * o['time_us'] / total:5.1f}%")
    return "\n".join(lines)


def _pyplot():
    """matplotlib.pyplot on a file backend, or CommandError: matplotlib is optional."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CommandError("--plot needs matplotlib, which is not installed "
                           "(pip install matplotlib)") from None
    return plt


def plot(report: dict, samples_us: list, out: str) -> None:
    """Memory per stage (hi bars, lo marked inside) and the inference latency histogram."""
    plt = _pyplot()
    fig, (mem, lat) = plt.subplots(1, 2, figsize=(12, 4.5))
    names = list(report["stages"])
    x = range(len(names))
    for offset, key, label in ((-0.2, "peak_bytes", "peak"), (0.2, "increase_bytes", "increase")):
        lo = [report["stages"][n][key][0] / 2**20 for n in names]
        hi = [report["stages"][n][key][1] / 2**20 for n in names]
        bars = mem.bar([i + offset for i in x], hi, width=0.4, alpha=0.45, label=f"{label} (hi)")
        mem.bar([i + offset for i in x], lo, width=0.4, color=bars.patches[0].get_facecolor(),
                alpha=1.0, label=f"{label} (lo)")
    mem.set_xticks(list(x))
    mem.set_xticklabels(names)
    mem.set_ylabel("MiB")
    mem.set_title("memory per stage: lo..hi range")
    mem.legend()
    lat.hist([s / 1e3 for s in samples_us], bins=min(50, max(5, len(samples_us) // 4)))
    lat.set_xlabel("invoke latency (ms)")
    lat.set_ylabel("invokes")
    lat.set_title(f"inference latency, {len(samples_us)} invokes")
    fig.suptitle(os.path.basename(report["model"]))
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def main(argv=None) -> int:
    ap = common.parser("flexdelegate profile", __doc__, iterations=50, raw=True)
    ap.add_argument("--budget", type=float, default=None, metavar="MB",
                    help="memory budget passed to the delegate (0 or absent = unlimited)")
    ap.add_argument("--json", metavar="OUT", help="write the report as JSON")
    ap.add_argument("--plot", metavar="PNG", help="memory and latency chart (needs matplotlib)")
    return common.main(ap, _run, argv)


def _run(args) -> int:
    if args.plot:
        _pyplot()  # fail before minutes of profiling, not after
    budget = args.budget
    if budget is not None and math.isfinite(budget) and budget.is_integer():
        budget = int(budget)  # passes and prints as "64", not "64.0"
    common.check_options(budget=budget, num_threads=args.threads)
    report, samples = profile(args.model, budget=budget, threads=args.threads, iterations=args.iterations,
                              progress=sys.stderr.isatty())
    if args.json:
        try:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=2)
                f.write("\n")
        except OSError as e:
            raise CommandError(f"{args.json}: {e.strerror or e}") from None
    print(format_report(report))
    if args.plot:
        try:
            plot(report, samples, args.plot)
        except OSError as e:
            raise CommandError(f"{args.plot}: {e.strerror or e}") from None
    return 0
