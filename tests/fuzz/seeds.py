"""Writes the seed corpora (tests/fuzz/corpus/<target>/seed-*), run by hand when the formats
or the op-test models change:

    python tests/fuzz/seeds.py [cache|plan|graph ...]

cache: files written by real loads of the cache target's model (one load; two models sharing
a file), their model records' identities replaced by placeholders. plan: the plan file the
planner writes for the plan target's model and budget, keys as placeholders. graph: the op-test
models of tests/opcheck.py and the small nets of tests/models.py and tests/budgetcheck.py.
Files named crash-* are regressions and are never touched here."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parents[1])]


def _write(target: str, name: str, data: bytes) -> None:
    d = HERE / "corpus" / target
    d.mkdir(parents=True, exist_ok=True)
    (d / f"seed-{name}").write_bytes(data)


def cache_seeds():
    from cache_target import CacheTarget, placeholders
    from engine import Engine
    from models import conv_net
    with tempfile.TemporaryDirectory() as tmp:
        t = CacheTarget(tmp)
        t.reference()  # ages the model file: its identity gets recorded
        try:
            one = Path(tmp) / "one.fxc"
            assert t.engine.run(str(t.model_path), {"cache_path": str(one)})[0] == "ok"
            _write("cache", "one-model.fxc", placeholders(one.read_bytes(), t._identity()))
            other = Path(tmp) / "other.tflite"
            other.write_bytes(conv_net(size=8, cout=16, seed=1))
            two = Path(tmp) / "two.fxc"
            with Engine() as e:
                for m in (other, t.model_path):
                    assert e.run(str(m), {"cache_path": str(two)})[0] == "ok"
            _write("cache", "two-models.fxc", placeholders(two.read_bytes(), t._identity()))
        finally:
            t.close()


def plan_seeds():
    from plan_target import PlanTarget
    t = PlanTarget()
    try:
        _write("plan", "tight-budget.json", t.seed_text())
    finally:
        t.close()


def graph_seeds():
    import opcheck as oc
    from budgetcheck import heavy_model
    from models import conv_net
    from flexdelegate.tflite.writer import ModelBuilder
    rand, single = oc.rand, oc.single_op
    x = (1, 6, 6, 4)
    models = {
        "conv3x3-relu": oc.conv_model(x, 8, 3, 3, act="RELU"),
        "conv-stride2-valid": oc.conv_model(x, 5, 3, 3, stride=(2, 2), padding="VALID"),
        "conv-dilated": oc.conv_model((1, 9, 9, 3), 4, 3, 3, dilation=(2, 2)),
        "conv1x1": oc.conv_model(x, 16, 1, 1),
        "depthwise-mult2": oc.depthwise_model(x, 2, 3, 3, act="RELU6"),
        "depthwise-stride2": oc.depthwise_model((1, 7, 7, 8), 1, 3, 3, stride=(2, 2), padding="VALID"),
        "maxpool": oc.pool_model("MAX_POOL_2D", x, 2, 2, stride=(2, 2)),
        "avgpool-same": oc.pool_model("AVERAGE_POOL_2D", x, 3, 3, padding="SAME"),
        "fc": oc.fc_model((2, 12), 7, act="RELU"),
        "fc-keepdims": oc.fc_model((1, 3, 12), 5, keep_num_dims=True),
        "transpose-conv": oc.transpose_conv_model((1, 4, 4, 3), 5, 3, 3, stride=(2, 2), bias=True),
        "add-broadcast": single("ADD", [(1, 4, 4, 3), (1, 1, 1, 3)], (1, 4, 4, 3), fused_activation_function="RELU"),
        "mul-const": single("MUL", [(1, 4, 4, 3), rand((3,), 1)], (1, 4, 4, 3)),
        "sub": single("SUB", [(2, 5), (2, 5)], (2, 5)),
        "div": single("DIV", [(1, 8), rand((1, 8), 2) + 3], (1, 8)),
        "maximum": single("MAXIMUM", [(3, 4), (1, 4)], (3, 4)),
        "prelu": single("PRELU", [(1, 4, 4, 3), rand((1, 1, 3), 3)], (1, 4, 4, 3)),
        "mean": single("MEAN", [(1, 5, 5, 4), np.array([1, 2], np.int32)], (1, 4), keep_dims=False),
        "pad": single("PAD", [(1, 3, 3, 2), np.array([[0, 0], [1, 2], [2, 1], [0, 0]], np.int32)], (1, 6, 6, 2)),
        "padv2": single("PADV2", [(1, 3, 3, 2), np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32),
                                  np.array([0.5], np.float32)], (1, 5, 5, 2)),
        "concat": single("CONCATENATION", [(1, 4, 4, 3), (1, 4, 4, 2)], (1, 4, 4, 5), axis=3),
        "pack": single("PACK", [(2, 3), (2, 3)], (2, 2, 3), axis=1),
        "reshape": single("RESHAPE", [(1, 4, 4, 3), np.array([1, 48], np.int32)], (1, 48)),
        "squeeze": single("SQUEEZE", [(1, 4, 1, 3)], (4, 3), squeeze_dims=[0, 2]),
        "softmax": single("SOFTMAX", [(2, 10)], (2, 10), beta=0.5),
        "logistic": single("LOGISTIC", [(1, 4, 4, 3)], (1, 4, 4, 3)),
        "hard-swish": single("HARD_SWISH", [(1, 4, 4, 3)], (1, 4, 4, 3)),
        "leaky-relu": single("LEAKY_RELU", [(1, 4, 4, 3)], (1, 4, 4, 3), alpha=0.2),
        "resize-bilinear": single("RESIZE_BILINEAR", [(1, 3, 3, 2), np.array([6, 5], np.int32)], (1, 6, 5, 2),
                                  half_pixel_centers=True),
        "resize-nearest": single("RESIZE_NEAREST_NEIGHBOR", [(1, 3, 3, 2), np.array([6, 6], np.int32)], (1, 6, 6, 2)),
        "depth-to-space": single("DEPTH_TO_SPACE", [(1, 2, 2, 8)], (1, 4, 4, 2), block_size=2),
        "space-to-depth": single("SPACE_TO_DEPTH", [(1, 4, 4, 2)], (1, 2, 2, 8), block_size=2),
        "strided-slice": single("STRIDED_SLICE", [(1, 6, 6, 3), np.array([0, 1, 0, 0], np.int32),
                                                  np.array([1, 5, 6, 3], np.int32), np.array([1, 2, 1, 1], np.int32)],
                                (1, 2, 6, 3)),
        "transpose": single("TRANSPOSE", [(2, 3, 4), np.array([2, 0, 1], np.int32)], (4, 2, 3)),
        "gather": single("GATHER", [(5, 4), np.array([4, 0, 2], np.int32)], (3, 4), axis=0),
        "conv-net": conv_net(size=8),
        "heavy-net": heavy_model(seed=2, fc=64, size=8, c=8),
    }
    # Folding: an FP16 filter dequantized into a conv.
    b = ModelBuilder()
    xi = b.input((1, 5, 5, 3))
    w16 = b.const(rand((4, 3, 3, 3), 1).astype(np.float16))
    w = b.tensor((4, 3, 3, 3))
    b.op("DEQUANTIZE", [w16], [w])
    y = b.tensor((1, 5, 5, 4))
    b.op("CONV_2D", [xi, w, b.const(rand((4,), 2))], [y], padding="SAME", stride_w=1, stride_h=1)
    b.output(y)
    models["fp16-conv"] = b.build()
    # Dynamic range: int8 weights (per-channel conv, per-tensor FC) under float activations.
    b = ModelBuilder()
    xi = b.input((1, 5, 5, 3))
    q = np.random.default_rng(3).integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    y = b.tensor((1, 5, 5, 4))
    b.op("CONV_2D", [xi, b.const(q, scale=np.float32([0.01, 0.02, 0.03, 0.04]), zero_point=np.zeros(4, np.int64)),
                     b.const(rand((4,), 2))], [y], padding="SAME", stride_w=1, stride_h=1, fused_activation_function="RELU")
    flat = b.tensor((1, 100))
    b.op("RESHAPE", [y, b.const(np.array([1, 100], np.int32))], [flat])
    z = b.tensor((1, 6))
    b.op("FULLY_CONNECTED", [flat, b.const(np.resize(q, (6, 100)), scale=np.float32([0.01]),
                                           zero_point=np.zeros(1, np.int64)), b.const(rand((6,), 4))], [z])
    b.output(z)
    models["hybrid-conv-fc"] = b.build()
    for name, data in models.items():
        _write("graph", f"{name}.tflite", data)


def main(argv):
    which = argv or ["cache", "plan", "graph"]
    for name in which:
        {"cache": cache_seeds, "plan": plan_seeds, "graph": graph_seeds}[name]()
        print(f"{name}: {len(list((HERE / 'corpus' / name).glob('seed-*')))} seeds")


if __name__ == "__main__":
    main(sys.argv[1:])
