"""Single int8 CONV_2D layers at ResNet-50's shapes and DEPTHWISE_CONV_2D / shallow 1x1 layers at
MobileNetV2's, each as a one-op model: the runtime's default
XNNPack delegate beside flexdelegate in one process, invokes alternating by rounds, one thread
(--threads);
median latency, GOPS (1 op = one multiply or one add) and flex / XNNPack per layer, and the
largest output difference (XNNPack rounds its own way: 1 step apart is expected). Where
bench/compare.py says a quantized model is behind, this says which layer shapes are.

    python bench/qs8_layers.py [--rounds 15] [--iters 5] [--threads 1] [--only dw]

--threads 2 on a 2-vCPU host is a rough guide only: both engines' thread pools live in this one
process, and a layer of 10-100 us is then mostly their wake-ups (the same layer read 8 to 15 us
from run to run). Run it under ai-edge-litert (tflite-runtime 2.14's XNNPack does not take int8 models: its
column would be the stock kernels). Never run by pytest."""
import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from flexdelegate import load_flex  # noqa: E402
from flexdelegate.tflite.writer import ModelBuilder  # noqa: E402

try:
    from ai_edge_litert.interpreter import Interpreter
except ImportError:
    from tflite_runtime.interpreter import Interpreter

# (name, input h = w, cin, cout, kernel, stride); the stem reads its input pre-padded (VALID).
LAYERS = [("1x1 64->256 @56", 56, 64, 256, 1, 1), ("3x3 64->64 @56", 56, 64, 64, 3, 1),
          ("1x1 256->64 @56", 56, 256, 64, 1, 1), ("1x1 512->128 @28", 28, 512, 128, 1, 1),
          ("3x3 128 @28", 28, 128, 128, 3, 1), ("3x3 256 @14", 14, 256, 256, 3, 1),
          ("1x1 1024->2048 /2 @14", 14, 1024, 2048, 1, 2), ("1x1 2048->512 @7", 7, 2048, 512, 1, 1),
          ("1x1 512->2048 @7", 7, 512, 2048, 1, 1), ("3x3 512 @7", 7, 512, 512, 3, 1),
          ("stem 7x7/2 3->64 @230", 230, 3, 64, 7, 2),
          # MobileNetV2: its depthwise layers ("dw", cin = cout) and its 16-deep expansion
          ("1x1 16->96 @112", 112, 16, 96, 1, 1), ("dw 3x3 32 @112", 112, 32, 32, 3, 1),
          ("dw 3x3/2 96 @112", 112, 96, 96, 3, 2), ("dw 3x3 144 @56", 56, 144, 144, 3, 1),
          ("dw 3x3 192 @28", 28, 192, 192, 3, 1), ("dw 3x3 384 @14", 14, 384, 384, 3, 1),
          ("dw 3x3 960 @7", 7, 960, 960, 3, 1)]


def out_size(h, k, s):
    return (h - k) // s + 1 if k == 7 else -(-h // s)


def conv_model(h, cin, cout, k, s, dw=False, seed=0) -> bytes:
    """int8 in and out, per-channel int8 weights, int32 bias, ReLU; output scale set so the
    accumulators spread over a few dozen output steps. dw: a DEPTHWISE_CONV_2D (cin = cout)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    xs, o, depth = 0.05, out_size(h, k, s), k * k * (1 if dw else cin)
    x = b.input((1, h, h, cin), dtype=np.int8, scale=[xs], zero_point=[1])
    ws = 0.01 * rng.uniform(0.5, 1.5, cout)
    w = b.const(rng.integers(-127, 128, (1, k, k, cout) if dw else (cout, k, k, cin)).astype(np.int8), scale=list(ws),
                zero_point=[0] * cout, quantized_dimension=3 if dw else 0)
    bias = b.const(rng.integers(-2000, 2000, cout).astype(np.int32), scale=list(xs * ws), zero_point=[0] * cout)
    ys = float(xs * 0.01 * 50 * 73 * np.sqrt(depth) / 40)
    y = b.tensor((1, o, o, cout), dtype=np.int8, scale=[ys], zero_point=[-5])
    options = dict(padding="VALID" if k == 7 else "SAME", stride_w=s, stride_h=s, fused_activation_function="RELU")
    if dw:
        options["depth_multiplier"] = 1
    b.op("DEPTHWISE_CONV_2D" if dw else "CONV_2D", [x, w, bias], [y], **options)
    b.output(y)
    return b.build()


def times(it, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        it.invoke()
        out.append(time.perf_counter() - t0)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", default="", help="the layers whose name contains this")
    a = ap.parse_args()
    print(f"{'layer':24s} {'xnn us':>8s} {'GOPS':>6s} {'flex us':>8s} {'GOPS':>6s} {'flex/xnn':>8s} {'max diff':>8s}")
    for name, h, cin, cout, k, s in (layer for layer in LAYERS if a.only in layer[0]):
        dw = name.startswith("dw ")
        model = conv_model(h, cin, cout, k, s, dw)
        xnn = Interpreter(model_content=model, num_threads=a.threads)
        flex = Interpreter(model_content=model, num_threads=a.threads,
                           experimental_delegates=[load_flex(cache_path="", num_threads=a.threads)])
        x = np.random.default_rng(1).integers(-128, 128, (1, h, h, cin)).astype(np.int8)
        for it in (xnn, flex):
            it.allocate_tensors()
            it.set_tensor(it.get_input_details()[0]["index"], x)
        tx, tf = [], []
        for _ in range(a.rounds):
            tx += times(xnn, a.iters)
            tf += times(flex, a.iters)
        yx, yf = (it.get_tensor(it.get_output_details()[0]["index"]).astype(int) for it in (xnn, flex))
        ops = 2 * out_size(h, k, s) ** 2 * cout * (1 if dw else cin) * k * k
        mx, mf = np.median(tx) * 1e6, np.median(tf) * 1e6
        print(f"{name:24s} {mx:8.0f} {ops / mx / 1e3:6.0f} {mf:8.0f} {ops / mf / 1e3:6.0f} {mf / mx:8.2f} "
              f"{int(np.abs(yx - yf).max()):8d}", flush=True)


if __name__ == "__main__":
    main()
