"""Stride-1 3x3 convolution: im2col + GEMM (the delegate's CONV_2D today) vs Winograd F(4x4,3x3)
and F(6x6,3x3), on ResNet-50 / VGG-19 layer shapes. GFLOP/s-equivalent = direct-conv FLOPs
(2 * oh * ow * cout * 9 * cin) / time, so the columns compare wall time directly.

    python bench/winograd.py [--threads 1] [--seconds 0.4] [--xnnpack] [--kernel NAME]
im2col is timed through the delegate on a one-op model (whole invoke); Winograd through the
native test entry (pack once, time runs). --xnnpack adds stock TFLite + XNNPack. err = max abs
difference to the im2col output / max abs output. MB = packed weight size: Winograd keeps
(tile+2)^2 transformed 3x3 filters, 4x (F4) and 7.1x (F6) the GEMM-packed weights."""
import argparse

import numpy as np

from flexdelegate import _native_testing as testing, load_flex
from flexdelegate.run import make_interpreter, time_invokes
from flexdelegate.tflite.writer import ModelBuilder

# (h, w, cin, cout): ResNet-50 stage 3x3s and VGG-19's big early layers; SAME padding.
SHAPES = [(56, 56, 64, 64), (28, 28, 128, 128), (14, 14, 256, 256), (7, 7, 512, 512),
          (224, 224, 64, 64), (112, 112, 128, 128)]


def conv_model(x, f, b):
    n, h, w, cin = x.shape
    mb = ModelBuilder()
    xi = mb.input(x.shape)
    y = mb.tensor((n, h, w, f.shape[0]))
    mb.op("CONV_2D", [xi, mb.const(f), mb.const(b)], [y], padding="SAME", stride_w=1, stride_h=1,
          dilation_w_factor=1, dilation_h_factor=1, fused_activation_function="RELU")
    mb.output(y)
    return mb.build()


def time_interpreter(it, x, iters):
    """Best seconds per invoke, and the output."""
    best = time_invokes(it, [x], iters, warmup=1).min / 1e3
    return best, it.get_tensor(it.get_output_details()[0]["index"]).copy()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=0.4, help="time budget per measurement")
    ap.add_argument("--xnnpack", action="store_true", help="add a stock TFLite + XNNPack column")
    ap.add_argument("--kernel", help="GEMM kernel for Winograd (default: the one chosen for this CPU)")
    args = ap.parse_args()
    kernels = testing.variants("gemm")
    kname = args.kernel or testing.chosen("gemm")
    k = kernels.index(kname)
    rng = np.random.default_rng(0)
    cols = ["im2col", "F(4,3)", "F(6,3)"] + (["xnnpack"] if args.xnnpack else [])
    print(f"GFLOP/s-equivalent, {args.threads} thread(s), best of ~{args.seconds}s of runs, GEMM {kname}")
    print(f"{'shape':>22s} " + " ".join(f"{c:>8s}" for c in cols) + f" {'best':>7s} {'err F4':>8s} {'err F6':>8s}"
          f" {'MB gemm/F4/F6':>16s}")
    for h, w, cin, cout in SHAPES:
        x = testing.aligned(rng.standard_normal((1, h, w, cin)))  # arena tensors are 64-byte aligned
        f = (rng.standard_normal((cout, 3, 3, cin)) / np.sqrt(9 * cin)).astype(np.float32)
        b = rng.standard_normal(cout).astype(np.float32)
        flops = 2.0 * h * w * cout * 9 * cin
        iters = int(min(50, max(3, args.seconds / (flops / 150e9))))  # ~seconds at 150 GFLOP/s
        d = load_flex(num_threads=args.threads, cache_path="")
        t_gemm, ref = time_interpreter(make_interpreter(conv_model(x, f, b), delegate=d, num_threads=args.threads),
                                       x, iters)
        rates, errs = [flops / t_gemm / 1e9], []
        for tile in (4, 6):
            y, t = testing.winograd(k, tile, x, f, b, padding="SAME", act="RELU", threads=args.threads,
                                    iters=iters, timed=True)
            rates.append(flops / t.min() / 1e9)
            errs.append(float(np.abs(y - ref).max() / max(np.abs(ref).max(), 1e-30)))
        if args.xnnpack:
            t_x, _ = time_interpreter(make_interpreter(conv_model(x, f, b), stock="xnnpack",
                                                       num_threads=args.threads), x, iters)
            rates.append(flops / t_x / 1e9)
        best = cols[int(np.argmax(rates[:3]))]
        label = f"{h}x{w}x{cin}->{cout}"
        mb = [4 * cout * cin * p / 2**20 for p in (9, 36, 64)]  # packed weights (ignoring padding)
        print(f"{label:>22s} " + " ".join(f"{r:8.1f}" for r in rates) + f" {best:>7s} "
              f"{errs[0]:8.1e} {errs[1]:8.1e} {mb[0]:5.1f}/{mb[1]:4.1f}/{mb[2]:4.1f}", flush=True)


if __name__ == "__main__":
    main()
