"""Running under a memory budget that follows the memory the device has free.

    python examples/budget.py [MODEL.tflite] [--steps N]

A budget (MB) bounds everything flexdelegate adds to the process: arena, resident and streamed
weights, loader buffers. Here an app polls MemAvailable and, as memory gets tight, calls
set_budget() between invokes; the delegate re-plans (slicing and streaming weights from its
cache file) without reloading the model. A budget below the model's minimum is refused with
the minimum named, and the previous budget stays in force."""
import argparse
import os
import tempfile
import time

import numpy as np

from flexdelegate import load_flex
from flexdelegate.runtime import detect


def mem_available_mb() -> float:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    return float("inf")


def latency_ms(it, runs=5):
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        it.invoke()
        best = min(best, (time.perf_counter() - t0) * 1e3)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", nargs="?", help=".tflite model (default: the embedded demo CNN)")
    ap.add_argument("--steps", type=int, default=4, help="how many times memory 'gets tighter'")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp()
    path = args.model
    if path is None:
        from flexdelegate.tflite.demo_model import build_demo_model
        path = os.path.join(tmp, "demo.tflite")
        with open(path, "wb") as f:
            f.write(build_demo_model())

    # Start with a fraction of what the machine has free; the cache file is what budgeted
    # runs stream weights from.
    budget = min(100.0, mem_available_mb() / 4)
    delegate = load_flex(budget=budget, cache_path=os.path.join(tmp, "model.fxc"))
    it = detect().Interpreter(model_path=path, experimental_delegates=[delegate])
    it.allocate_tensors()
    inp = it.get_input_details()[0]
    it.set_tensor(inp["index"], np.zeros(inp["shape"], np.float32))
    print(f"budget {budget:8.2f} MB: {latency_ms(it):7.3f} ms")

    for _ in range(args.steps):
        budget /= 3  # memory got tighter (a real app would re-read mem_available_mb())
        try:
            delegate.set_budget(budget)
        except ValueError as e:  # below the minimum: the old budget stays
            print(f"budget {budget:8.2f} MB: refused ({e})")
            break
        mem = delegate.stats()["partitions_memory"]
        steps = sum(p["steps"] for p in mem)
        print(f"budget {budget:8.2f} MB: {latency_ms(it):7.3f} ms, arena {sum(p['arena_bytes'] for p in mem) / 2**20:.2f} MB,"
              f" {steps} steps")


if __name__ == "__main__":
    main()
