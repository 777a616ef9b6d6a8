"""flexdelegate vs stock XNNPack, side by side in one run (alternating rounds, so machine noise
hits both alike). Prints min/median latency and the flex/XNNPack ratio of medians.

    python bench/compare.py [--models resnet50 ...] [--threads 1 2] [--rounds 5] [--iters 5]
Models come from bench/build_models.py (run it first in a venv with tensorflow-cpu)."""
import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from build_models import model_dir  # noqa: E402

from flexdelegate import load_flex  # noqa: E402
from flexdelegate.run import invoke, make_interpreter, max_error, random_inputs  # noqa: E402
import time  # noqa: E402


def sample(it, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        it.invoke()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def compare(path, threads, rounds, iters):
    xnn = make_interpreter(path, stock="xnnpack", num_threads=threads)
    d = load_flex(num_threads=threads)
    flex = make_interpreter(path, delegate=d, num_threads=threads)
    x = random_inputs(xnn)
    err = max_error(invoke(xnn, x), invoke(flex, x))
    samples = {"xnnpack": [], "flex": []}
    for _ in range(rounds):
        for name, it in (("xnnpack", xnn), ("flex", flex)):
            it.invoke()  # warm after the other engine ran
            samples[name] += sample(it, iters)
    s = d.stats()
    return samples, err, f"{s['nodes_delegated']}/{s['nodes_total']}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="*", default=["mobilenet_v2", "resnet50", "vgg19", "efficientnet_b0"])
    ap.add_argument("--threads", nargs="*", type=int, default=[1, 2])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=5)
    args = ap.parse_args()
    print(f"{'model':18s} {'thr':>3s} {'xnn min':>9s} {'xnn med':>9s} {'flex min':>9s} {'flex med':>9s} "
          f"{'ratio':>6s} {'nodes':>8s} {'err':>8s}")
    for name in args.models:
        path = model_dir() / f"{name}.tflite"
        if not path.exists():
            print(f"{name}: missing {path}; run bench/build_models.py {name}")
            continue
        for t in args.threads:
            s, err, nodes = compare(path, t, args.rounds, args.iters)
            xm, fm = np.median(s["xnnpack"]), np.median(s["flex"])
            print(f"{name:18s} {t:3d} {min(s['xnnpack']):9.2f} {xm:9.2f} {min(s['flex']):9.2f} {fm:9.2f} "
                  f"{fm / xm:6.2f} {nodes:>8s} {err:8.1e}", flush=True)


if __name__ == "__main__":
    main()
