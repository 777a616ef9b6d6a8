"""flexdelegate side by side with the stock engines, in one run:

    xnn     tflite-runtime's Interpreter with its default XNNPack delegate
    lrt-i   ai-edge-litert's Interpreter with its default XNNPack delegate
    lrt-cm  ai-edge-litert's CompiledModel (XNNPack inside), with an XNNPack weight cache file
    lrt-i+flex (only when named in --engines) lrt-i plus flexdelegate, LiteRT's XNNPack taking
            what flexdelegate leaves; column +f/lrt-i is the "never slower to turn on" ratio
    flex    flexdelegate on tflite-runtime (its fallback nodes on the stock kernels); on
            ai-edge-litert for models tflite-runtime cannot load

Every engine runs in a worker process of its own (no engine's thread pool shares a process with
another's) and rounds go through a balanced set of engine orders (see WARMUP and orders()), so
machine noise and what one engine leaves behind hit all alike. Per model and thread count it
prints the median latency per engine, flex / the best peer and flex / each peer, the max abs
and relative (max |err| / max |ref|) error of flex and of XNNPack against the stock reference
(the same runtime's Interpreter with BUILTIN_WITHOUT_DEFAULT_DELEGATES: the stock kernels; for a
model tflite-runtime cannot load, LiteRT's, and "xnn err" is then lrt-i's), and flexdelegate's
coverage from delegate.stats() (nodes delegated / total, partitions); then the min latencies.
Errors are in output units: for an INT8 model that is the DEQUANTIZE'd value, whose step is
the output scale (1/256 for a softmax, where a 1-step difference is a relative error of 1).
On a 2-core machine the 2-thread medians stay sensitive to the other engines' idle thread
pools: look at the mins too, and repeat.

    python bench/compare.py [--models NAME|GROUP ...] [--threads 1 2] [--rounds 4] [--iters 5]
                            [--gap 0.1] [--litert PYTHON] [--engines xnn lrt-i lrt-cm flex]
                            [--coverage] [--json OUT] [--layers [--top 15]]

Groups (build_models.py --list): base, int8, dynamic, transformers, cnn, new. Inputs, the same
for every engine: float ones standard normal, int8/uint8 ones uniform over their type, int32/64
ones (token ids) uniform below the smallest embedding table (2-D float GATHER input) the model
holds, or in [0, 4) without one.

LiteRT runs in its own venv: --litert (default: $LITERT_PYTHON) names a python with
ai-edge-litert installed; without it the lrt columns show "-" and models tflite-runtime cannot
load are skipped. Workers run this same file (--worker) under their python and serve one JSON
line per request over stdin/stdout. When this checkout has its native module built in place
(setup.py build_ext --inplace), every process imports flexdelegate from here, not from an
installed copy; the LiteRT python needs flexdelegate importable for the flex fallback.

--coverage: afterwards, per model, the op histogram and flexdelegate's fallback (op: reason).
--json OUT: every sample, error, coverage and note, for later comparison.
--layers: afterwards, a profile=1 pass of flexdelegate (in this process, tflite-runtime models
only) per model and thread count, printing the top layers by time with GFLOP/s and % of this
machine's FMA peak. The peak is the chosen GEMM microkernel's rate through
flexdelegate._native_testing.gemm (see measure_peak: L1-resident weights, packing and call overhead
differenced out), taken before and after the latency runs (the higher wins), times the thread
count. Flops are those of the direct formulation (2*M*N*K for conv/FC), so a Winograd layer's
"GFLOP/s" is an effective rate and may exceed the peak.

Models come from bench/build_models.py (run it first in a venv with tensorflow-cpu)."""
import argparse
import collections
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve()
ROOT = HERE.parent.parent


def _use_checkout():
    """Puts this checkout first on the path when its native module is built in place, so the
    benchmark measures this tree's flexdelegate (an editable install elsewhere would win)."""
    if any((ROOT / "flexdelegate").glob("_native_ext*.so")) and str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


# ------------------------------------------------------------------------------ worker side
# A worker serves one engine at a time under its own python: the Interpreter kinds need only
# that python's TFLite runtime (flexdelegate for kind "flex" alone), "compiled" ai_edge_litert.

def _runtime():
    """This python's TFLite runtime module: tflite_runtime, else ai_edge_litert."""
    try:
        import tflite_runtime.interpreter as rt
    except ImportError:
        import ai_edge_litert.interpreter as rt
    return rt


class _CompiledEngine:
    """LiteRT's CompiledModel on the CPU; cache: its XNNPack weight cache file."""

    def __init__(self, model, threads, cache=""):
        from ai_edge_litert.compiled_model import CompiledModel
        from ai_edge_litert.options import CpuOptions, Options
        cpu = CpuOptions(num_threads=threads, xnnpack_weight_cache_path=cache or "")
        self.model = CompiledModel.from_file(model, options=Options(cpu_options=cpu))
        self.sig = self.model.get_signature_by_index(0)["key"]
        self.ins, self.outs = self.model.create_input_buffers(0), self.model.create_output_buffers(0)
        self.info = {"fully_accelerated": bool(self.model.is_fully_accelerated())}

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


class _InterpreterEngine:
    """This python's Interpreter: kind "xnnpack" keeps its default XNNPack delegate,
    "reference" runs the stock kernels only (BUILTIN_WITHOUT_DEFAULT_DELEGATES), "flex" adds
    flexdelegate and leaves what it does not take to the stock kernels, as
    flexdelegate.run.make_interpreter does."""

    def __init__(self, model, threads, kind):
        rt = _runtime()
        kwargs, self.delegate, self.kind = {}, None, kind
        if kind not in ("xnnpack", "xnnpack+flex"):
            kwargs["experimental_op_resolver_type"] = rt.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
        if kind in ("flex", "xnnpack+flex"):
            from flexdelegate import load_flex
            self.delegate = load_flex(runtime=rt.__name__.split(".")[0], num_threads=threads)
            kwargs["experimental_delegates"] = [self.delegate]
        self.it = rt.Interpreter(model_path=model, num_threads=threads, **kwargs)
        self.it.allocate_tensors()
        self.info = {"runtime": rt.__name__.split(".")[0]}
        if kind == "reference":
            self.info |= describe(self.it)

    def feed(self, feed):
        for d in self.it.get_input_details():
            self.it.set_tensor(d["index"], np.ascontiguousarray(feed[d["name"]]))

    def run(self):
        self.it.invoke()

    def outputs(self):
        got = {d["name"]: self.it.get_tensor(d["index"]) for d in self.it.get_output_details()}
        if self.kind == "xnnpack":  # each partition a delegate took is one DELEGATE node
            self.info["delegate_partitions"] = sum(o["op_name"] == "DELEGATE" for o in self.it._get_ops_details())
        if self.delegate is not None:  # after the first invoke: stats() waits for the cache write
            s = self.delegate.stats()
            self.info |= {k: s.get(k) for k in ("nodes_total", "nodes_delegated", "partitions", "nodes_folded")}
            self.info["fallback"] = collections.Counter(f"{f['op']}: {f['reason']}" for f in s["fallback"])
            self.info["flexdelegate"] = sys.modules["flexdelegate"].__file__
        return got

    def close(self):
        self.it = self.delegate = None


def describe(it) -> dict:
    """The op histogram and how to make each input: float ones standard normal, int8/uint8 over
    their range, other ints (token ids) below the smallest embedding table."""
    tensors = {t["index"]: t for t in it.get_tensor_details()}
    ops = it._get_ops_details()
    tables = [int(tensors[o["inputs"][0]]["shape"][0]) for o in ops if o["op_name"] == "GATHER"
              and len(tensors[o["inputs"][0]]["shape"]) == 2
              and np.issubdtype(tensors[o["inputs"][0]]["dtype"], np.floating)]
    inputs = []
    for d in it.get_input_details():
        dt = np.dtype(d["dtype"])
        if np.issubdtype(dt, np.floating):
            lo = hi = None
        elif dt.itemsize == 1:
            lo, hi = int(np.iinfo(dt).min), int(np.iinfo(dt).max) + 1
        else:
            lo, hi = 0, min(tables, default=4)
        inputs.append({"name": d["name"], "shape": [int(s) for s in d["shape"]], "dtype": dt.name,
                       "low": lo, "high": hi})
    return {"inputs": inputs, "ops": collections.Counter(o["op_name"] for o in ops)}


def engine_worker():
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
                if req["kind"] == "compiled":
                    engine = _CompiledEngine(req["model"], req["threads"], req.get("cache"))
                else:
                    engine = _InterpreterEngine(req["model"], req["threads"], req["kind"])
                answer = {"ok": True, "load_ms": (time.perf_counter() - t0) * 1e3, "info": engine.info}
            elif cmd == "run":  # feed the inputs, run once, save the outputs
                engine.feed(np.load(req["inputs"]))
                engine.run()
                np.savez(req["outputs"], **engine.outputs())
                answer = {"ok": True, "info": engine.info}
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
            engine = None
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        proto.write(json.dumps(answer) + "\n")


class Worker:
    """The main process's handle on a worker process running under `python`."""

    def __init__(self, python: str, label: str):
        self.label = label
        self.log = tempfile.TemporaryFile(mode="w+")
        env = dict(os.environ)
        if str(ROOT) in sys.path:  # this checkout's flexdelegate, as in the main process
            env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
        self.proc = subprocess.Popen([python, str(HERE), "--worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True, bufsize=1,
                                     cwd=tempfile.gettempdir(), env=env)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def ask(self, **req) -> dict:
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            self.log.seek(0)
            tail = self.log.read()[-1500:]
            raise RuntimeError(f"{self.label} worker exited (rc {self.proc.wait()}):\n{tail}")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise RuntimeError(f"{self.label}: {answer.get('error')}")
        return answer

    def close(self):
        if self.alive():
            try:
                self.ask(cmd="quit")
            except RuntimeError:
                pass
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        self.log.close()


# --------------------------------------------------------------------------- main side

# What one engine leaves behind slows the next: XNNPack's thread pool keeps its workers
# spinning for tens of ms after a run, and with XNNPack in the same process flexdelegate at 2
# threads right after an XNNPack round had a median of 4.2-4.8 ms instead of 2.6 (the
# scheduler put our two threads on one core next to XNNPack's spinner); after a pause (--gap)
# a pool whose workers parked meets halted cores (LiteRT at 2 threads after 0.1 s: median 2x
# its min). So each engine runs in a process of its own, rounds go through orders in which
# each engine follows each other equally often, each engine's turn starts after a pause of
# --gap s (default 0.1: spinners have parked by then) and WARMUP untimed runs.
WARMUP = 3

ENGINES = ["xnn", "lrt-i", "lrt-cm", "flex"]
# "lrt-i+flex": LiteRT's Interpreter with its default resolver (its XNNPack takes what we leave)
# plus flexdelegate: the "never slower to turn on" check against lrt-i (column +f/lrt-i).
EXTRA_ENGINES = ["lrt-i+flex"]
KINDS = {"xnn": "xnnpack", "lrt-i": "xnnpack", "lrt-cm": "compiled", "flex": "flex", "lrt-i+flex": "xnnpack+flex"}


def orders(names):
    """A balanced Latin square (Williams design): len(names) orders (2x that for an odd count)
    in which every engine follows every other one equally often, and leads equally often. All
    permutations would need 24 rounds for 4 engines to balance."""
    n = len(names)
    first = [0] + [(k + 1) // 2 if k % 2 else n - k // 2 for k in range(1, n)]
    rows = [[names[(f + r) % n] for f in first] for r in range(n)]
    return rows + ([row[::-1] for row in rows] if n % 2 else [])


def make_feed(inputs, seed=0) -> dict:
    rng = np.random.default_rng(seed)
    feed = {}
    for d in inputs:
        if d["low"] is None:
            feed[d["name"]] = rng.standard_normal(d["shape"]).astype(d["dtype"])
        else:
            feed[d["name"]] = rng.integers(d["low"], d["high"], size=d["shape"]).astype(d["dtype"])
    return feed


def errors(ref: dict, got: dict) -> tuple[float, float]:
    """(max |err|, worst per-output max |err| / max |ref|) over all outputs, by name; inf for
    a missing output, another shape, or NaN where the reference has a number (or the reverse)."""
    worst_abs = worst_rel = 0.0
    for name, r in ref.items():
        g = got.get(name)
        if g is None or g.shape != r.shape:
            return float("inf"), float("inf")
        r64, g64 = r.astype(np.float64), g.astype(np.float64)
        if (np.isnan(r64) != np.isnan(g64)).any():
            return float("inf"), float("inf")
        ok = ~np.isnan(r64)
        if not ok.any():
            continue
        err, scale = float(np.max(np.abs(r64[ok] - g64[ok]))), float(np.max(np.abs(r64[ok])))
        worst_abs = max(worst_abs, err)
        worst_rel = max(worst_rel, err / scale if scale else (0.0 if err == 0 else float("inf")))
    return worst_abs, worst_rel


class Workers:
    """One worker per engine and python side ("tflite" = this python, "litert"), started on
    first use and again after a crash."""

    def __init__(self, pythons):
        self.pythons, self.live = pythons, {}

    def get(self, engine, side) -> Worker:
        w = self.live.get((engine, side))
        if w is None or not w.alive():
            w = self.live[(engine, side)] = Worker(self.pythons[side], f"{engine}@{side}")
        return w

    def close(self):
        for w in self.live.values():
            w.close()


def _why(err) -> str:
    """The first sentence of a worker's error (the runtime's reason, or how the worker exited),
    without the worker's label."""
    line = str(err).strip().splitlines()[0].split(": ", 1)[-1]
    return line.split(". ")[0][:120]


def run_model(name, path, threads, args, workers, cache_dir):
    """Everything measured for one model: a dict per thread count (see main's table)."""
    with tempfile.TemporaryDirectory() as tmp:  # inputs and outputs pass through files
        return _run_model(name, path, threads, args, workers, cache_dir, tmp)


def _run_model(name, path, threads, args, workers, cache_dir, tmp):
    notes, side, desc = [], None, None
    for s in [x for x in ("tflite", "litert") if x in workers.pythons]:
        try:  # the stock reference: its input description and outputs
            desc = workers.get("flex", s).ask(cmd="load", kind="reference", model=str(path), threads=1)["info"]
            side = s
            break
        except RuntimeError as e:
            notes.append(f"{s} cannot load: {_why(e)}")
    if side is None:
        return [{"model": name, "threads": t, "notes": notes} for t in threads]
    feed_path, ref_path = os.path.join(tmp, "in.npz"), os.path.join(tmp, "ref.npz")
    np.savez(feed_path, **make_feed(desc["inputs"]))
    w = workers.get("flex", side)
    w.ask(cmd="run", inputs=feed_path, outputs=ref_path)
    w.ask(cmd="close")
    with np.load(ref_path) as f:
        ref = {k: f[k] for k in f.files}
    if side == "litert":
        notes.append("flex and reference on ai-edge-litert")
    engines = [e for e in args.engines if e != "xnn" or side == "tflite"]
    engines = [e for e in engines if e in ("xnn", "flex") or "litert" in workers.pythons]
    results = []
    for t in threads:
        rec = {"model": name, "threads": t, "side": side, "ops": desc["ops"], "notes": list(notes),
               "errors": {}, "samples": {}, "load_ms": {}, "info": {}}
        live = []
        for e in engines:
            w = workers.get(e, "tflite" if e == "xnn" or (e == "flex" and side == "tflite") else "litert")
            out = os.path.join(tmp, f"{e}.npz")
            cache = str(cache_dir / f"{name}-{path.stat().st_size}.xnnpack") if e == "lrt-cm" else None
            try:
                rec["load_ms"][e] = w.ask(cmd="load", kind=KINDS[e], model=str(path), threads=t,
                                          cache=cache)["load_ms"]
                info = w.ask(cmd="run", inputs=feed_path, outputs=out)["info"]
            except RuntimeError as err:
                rec["notes"].append(f"{e} failed: {_why(err)}")
                continue
            rec["info"][e] = info
            if e == "flex":
                rec["flex"] = info
            with np.load(out) as f:
                rec["errors"][e] = errors(ref, {k: f[k] for k in f.files})
            live.append((e, w))
            rec["samples"][e] = []
        sched = orders([e for e, _ in live]) if live else []
        for r in range(args.rounds):
            for e in sched[r % len(sched)]:
                if e not in rec["samples"]:
                    continue
                if args.gap:
                    time.sleep(args.gap)
                w = dict(live)[e]
                try:
                    rec["samples"][e] += w.ask(cmd="round", iters=args.iters, warmup=WARMUP)["ms"]
                except RuntimeError as err:  # a crash mid-run: keep the others going
                    rec["notes"].append(f"{e} failed: {_why(err)}")
                    del rec["samples"][e]
        for e, w in live:
            if w.alive():
                w.ask(cmd="close")
        results.append(rec)
    return results


def _f(v, width, spec):
    return f"{'-':>{width}s}" if v is None else f"{v:{width}{spec}}"


def print_row(rec, header=False):
    cols = [("model", 18), ("thr", 3)] + [(e, 7) for e in ENGINES] + [(e, 10) for e in EXTRA_ENGINES] + \
           [("f/best", 6)] + [(f"f/{e}", 8) for e in ENGINES[:3]] + [("+f/lrt-i", 8)] + \
           [("flex abs", 8), ("flex rel", 8), ("xnn abs", 8), ("xnn rel", 8), ("nodes", 9), ("parts", 5)]
    if header:
        print(" ".join(f"{c:>{w}s}" if i else f"{c:{w}s}" for i, (c, w) in enumerate(cols)), flush=True)
        return
    med = {e: float(np.median(s)) for e, s in rec.get("samples", {}).items() if s}
    fm = med.get("flex")
    peers = [m for e, m in med.items() if e not in ("flex", "lrt-i+flex")]
    ratio = lambda m: fm / m if fm and m else None  # noqa: E731
    errs = rec.get("errors", {})
    fa, fr = errs.get("flex", (None, None))
    xa, xr = errs.get("xnn" if rec.get("side") == "tflite" else "lrt-i", (None, None))
    fl = rec.get("flex") or {}
    nodes = f"{fl['nodes_delegated']}/{fl['nodes_total']}" if fl else "-"
    line = [f"{rec['model']:18s}", f"{rec['threads']:3d}"] + [_f(med.get(e), 7, ".2f") for e in ENGINES]
    line += [_f(med.get(e), 10, ".2f") for e in EXTRA_ENGINES]
    line += [_f(ratio(min(peers)) if peers else None, 6, ".2f")]
    line += [_f(ratio(med.get(e)), 8, ".2f") for e in ENGINES[:3]]
    on, off = med.get("lrt-i+flex"), med.get("lrt-i")
    line += [_f(on / off if on and off else None, 8, ".2f")]
    line += [_f(v, 8, ".1e") for v in (fa, fr, xa, xr)] + [f"{nodes:>9s}", _f(fl.get("partitions"), 5, "d")]
    print(" ".join(line) + ("  " + "; ".join(rec["notes"]) if rec.get("notes") else ""), flush=True)


def print_coverage(rec):
    if not rec.get("ops"):
        print(f"\n{rec['model']}: not run: {'; '.join(rec.get('notes', []))}")
        return
    fl = rec.get("flex") or {}
    print(f"\n{rec['model']}: {sum(rec.get('ops', {}).values())} ops: "
          + ", ".join(f"{op} {n}" for op, n in sorted(rec.get("ops", {}).items(), key=lambda kv: -kv[1])))
    if fl:
        print(f"  flex: {fl['nodes_delegated']}/{fl['nodes_total']} nodes delegated, {fl['partitions']} "
              f"partitions, {fl.get('nodes_folded')} folded")
        for what, n in sorted(fl["fallback"].items(), key=lambda kv: -kv[1]):
            print(f"    fallback {n:3d} x {what}")
    errs = rec.get("errors", {})
    print("  error vs reference (abs, rel): " + ", ".join(f"{e} {a:.1e} {r:.1e}" for e, (a, r) in errs.items()))
    stock = {e: i["delegate_partitions"] for e, i in rec.get("info", {}).items() if "delegate_partitions" in i}
    lrt = rec.get("info", {}).get("lrt-cm", {}).get("fully_accelerated")
    print("  XNNPack partitions: " + ", ".join(f"{e} {n}" for e, n in stock.items())
          + (f"; lrt-cm fully accelerated: {lrt}" if lrt is not None else ""))
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="*", default=["base"], help="model or group names (default: base)")
    ap.add_argument("--threads", nargs="*", type=int, default=[1, 2])
    ap.add_argument("--rounds", type=int, default=4, help="a multiple of the engine count balances the orders")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--gap", type=float, default=0.1, help="seconds of pause before each engine's round")
    ap.add_argument("--litert", default=os.environ.get("LITERT_PYTHON"),
                    help="python with ai-edge-litert for the lrt columns (default $LITERT_PYTHON)")
    ap.add_argument("--engines", nargs="*", default=ENGINES, choices=ENGINES + EXTRA_ENGINES)
    ap.add_argument("--coverage", action="store_true", help="op histograms and flexdelegate fallbacks")
    ap.add_argument("--json", help="write every measurement to this file")
    ap.add_argument("--layers", action="store_true", help="per-layer GFLOP/s of flexdelegate vs the FMA peak")
    ap.add_argument("--top", type=int, default=15, help="layers to list with --layers")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    _use_checkout()
    if args.worker:
        return engine_worker()
    if "flex" not in args.engines:
        args.engines.append("flex")  # the reference and every ratio go through it

    sys.path.insert(0, str(HERE.parent))
    from build_models import expand, model_dir

    import flexdelegate
    print(f"flexdelegate from {pathlib.Path(flexdelegate.__file__).parent}")
    pythons = {"tflite": sys.executable} | ({"litert": args.litert} if args.litert else {})
    workers = Workers(pythons)
    cache_dir = model_dir() / "litert-weight-cache"
    cache_dir.mkdir(parents=True, exist_ok=True)
    peak = None
    if args.layers:
        kernel, peak = measure_peak()
        print(f"FMA peak (measured): {peak:.1f} GFLOP/s per thread, {kernel} on m x 32 x 256 "
              f"(for reference, XNNPack achieved ~92 GFLOP/s/core on ResNet-50)\n")

    print_row(None, header=True)
    records, layers = [], []
    try:
        for name in expand(args.models):
            path = model_dir() / f"{name}.tflite"
            if not path.exists():
                print(f"{name}: missing {path}; run bench/build_models.py {name}", flush=True)
                continue
            for rec in run_model(name, path, args.threads, args, workers, cache_dir):
                print_row(rec)
                records.append(rec)
                if args.layers and rec.get("side") == "tflite":
                    layers.append((name, rec["threads"], path))
    finally:
        workers.close()
    print("\nmin ms")
    for rec in records:
        mins = {e: min(s) for e, s in rec.get("samples", {}).items() if s}
        print(f"{rec['model']:18s} {rec['threads']:3d} " + " ".join(f"{e} {_f(mins.get(e), 7, '.2f')}" for e in ENGINES + EXTRA_ENGINES))
    if args.coverage:
        for rec in records:
            if rec["threads"] == records[0]["threads"]:
                print_coverage(rec)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"argv": sys.argv, "records": records}, f, indent=1)
    if layers:  # measured again: on a shared machine the first figure may be a disturbed one
        kernel, again = measure_peak()
        print(f"\nFMA peak measured again: {again:.1f} GFLOP/s per thread; using the higher, "
              f"{max(peak, again):.1f}")
        peak = max(peak, again)
    for name, t, path in layers:
        med = {e: float(np.median(s)) for rec in records if (rec["model"], rec["threads"]) == (name, t)
               for e, s in rec["samples"].items() if s}
        ops, wall_ms = layer_profile(path, t)
        print_layers(name, t, ops, wall_ms, peak, args.top, med)


if __name__ == "__main__":
    main()
