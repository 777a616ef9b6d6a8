"""Direct conv (implicit GEMM, igemm/) vs im2col + GEMM (and Winograd for stride-1 3x3) on the
conv layers of MobileNetV2, ResNet-50 and VGG-19 that do not run as a plain GEMM (1x1 stride-1
convs read the input as the A matrix already). One thread by default.

    python bench/direct_conv.py [--threads 1] [--rounds 5] [--iters 3] [--kernel NAME] [--only SUBSTR]

Both GEMM columns pack the weights once with the same kernel (its panels serve both) and time
the conv through conv.c's run entries (no interpreter around it); rounds alternate the engines
so a busy neighbour on the machine hurts each alike. Medians of rounds x iters runs; GFLOP/s =
direct-conv FLOPs (2 * oh * ow * cout * kh * kw * cin) / median time. Winograd (F(4,3) and
F(6,3), best of the two) through its test entry: its median is over rounds of 1 run each. The
`direct/im2col` ratio < 1 means direct is faster. Never run by pytest."""
import argparse
import statistics

import numpy as np

from flexdelegate import _native_testing as testing

# (model, h, w, cin, cout, k, stride): input size, channels, square kernel, stride; SAME padding.
SHAPES = [
    ("MobileNetV2 stem", 224, 224, 3, 32, 3, 2),
    ("ResNet-50 stem", 224, 224, 3, 64, 7, 2),
    ("ResNet-50 3x3", 56, 56, 64, 64, 3, 1),
    ("ResNet-50 3x3", 28, 28, 128, 128, 3, 1),
    ("ResNet-50 3x3", 14, 14, 256, 256, 3, 1),
    ("ResNet-50 3x3", 7, 7, 512, 512, 3, 1),
    ("ResNet-50 1x1 s2", 56, 56, 256, 128, 1, 2),
    ("ResNet-50 1x1 s2", 56, 56, 256, 512, 1, 2),
    ("ResNet-50 1x1 s2", 28, 28, 512, 256, 1, 2),
    ("ResNet-50 1x1 s2", 14, 14, 1024, 2048, 1, 2),
    ("VGG-19 3x3", 224, 224, 3, 64, 3, 1),
    ("VGG-19 3x3", 224, 224, 64, 64, 3, 1),
    ("VGG-19 3x3", 112, 112, 128, 128, 3, 1),
    ("VGG-19 3x3", 56, 56, 256, 256, 3, 1),
    ("VGG-19 3x3", 28, 28, 512, 512, 3, 1),
    ("VGG-19 3x3", 14, 14, 512, 512, 3, 1),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5, help="alternations of the engines per shape")
    ap.add_argument("--iters", type=int, default=3, help="timed runs per engine per round")
    ap.add_argument("--kernel", help="GEMM kernel (default: the one chosen for this CPU)")
    ap.add_argument("--only", help="only shapes whose label contains this")
    args = ap.parse_args()
    kernels = testing.variants("gemm")
    k = kernels.index(args.kernel or testing.chosen("gemm"))
    rng = np.random.default_rng(0)
    print(f"median ms and GFLOP/s, {args.threads} thread(s), {args.rounds} rounds x {args.iters} runs, "
          f"GEMM {kernels[k]} / IGEMM {testing.variants('igemm')[k]}")
    print(f"{'layer':>17s} {'shape':>24s} {'im2col ms':>10s} {'direct ms':>10s} {'wino ms':>8s} "
          f"{'im2col':>7s} {'direct':>7s} {'wino':>7s} {'direct/im2col':>13s}")
    for label, h, w, cin, cout, ks, s in SHAPES:
        if args.only and args.only not in label:
            continue
        x = testing.aligned(rng.standard_normal((1, h, w, cin)))
        f = (rng.standard_normal((cout, ks, ks, cin)) / np.sqrt(ks * ks * cin)).astype(np.float32)
        b = rng.standard_normal(cout).astype(np.float32)
        oh, ow = (h + s - 1) // s, (w + s - 1) // s
        flops = 2.0 * oh * ow * cout * ks * ks * cin
        times = {"im2col": [], "direct": [], "wino": []}
        for r in range(args.rounds):
            order = ("im2col", "direct") if r % 2 == 0 else ("direct", "im2col")
            for name in order:
                _, t = testing.conv2d(k, x, f, b, direct=name == "direct", stride=(s, s), act="RELU",
                                      threads=args.threads, iters=args.iters, timed=True)
                times[name] += list(t)
            if ks == 3 and s == 1:
                times["wino"].append(min(testing.winograd(k, tile, x, f, b, act="RELU", threads=args.threads,
                                                          timed=True)[1].min() for tile in (4, 6)))
        med = {n: statistics.median(t) if t else None for n, t in times.items()}
        ms = [f"{med[n] * 1e3:{wd}.2f}" if med[n] else f"{'-':>{wd}s}" for n, wd in
              (("im2col", 10), ("direct", 10), ("wino", 8))]
        rates = [f"{flops / med[n] / 1e9:7.1f}" if med[n] else f"{'-':>7s}" for n in ("im2col", "direct", "wino")]
        shape = f"{h}x{w}x{cin}->{cout} {ks}x{ks}s{s}"
        print(f"{label:>17s} {shape:>24s} {' '.join(ms)} {' '.join(rates)} {med['direct'] / med['im2col']:13.2f}",
              flush=True)


if __name__ == "__main__":
    main()
