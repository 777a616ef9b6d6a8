"""The integer element-wise ops (kernels/qs8-ops) against LiteRT's XNNPack on the same
single-op int8 models from our writer, side by side in one process of the LiteRT venv:

    stock   LiteRT's Interpreter, default delegates off (the reference kernels)
    xnn     LiteRT's Interpreter with its default XNNPack delegate
    flex    LiteRT's Interpreter with flexdelegate

Rounds alternate the engines; prints the median and min ms per invoke and flex / xnn, and
checks flex against stock bit for bit on the same input. Shapes are EfficientNet-B0's,
MobileNetV2's (its convolutions and depthwise layers too) and ResNet-50's (R_*); *_HALVES are
ADD / MUL with scales in simple ratios (results on halves: the float form's worst case).

    LITERT venv python bench/qs8_ops.py [--threads 1] [--rounds 5] [--iters 20] [--ops ADD ...]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from qopcheck import Q, QModel  # noqa: E402

from flexdelegate import load_flex  # noqa: E402
from flexdelegate.run import make_interpreter  # noqa: E402

S8 = np.int8


def _model(build):
    m = QModel()
    return m.build(build(m))


# Quantization as the converter leaves it (ResNet-50 INT8's first ADD; an SE gate: activations
# times a LOGISTIC output), and scales in simple ratios (every sixth result on a half: the float
# form's worst case, kernels/qs8-ops/float-form.h).
ADD_Q = (Q(S8, 0.05359209, -27), Q(S8, 0.04754206, 3), Q(S8, 0.03228226, -128))
SE_Q = (Q(S8, 0.02371952, -124), Q(S8, 1 / 256, -128), Q(S8, 0.01783431, -122))
HALVES_Q = (Q(S8, 0.05, -3), Q(S8, 0.04, 5), Q(S8, 0.06, -1))


def _binary(op, a, b, act="NONE", q=ADD_Q):
    def build(m):
        x, y = m.input(a, q[0]), m.input(b, q[1])
        out = m.tensor(np.broadcast_shapes(a, b), q[2])
        m.op(op, [x, y], [out], fused_activation_function=act)
        return out
    return build


def _unary(op, shape, qo, out_shape=None, extra=None, **opts):
    def build(m):
        x = m.input(shape, Q(S8, 0.05, -3))
        out = m.tensor(out_shape or shape, Q(S8, *qo))
        m.op(op, [x] + ([m.const(extra)] if extra is not None else []), [out], **opts)
        return out
    return build


def _swish(shape):
    def build(m):
        x = m.input(shape, Q(S8, 0.05, -3))
        sig = m.tensor(shape, Q(S8, 1 / 256, -128))
        m.op("LOGISTIC", [x], [sig])
        out = m.tensor(shape, Q(S8, 0.03, -100))
        m.op("MUL", [x, sig], [out])
        return out
    return build


def _conv(h, cin, cout, k=1, stride=1, depthwise=False):
    """A CONV_2D (or DEPTHWISE_CONV_2D) of a MobileNet-style layer: per-channel weights, RELU6
    with the output quantization the converter gives it ([0, 6] over the whole int8 range: the
    clamp is the int8 range's own; an output scale clamping inside it took each kernel's
    slower output stage, not what converted models run)."""
    def build(m):
        rng = np.random.default_rng(cout)
        x = m.input((1, h, h, cin), Q(S8, 0.05, -3))
        o = -(-h // stride)
        out = m.tensor((1, o, o, cout), Q(S8, 6 / 255, -128))
        wshape = (1, k, k, cout) if depthwise else (cout, k, k, cin)
        scales = tuple(float(v) for v in 0.01 * np.linspace(0.5, 1.5, cout))
        w = m.const(rng.integers(-127, 128, wshape).astype(S8), Q(S8, scales, (0,) * cout, 3 if depthwise else 0))
        b = m.const(rng.integers(-3000, 3000, cout).astype(np.int32),
                    Q(np.int32, tuple(0.05 * s for s in scales), (0,) * cout, 0))
        opts = dict(padding="SAME", stride_w=stride, stride_h=stride, fused_activation_function="RELU6")
        if depthwise:
            opts["depth_multiplier"] = 1
        m.op("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", [x, w, b], [out], **opts)
        return out
    return build


OPS = {
    "ADD": _binary("ADD", (1, 56, 56, 24), (1, 56, 56, 24)),
    "ADD_HALVES": _binary("ADD", (1, 56, 56, 24), (1, 56, 56, 24), q=HALVES_Q),
    "MUL_SE": _binary("MUL", (1, 56, 56, 144), (1, 1, 1, 144), q=SE_Q),
    "MUL_SE_HALVES": _binary("MUL", (1, 56, 56, 144), (1, 1, 1, 144), q=HALVES_Q),
    "MEAN_HW": _unary("MEAN", (1, 56, 56, 144), (0.05, 2), (1, 1, 1, 144), np.array([1, 2], np.int32),
                      keep_dims=True),
    "MEAN_GLOBAL": _unary("MEAN", (1, 7, 7, 1280), (0.05, 2), (1, 1280), np.array([1, 2], np.int32),
                          keep_dims=False),
    "LOGISTIC": _unary("LOGISTIC", (1, 112, 112, 32), (1 / 256, -128)),
    "SOFTMAX": _unary("SOFTMAX", (8, 1000), (1 / 256, -128), beta=1.0),
    "AVG_POOL": _unary("AVERAGE_POOL_2D", (1, 28, 28, 192), (0.05, -3), (1, 14, 14, 192), padding="SAME",
                       stride_h=2, stride_w=2, filter_height=3, filter_width=3),
    "SWISH": _swish((1, 112, 112, 32)),
    "STEM": _conv(224, 3, 32, 3, 2),
    "PW_16_96@112": _conv(112, 16, 96),
    "PW_24_144@56": _conv(56, 24, 144),
    "PW_144_24@56": _conv(56, 144, 24),
    "PW_960_320@7": _conv(7, 960, 320),
    "DW_32@112": _conv(112, 32, 32, 3, 1, depthwise=True),
    "DW_96_S2@112": _conv(112, 96, 96, 3, 2, depthwise=True),
    "DW_144@56": _conv(56, 144, 144, 3, 1, depthwise=True),
    "DW_576@14": _conv(14, 576, 576, 3, 1, depthwise=True),
    "DW5_144_S2@56": _conv(56, 144, 144, 5, 2, depthwise=True),
    "DW5_240@28": _conv(28, 240, 240, 5, 1, depthwise=True),
    "DW5_672@14": _conv(14, 672, 672, 5, 1, depthwise=True),
    "CONV3_64@56": _conv(56, 64, 64, 3),
    # ResNet-50's
    "R_STEM7": _conv(224, 3, 64, 7, 2),
    "R_ADD": _binary("ADD", (1, 56, 56, 256), (1, 56, 56, 256), "RELU"),
    "R_ADD_HALVES": _binary("ADD", (1, 56, 56, 256), (1, 56, 56, 256), "RELU", q=HALVES_Q),
    "R_ADD@7": _binary("ADD", (1, 7, 7, 2048), (1, 7, 7, 2048), "RELU"),
    "R_PW_64_256@56": _conv(56, 64, 256),
    "R_PW_256_64@56": _conv(56, 256, 64),
    "R_CONV3_128@28": _conv(28, 128, 128, 3),
    "R_PW_512_128@28": _conv(28, 512, 128),
    "R_PW_1024_256@14": _conv(14, 1024, 256),
    "R_CONV3_256@14": _conv(14, 256, 256, 3),
    "R_PW_256_1024@14": _conv(14, 256, 1024),
    "R_PW_2048_512@7": _conv(7, 2048, 512),
    "R_CONV3_512@7": _conv(7, 512, 512, 3),
    "R_PW_512_2048@7": _conv(7, 512, 2048),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--ops", nargs="*", default=list(OPS))
    a = ap.parse_args(argv)
    print(f"{'op':14} {'stock ms':>9} {'xnn ms':>9} {'flex ms':>9} {'flex/xnn':>9} {'min flex/xnn':>12} exact")
    for name in a.ops:
        model = _model(OPS[name])
        its = {"stock": make_interpreter(model, num_threads=a.threads),
               "xnn": make_interpreter(model, stock="xnnpack", num_threads=a.threads),
               "flex": make_interpreter(model, delegate=load_flex(), num_threads=a.threads)}
        rng = np.random.default_rng(0)
        xs = [rng.integers(-128, 128, tuple(d["shape"])).astype(S8) for d in its["stock"].get_input_details()]
        outs, times = {}, {k: [] for k in its}
        for r in range(a.rounds):
            for k in (list(its) if r % 2 == 0 else list(its)[::-1]):
                it = its[k]
                for d, x in zip(it.get_input_details(), xs):
                    it.set_tensor(d["index"], x)
                it.invoke()
                t0 = time.perf_counter()
                for _ in range(a.iters):
                    it.invoke()
                times[k].append((time.perf_counter() - t0) / a.iters * 1e3)
                outs[k] = it.get_tensor(it.get_output_details()[0]["index"])
        med = {k: statistics.median(v) for k, v in times.items()}
        mins = {k: min(v) for k, v in times.items()}
        exact = np.array_equal(outs["flex"], outs["stock"])
        print(f"{name:14} {med['stock']:9.4f} {med['xnn']:9.4f} {med['flex']:9.4f} {med['flex'] / med['xnn']:9.2f} "
              f"{mins['flex'] / mins['xnn']:12.2f} {exact}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
