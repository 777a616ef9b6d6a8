"""Depthwise-conv micro benchmark: GFLOP/s of every variant this CPU runs (the scalar
reference is the pre-SIMD kernel) on MobileNetV2's depthwise shapes, one thread.

    python bench/dwconv.py [--iters 50] [--variants f32-dwconv-avx2 ...] [--no-xnnpack]
FLOPs = 2 * outputs * kh * kw (multiply + add per tap, as the profiler counts them). The last
column times stock TFLite + XNNPack on a one-op model of the same layer (whole invoke)."""
import argparse

import numpy as np

from flexdelegate import _native_testing as testing

# (h, w, c, stride): MobileNetV2's 3x3 depthwise layers (SAME padding, bias, RELU6).
SHAPES = [(112, 112, 32, 1), (112, 112, 96, 2), (56, 56, 144, 1), (28, 28, 192, 1),
          (14, 14, 384, 1), (7, 7, 960, 1)]


def xnnpack_seconds(x, f, b, s, iters):
    """Best invoke time of a one-op DEPTHWISE_CONV_2D model on stock TFLite with XNNPack."""
    from flexdelegate.run import make_interpreter, time_invokes
    from flexdelegate.tflite.writer import ModelBuilder
    n, h, w, c = x.shape
    mb = ModelBuilder()
    xi = mb.input(x.shape)
    y = mb.tensor((n, -(-h // s), -(-w // s), c))
    mb.op("DEPTHWISE_CONV_2D", [xi, mb.const(f.reshape(1, 3, 3, c)), mb.const(b)], [y], padding="SAME",
          stride_w=s, stride_h=s, dilation_w_factor=1, dilation_h_factor=1,
          fused_activation_function="RELU6", depth_multiplier=1)
    mb.output(y)
    it = make_interpreter(mb.build(), stock="xnnpack", num_threads=1)
    return time_invokes(it, [x], iters, warmup=1).min / 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--variants", nargs="*", help="names (default: all this CPU runs)")
    ap.add_argument("--no-xnnpack", action="store_true", help="skip the stock XNNPack column")
    args = ap.parse_args()
    names = testing.variants("dwconv")
    chosen = [i for i, n in enumerate(names) if not args.variants or n in args.variants]
    rng = np.random.default_rng(0)
    head = f"{'shape':>20s} " + " ".join(f"{names[i].replace('f32-dwconv-', ''):>10s}" for i in chosen)
    print("GFLOP/s, 1 thread, best of", args.iters)
    print(head + f" {'speedup':>8s}" + ("" if args.no_xnnpack else f" {'xnnpack':>8s}"))
    for h, w, c, s in SHAPES:
        x = testing.aligned(rng.standard_normal((1, h, w, c)))  # arena tensors are 64-byte aligned
        f = rng.standard_normal((3, 3, c)).astype(np.float32)
        b = rng.standard_normal(c).astype(np.float32)
        rates = []
        for i in chosen:
            it = max(3, args.iters if i else args.iters // 5)
            y, secs = testing.dwconv(i, x, f, b, stride=(s, s), act="RELU6", iters=it, timed=True)
            rates.append(2.0 * y.size * 9 / secs.min() / 1e9)
        label = f"{h}x{w}x{c} s{s}"
        speed = f"{rates[-1] / rates[0]:7.1f}x" if len(rates) > 1 and chosen[0] == 0 else ""
        xnn = ""
        if not args.no_xnnpack:
            xnn = f" {2.0 * y.size * 9 / xnnpack_seconds(x, f, b, s, args.iters) / 1e9:8.1f}"
        print(f"{label:>20s} " + " ".join(f"{r:10.1f}" for r in rates) + f" {speed:>8s}" + xnn)


if __name__ == "__main__":
    main()
