"""uint8 (QU8: asymmetric per-tensor, TFLite's older quantized models) CONV_2D, DEPTHWISE_CONV_2D
and FULLY_CONNECTED through the delegate, bit for bit against the stock reference of the runtime
in use (gemmlowp's saturating rounding on tflite-runtime, ruy's on LiteRT; quant_rounding.detect()
finds it). They run on the int8 kernels in the int8 domain (ir/qlayer.c): the input flipped into
the node's scratch, the weight zero point in the packed bias and a per-row correction, each output
region flipped back. What stock computes in a way those cannot follow stays with it, with a reason.
Under a memory budget: test_q8_budget.py's "conv-u8" model; hypothesis: test_q8_props.py."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from budgetcheck import min_budget, q8_conv_model, scratch_shrunk
from flexdelegate import _native_testing, load_flex, quant_rounding
from flexdelegate.run import invoke, make_interpreter
from qopcheck import F32, LEGACY_SCALES, Q, QModel, check_exact, legacy_product_accumulators

U8 = np.uint8
ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]
# (input, weight, output) zero points: both ends of uint8, the middle (a weight zero point of
# 128 needs no row correction), and off-centre ones
ZPS = [(0, 0, 255), (255, 255, 0), (128, 128, 128), (7, 201, 90)]
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def uweights(shape, zw, seed, spread=127):
    """uint8 weights around their zero point, clipped to uint8 (so one end saturates when zw does)."""
    w = np.random.default_rng(seed).integers(-spread, spread + 1, shape) + zw
    return np.clip(w, 0, 255).astype(U8)


def bias(cout, seed):
    return np.random.default_rng(seed + 7).integers(-3000, 3000, cout).astype(np.int32)


def bias_q(s_in, s_w):
    """The converter's bias scale, s_in * s_w (stock's uint8 layers refuse one 2% of the output
    scale off it)."""
    return Q(np.int32, float(np.float32(s_in) * np.float32(s_w)), 0)


def same_out(h, w, k, stride, dil, padding):
    if padding == "SAME":
        return -(-h // stride), -(-w // stride)
    ek = (k - 1) * dil + 1
    return (h - ek) // stride + 1, (w - ek) // stride + 1


@pytest.mark.parametrize("zx,zw,zy", ZPS)
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("k,stride,dil,padding,cin,cout", [
    (3, 1, 1, "SAME", 8, 16), (3, 2, 1, "SAME", 3, 24), (1, 1, 1, "VALID", 16, 20),
    (3, 1, 2, "VALID", 5, 7), (5, 2, 1, "VALID", 4, 9), (1, 2, 1, "SAME", 12, 8)])
def test_conv2d(zx, zw, zy, act, k, stride, dil, padding, cin, cout):
    m = QModel()
    H, W = 11, 9
    x = m.input((2, H, W, cin), Q(U8, 0.04, zx))
    oh, ow = same_out(H, W, k, stride, dil, padding)
    y = m.tensor((2, oh, ow, cout), Q(U8, 0.3, zy))
    w = m.const(uweights((cout, k, k, cin), zw, cin), Q(U8, 0.01, zw))
    m.op("CONV_2D", [x, w, m.const(bias(cout, cout), bias_q(0.04, 0.01))], [y], padding=padding, stride_w=stride,
         stride_h=stride, dilation_w_factor=dil, dilation_h_factor=dil, fused_activation_function=act)
    check_exact(m.build(y))


@pytest.mark.parametrize("zx,zw,zy", ZPS)
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("k,stride,dil,padding,cin,mult", [
    (3, 1, 1, "SAME", 16, 1), (3, 2, 1, "SAME", 9, 1), (5, 1, 1, "VALID", 12, 1), (3, 1, 1, "SAME", 4, 2),
    (3, 2, 1, "VALID", 3, 3), (3, 1, 2, "SAME", 21, 1)])
def test_depthwise(zx, zw, zy, act, k, stride, dil, padding, cin, mult):
    m = QModel()
    H, W = 10, 12
    x = m.input((1, H, W, cin), Q(U8, 0.05, zx))
    oh, ow = same_out(H, W, k, stride, dil, padding)
    cout = cin * mult
    y = m.tensor((1, oh, ow, cout), Q(U8, 0.2, zy))
    w = m.const(uweights((1, k, k, cout), zw, cout), Q(U8, 0.02, zw, 3))
    m.op("DEPTHWISE_CONV_2D", [x, w, m.const(bias(cout, 3), bias_q(0.05, 0.02))], [y], padding=padding,
         stride_w=stride, stride_h=stride, dilation_w_factor=dil, dilation_h_factor=dil, depth_multiplier=mult,
         fused_activation_function=act)
    check_exact(m.build(y))


@pytest.mark.parametrize("threads", [2, 3])
def test_depthwise_split_between_threads(threads):
    """A uint8 depthwise on a small map, its rows split between the threads: each task flips
    its own rows back to uint8 (finish_region)."""
    m = QModel()
    x = m.input((1, 7, 7, 72), Q(U8, 0.05, 131))
    y = m.tensor((1, 7, 7, 72), Q(U8, 0.2, 120))
    w = m.const(uweights((1, 3, 3, 72), 127, 72), Q(U8, 0.02, 127, 3))
    m.op("DEPTHWISE_CONV_2D", [x, w, m.const(bias(72, 3), bias_q(0.05, 0.02))], [y], padding="SAME",
         stride_w=1, stride_h=1, depth_multiplier=1, fused_activation_function="RELU")
    check_exact(m.build(y), num_threads=threads)


@pytest.mark.parametrize("zx,zw,zy", ZPS)
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("batch,k,n,keep", [(1, 64, 10, False), (5, 33, 17, False), (3, 20, 40, True)])
def test_fully_connected(zx, zw, zy, act, batch, k, n, keep):
    m = QModel()
    xs = (batch, 2, k) if keep else (batch, k)
    ys = (batch, 2, n) if keep else (batch, n)
    x = m.input(xs, Q(U8, 0.1, zx))
    y = m.tensor(ys, Q(U8, 0.5, zy))
    w = m.const(uweights((n, k), zw, n), Q(U8, 0.01, zw))
    m.op("FULLY_CONNECTED", [x, w, m.const(bias(n, n), bias_q(0.1, 0.01))], [y], fused_activation_function=act,
         keep_num_dims=keep)
    check_exact(m.build(y))


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("hw,k,stride,cin,cout", [
    (7, 1, 1, 40, 200), (14, 1, 1, 24, 72), (7, 3, 1, 16, 90), (9, 3, 2, 3, 40), (33, 1, 1, 9, 33)])
def test_conv2d_split_between_threads(threads, hw, k, stride, cin, cout):
    """Small maps split their weight panels between the threads as well as their pixels, so a
    task writes (and flips back) a block of channels of its rows; large maps split pixels."""
    m = QModel()
    x = m.input((1, hw, hw, cin), Q(U8, 0.04, 131))
    o = -(-hw // stride)
    y = m.tensor((1, o, o, cout), Q(U8, 0.3, 120))
    w = m.const(uweights((cout, k, k, cin), 77, cin), Q(U8, 0.01, 77))
    m.op("CONV_2D", [x, w, m.const(bias(cout, cout), bias_q(0.04, 0.01))], [y], padding="SAME", stride_w=stride,
         stride_h=stride, fused_activation_function="RELU")
    check_exact(m.build(y), num_threads=threads)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("batch", [1, 5, 70])
def test_fully_connected_split_between_threads(threads, batch):
    m = QModel()
    x = m.input((batch, 96), Q(U8, 0.1, 3))
    y = m.tensor((batch, 250), Q(U8, 0.5, 130))
    m.op("FULLY_CONNECTED", [x, m.const(uweights((250, 96), 140, 1), Q(U8, 0.01, 140)),
                             m.const(bias(250, 3), bias_q(0.1, 0.01))], [y])
    check_exact(m.build(y), num_threads=threads)


def edge_layer(op, real, s_out, act, zx, zw, zy, seed=7):
    """A 3x3 conv / depthwise or an FC whose real multiplier is `real` (s_in 0.5: s_w follows)."""
    rng = np.random.default_rng(seed)
    s_in, s_out = 0.5, float(np.float32(s_out))
    s_w = float(np.float32(real * s_out / s_in))
    m = QModel()
    b = m.const(rng.integers(-50, 50, 4).astype(np.int32), bias_q(s_in, s_w))
    if op == "FULLY_CONNECTED":
        x, y = m.input((6, 36), Q(U8, s_in, zx)), m.tensor((6, 4), Q(U8, s_out, zy))
        m.op(op, [x, m.const(uweights((4, 36), zw, seed, 2), Q(U8, s_w, zw)), b], [y], fused_activation_function=act)
        return m.build(y)
    x, y = m.input((1, 5, 6, 4), Q(U8, s_in, zx)), m.tensor((1, 5, 6, 4), Q(U8, s_out, zy))
    wshape = (1, 3, 3, 4) if op == "DEPTHWISE_CONV_2D" else (4, 3, 3, 4)
    w = m.const(uweights(wshape, zw, seed, 2), Q(U8, s_w, zw, 3 if op == "DEPTHWISE_CONV_2D" else 0))
    extra = {"depth_multiplier": 1} if op == "DEPTHWISE_CONV_2D" else {}
    m.op(op, [x, w, b], [y], padding="SAME", stride_w=1, stride_h=1, fused_activation_function=act, **extra)
    return m.build(y)


# (real multiplier, output scale, activation): left shifts (2^0 .. 2^20: the accumulator << shift
# overflows int32, which gemmlowp saturates and ruy wraps), a multiplier past 2^16, multipliers
# that flush to zero, and a tiny output scale whose RELU6 bound is huge
EDGES = [(3.0, 0.5, "NONE"), (1024.5, 0.25, "RELU"), (2.0**20, 1.0, "NONE"), (70001.0, 1.0, "RELU6"),
         (2.0**-33, 0.5, "NONE"), (2.0**-31, 0.5, "RELU"), (0.3, 1e-4, "RELU6"), (0.7, 3e5, "RELU6")]


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"])
@pytest.mark.parametrize("zx,zw,zy", [(0, 200, 255), (255, 0, 0), (128, 255, 3)])
@pytest.mark.parametrize("real,s_out,act", EDGES)
def test_saturation_edges(op, zx, zw, zy, real, s_out, act):
    check_exact(edge_layer(op, real, s_out, act, zx, zw, zy), seeds=(0, 1, 2))


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"])
def test_legacy_float_product_multiplier(op):
    """uint8 layers requantize with GetQuantizedConvolutionMultipler's multiplier, the product
    s_in * s_w taken in float: accumulators at the output's rounding boundaries where that and
    the double product disagree give stock's bytes (1x1 windows, weight - zw = 1)."""
    s_in, s_w, s_out = LEGACY_SCALES
    acc = legacy_product_accumulators(quant_rounding.detect()[(op, "uint8")].rounding)
    c = acc.size
    m = QModel()
    every = np.arange(256, dtype=U8)  # x - zx = 100 at x = 100 hits every accumulator
    b = m.const((acc - 100).astype(np.int32), bias_q(s_in, s_w))
    if op == "FULLY_CONNECTED":
        x, y, xs = m.input((256, 1), Q(U8, s_in, 0)), m.tensor((256, c), Q(U8, s_out, 128)), every.reshape(256, 1)
        m.op(op, [x, m.const(np.full((c, 1), 129), Q(U8, s_w, 128)), b], [y])
    elif op == "CONV_2D":
        x, y = m.input((1, 16, 16, 1), Q(U8, s_in, 0)), m.tensor((1, 16, 16, c), Q(U8, s_out, 128))
        xs = every.reshape(1, 16, 16, 1)
        m.op(op, [x, m.const(np.full((c, 1, 1, 1), 129), Q(U8, s_w, 128)), b], [y], padding="VALID", stride_w=1,
             stride_h=1)
    else:
        x, y = m.input((1, 16, 16, c), Q(U8, s_in, 0)), m.tensor((1, 16, 16, c), Q(U8, s_out, 128))
        xs = np.repeat(every.reshape(1, 16, 16, 1), c, axis=3)
        m.op(op, [x, m.const(np.full((1, 1, 1, c), 129), Q(U8, s_w, 128, 3)), b], [y], padding="VALID", stride_w=1,
             stride_h=1, depth_multiplier=1)
    check_exact(m.build(y), inputs=[xs], seeds=(0,))


def test_output_zero_point_wrap_is_left_to_stock():
    """Stock adds the output zero point zy to the requantized value in wrapping int32; the int8
    domain adds zy - 128, so the two clamp differently where that value comes within 2^8 of an
    int32 limit. That takes no right shift and a multiplier within 2^8 of 2^31 (here
    2 * (1 - 2^-24): m = 2^31 - 128, shift 1), and such layers stay with stock: its bytes are
    what the int8 domain would get wrong here (accumulators near 2^30: shifted to the int32 limit)."""
    s_in, s_w = 2.0, float(np.float32(1 - 2.0**-24))
    zy = 200
    m = QModel()
    x, y = m.input((1, 1, 8, 1), Q(U8, s_in, 0)), m.tensor((1, 1, 8, 1), Q(U8, 1.0, zy))
    b = (1 << 30) - 4
    w = m.const(np.full((1, 1, 1, 1), 129), Q(U8, s_w, 128))  # w - zw = 1
    m.op("CONV_2D", [x, w, m.const(np.array([b], np.int32), bias_q(s_in, s_w))], [y], padding="VALID", stride_w=1,
         stride_h=1)
    xs = np.arange(8, dtype=U8).reshape(1, 1, 8, 1)
    stats = check_exact(m.build(y), inputs=[xs], seeds=(0,), delegated=False)
    assert stats["nodes_delegated"] == 0 and "wraps" in stats["fallback"][0]["reason"], stats
    # the case is real: stock's formula and the int8 domain's part ways on these accumulators
    rule = quant_rounding.detect()[("CONV_2D", "uint8")].rounding
    r = quant_rounding.requant(b + np.arange(8), 2**31 - 128, 1, rule)
    wrap = lambda v: (v + 2**31) % 2**32 - 2**31  # noqa: E731
    stock = np.clip(wrap(r + zy), 0, 255)
    int8_domain = np.clip(wrap(r + zy - 128), -128, 127) + 128
    assert np.array_equal(stock, invoke(make_interpreter(m.build(y)), [xs])[0].reshape(-1))
    assert not np.array_equal(stock, int8_domain)


@pytest.mark.parametrize("case", ["per-channel weights", "bias scale"])
def test_models_stock_refuses_are_not_claimed(case):
    """uint8 weights with per-channel scales, or a bias scale off s_in * s_w by more than 2% of
    the output scale: stock refuses the model, and with the delegate it is refused the same way
    (the delegate leaves the node to stock, never answers in its place)."""
    m = QModel()
    x, y = m.input((1, 4, 4, 3), Q(U8, 0.1, 128)), m.tensor((1, 4, 4, 2), Q(U8, 0.01, 128))
    wq = Q(U8, (0.01, 0.02), (128, 128), 0) if case == "per-channel weights" else Q(U8, 0.01, 128)
    bq = Q(np.int32, 0.5 if case == "bias scale" else 0.001, 0)
    m.op("CONV_2D", [x, m.const(np.full((2, 1, 1, 3), 130), wq), m.const(np.zeros(2, np.int32), bq)], [y],
         padding="VALID", stride_w=1, stride_h=1)
    model = m.build(y)
    with pytest.raises(RuntimeError):
        make_interpreter(model)
    d = load_flex()
    with pytest.raises(RuntimeError):
        make_interpreter(model, delegate=d)
    reasons = [f["reason"] for f in d.stats()["fallback"]]
    assert d.stats()["nodes_delegated"] == 0 and reasons, d.stats()
    assert ("per-channel" if case == "per-channel weights" else "bias scale") in reasons[0], reasons


def test_packed_weights_are_cached_mapped_warm_and_keyed_by_the_weight_zero_point(tmp_path):
    """A warm load maps the uint8 layers' blobs (packing nothing) and gives the same bytes; the
    same weight bytes under another weight zero point pack anew (the zero point is folded into
    the packed bias), so nothing stale is mapped."""
    def model(zw):
        m = QModel()
        x = m.input((1, 8, 8, 8), Q(U8, 0.05, 130))
        h = m.tensor((1, 8, 8, 16), Q(U8, 0.2, 120))
        w = np.random.default_rng(1).integers(0, 256, (16, 3, 3, 8))
        m.op("CONV_2D", [x, m.const(w, Q(U8, 0.01, zw)), m.const(bias(16, 1), bias_q(0.05, 0.01))], [h],
             padding="SAME", stride_w=1, stride_h=1)
        d = m.tensor((1, 8, 8, 16), Q(U8, 0.2, 125))
        m.op("DEPTHWISE_CONV_2D", [h, m.const(uweights((1, 3, 3, 16), 99, 2), Q(U8, 0.02, 99, 3)),
                                   m.const(bias(16, 2), bias_q(0.2, 0.02))], [d], padding="SAME", stride_w=1,
             stride_h=1, depth_multiplier=1)
        y = m.tensor((1, 10), Q(U8, 0.5, 128))
        flat = m.tensor((1, 1024), Q(U8, 0.2, 125))
        m.op("RESHAPE", [d, m.const(np.array([1, 1024], np.int32))], [flat], new_shape=[1, 1024])
        m.op("FULLY_CONNECTED", [flat, m.const(uweights((10, 1024), 60, 3), Q(U8, 0.001, 60)),
                                 m.const(bias(10, 3), bias_q(0.2, 0.001))], [y])
        return m.build(y)

    path = str(tmp_path / "u8.fxc")
    cold = check_exact(model(100), flex={"cache_path": path})["cache"]
    warm = check_exact(model(100), flex={"cache_path": path})["cache"]
    assert cold["blobs_packed"] == 3 and cold["blobs_mapped"] == 0, cold
    assert warm["blobs_mapped"] == 3 and warm["blobs_packed"] == 0, warm
    other = check_exact(model(101), flex={"cache_path": path})["cache"]
    assert other["blobs_packed"] == 1 and other["blobs_mapped"] == 2, other  # the conv's weights


def test_the_runtime_refuses_a_uint8_step_with_too_small_a_scratch(tmp_path, monkeypatch):
    """Under a budget each step of a uint8 layer flips the whole input into its scratch slot; the
    C loader checks that slot against the input's size whatever the planner hands it: one
    line, never run."""
    model = q8_conv_model(dtype=U8)
    cache = str(tmp_path / "u8.fxc")
    lo = min_budget(model, cache)
    with scratch_shrunk(monkeypatch, lambda s: s[11] > 64), pytest.raises(ValueError, match="scratch slot too small"):
        make_interpreter(model, delegate=load_flex(budget=lo + 0.5, cache_path=cache))


def test_fused_swish_after_a_uint8_conv():
    """An integer swish (MUL(x, LOGISTIC(x))) on a uint8 conv's output is looked up per output
    tile by the conv (fuse.c): after that tile is flipped back to uint8."""
    m = QModel()
    x = m.input((1, 12, 12, 8), Q(U8, 0.05, 128))
    c = m.tensor((1, 12, 12, 24), Q(U8, 0.1, 140))
    w = m.const(uweights((24, 1, 1, 8), 128, 5), Q(U8, 0.02, 128))
    m.op("CONV_2D", [x, w, m.const(bias(24, 5), bias_q(0.05, 0.02))], [c], padding="SAME", stride_w=1, stride_h=1)
    s = m.tensor((1, 12, 12, 24), Q(U8, 1.0 / 256, 0))
    m.op("LOGISTIC", [c], [s])
    y = m.tensor((1, 12, 12, 24), Q(U8, 0.08, 20))
    m.op("MUL", [c, s], [y])
    for threads in (1, 2):
        stats = check_exact(m.build(y), num_threads=threads)
        assert any("+swish" in op["kernel"] for op in stats["ops"]), stats["ops"]


def mobilenet_v1_u8(seed=0):
    """A uint8 model as the old TFLite converter made them (MobileNet v1 quant): uint8 input ->
    CONV 3x3/2 RELU6 -> DEPTHWISE 3x3 RELU6 -> CONV 1x1 RELU6 -> DEPTHWISE 3x3/2 RELU6 -> CONV 1x1
    RELU6 -> ADD (a residual, as v2) -> AVERAGE_POOL (global) -> CONV 1x1 (the logits) -> RESHAPE
    -> SOFTMAX, uint8 throughout, per-tensor weights with their own zero points."""
    rng = np.random.default_rng(seed)
    m = QModel()

    def layer(op, x, sx, shape_in, cout, k, stride, zy, sy, act="RELU6"):
        n, h, w, cin = shape_in
        oh, ow = -(-h // stride), -(-w // stride)
        zw, sw = int(rng.integers(90, 170)), float(rng.uniform(0.005, 0.03))
        dw = op == "DEPTHWISE_CONV_2D"
        wshape = (1, k, k, cout) if dw else (cout, k, k, cin)
        y = m.tensor((n, oh, ow, cout), Q(U8, sy, zy))
        extra = {"depth_multiplier": 1} if dw else {}
        m.op(op, [x, m.const(uweights(wshape, zw, int(rng.integers(1 << 30))), Q(U8, sw, zw, 3 if dw else 0)),
                  m.const(rng.integers(-1000, 1000, cout).astype(np.int32), bias_q(sx, sw))], [y],
             padding="SAME", stride_w=stride, stride_h=stride, fused_activation_function=act, **extra)
        return y, (n, oh, ow, cout)

    x = m.input((1, 32, 32, 3), Q(U8, 1 / 128, 128))
    a, s = layer("CONV_2D", x, 1 / 128, (1, 32, 32, 3), 16, 3, 2, 0, 0.0235)
    d, s = layer("DEPTHWISE_CONV_2D", a, 0.0235, s, 16, 3, 1, 0, 0.0235)
    p, s = layer("CONV_2D", d, 0.0235, s, 24, 1, 1, 0, 0.0235)
    d, s = layer("DEPTHWISE_CONV_2D", p, 0.0235, s, 24, 3, 2, 0, 0.0235)
    p, s = layer("CONV_2D", d, 0.0235, s, 24, 1, 1, 0, 0.0235)
    r = m.tensor(s, Q(U8, 0.047, 0))
    q, _ = layer("CONV_2D", p, 0.0235, s, 24, 1, 1, 0, 0.0235)
    m.op("ADD", [p, q], [r])
    pool = m.tensor((1, 1, 1, 24), Q(U8, 0.047, 0))
    m.op("AVERAGE_POOL_2D", [r], [pool], padding="VALID", stride_w=8, stride_h=8, filter_width=8, filter_height=8)
    logits, _ = layer("CONV_2D", pool, 0.047, (1, 1, 1, 24), 10, 1, 1, 140, 0.1, act="NONE")
    flat = m.tensor((1, 10), Q(U8, 0.1, 140))
    m.op("RESHAPE", [logits, m.const(np.array([1, 10], np.int32))], [flat], new_shape=[1, 10])
    y = m.tensor((1, 10), Q(U8, 1 / 256, 0))
    m.op("SOFTMAX", [flat], [y], beta=1.0)
    return m.build(y)


@pytest.mark.parametrize("threads", [1, 2])
def test_converter_like_uint8_graph_is_one_partition(threads):
    stats = check_exact(mobilenet_v1_u8(), seeds=(0, 1, 2), num_threads=threads)
    assert stats["partitions"] == 1, stats


VARIANT = textwrap.dedent("""
    import sys; sys.path[:0] = {paths!r}
    from test_qu8_conv import mobilenet_v1_u8
    from flexdelegate import _native_testing
    from qopcheck import check_exact
    assert _native_testing.chosen("qs8-gemm").endswith("-" + {isa!r}), _native_testing.chosen("qs8-gemm")
    stats = check_exact(mobilenet_v1_u8(), seeds=(0,), num_threads=2)
    print("OK", stats["partitions"], _native_testing.chosen("qs8-gemm"), _native_testing.chosen("qs8-dwconv"))
""")


GEMM_ISAS = sorted({n.rsplit("-", 1)[1] for n in _native_testing.variants("qs8-gemm")})
PATHS = [TESTS, os.path.dirname(os.path.abspath(__file__))]


def under_isa(isa: str, code: str) -> str:
    """stdout of `code` in a python whose GEMM variant FLEXDELEGATE_ISA narrows to isa's."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "FLEXDELEGATE_ISA": isa})
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-3000:]
    return r.stdout


@pytest.mark.parametrize("isa", GEMM_ISAS)
def test_every_gemm_variant_through_the_delegate(isa):
    """The GEMM variant the delegate picks is the CPU's best (AMX here, a range kernel running
    every conv as im2col); FLEXDELEGATE_ISA narrows it, so each variant's uint8 path (row
    corrections, a_offset packing, flipped input) runs the converter-like model once."""
    assert "OK 1" in under_isa(isa, VARIANT.format(paths=PATHS, isa=isa))


CACHED = textwrap.dedent("""
    import sys; sys.path[:0] = {paths!r}
    from test_qu8_conv import mobilenet_v1_u8
    from qopcheck import check_exact
    stats = check_exact(mobilenet_v1_u8(), seeds=(0,), flex={{"cache_path": {cache!r}}})
    print("OK", stats["cache"]["blobs_packed"], stats["cache"]["blobs_mapped"])
""")


def test_a_cache_packed_for_another_variant_is_repacked(tmp_path):
    """One cache file, loads under two GEMM variants (FLEXDELEGATE_ISA): each variant's panels
    (tile, k-group, a_offset) are keyed apart, so the second load packs its own rather than
    reading the first's as its layout (what a cache written before 8x16c4 became 8x16c8 meets),
    and both answer as stock; a third load under the second variant maps everything."""
    isas = [isa for isa in GEMM_ISAS if isa != "scalar"]
    if len(isas) < 2:
        pytest.skip("one SIMD GEMM variant on this CPU")
    first, second = isas[0], isas[-1]
    code = CACHED.format(paths=PATHS, cache=str(tmp_path / "m.fxc"))

    def load(isa):
        return [int(v) for v in under_isa(isa, code).split("OK", 1)[1].split()[:2]]

    assert load(first)[0] > 0
    packed, _ = load(second)
    assert packed > 0, (first, second)  # the first variant's GEMM panels are not this one's
    assert load(second)[0] == 0


def test_uint8_input_through_quantize_and_back():
    """A float model quantized to uint8 at its edges (QUANTIZE -> uint8 CONV -> uint8 FC ->
    DEQUANTIZE), one partition, every node delegated."""
    m = QModel()
    f = m.input((1, 6, 6, 4), F32)
    x = m.tensor((1, 6, 6, 4), Q(U8, 0.03, 128))
    m.op("QUANTIZE", [f], [x])
    c = m.tensor((1, 6, 6, 8), Q(U8, 0.1, 120))
    w = m.const(uweights((8, 3, 3, 4), 135, 9), Q(U8, 0.01, 135))
    m.op("CONV_2D", [x, w, m.const(bias(8, 9), bias_q(0.03, 0.01))], [c], padding="SAME", stride_w=1, stride_h=1,
         fused_activation_function="RELU")
    flat = m.tensor((1, 288), Q(U8, 0.1, 120))
    m.op("RESHAPE", [c, m.const(np.array([1, 288], np.int32))], [flat], new_shape=[1, 288])
    z = m.tensor((1, 12), Q(U8, 0.4, 128))
    m.op("FULLY_CONNECTED", [flat, m.const(uweights((12, 288), 110, 4), Q(U8, 0.002, 110)),
                             m.const(bias(12, 4), bias_q(0.1, 0.002))], [z])
    y = m.tensor((1, 12), F32)
    m.op("DEQUANTIZE", [z], [y])
    stats = check_exact(m.build(y))
    assert stats["partitions"] == 1, stats
