"""Profiling a model like an on-device profile job, to JSON and a plot.

    python examples/profile_model.py [MODEL.tflite] [--budget MB] [--out DIR]

`flexdelegate profile` runs four stages, each in fresh processes: compile (first load, which
packs weights and writes the cache file), first load (OS caches dropped), subsequent load and
inference (min and median latency), and reports each stage's time and memory as a [lo, hi]
range. This script runs it, then reads the JSON it wrote."""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", nargs="?", help=".tflite model (default: the embedded demo CNN)")
    ap.add_argument("--budget", type=float, default=0, help="memory budget in MB (0 = unlimited)")
    ap.add_argument("--out", default=tempfile.mkdtemp(), help="where the JSON and the plot go")
    args = ap.parse_args()
    model = args.model
    if model is None:
        from flexdelegate.tflite.demo_model import build_demo_model
        model = os.path.join(args.out, "demo.tflite")
        with open(model, "wb") as f:
            f.write(build_demo_model())
    report = os.path.join(args.out, "profile.json")
    cmd = [sys.executable, "-m", "flexdelegate", "profile", model, "--iterations", "10", "--json", report]
    if args.budget:
        cmd += ["--budget", str(args.budget)]
    try:
        import matplotlib  # noqa: F401 - the plot is optional
        cmd += ["--plot", os.path.join(args.out, "profile.png")]
    except ImportError:
        print("(matplotlib not installed: no plot; pip install 'flexdelegate[plot]')")
    subprocess.run(cmd, check=True)

    with open(report) as f:
        data = json.load(f)
    print(f"\nfrom {report}:")
    for name, stage in data["stages"].items():
        lo, hi = (b / 2**20 for b in stage["peak_bytes"])
        print(f"  {name:16s} {stage['time_us'] / 1e3:8.3f} ms, peak {lo:.1f}..{hi:.1f} MiB")
    slowest = max(data["ops"], key=lambda op: op["time_us"])
    print(f"  slowest op: node {slowest['index']} {slowest['op']} ({slowest['kernel']}), {slowest['time_us']:.1f} us")
    print(f"files in {args.out}: {sorted(os.listdir(args.out))}")


if __name__ == "__main__":
    main()
