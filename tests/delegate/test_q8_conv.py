"""int8 CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED and QUANTIZE / DEQUANTIZE through the
delegate, bit for bit against the stock reference of the runtime in use (its rounding found by
quant_rounding.detect() and passed by load_flex), every node delegated."""
import numpy as np
import pytest

from flexdelegate import _native, _native_testing, library_path
from flexdelegate.quant_rounding import AWAY, Q_AWAY, SINGLE, UP
from flexdelegate.run import make_interpreter
from flexdelegate.runtime import detect
from qopcheck import F32, Q, QModel, check_exact

S8, U8 = np.int8, np.uint8
ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def weights(shape, seed):
    return np.random.default_rng(seed).integers(-127, 128, shape).astype(np.int8)


def wq(scale, cout, per_channel, axis):
    if not per_channel:
        return Q(S8, scale, 0)
    s = tuple(float(v) for v in scale * np.linspace(0.5, 1.5, cout))
    return Q(S8, s, (0,) * cout, axis)


def bias(cout, seed):
    return np.random.default_rng(seed + 7).integers(-3000, 3000, cout).astype(np.int32)


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("k,stride,dil,padding,cin,cout", [
    (3, 1, 1, "SAME", 8, 16), (3, 2, 1, "SAME", 3, 24), (1, 1, 1, "VALID", 16, 20),
    (3, 1, 2, "VALID", 5, 7), (5, 2, 1, "VALID", 4, 9), (1, 2, 1, "SAME", 12, 8)])
def test_conv2d(per_channel, act, k, stride, dil, padding, cin, cout):
    m = QModel()
    x = m.input((2, 11, 9, cin), Q(S8, 0.04, -5))
    H, W = 11, 9
    if padding == "SAME":
        oh, ow = -(-H // stride), -(-W // stride)
    else:
        ek = (k - 1) * dil + 1
        oh, ow = (H - ek) // stride + 1, (W - ek) // stride + 1
    y = m.tensor((2, oh, ow, cout), Q(S8, 0.3, 4))
    w = m.const(weights((cout, k, k, cin), cin), wq(0.01, cout, per_channel, 0))
    b = m.const(bias(cout, cout), Q(np.int32, 0.04 * 0.01, 0))
    m.op("CONV_2D", [x, w, b], [y], padding=padding, stride_w=stride, stride_h=stride,
         dilation_w_factor=dil, dilation_h_factor=dil, fused_activation_function=act)
    check_exact(m.build(y))


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("k,stride,padding,cin,mult", [
    (3, 1, "SAME", 16, 1), (3, 2, "SAME", 9, 1), (5, 1, "VALID", 12, 1), (3, 1, "SAME", 4, 2),
    (3, 2, "VALID", 3, 3), (3, 1, "SAME", 21, 1)])
def test_depthwise(act, k, stride, padding, cin, mult):
    m = QModel()
    H, W = 10, 12
    x = m.input((1, H, W, cin), Q(S8, 0.05, 7))
    oh, ow = (-(-H // stride), -(-W // stride)) if padding == "SAME" else ((H - k) // stride + 1, (W - k) // stride + 1)
    cout = cin * mult
    y = m.tensor((1, oh, ow, cout), Q(S8, 0.2, -10))
    w = m.const(weights((1, k, k, cout), cout), wq(0.02, cout, True, 3))
    b = m.const(bias(cout, 3), Q(np.int32, 0.001, 0))
    m.op("DEPTHWISE_CONV_2D", [x, w, b], [y], padding=padding, stride_w=stride, stride_h=stride,
         depth_multiplier=mult, fused_activation_function=act)
    check_exact(m.build(y))


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("batch,k,n,keep", [(1, 64, 10, False), (5, 33, 17, False), (3, 20, 40, True)])
def test_fully_connected(act, batch, k, n, keep):
    m = QModel()
    xs = (batch, 2, k) if keep else (batch, k)
    ys = (batch, 2, n) if keep else ((batch * 2 if keep else batch), n)
    x = m.input(xs, Q(S8, 0.1, 3))
    y = m.tensor(ys, Q(S8, 0.5, -2))
    w = m.const(weights((n, k), n), Q(S8, 0.01, 0))
    b = m.const(bias(n, n), Q(np.int32, 0.001, 0))
    m.op("FULLY_CONNECTED", [x, w, b], [y], fused_activation_function=act, keep_num_dims=keep)
    check_exact(m.build(y))


def test_fully_connected_per_tensor_takes_the_legacy_float_product():
    """Stock's int8 FULLY_CONNECTED with per-tensor weights requantizes with
    GetQuantizedConvolutionMultipler's multiplier, whose s_in * s_w is a float product (the
    per-channel form and the convs take the double product): accumulators near the output's
    rounding boundaries, where the two multipliers disagree, give stock's bytes."""
    from flexdelegate import quant_rounding
    from qopcheck import LEGACY_SCALES, legacy_product_accumulators
    s_in, s_w, s_out = LEGACY_SCALES
    acc = legacy_product_accumulators(quant_rounding.detect()[("FULLY_CONNECTED", "int8")].rounding)
    assert acc.size > 40
    m = QModel()
    x = m.input((256, 1), Q(S8, s_in, 0))
    y = m.tensor((256, acc.size), Q(S8, s_out, 0))
    w = m.const(np.ones((acc.size, 1), np.int8), Q(S8, s_w, 0))
    b = m.const((acc - 100).astype(np.int32), Q(np.int32, float(np.float32(s_in) * np.float32(s_w)), 0))
    m.op("FULLY_CONNECTED", [x, w, b], [y])
    every = np.arange(-128, 128, dtype=np.int8).reshape(256, 1)  # row 228 (x = 100) hits acc
    check_exact(m.build(y), inputs=[every], seeds=(0,))


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("hw,k,stride,cin,cout", [
    (7, 1, 1, 40, 200), (14, 1, 1, 24, 72), (7, 3, 1, 16, 90), (9, 3, 2, 3, 40), (33, 1, 1, 9, 33)])
def test_conv2d_split_between_threads(threads, hw, k, stride, cin, cout):
    """Small maps split their weight panels between the threads as well as their pixels (the
    task grid of ir/qlayer.c), large ones their pixels in 16 chunks per thread; the float input
    is quantized in pieces too (33 x 33 x 9 values: 1 past the last whole 8, under
    the tail rounding). Every split gives stock's bytes."""
    m = QModel()
    f = m.input((1, hw, hw, cin), F32)
    x = m.tensor((1, hw, hw, cin), Q(S8, 0.04, -5))
    m.op("QUANTIZE", [f], [x])
    o = -(-hw // stride)
    y = m.tensor((1, o, o, cout), Q(S8, 0.3, 4))
    w = m.const(weights((cout, k, k, cin), cin), wq(0.01, cout, True, 0))
    b = m.const(bias(cout, cout), Q(np.int32, 0.04 * 0.01, 0))
    m.op("CONV_2D", [x, w, b], [y], padding="SAME", stride_w=stride, stride_h=stride, fused_activation_function="RELU")
    check_exact(m.build(y), num_threads=threads)


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("hw,k,stride,c,batch", [
    (7, 3, 1, 960, 1), (14, 3, 2, 90, 1), (5, 5, 1, 200, 2), (28, 3, 1, 40, 1), (56, 3, 1, 24, 1)])
def test_depthwise_split_between_threads(threads, hw, k, stride, c, batch):
    """A depthwise layer's rows split between the threads, 4 rows a task or fewer where that
    would leave a thread idle: 7x7 x 960 (4 + 3 rows, 3 + 3 + 1), 14x14 with LiteRT's tail
    channels (90 = 11 x 8 + 2), 5x5 over two images (tasks across the images' boundary). Every
    split gives stock's bytes."""
    m = QModel()
    x = m.input((batch, hw, hw, c), Q(S8, 0.05, 7))
    o = -(-hw // stride)
    y = m.tensor((batch, o, o, c), Q(S8, 0.2, -10))
    w = m.const(weights((1, k, k, c), c), wq(0.02, c, True, 3))
    m.op("DEPTHWISE_CONV_2D", [x, w, m.const(bias(c, 3), Q(np.int32, 0.001, 0))], [y], padding="SAME",
         stride_w=stride, stride_h=stride, depth_multiplier=1, fused_activation_function="RELU6")
    check_exact(m.build(y), num_threads=threads)


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("batch", [1, 5, 70])
def test_fully_connected_split_between_threads(threads, batch):
    """A classifier head's one row splits panels; many rows split rows, a few both."""
    m = QModel()
    x = m.input((batch, 96), Q(S8, 0.1, 3))
    y = m.tensor((batch, 250), Q(S8, 0.5, -2))
    m.op("FULLY_CONNECTED", [x, m.const(weights((250, 96), 1), Q(S8, 0.01, 0)), m.const(bias(250, 3), Q(np.int32, 0.001, 0))],
         [y])
    check_exact(m.build(y), num_threads=threads)


@pytest.mark.parametrize("dtype,zp", [(S8, -3), (S8, 127), (U8, 128), (U8, 0)])
@pytest.mark.parametrize("count", [8, 13, 1000])
def test_quantize_dequantize(dtype, zp, count):
    """float -> int (ties, near-ties, out of range values) -> float."""
    m = QModel()
    x = m.input((1, count), F32)
    q = m.tensor((1, count), Q(dtype, 0.1, zp))
    y = m.tensor((1, count), F32)
    m.op("QUANTIZE", [x], [q])
    m.op("DEQUANTIZE", [q], [y])

    def inputs(it, seed):
        rng = np.random.default_rng(seed)
        v = (rng.integers(-300, 300, count) + 0.5) * np.float32(0.1)
        v = np.where(rng.random(count) < 0.5, v, rng.standard_normal(count) * 20)
        v[: min(count, 3)] = [np.inf, -np.inf, np.nan][: min(count, 3)] if seed else v[: min(count, 3)]
        return [v.astype(np.float32).reshape(1, count)]

    check_exact(m.build(y), inputs=inputs)


@pytest.mark.parametrize("src,dst", [(U8, S8), (S8, U8), (S8, S8)])
def test_requantize_equal_scales(src, dst):
    m = QModel()
    x = m.input((1, 4, 4, 8), Q(src, 0.05, 128 if src == U8 else 0))
    y = m.tensor((1, 4, 4, 8), Q(dst, 0.05, 0 if dst == S8 else 128))
    m.op("QUANTIZE", [x], [y])
    check_exact(m.build(y))


def test_without_rounding_table_int8_layers_stay_with_stock():
    """A plugin created without the internal option (a C/C++ host) does not guess the stock
    rounding: the int8 conv falls back with that reason; the layout op next to it, an island
    with no arithmetic, then stays with stock too (tflite/islands.c)."""
    m = QModel()
    x = m.input((1, 6, 6, 4), Q(S8, 0.05, 0))
    y = m.tensor((1, 6, 6, 8), Q(S8, 0.2, 0))
    m.op("CONV_2D", [x, m.const(weights((8, 3, 3, 4), 1), Q(S8, 0.01, 0)), m.const(bias(8, 1), Q(np.int32, 0.0005, 0))],
         [y], padding="SAME", stride_w=1, stride_h=1)
    z = m.tensor((1, 36, 8), Q(S8, 0.2, 0))
    m.op("RESHAPE", [y, m.const(np.array([1, 36, 8], np.int32))], [z], new_shape=[1, 36, 8])
    rt = detect()
    plugin = rt.load_delegate(library_path(), {})
    it = make_interpreter(m.build(z), runtime=rt.name)  # the stock reference (no delegate)
    it = rt.Interpreter(model_content=m.build(z), experimental_delegates=[plugin],
                        experimental_op_resolver_type=rt.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    it.invoke()
    st = _native.stats(plugin._get_native_delegate_pointer())
    reasons = {f["op"]: f["reason"] for f in st["fallback"]}
    assert st["nodes_delegated"] == 0 and "rounding" in reasons["CONV_2D"], st
    assert reasons["RESHAPE"].startswith("island too small"), st


@pytest.mark.parametrize("bad", ["CONV_2D", "CONV_2D.int8", "CONV_2D.int8=9", f"NOT_AN_OP.int8={UP}",
                                 f"CONV_2D.int4={UP}", f"CONV_2D.int8={UP}:{SINGLE}", f"CONV_2D.int8={UP},",
                                 f"CONV_2D.int8={UP}x"])
def test_rounding_option_refuses_malformed_text(bad):
    with pytest.raises(ValueError, match="invalid _rounding"):
        _native.check_option("_rounding", bad)


def test_rounding_option_is_internal():
    _native.check_option("_rounding", f"CONV_2D.int8={UP},DEPTHWISE_CONV_2D.int8={UP}:{AWAY},QUANTIZE.uint8={Q_AWAY}")
    _native.check_option("_rounding", "")
    assert "_rounding" not in _native.OPTIONS
    from flexdelegate import load_flex
    with pytest.raises(ValueError, match="unknown option"):
        load_flex(_rounding=f"CONV_2D.int8={UP}")


@pytest.mark.parametrize("zx,zy,sy", [(-128, 127, 0.3), (127, -128, 0.3), (0, 0, 1e-4), (5, -5, 500.0), (-128, -128, 3e-3)])
def test_conv_saturation_edges(zx, zy, sy):
    """Zero points at the ends of int8, outputs saturating both ways, a huge and a tiny real
    multiplier (the tiny one flushes to 0 as QuantizeMultiplier does)."""
    m = QModel()
    x = m.input((1, 6, 6, 8), Q(S8, 0.5, zx))
    y = m.tensor((1, 6, 6, 16), Q(S8, sy, zy))
    w = m.const(weights((16, 3, 3, 8), 5), wq(0.05, 16, True, 0))
    m.op("CONV_2D", [x, w, m.const(bias(16, 2), Q(np.int32, 0.025, 0))], [y], padding="SAME", stride_w=1,
         stride_h=1, fused_activation_function="RELU6")
    check_exact(m.build(y))


def test_multiplier_of_2_pow_30_is_left_to_stock():
    m = QModel()
    x = m.input((1, 4, 4, 4), Q(S8, 1.0, 0))
    y = m.tensor((1, 4, 4, 4), Q(S8, 1e-9, 0))
    w = m.const(weights((4, 1, 1, 4), 2), Q(S8, 1.5, 0))
    m.op("CONV_2D", [x, w, m.const(np.zeros(4, np.int32), Q(np.int32, 1.5, 0))], [y], padding="VALID",
         stride_w=1, stride_h=1)
    stats = check_exact(m.build(y), delegated=False)
    assert stats["nodes_delegated"] == 0 and "2^30" in stats["fallback"][0]["reason"], stats


def test_converter_like_int8_graph_is_one_partition():
    """QUANTIZE in -> CONV (stride 2) -> DEPTHWISE -> 1x1 CONV -> ADD residual -> MAX_POOL -> PAD ->
    RESHAPE -> FC -> SOFTMAX -> DEQUANTIZE out, as converters emit: every node delegated, one
    partition, bit-identical."""
    rng = np.random.default_rng(3)
    m = QModel()
    x = m.input((1, 16, 16, 3), F32)
    q = m.tensor((1, 16, 16, 3), Q(S8, 0.02, -1))
    m.op("QUANTIZE", [x], [q])
    a = m.tensor((1, 8, 8, 16), Q(S8, 0.05, -128))
    m.op("CONV_2D", [q, m.const(weights((16, 3, 3, 3), 1), wq(0.01, 16, True, 0)), m.const(bias(16, 1), Q(np.int32, 2e-4, 0))],
         [a], padding="SAME", stride_w=2, stride_h=2, fused_activation_function="RELU6")
    d = m.tensor((1, 8, 8, 16), Q(S8, 0.05, -128))
    m.op("DEPTHWISE_CONV_2D", [a, m.const(weights((1, 3, 3, 16), 2), wq(0.02, 16, True, 3)), m.const(bias(16, 2), Q(np.int32, 1e-3, 0))],
         [d], padding="SAME", stride_w=1, stride_h=1, depth_multiplier=1, fused_activation_function="RELU6")
    p = m.tensor((1, 8, 8, 16), Q(S8, 0.08, 3))
    m.op("CONV_2D", [d, m.const(weights((16, 1, 1, 16), 3), wq(0.01, 16, True, 0)), m.const(bias(16, 3), Q(np.int32, 5e-4, 0))],
         [p], padding="VALID", stride_w=1, stride_h=1)
    r = m.tensor((1, 8, 8, 16), Q(S8, 0.1, 0))
    m.op("ADD", [p, a], [r])
    mp = m.tensor((1, 4, 4, 16), Q(S8, 0.1, 0))
    m.op("MAX_POOL_2D", [r], [mp], padding="VALID", stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    pd = m.tensor((1, 6, 6, 16), Q(S8, 0.1, 0))
    m.op("PAD", [mp, m.const(np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))], [pd])
    flat = m.tensor((1, 576), Q(S8, 0.1, 0))
    m.op("RESHAPE", [pd, m.const(np.array([1, 576], np.int32))], [flat], new_shape=[1, 576])
    logits = m.tensor((1, 10), Q(S8, 0.2, 5))
    m.op("FULLY_CONNECTED", [flat, m.const(weights((10, 576), 4), Q(S8, 0.002, 0)), m.const(bias(10, 4), Q(np.int32, 2e-4, 0))], [logits])
    sm = m.tensor((1, 10), Q(S8, 1.0 / 256, -128))
    m.op("SOFTMAX", [logits], [sm], beta=1.0)
    y = m.tensor((1, 10), F32)
    m.op("DEQUANTIZE", [sm], [y])
    stats = check_exact(m.build(y), seeds=(0, 1, 2))
    assert stats["partitions"] == 1, stats


@pytest.mark.parametrize("k,cin,cout", [(1, 16, 96), (1, 32, 24), (3, 3, 32), (1, 40, 24), (1, 64, 16), (3, 8, 8)])
def test_int8_gemm_variant_by_depth(k, cin, cout):
    """Layers at most 32 deep (kh * kw * cin) run on the AVX-512 VNNI tile where this CPU's
    choice is AMX (its 64-deep steps would be mostly padding: conv/choose.c); deeper ones on
    the CPU's choice; every one bit for bit as stock."""
    m = QModel()
    x = m.input((1, 20, 18, cin), Q(S8, 0.04, -5))
    y = m.tensor((1, 20, 18, cout), Q(S8, 0.3, 4))
    m.op("CONV_2D", [x, m.const(weights((cout, k, k, cin), cin), wq(0.01, cout, True, 0)),
                     m.const(bias(cout, cout), Q(np.int32, 0.04 * 0.01, 0))], [y],
         padding="SAME", stride_w=1, stride_h=1, fused_activation_function="RELU6")
    stats = check_exact(m.build(y), num_threads=2)
    chosen = _native_testing.chosen("qs8-gemm")
    vnni = [v for v in _native_testing.variants("qs8-gemm") if v.endswith("-avx512vnni")]
    want = vnni[0] if chosen.endswith("-amx") and k * k * cin <= 32 else chosen
    assert [o["kernel"] for o in stats["ops"]] == [f"conv2d_q8 {want}"], stats["ops"]
