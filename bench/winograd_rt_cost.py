"""The cost table a budget plan prices run-time Winograd with (conv/choose.c k_rt_gain and
RT_INPUT_NS_PER_FLOAT): on the conv shapes of ResNet / VGG stages, 1 thread, the chosen GEMM
kernel, warm weights, medians of alternating rounds:
  gain      = im2col GEMM time / run-time Winograd time (whole layer); beside it the same for
              the pre-transformed Winograd weights
  slice ns  = (time in S output-channel slices - whole time) / (S - 1) / input floats: what each
              extra slice costs, the whole input being transformed again (both forms).

    python bench/winograd_rt_cost.py [--iters 5] [--rounds 3]"""
import argparse
import statistics

import numpy as np

from flexdelegate import _native_testing as nt

# (map, channels, run-time tile as conv/choose.c picks it): ResNet stages, then VGG-19's big maps
# (a budget plan may run their Winograd from the GEMM panels with a large transformed input)
SHAPES = [(56, 64, 6), (28, 128, 4), (14, 256, 4), (14, 512, 4), (224, 64, 6), (112, 128, 6), (56, 256, 4),
          (28, 512, 4)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--slices", type=int, default=4)
    ap.add_argument("--shapes", type=int, nargs="*", help="indices into SHAPES (default: all)")
    args = ap.parse_args()
    v = nt.variants("gemm").index(nt.chosen("gemm"))
    rng = np.random.default_rng(0)
    print(f"gemm kernel {nt.chosen('gemm')}, 1 thread")
    for hw, c, tile in [SHAPES[i] for i in args.shapes] if args.shapes else SHAPES:
        x = rng.standard_normal((1, hw, hw, c)).astype(np.float32)
        f = (rng.standard_normal((c, 3, 3, c)) / np.sqrt(9 * c)).astype(np.float32)
        panels = -(-c // 16)
        per = max(1, panels // args.slices)
        n_slices = -(-panels // per)
        t = {"gemm": [], "pre": [], "rt": [], "rt_sliced": [], "pre_sliced": []}
        for _ in range(args.rounds):  # alternating, so load on the machine hits all three alike
            t["gemm"].append(np.median(nt.conv2d(v, x, f, direct=False, iters=args.iters, timed=True)[1]))
            t["pre"].append(np.median(nt.winograd(v, tile, x, f, iters=args.iters, timed=True)[1]))
            t["rt"].append(np.median(nt.winograd(v, tile, x, f, from_gemm=True, iters=args.iters, timed=True)[1]))
            t["rt_sliced"].append(np.median(nt.winograd(v, tile, x, f, from_gemm=True, slice_panels=per,
                                                        iters=args.iters, timed=True)[1]))
            t["pre_sliced"].append(np.median(nt.winograd(v, tile, x, f, slice_panels=per, iters=args.iters,
                                                         timed=True)[1]))
        # medians; on a loaded machine the best round is printed too (what the CPU does uncontended)
        m = {k: statistics.median(vs) for k, vs in t.items()}
        b = {k: min(vs) for k, vs in t.items()}
        slice_ns = (m["rt_sliced"] - m["rt"]) / max(1, n_slices - 1) / x.size * 1e9
        pre_ns = (m["pre_sliced"] - m["pre"]) / max(1, n_slices - 1) / x.size * 1e9
        print(f"{hw:3d}x{hw:<3d} x{c:<4d} F{tile}: gemm {m['gemm'] * 1e3:7.2f} ms  rt {m['rt'] * 1e3:7.2f} ms  "
              f"gain {m['gemm'] / m['rt']:.2f} (pre-transformed {m['gemm'] / m['pre']:.2f})  {n_slices} slices {m['rt_sliced'] * 1e3:7.2f} ms  "
              f"slice {slice_ns:.2f} ns/input float (pre-transformed {pre_ns:.2f}) | best: gain {b['gemm'] / b['rt']:.2f} "
              f"(pre {b['gemm'] / b['pre']:.2f}) slice "
              f"{(b['rt_sliced'] - b['rt']) / max(1, n_slices - 1) / x.size * 1e9:.2f} ns")


if __name__ == "__main__":
    main()
