"""What the delegate cannot run stays with the stock interpreter, with a reason, and the
answers stay right."""
import numpy as np
import pytest

from flexdelegate import load_flex
from flexdelegate.run import invoke, make_interpreter, max_error, random_inputs
from flexdelegate.tflite.writer import ModelBuilder
from models import conv_net


def compare(model):
    stock = make_interpreter(model)
    d = load_flex()
    flex = make_interpreter(model, delegate=d)
    inputs = random_inputs(stock, seed=3)
    assert max_error(invoke(stock, inputs), invoke(flex, inputs)) <= 1e-4
    return d.stats()


def test_unsupported_op_in_the_middle_splits_partitions():
    """Both sides carry enough work to be islands of their own (test_islands.py: the rule)."""
    s = compare(conv_net(size=32, cout=32, middle_op="FLOOR"))
    assert s["nodes_total"] == 6 and s["nodes_delegated"] == 5 and s["partitions"] == 2
    assert s["fallback"] == [{"subgraph": 0, "node": 1, "op": "FLOOR", "reason": "unsupported op"}]


def test_integer_compute_falls_back():
    b = ModelBuilder()
    x = b.input((1, 4), name="x", dtype=np.int32)
    y = b.tensor((1, 4), dtype=np.int32)
    b.op("MAXIMUM", [x, b.const(np.arange(4, dtype=np.int32))], [y])  # int ADD/SUB/MUL do run here
    b.output(y)
    s = compare(b.build())
    assert s["nodes_delegated"] == 0 and s["partitions"] == 0
    assert s["fallback"][0]["op"] == "MAXIMUM" and "float32" in s["fallback"][0]["reason"]


def test_runtime_weights_fall_back():
    """A conv whose filter is a graph input cannot be packed at load."""
    b = ModelBuilder()
    x = b.input((1, 5, 5, 2), name="x")
    w = b.input((3, 3, 3, 2), name="w")
    y = b.tensor((1, 5, 5, 3))
    b.op("CONV_2D", [x, w, b.const(np.zeros(3, np.float32))], [y], padding="SAME", stride_w=1, stride_h=1)
    b.output(y)
    s = compare(b.build())
    assert s["nodes_delegated"] == 0
    assert "constant" in s["fallback"][0]["reason"]


def test_argmax_at_the_end_falls_back():
    rng = np.random.default_rng(0)
    b = ModelBuilder()
    x = b.input((16, 256), name="x")  # 2 MFLOP: an island worth its boundary
    h = b.tensor((16, 256))
    b.op("FULLY_CONNECTED", [x, b.const(rng.standard_normal((256, 256)).astype(np.float32)), -1], [h])
    y = b.tensor((16,), dtype=np.int64)
    b.op("ARG_MAX", [h, b.const(np.array([1], np.int32))], [y])
    b.output(y)
    b.output(h)
    s = compare(b.build())
    assert s["nodes_delegated"] == 1 and [f["op"] for f in s["fallback"]] == ["ARG_MAX"]


def test_every_fallback_has_a_reason():
    """Every fallback reason is a non-empty sentence."""
    s = compare(conv_net(middle_op="FLOOR"))
    assert s["fallback"] and all(f["reason"] for f in s["fallback"])


def _stock_refuses(model) -> bool:
    try:
        make_interpreter(model)
    except (RuntimeError, ValueError):
        return True
    return False


def assert_left_to_stock(model, reason: str) -> None:
    """Where stock refuses the model the delegated load fails too; where stock runs it, the
    answer is stock's and no node is claimed, the first for `reason`."""
    if _stock_refuses(model):
        with pytest.raises((RuntimeError, ValueError)):
            make_interpreter(model, delegate=load_flex())
        return
    s = compare(model)
    assert s["nodes_delegated"] == 0
    assert reason in s["fallback"][0]["reason"]


@pytest.mark.parametrize("stride,padding,out_hw", [
    ((2, 2), "VALID", (8, 8)),     # the forward conv of 8 gives 3, not the input's 4
    ((1, 4), "SAME", (4, 8)),      # width: SAME stride 4 from 8 gives 2, not 4
], ids=str)
def test_transpose_conv_whose_output_shape_stride_does_not_give_stays_with_stock(stride, padding, out_hw):
    """LiteRT's stock kernel refuses such a TRANSPOSE_CONV; tflite-runtime 2.14's runs it, and
    its optimized and reference kernels disagree: the node is left to stock either way."""
    from opcheck import transpose_conv_model
    model = transpose_conv_model((1, 4, 4, 3), 5, 3, 3, stride=stride, padding=padding,
                                 out_hw=out_hw, bias=True)
    assert_left_to_stock(model, "output_shape")  # LiteRT's stock refuses it, 2.14's runs it


def test_transpose_with_a_2d_permutation_stays_with_stock():
    """Stock requires a 1-D perm (2.14 and LiteRT refuse the node at prepare)."""
    b = ModelBuilder()
    x = b.input((2, 3), name="x")
    y = b.tensor((3, 2))
    b.op("TRANSPOSE", [x, b.const(np.array([[1, 0]], np.int32))], [y])
    b.output(y)
    model = b.build()
    assert _stock_refuses(model)
    with pytest.raises((RuntimeError, ValueError)):
        make_interpreter(model, delegate=load_flex())


def _layer_with_bias(op: str, nbias: int) -> bytes:
    rng = np.random.default_rng(0)
    b = ModelBuilder()
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    bias = b.const(f32(nbias))
    if op == "FULLY_CONNECTED":
        x, y = b.input((2, 6), name="x"), b.tensor((2, 4))
        b.op(op, [x, b.const(f32(4, 6)), bias], [y])
    elif op == "TRANSPOSE_CONV":
        x, y = b.input((1, 3, 3, 2), name="x"), b.tensor((1, 6, 6, 4))
        b.op(op, [b.const(np.array([1, 6, 6, 4], np.int32)), b.const(f32(4, 3, 3, 2)), x, bias], [y],
             padding="SAME", stride_w=2, stride_h=2)
    else:
        x, y = b.input((1, 5, 5, 4), name="x"), b.tensor((1, 5, 5, 4))
        w = f32(4, 3, 3, 4) if op == "CONV_2D" else f32(1, 3, 3, 4)
        opts = {} if op == "CONV_2D" else {"depth_multiplier": 1}
        b.op(op, [x, b.const(w), bias], [y], padding="SAME", stride_w=1, stride_h=1, **opts)
    b.output(y)
    return b.build()


@pytest.mark.parametrize("nbias", [3, 5])
@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV"])
def test_a_bias_of_the_wrong_size_is_not_claimed(op, nbias):
    """4 output channels: a shorter bias would be read past its end, a longer one is refused by
    stock; the node is left to stock, which decides (it refuses where it checks)."""
    model = _layer_with_bias(op, nbias)
    assert not _stock_refuses(_layer_with_bias(op, 4))  # the model is right otherwise
    assert_left_to_stock(model, "bias")
