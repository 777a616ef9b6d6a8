"""Two builds of flexdelegate on one model in one process, invokes alternating: the A/B for a
change on this noisy 2-vCPU host, where the same build swings 2-3x for tens of seconds (separate
processes, even interleaved, then disagree by more than most changes gain). Each build's plain
core (libflexdelegate.so, no Python in it) loads as a TFLite external delegate into its own
interpreter; the int8 rounding option is this runtime's, detected by the flexdelegate importable
here. Prints each build's min and median ms and new / old: of the medians, of the mins, and the
median of the per-round ratios (rounds pair invokes that ran back to back, so a slow phase
scales both).

    python bench/ab.py MODEL OLD_LIB NEW_LIB [--threads 1] [--rounds 200]

OLD_LIB / NEW_LIB: a checkout's flexdelegate/libflexdelegate.so after `setup.py build_ext
--inplace`, e.g. of a `git worktree add /tmp/old HEAD~1`. Run it under the runtime the model
needs (tflite-runtime, or ai-edge-litert for models tflite-runtime cannot load)."""
import argparse
import time

import numpy as np

try:
    from tflite_runtime.interpreter import Interpreter, load_delegate
except ImportError:
    from ai_edge_litert.interpreter import Interpreter, load_delegate

import flexdelegate
from flexdelegate.runtime import detect


def interpreter(model, lib, threads, rounding):
    d = load_delegate(lib, {"num_threads": str(threads), "cache_path": "", "log": "none", "_rounding": rounding})
    it = Interpreter(model_path=model, experimental_delegates=[d], num_threads=threads)
    it.allocate_tensors()
    rng = np.random.default_rng(0)
    for inp in it.get_input_details():
        dt = np.dtype(inp["dtype"])
        x = (rng.standard_normal(inp["shape"]) if dt.kind == "f"
             else rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, inp["shape"], endpoint=True))
        it.set_tensor(inp["index"], x.astype(dt))
    for _ in range(5):
        it.invoke()
    return it


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=200)
    a = ap.parse_args()
    rounding = flexdelegate._rounding_option(detect())
    its = [interpreter(a.model, lib, a.threads, rounding) for lib in (a.old, a.new)]
    ms = np.zeros((a.rounds, 2))
    for r in range(a.rounds):
        for i, it in enumerate(its):
            t = time.perf_counter()
            it.invoke()
            ms[r, i] = (time.perf_counter() - t) * 1e3
    old, new = ms[:, 0], ms[:, 1]
    print(f"old min {old.min():.3f} med {np.median(old):.3f} ms | new min {new.min():.3f} med {np.median(new):.3f} ms"
          f" | new/old medians {np.median(new) / np.median(old):.3f} mins {new.min() / old.min():.3f}"
          f" per-round {np.median(new / old):.3f}")


if __name__ == "__main__":
    main()
