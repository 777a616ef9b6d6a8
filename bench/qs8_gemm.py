"""GOPS of every QS8 GEMM / IGEMM variant this CPU runs at real layer shapes, beside the FP32
GEMM's GFLOP/s on the same shapes (one thread, best of --iters, packing excluded; 1 op = one
multiply or one add, so a MAC is 2 ops for both).

    python bench/qs8_gemm.py [--iters 20] [--variants avx2] [--dw]

1x1 layers and FULLY_CONNECTED run the GEMM, 3x3 ones the IGEMM (direct conv); --dw adds the
depthwise layers of MobileNetV2 / EfficientNet-B0. pytest never runs this."""
import argparse

import numpy as np

from flexdelegate import _native_testing as testing, _qs8

# (name, h, w, cin, cout, k, stride): ResNet-50, MobileNetV2 / EfficientNet-B0 layer shapes.
LAYERS = [
    ("resnet50 conv2 1x1 64->256 @56", 56, 56, 64, 256, 1, 1),
    ("resnet50 conv2 3x3 64->64 @56", 56, 56, 64, 64, 3, 1),
    ("resnet50 conv3 1x1 512->128 @28", 28, 28, 512, 128, 1, 1),
    ("resnet50 conv4 3x3 256->256 @14", 14, 14, 256, 256, 3, 1),
    ("resnet50 conv5 1x1 512->2048 @7", 7, 7, 512, 2048, 1, 1),
    ("mobilenetv2 1x1 96->24 @56", 56, 56, 96, 24, 1, 1),
    ("mobilenetv2 1x1 32->192 @28", 28, 28, 32, 192, 1, 1),
    ("mobilenetv2 1x1 384->64 @14", 14, 14, 384, 64, 1, 1),
    ("mobilenetv2 1x1 960->320 @7", 7, 7, 960, 320, 1, 1),
    ("mobilenetv2 stem 3x3/2 3->32 @224", 224, 224, 3, 32, 3, 2),
    ("fc 1280->1000 (batch 1)", 1, 1, 1280, 1000, 1, 1),
]
DW_LAYERS = [("dw 3x3 144 @56", 56, 56, 144, 3, 1), ("dw 3x3/2 144 @56", 56, 56, 144, 3, 2),
             ("dw 3x3 576 @14", 14, 14, 576, 3, 1), ("dw 5x5 672 @14", 14, 14, 672, 5, 1),
             ("dw 5x5 1152 @7", 7, 7, 1152, 5, 1)]


def same(h, k, s):
    o = -(-h // s)
    return o, max((o - 1) * s + k - h, 0) // 2


def qs8_conv(v, h, w, cin, cout, k, s, iters, rng):
    x = rng.integers(-128, 128, (1, h, w, cin), dtype=np.int8)
    wt = rng.integers(-127, 128, (cout, k, k, cin), dtype=np.int8)
    m, sh = _qs8.requant_params([0.0007] * cout)
    (oh, pt), (ow, pl) = same(h, k, s), same(w, k, s)
    _, t = _qs8.conv(v, x, wt, rng.integers(-999, 999, cout).astype(np.int32), zx=-3, mult=m,
                     shift=sh, zy=5, lo=-128, hi=127, rounding=_qs8.UP, stride=(s, s),
                     pads=(pt, pl), out_hw=(oh, ow), iters=iters, timed=True)
    return 2.0 * oh * ow * cout * k * k * cin / t.min()


def f32_conv(v, h, w, cin, cout, k, s, iters, rng):
    x = rng.standard_normal((1, h, w, cin)).astype(np.float32)
    wt = rng.standard_normal((cout, k, k, cin)).astype(np.float32)
    _, t = testing.conv2d(v, x, wt, None, direct=k > 1, stride=(s, s), iters=iters, timed=True)
    oh, ow = -(-h // s), -(-w // s)
    return 2.0 * oh * ow * cout * k * k * cin / t.min()


def qs8_dw(v, h, w, c, k, s, iters, rng):
    x = rng.integers(-128, 128, (1, h, w, c), dtype=np.int8)
    wt = rng.integers(-127, 128, (1, k, k, c), dtype=np.int8)
    m, sh = _qs8.requant_params([0.003] * c)
    (oh, pt), (ow, pl) = same(h, k, s), same(w, k, s)
    _, t = _qs8.dwconv(v, x, wt, None, zx=1, mult=m, shift=sh, zy=0, lo=-128, hi=127,
                       rounding=_qs8.AWAY, stride=(s, s), pads=(pt, pl), out_hw=(oh, ow), iters=iters,
                       timed=True)
    return 2.0 * oh * ow * c * k * k / t.min()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--variants", default="", help="only variants whose name contains this")
    ap.add_argument("--dw", action="store_true")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    q = [(i, n) for i, n in enumerate(testing.variants("qs8-gemm")) if a.variants in n]
    f = testing.variants("gemm")
    fbest = len(f) - 1
    print(f"{'layer':38s}" + "".join(f"{n:>24s}" for _, n in q) + f"{f[fbest] + ' GFLOP/s':>30s}  int8/fp32")
    for name, h, w, cin, cout, k, s in LAYERS:
        g = [qs8_conv(i, h, w, cin, cout, k, s, a.iters, rng) / 1e9 for i, _ in q]
        fl = f32_conv(fbest, h, w, cin, cout, k, s, a.iters, rng) / 1e9
        print(f"{name:38s}" + "".join(f"{v:24.1f}" for v in g) + f"{fl:30.1f}  {g[-1] / fl:5.2f}x")
    if a.dw:
        dv = [(i, n) for i, n in enumerate(testing.variants("qs8-dwconv")) if a.variants in n]
        print(f"\n{'depthwise layer':38s}" + "".join(f"{n:>24s}" for _, n in dv))
        for name, h, w, c, k, s in DW_LAYERS:
            print(f"{name:38s}" + "".join(f"{qs8_dw(i, h, w, c, k, s, a.iters, rng) / 1e9:24.1f}" for i, _ in dv))


if __name__ == "__main__":
    main()
