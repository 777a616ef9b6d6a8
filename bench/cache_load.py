"""Issue 3's figures, side by side in one run, each sample in a fresh process:
load time (Interpreter construction + allocate_tensors; CompiledModel creation + buffers) and
peak RSS increase (VmHWM reset before loading, read after load + 3 invokes), for
  xnnpack      stock tflite-runtime XNNPack (repacks every load, no cache)
  litert_warm  LiteRT CompiledModel with its XNNPack weight cache, warm (LITERT_PYTHON venv)
  flex_cold    flexdelegate building its cache file from nothing
  flex_warm    flexdelegate with the cache file present
and the summed PSS increase (load + 3 invokes, over each process's PSS just before) of 4
processes running the model on one flexdelegate cache vs one process alone.

    python bench/cache_load.py [--models resnet50 mobilenet_v2] [--rounds 5]
    LITERT_PYTHON=/path/to/venv-with-ai-edge-litert/bin/python (optional)"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from build_models import model_dir  # noqa: E402

WORKER = r'''
import json, os, sys, time
def rss():
    for l in open("/proc/self/status"):
        if l.startswith("VmRSS"): return int(l.split()[1]) * 1024
def hwm():
    for l in open("/proc/self/status"):
        if l.startswith("VmHWM"): return int(l.split()[1]) * 1024
def pss():
    for l in open("/proc/self/smaps_rollup"):
        if l.startswith("Pss:"): return int(l.split()[1]) * 1024
engine, model, cache = sys.argv[1], sys.argv[2], sys.argv[3]
import numpy as np
if engine == "litert_warm":
    from ai_edge_litert.compiled_model import CompiledModel
    from ai_edge_litert.cpu_options import CpuOptions
    from ai_edge_litert.options import Options
else:
    from flexdelegate import load_flex
    from flexdelegate.run import make_interpreter, random_inputs
    from flexdelegate.runtime import detect
    import flexdelegate._native  # the native module loads before timing, as LiteRT's does
    detect()  # and the runtime's Interpreter module, as an app imports it before loading a model
if len(sys.argv) > 5:  # PSS sharing test: report ready, wait for the go signal
    print(json.dumps({"pid": os.getpid()}), flush=True)
    while not os.path.exists(sys.argv[5]): time.sleep(0.005)
open("/proc/self/clear_refs", "w").write("5")
base = rss()
t0 = time.perf_counter()
if engine == "litert_warm":
    m = CompiledModel.from_file(model, options=Options(cpu_options=CpuOptions(num_threads=1, xnnpack_weight_cache_path=cache)))
    ins, outs = m.create_input_buffers(0), m.create_output_buffers(0)
    load = time.perf_counter() - t0
    run = lambda: m.run_by_index(0, ins, outs)
else:
    d = None if engine == "xnnpack" else load_flex(cache_path=cache, num_threads=1)
    it = make_interpreter(model, delegate=d, stock="xnnpack", num_threads=1)
    load = time.perf_counter() - t0
    x = random_inputs(it)
    for dd, v in zip(it.get_input_details(), x): it.set_tensor(dd["index"], v)
    run = it.invoke
for _ in range(3): run()
out = {"load_ms": load * 1e3, "peak_inc": hwm() - base, "pss": pss(), "pid": os.getpid()}
print(json.dumps(out), flush=True)
if len(sys.argv) > 4:  # hold: keep running until told to stop (PSS sharing test)
    while not os.path.exists(sys.argv[4]):
        run(); time.sleep(0.01)
'''


def run(python, engine, model, cache):
    r = subprocess.run([python, "-c", WORKER, engine, str(model), cache], capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise RuntimeError(f"{engine}: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _pss(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        return sum(int(l.split()[1]) * 1024 for l in f if l.startswith("Pss:"))


def pss_increase(model, cache, n):
    """Summed PSS increase of n processes (all alive, imports done, before vs after loading and
    running the model), so the interpreter's own baseline is not counted."""
    with tempfile.TemporaryDirectory() as tmp:
        go, stop = os.path.join(tmp, "go"), os.path.join(tmp, "stop")
        procs = [subprocess.Popen([sys.executable, "-c", WORKER, "flex_warm", str(model), cache, stop, go],
                                  stdout=subprocess.PIPE, text=True) for _ in range(n)]
        pids = [json.loads(p.stdout.readline())["pid"] for p in procs]
        before = sum(_pss(pid) for pid in pids)
        open(go, "w").close()
        for p in procs:
            p.stdout.readline()  # loaded and ran 3 invokes
        time.sleep(0.3)
        after = sum(_pss(pid) for pid in pids)
        open(stop, "w").close()
        for p in procs:
            p.wait()
    return after - before


def pss_sharing(model, cache, n=4):
    return pss_increase(model, cache, n), pss_increase(model, cache, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="*", default=["resnet50", "mobilenet_v2"])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    litert = os.environ.get("LITERT_PYTHON")
    for name in args.models:
        model = model_dir() / f"{name}.tflite"
        with tempfile.TemporaryDirectory() as tmp:
            flex_cache, xnn_cache = os.path.join(tmp, "m.fxc"), os.path.join(tmp, "xnn.cache")
            samples = {k: [] for k in ("xnnpack", "litert_warm", "flex_cold", "flex_warm")}
            if litert:
                run(litert, "litert_warm", model, xnn_cache)  # build LiteRT's cache once
            for _ in range(args.rounds):
                for f in (flex_cache, flex_cache + ".lock"):
                    if os.path.exists(f):
                        os.unlink(f)
                samples["xnnpack"].append(run(sys.executable, "xnnpack", model, ""))
                samples["flex_cold"].append(run(sys.executable, "flex_cold", model, flex_cache))
                samples["flex_warm"].append(run(sys.executable, "flex_warm", model, flex_cache))
                if litert:
                    samples["litert_warm"].append(run(litert, "litert_warm", model, xnn_cache))
            print(f"== {name} (median of {args.rounds}, 1 thread)")
            med = {}
            for k, v in samples.items():
                if not v:
                    continue
                med[k] = (statistics.median(s["load_ms"] for s in v), statistics.median(s["peak_inc"] for s in v))
                print(f"  {k:12s} load {med[k][0]:8.1f} ms   peak RSS increase {med[k][1] / 2**20:7.1f} MB")
            if "litert_warm" in med:
                print(f"  warm load flex/litert = {med['flex_warm'][0] / med['litert_warm'][0]:.2f} (target <= 1)")
                print(f"  peak flex_warm/litert = {med['flex_warm'][1] / med['litert_warm'][1]:.2f} (target <= 1)")
            print(f"  cold load flex/xnnpack = {med['flex_cold'][0] / med['xnnpack'][0]:.2f} (target <= 1.5)")
            total, alone = pss_sharing(model, flex_cache)
            print(f"  4 processes: summed PSS increase {total / 2**20:.1f} MB vs one alone {alone / 2**20:.1f} MB: "
                  f"{total / alone:.2f}x (target <= 1.25)")


if __name__ == "__main__":
    main()
