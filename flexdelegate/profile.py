"""`flexdelegate profile MODEL`: load cost, memory and latency of a model on flexdelegate, in
four stages, each measured in a fresh worker process (flexdelegate._profile_worker):

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

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

STAGES = ("compile", "first_load", "subsequent_load", "inference")
TOP_OPS = 10


class ProfileError(Exception):
    """A one-line problem the command reports without a traceback (exit 2)."""


class Bar:
    """Progress on stderr, for humans only: draws nothing unless enabled (stderr a tty).
    With a total it is a bar (done/total); without, an elapsed-time ticker shown after 1 s."""

    def __init__(self, label: str, total: int | None = None, enabled: bool = False):
        self.label, self.total, self.enabled = label, total, enabled
        self.start = time.monotonic()
        self.drawn, self.next = False, 0.0

    def update(self, done: int = 0) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if (now < self.next and done != self.total) or (self.total is None and now - self.start < 1):
            return
        self.next = now + 0.2  # redraw sparingly: the loop being reported on matters more
        if self.total is None:
            text = f"{self.label} ... {now - self.start:.1f} s"
        else:
            filled = 30 * done // max(1, self.total)
            text = f"{self.label} [{'#' * filled}{'.' * (30 - filled)}] {done}/{self.total}"
        sys.stderr.write("\r" + text)
        sys.stderr.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def check_model(path: str) -> None:
    """ProfileError unless `path` is a readable TFLite file (checked here, before any worker,
    so a wrong path costs one clear line, not a runtime error from deep inside TFLite)."""
    from .tflite.reader import read_model
    if not os.path.exists(path):
        raise ProfileError(f"{path}: no such file")
    if not os.path.isfile(path):
        raise ProfileError(f"{path}: not a regular file")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ProfileError(f"{path}: {e.strerror or e}") from None
    try:
        read_model(data)
    except ValueError as e:
        raise ProfileError(f"{path}: {e}") from None


def check_options(**options) -> None:
    """ProfileError for option values load_flex rejects (e.g. --threads 0, --budget -5)."""
    from . import load_flex
    try:
        load_flex(**{k: v for k, v in options.items() if v is not None})
    except (ValueError, RuntimeError, ImportError) as e:
        raise ProfileError(str(e)) from None


def run_stage(stage: str, model: str, cache: str, *, budget=None, threads=None,
              iterations: int = 10, progress: bool = False) -> dict:
    """Runs one stage in a fresh worker process and returns its JSON figures."""
    cmd = [sys.executable, "-m", "flexdelegate._profile_worker", stage, model, cache,
           "--iterations", str(iterations)]
    if budget:
        cmd += ["--budget", str(budget)]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    # The worker draws its own bar for the inference loop; the other stages get a ticker here.
    if progress and stage == "inference":
        cmd.append("--progress")
    env = dict(os.environ)
    # The worker must import this very package, also from a source tree that is not installed.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    ticker = Bar(stage, None, progress and stage != "inference")
    # stdout carries the result; stderr is inherited so native logs and the bar reach the user.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
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
        raise ProfileError(f"{stage} stage: the worker process {how} without a result")
    if "error" in result:
        raise ProfileError(f"{stage} stage: {result['error']}")
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
    from .runtime import detect
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


def _mib(n) -> str:
    return f"{n / 2**20:.1f}"


def _range(r) -> str:
    return f"{_mib(r[0])}..{_mib(r[1])}"


def _time(us: float) -> str:
    return f"{us / 1e6:.2f} s" if us >= 1e6 else f"{us / 1e3:.2f} ms" if us >= 1e3 else f"{us:.0f} us"


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
        cache = (f"packed {c.get('blobs_packed', 0)} ({_mib(c.get('bytes_packed', 0))} MiB), "
                 f"mapped {c.get('blobs_mapped', 0)} ({_mib(c.get('bytes_mapped', 0))} MiB)")
        lines.append(f"{name:16s} {_time(s['time_us']):>10s} {_range(s['peak_bytes']):>15s} "
                     f"{_range(s['increase_bytes']):>17s} {_mib(s['private_bytes']):>8s} "
                     f"{_mib(s['shared_bytes']):>8s}  {cache}")
    inf = report["stages"]["inference"]
    lines += ["", f"latency:   min {_time(inf['min_us'])}, median {_time(inf['median_us'])}, "
                  f"max {_time(inf['max_us'])} over {inf['iterations']} invokes"]
    ops = sorted(report["ops"], key=lambda o: -o["time_us"])[:TOP_OPS]
    if ops:
        total = sum(o["time_us"] for o in report["ops"]) or 1.0
        lines += ["", f"top {len(ops)} of {len(report['ops'])} delegated ops by time "
                      "(mean per invoke, profile=1 pass):",
                  f"{'node':>5s}  {'op':20s} {'kernel':36s} {'time':>10s} {'GFLOP/s':>8s} {'share':>6s}"]
        for o in ops:
            lines.append(f"{o['index']:5d}  {o['op'][:20]:20s} {o['kernel'][:36]:36s} "
                         f"{_time(o['time_us']):>10s} {o['gflops']:8.2f} {100 * o['time_us'] / total:5.1f}%")
    return "\n".join(lines)


def _pyplot():
    """matplotlib.pyplot on a file backend, or ProfileError: matplotlib is optional."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ProfileError("--plot needs matplotlib, which is not installed "
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


def stdout_closed() -> int:
    """For `... | head`: the reader left; silence the interpreter's final flush, exit 1."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="flexdelegate profile", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help=".tflite file")
    ap.add_argument("--budget", type=float, default=None, metavar="MB",
                    help="memory budget passed to the delegate (0 or absent = unlimited)")
    ap.add_argument("--threads", type=int, default=1, metavar="N")
    ap.add_argument("--iterations", type=int, default=50, metavar="K", help="timed invokes")
    ap.add_argument("--json", metavar="OUT", help="write the report as JSON")
    ap.add_argument("--plot", metavar="PNG", help="memory and latency chart (needs matplotlib)")
    args = ap.parse_args(argv)  # malformed numbers: usage error, exit 2
    try:
        if args.iterations < 1:
            raise ProfileError(f"--iterations must be >= 1, got {args.iterations}")
        if args.plot:
            _pyplot()  # fail before minutes of profiling, not after
        check_model(args.model)
        budget = args.budget
        if budget is not None and math.isfinite(budget) and budget.is_integer():
            budget = int(budget)  # passes and prints as "64", not "64.0"
        check_options(budget=budget, num_threads=args.threads)
        report, samples = profile(args.model, budget=budget, threads=args.threads,
                                  iterations=args.iterations, progress=sys.stderr.isatty())
        if args.json:
            try:
                with open(args.json, "w") as f:
                    json.dump(report, f, indent=2)
                    f.write("\n")
            except OSError as e:
                raise ProfileError(f"{args.json}: {e.strerror or e}") from None
        print(format_report(report))
        if args.plot:
            try:
                plot(report, samples, args.plot)
            except OSError as e:
                raise ProfileError(f"{args.plot}: {e.strerror or e}") from None
    except ProfileError as e:
        print(f"flexdelegate profile: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("flexdelegate profile: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return stdout_closed()
    return 0
