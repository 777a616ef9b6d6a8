"""flexdelegate vs stock XNNPack (this python's Interpreter with its default delegate) and,
optionally, LiteRT's CompiledModel (ai-edge-litert, XNNPack inside), side by side in one run:
each stock engine in a worker process of its own, rounds going through every engine order
(see WARMUP), so machine noise and what one engine leaves behind hit all alike. Prints
min/median latency per engine and the flex/XNNPack and flex/LiteRT ratios of medians. On a
2-core machine the 2-thread medians stay sensitive to the other engines' idle thread pools:
look at the mins too, and repeat.

    python bench/compare.py [--models resnet50 ...] [--threads 1 2] [--rounds 5] [--iters 5]
                            [--gap 0.1] [--litert PYTHON] [--layers [--top 15]]

LiteRT runs in its own venv: --litert (default: $LITERT_PYTHON) names a python with
ai-edge-litert installed. That python runs this same file as a worker (--litert-worker), which
loads the model with CompiledModel.from_file(options=Options(cpu_options=CpuOptions(
num_threads=T))) and times run_by_index when told to, one JSON line per request/answer over
stdin/stdout. Without it the LiteRT columns show "-".

--layers: afterwards, a profile=1 pass of flexdelegate per model and thread count, printing the
top layers by time with GFLOP/s and % of this machine's FMA peak. The peak is the chosen GEMM
microkernel's rate through flexdelegate._native_testing.gemm (see measure_peak: L1-resident weights,
packing and call overhead differenced out), taken before and after the latency runs (the
higher wins), times the thread count. Flops are those of the direct formulation (2*M*N*K for
conv/FC), so a Winograd layer's "GFLOP/s" is an effective rate and may exceed the peak.

Models come from bench/build_models.py (run it first in a venv with tensorflow-cpu)."""
import argparse
import itertools
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve()


# ------------------------------------------------------------------------------ worker side
# Each stock engine runs in a worker process of its own (so no engine's thread pool shares a
# process with another's): LiteRT under the LiteRT python (numpy and ai_edge_litert only, no
# flexdelegate needed), XNNPack under this python with tflite-runtime.

class _LiteRTEngine:
    def __init__(self, model, threads):
        from ai_edge_litert.compiled_model import CompiledModel
        from ai_edge_litert.options import CpuOptions, Options
        self.model = CompiledModel.from_file(model, options=Options(cpu_options=CpuOptions(num_threads=threads)))
        self.sig = self.model.get_signature_by_index(0)["key"]
        self.ins, self.outs = self.model.create_input_buffers(0), self.model.create_output_buffers(0)
        self.accelerated = bool(self.model.is_fully_accelerated())

    def feed(self, feed):
        in_det = self.model.get_input_tensor_details(self.sig)
        for buf, name in zip(self.ins, self.model.get_signature_list()[self.sig]["inputs"]):
            buf.write(np.ascontiguousarray(feed[in_det[name]["name"]]))

    def run(self):
        self.model.run_by_index(0, self.ins, self.outs)

    def outputs(self):
        out_det, got = self.model.get_output_tensor_details(self.sig), {}
        for buf, name in zip(self.outs, self.model.get_signature_list()[self.sig]["outputs"]):
            d = out_det[name]
            got[d["name"]] = buf.read(int(np.prod(d["shape"])), np.dtype(d["dtype"])).reshape(d["shape"])
        return got

    def close(self):
        self.ins = self.outs = None
        self.model.close()


class _XNNPackEngine:
    """The installed runtime's Interpreter (tflite-runtime or ai-edge-litert) with its default
    XNNPack delegate."""

    def __init__(self, model, threads):
        from flexdelegate.runtime import detect
        self.it = detect(None).Interpreter(model_path=model, num_threads=threads)
        self.it.allocate_tensors()
        self.accelerated = True

    def feed(self, feed):
        for d in self.it.get_input_details():
            self.it.set_tensor(d["index"], np.ascontiguousarray(feed[d["name"]]))

    def run(self):
        self.it.invoke()

    def outputs(self):
        return {d["name"]: self.it.get_tensor(d["index"]) for d in self.it.get_output_details()}

    def close(self):
        self.it = None


def engine_worker(kind):
    """Serves {"cmd": ...} lines from stdin, answers one JSON line each on the real stdout."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything the runtime prints goes to stderr, never into the protocol
    engine = None
    for line in sys.stdin:
        req = json.loads(line)
        try:
            cmd = req["cmd"]
            if cmd == "load":
                t0 = time.perf_counter()
                engine = (_LiteRTEngine if kind == "litert" else _XNNPackEngine)(req["model"], req["threads"])
                load_ms = (time.perf_counter() - t0) * 1e3
                engine.feed(np.load(req["inputs"]))
                engine.run()
                np.savez(req["outputs"], **engine.outputs())
                answer = {"ok": True, "load_ms": load_ms, "accelerated": engine.accelerated}
            elif cmd == "round":
                for _ in range(req.get("warmup", 1)):
                    engine.run()  # warm after the other engines ran
                ms = []
                for _ in range(req["iters"]):
                    t0 = time.perf_counter()
                    engine.run()
                    ms.append((time.perf_counter() - t0) * 1e3)
                answer = {"ok": True, "ms": ms}
            elif cmd == "close":
                if engine is not None:
                    engine.close()
                engine = None
                answer = {"ok": True}
            elif cmd == "quit":
                proto.write(json.dumps({"ok": True}) + "\n")
                return
            else:
                answer = {"ok": False, "error": f"unknown command {cmd!r}"}
        except Exception as e:  # report, keep serving: the main process decides
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        proto.write(json.dumps(answer) + "\n")


class Worker:
    """The main process's handle on an engine worker (kind "litert" or "xnnpack") running under
    `python`."""

    def __init__(self, python: str, kind: str = "litert"):
        self.kind = kind
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([python, str(HERE), f"--{kind}-worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True, bufsize=1,
                                     cwd=tempfile.gettempdir())

    def ask(self, **req) -> dict:
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            self.log.seek(0)
            tail = self.log.read()[-2000:]
            raise RuntimeError(f"{self.kind} worker exited (rc {self.proc.poll()}):\n{tail}")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise RuntimeError(f"{self.kind} worker: {answer.get('error')}")
        return answer

    def close(self):
        try:
            self.ask(cmd="quit")
        except RuntimeError:
            pass
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.log.close()


# --------------------------------------------------------------------------- main side

# What one engine leaves behind slows the next: XNNPack's thread pool keeps its workers
# spinning for tens of ms after a run, and with XNNPack in this process flexdelegate at 2
# threads right after an XNNPack round had a median of 4.2-4.8 ms instead of 2.6 (the
# scheduler put our two threads on one core next to XNNPack's spinner); after a pause (--gap)
# a pool whose workers parked meets halted cores (LiteRT at 2 threads after 0.1 s: median 2x
# its min). So each stock engine runs in a process of its own, rounds go through every engine
# order (each follows each other equally often), each engine's turn starts after a pause of
# --gap s (default 0.1: spinners have parked by then) and WARMUP untimed runs.
WARMUP = 3


def sample(it, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        it.invoke()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def compare(path, threads, rounds, iters, xnnpack, litert=None, gap=0.1):
    """Latency samples (ms) per engine, alternating rounds; errors are against XNNPack. xnnpack
    and litert are Workers; flexdelegate runs in this process."""
    from flexdelegate import load_flex
    from flexdelegate.run import invoke, make_interpreter, max_error, random_inputs

    d = load_flex(num_threads=threads)
    flex = make_interpreter(path, delegate=d, num_threads=threads)
    x = random_inputs(flex)
    workers = {"xnnpack": xnnpack} | ({"litert": litert} if litert is not None else {})
    outs = {}
    with tempfile.TemporaryDirectory() as tmp:
        feed = os.path.join(tmp, "in.npz")
        np.savez(feed, **{det["name"]: v for det, v in zip(flex.get_input_details(), x)})
        for name, w in workers.items():
            got = os.path.join(tmp, f"{name}.npz")
            w.ask(cmd="load", model=str(path), threads=threads, inputs=feed, outputs=got)
            with np.load(got) as out:
                outs[name] = [out[det["name"]] for det in flex.get_output_details()]
    ref = outs["xnnpack"]
    errs = {"flex": max_error(ref, invoke(flex, x))}
    if litert is not None:
        errs["litert"] = max_error(ref, outs["litert"])
    samples = {name: [] for name in ["xnnpack", "flex"] + list(workers)}
    orders = list(itertools.permutations(["xnnpack", "flex"] + (["litert"] if litert is not None else [])))
    for r in range(rounds):
        # Every order in turn, so each engine follows each other one equally often.
        for name in orders[r % len(orders)]:
            if gap:
                time.sleep(gap)
            if name in workers:
                samples[name] += workers[name].ask(cmd="round", iters=iters, warmup=WARMUP)["ms"]
                continue
            for _ in range(WARMUP):
                flex.invoke()  # warm after the other engine ran
            samples[name] += sample(flex, iters)
    for w in workers.values():
        w.ask(cmd="close")
    s = d.stats()
    return samples, errs, f"{s['nodes_delegated']}/{s['nodes_total']}"


def measure_peak(repeats: int = 15) -> tuple[str, float]:
    """(kernel name, GFLOP/s) of the chosen GEMM microkernel on one thread. Each
    flexdelegate._native_testing.gemm call also packs W and crosses Python, so two problems that share
    W (n=32, k=256: one weight panel, L1-resident) but differ in m (64 and 960 rows of A, the
    larger L2-resident) are timed, and the peak is the extra flops over the extra time. Each
    time is the best of `repeats` timings of >= 20 ms: the one least disturbed by other load."""
    from flexdelegate import _native_testing as testing

    name = testing.chosen("gemm")
    kernel = testing.variants("gemm").index(name)
    n, k = 32, 256
    rng = np.random.default_rng(0)
    w = rng.standard_normal((n, k)).astype(np.float32)

    def best_time(m):
        a = rng.standard_normal((m, k)).astype(np.float32)
        testing.gemm(kernel, a, w)
        calls = 1
        while True:  # calls per timing so one timing lasts >= 20 ms
            t0 = time.perf_counter()
            for _ in range(calls):
                testing.gemm(kernel, a, w)
            if time.perf_counter() - t0 >= 0.02:
                break
            calls *= 2
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(calls):
                testing.gemm(kernel, a, w)
            best = min(best, (time.perf_counter() - t0) / calls)
        return best

    small, large = 64, 960
    t_small, t_large = best_time(small), best_time(large)
    if t_large <= t_small:  # disturbed beyond repair: fall back to the plain rate
        return name, 2.0 * large * n * k / t_large / 1e9
    return name, 2.0 * (large - small) * n * k / (t_large - t_small) / 1e9


def layer_profile(path, threads, rounds=3, iters=5):
    """flexdelegate's per-op times in the steady state. profile=1 keeps a per-op mean over all
    runs, so each round's mean comes from the difference of two snapshots (which also drops the
    warm-up's page faults); each op keeps its best round, the least disturbed by other load."""
    from flexdelegate import load_flex
    from flexdelegate.run import invoke, make_interpreter, random_inputs

    d = load_flex(num_threads=threads, profile=1)
    it = make_interpreter(path, delegate=d, num_threads=threads)
    invoke(it, random_inputs(it))
    it.invoke()
    snap = lambda: {(o["subgraph"], o["node"]): o for o in d.stats()["ops"]}  # noqa: E731
    before, best, wall_ms = snap(), {}, float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(iters):
            it.invoke()
        wall_ms = min(wall_ms, (time.perf_counter() - t0) * 1e3 / iters)
        after = snap()
        for key, o in after.items():
            b = before.get(key, {"runs": 0, "time_us": 0.0})
            runs = o["runs"] - b["runs"]
            if runs > 0:
                t = (o["time_us"] * o["runs"] - b["time_us"] * b["runs"]) / runs
                if key not in best or t < best[key]["time_us"]:
                    best[key] = {**o, "time_us": t}
        before = after
    return sorted(best.values(), key=lambda o: (o["subgraph"], o["node"])), wall_ms


def print_layers(name, threads, ops, wall_ms, peak, top, medians):
    peak_t = peak * threads
    total_us = sum(o["time_us"] for o in ops) or 1.0
    total_flops = sum(o["flops"] for o in ops)
    print(f"\n{name}, {threads} thread(s): {len(ops)} delegated ops, {total_us / 1e3:.2f} ms in ops "
          f"(sum of per-op best rounds; best round {wall_ms:.2f} ms per invoke with profiling), {total_flops / 1e9:.2f} GFLOP per invoke; "
          f"peak {peak_t:.0f} GFLOP/s ({threads} x {peak:.0f})")
    rates = "  ".join(f"{eng} {total_flops / (ms * 1e6):.1f}" for eng, ms in medians.items() if ms)
    print(f"  whole-model GFLOP/s at the median latencies above: {rates}")
    print(f"  {'node':>4s}  {'op':16s} {'kernel':34s} {'MFLOP':>8s} {'ms':>7s} {'share':>6s} "
          f"{'GFLOP/s':>8s} {'%peak':>6s}")
    for o in sorted(ops, key=lambda o: -o["time_us"])[:top]:
        g = o["flops"] / (o["time_us"] * 1e3) if o["time_us"] > 0 else 0.0
        print(f"  {o['node']:4d}  {o['op'][:16]:16s} {o['kernel'][:34]:34s} {o['flops'] / 1e6:8.1f} "
              f"{o['time_us'] / 1e3:7.3f} {100 * o['time_us'] / total_us:5.1f}% {g:8.1f} "
              f"{100 * g / peak_t:5.0f}%")
    by_kind = {}
    for o in ops:  # by algorithm: "gemm-im2col", "winograd-f4", "depthwise", ...
        kind = o["kernel"].split(" ")[0]
        t, f = by_kind.get(kind, (0.0, 0.0))
        by_kind[kind] = (t + o["time_us"], f + o["flops"])
    print("  by kernel: " + "; ".join(
        f"{kind} {100 * t / total_us:.0f}% of time, {f / (t * 1e3) if t else 0:.1f} GFLOP/s"
        for kind, (t, f) in sorted(by_kind.items(), key=lambda kv: -kv[1][0])[:6]))


def _f(v, width, spec):
    return f"{'-':>{width}s}" if v is None else f"{v:{width}{spec}}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="*", default=["mobilenet_v2", "resnet50", "vgg19", "efficientnet_b0"])
    ap.add_argument("--threads", nargs="*", type=int, default=[1, 2])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--gap", type=float, default=0.1, help="seconds of pause before each engine's round")
    ap.add_argument("--litert", default=os.environ.get("LITERT_PYTHON"),
                    help="python with ai-edge-litert for the CompiledModel columns (default $LITERT_PYTHON)")
    ap.add_argument("--layers", action="store_true", help="per-layer GFLOP/s of flexdelegate vs the FMA peak")
    ap.add_argument("--top", type=int, default=15, help="layers to list with --layers")
    ap.add_argument("--litert-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--xnnpack-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.litert_worker or args.xnnpack_worker:
        return engine_worker("litert" if args.litert_worker else "xnnpack")

    sys.path.insert(0, str(HERE.parent))
    from build_models import model_dir

    xnnpack, litert = Worker(sys.executable, "xnnpack"), None
    if args.litert:
        try:
            litert = Worker(args.litert, "litert")
        except OSError as e:
            print(f"LiteRT disabled: cannot run {args.litert}: {e}")
    peak = None
    if args.layers:
        kernel, peak = measure_peak()
        print(f"FMA peak (measured): {peak:.1f} GFLOP/s per thread, {kernel} on m x 32 x 256 "
              f"(for reference, XNNPack achieved ~92 GFLOP/s/core on ResNet-50)\n")

    print(f"{'model':16s} {'thr':>3s} {'xnn min':>8s} {'xnn med':>8s} {'lrt min':>8s} {'lrt med':>8s} "
          f"{'flex min':>8s} {'flex med':>8s} {'f/xnn':>6s} {'f/lrt':>6s} {'nodes':>7s} "
          f"{'flex err':>8s} {'lrt err':>8s}")
    medians, layers = {}, []
    try:
        for name in args.models:
            path = model_dir() / f"{name}.tflite"
            if not path.exists():
                print(f"{name}: missing {path}; run bench/build_models.py {name}")
                continue
            for t in args.threads:
                try:
                    s, errs, nodes = compare(path, t, args.rounds, args.iters, xnnpack, litert, args.gap)
                except RuntimeError as e:  # the LiteRT worker failed: go on without it
                    print(f"{name} t={t}: LiteRT dropped: {e}", flush=True)
                    litert.proc.kill()
                    litert = None
                    s, errs, nodes = compare(path, t, args.rounds, args.iters, xnnpack, None, args.gap)
                xm, fm = np.median(s["xnnpack"]), np.median(s["flex"])
                lm = np.median(s["litert"]) if "litert" in s else None
                lmin = min(s["litert"]) if lm else None
                print(f"{name:16s} {t:3d} {min(s['xnnpack']):8.2f} {xm:8.2f} {_f(lmin, 8, '.2f')} "
                      f"{_f(lm, 8, '.2f')} {min(s['flex']):8.2f} {fm:8.2f} {fm / xm:6.2f} "
                      f"{_f(fm / lm if lm else None, 6, '.2f')} {nodes:>7s} {errs['flex']:8.1e} "
                      f"{_f(errs.get('litert'), 8, '.1e')}", flush=True)
                medians[(name, t)] = {"flex": fm, "xnnpack": xm, "litert": lm}
                if args.layers:
                    layers.append((name, t, path))
    finally:
        xnnpack.close()
        if litert is not None:
            litert.close()
    if layers:  # measured again: on a shared machine the first figure may be a disturbed one
        kernel, again = measure_peak()
        print(f"\nFMA peak measured again: {again:.1f} GFLOP/s per thread; using the higher, "
              f"{max(peak, again):.1f}")
        peak = max(peak, again)
    for name, t, path in layers:
        ops, wall_ms = layer_profile(path, t)
        print_layers(name, t, ops, wall_ms, peak, args.top, medians[(name, t)])


if __name__ == "__main__":
    main()
