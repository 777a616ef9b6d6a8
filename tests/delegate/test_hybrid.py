"""Dynamic-range ("hybrid") CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED: float32 activations,
int8 constant weights (scales per tensor or per output channel, zero point 0), float bias.

What "correct" is: the delegate runs these layers on its FP32 kernels from the weights
dequantized once at pack time (w = scale[c] * q), i.e. float math on the dequantized weights.
Stock's hybrid kernels instead quantize the activations to int8 on the fly, so stock differs
from float math by that rounding. So every case is compared with
  (a) the same model with float32 weights equal to the dequantized values, run by stock: to FP32
      tolerance (this is the answer we give);
  (b) stock on the hybrid model itself: within the error bound of stock's activation
      quantization (sum |w| x one activation quantization step, per output channel);
  (c) on LiteRT, where XNNPack runs hybrid FC / per-tensor conv itself (dynamically quantized),
      our RMS distance to stock is no larger than XNNPack's. tflite-runtime 2.14's XNNPack leaves
      hybrid nodes to stock, so (c) is LiteRT-only (CI's litert stage runs it).
Models are written by our writer at op version 1, which both runtimes load (converter-made
hybrid models use FULLY_CONNECTED version 12, which tflite-runtime 2.14 cannot load).
"""
import numpy as np
import pytest

from opcheck import TOL
from flexdelegate import load_flex
from flexdelegate.run import invoke, make_interpreter, max_error
from flexdelegate.runtime import detect
from flexdelegate.tflite.writer import ModelBuilder

F32 = np.float32
ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]
FP32_TOL = TOL  # the project's FP32 agreement (max_error: relative to max(1, max |ref|))
LITERT = detect().name == "ai_edge_litert"


class Hybrid:
    """A model writer whose layers take int8 weights, or (float_weights=True) the same weights
    dequantized to float32: the hybrid model and its float reference from one description."""

    def __init__(self, float_weights: bool):
        self.b, self.float_weights = ModelBuilder(), float_weights
        self.abs_w = []  # per layer: sum |w| per output channel (stock's error bound)

    def weights(self, q, scales, axis):
        scales = np.asarray(scales, F32)
        shape = [1] * q.ndim
        shape[axis] = -1
        w = (q.astype(F32) * scales.reshape(shape)).astype(F32)
        self.abs_w.append(np.abs(np.moveaxis(w, axis, 0)).reshape(q.shape[axis], -1).sum(1))
        if self.float_weights:
            return self.b.const(w)
        return self.b.const(q, scale=scales, zero_point=np.zeros(scales.size, np.int64), quantized_dimension=axis)

    def layer(self, op, x, q, scales, axis, bias, y_shape, **options):
        y = self.b.tensor(y_shape)
        self.b.op(op, [x, self.weights(q, scales, axis), self.b.const(np.asarray(bias, F32))], [y], **options)
        return y

    def build(self, *outputs):
        self.b.output(*outputs)
        return self.b.build()


def int8(shape, seed):
    return np.random.default_rng(seed).integers(-127, 128, shape).astype(np.int8)


def scales(n, per_channel, base=0.02):
    return base * np.linspace(0.5, 1.5, n) if per_channel else np.array([base])


def both(make):
    """(hybrid model, float reference model, that hybrid's per-layer sum |w|)."""
    h, f = Hybrid(False), Hybrid(True)
    return make(h), make(f), h.abs_w


def rms(a, b):
    return float(np.sqrt(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)))


def compare(model, ref_model, abs_w, x_shape, seed=0, stock_exact_scales=True):
    """Asserts (a) and (b) of the module doc for one-layer models; returns (stock, flex) outputs."""
    x = [np.random.default_rng(seed).uniform(-1, 1, x_shape).astype(F32)]
    d = load_flex(cache_path="")
    got = invoke(make_interpreter(model, delegate=d), x)[0]
    stats = d.stats()
    assert stats["fallback"] == [] and stats["nodes_delegated"] == stats["nodes_total"], stats
    assert stats["partitions"] == 1, stats
    want = invoke(make_interpreter(ref_model), x)[0]
    scale = max(1.0, float(np.abs(want).max()))
    assert max_error([want], [got]) <= FP32_TOL, max_error([want], [got])
    stock = invoke(make_interpreter(model), x)[0]
    if stock_exact_scales:
        # one int8 step of the activations is at most max|x| / 127 (symmetric) or its range /
        # 255 (asymmetric); rounding moves each by half of it
        step = float(np.abs(x[0]).max()) / 127
        bound = 0.5 * step * abs_w[0].max() * 1.001 + FP32_TOL * scale
        assert 0 < np.abs(got - stock).max() <= bound, (np.abs(got - stock).max(), bound)
    return stock, got


def conv(h, k, stride, dil, padding, cin, cout, per_channel, act, x_shape=(2, 9, 11)):
    x = h.b.input(x_shape + (cin,))
    H, W = x_shape[1:]
    if padding == "SAME":
        oh, ow = -(-H // stride), -(-W // stride)
    else:
        ek = (k - 1) * dil + 1
        oh, ow = (H - ek) // stride + 1, (W - ek) // stride + 1
    y = h.layer("CONV_2D", x, int8((cout, k, k, cin), cin + cout), scales(cout, per_channel), 0,
                np.linspace(-1, 1, cout), (x_shape[0], oh, ow, cout), padding=padding, stride_w=stride,
                stride_h=stride, dilation_w_factor=dil, dilation_h_factor=dil, fused_activation_function=act)
    return h.build(y)


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("k,stride,dil,padding,cin,cout", [
    (3, 1, 1, "SAME", 8, 16), (3, 2, 1, "SAME", 3, 24), (1, 1, 1, "VALID", 16, 20), (3, 1, 2, "VALID", 5, 7)])
def test_conv2d(per_channel, act, k, stride, dil, padding, cin, cout):
    model, ref, abs_w = both(lambda h: conv(h, k, stride, dil, padding, cin, cout, per_channel, act))
    compare(model, ref, abs_w, (2, 9, 11, cin))


def depthwise(h, k, stride, padding, cin, mult, act):
    H, W = 10, 12
    x = h.b.input((1, H, W, cin))
    oh, ow = (-(-H // stride), -(-W // stride)) if padding == "SAME" else ((H - k) // stride + 1, (W - k) // stride + 1)
    cout = cin * mult
    y = h.layer("DEPTHWISE_CONV_2D", x, int8((1, k, k, cout), cout), scales(cout, True), 3,
                np.linspace(-1, 1, cout), (1, oh, ow, cout), padding=padding, stride_w=stride, stride_h=stride,
                depth_multiplier=mult, fused_activation_function=act)
    return h.build(y)


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("k,stride,padding,cin,mult", [
    (3, 1, "SAME", 16, 1), (3, 2, "SAME", 9, 1), (5, 1, "VALID", 12, 1), (3, 1, "SAME", 4, 2)])
def test_depthwise_per_channel(act, k, stride, padding, cin, mult):
    """Stock's hybrid depthwise takes only per-channel scales (it refuses one scale for all)."""
    model, ref, abs_w = both(lambda h: depthwise(h, k, stride, padding, cin, mult, act))
    compare(model, ref, abs_w, (1, 10, 12, cin))


def fc(h, batch, k, n, per_channel, act, keep=False):
    xs = (batch, 2, k) if keep else (batch, k)
    x = h.b.input(xs)
    y = h.layer("FULLY_CONNECTED", x, int8((n, k), n + k), scales(n, per_channel, 0.01), 0,
                np.linspace(-1, 1, n), (batch, 2, n) if keep else (batch, n), keep_num_dims=keep,
                fused_activation_function=act)
    return h.build(y)


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("batch,k,n,keep", [(1, 64, 10, False), (5, 33, 17, False), (3, 20, 40, True)])
def test_fully_connected(per_channel, act, batch, k, n, keep):
    """Per-channel FC scales exist from FULLY_CONNECTED version 12, which tflite-runtime 2.14
    cannot load; its kernel (reached here through version 1) applies the first scale to every
    channel, so there the stock comparison (b) is left out: LiteRT's stock honours them."""
    model, ref, abs_w = both(lambda h: fc(h, batch, k, n, per_channel, act, keep))
    compare(model, ref, abs_w, (batch, 2, k) if keep else (batch, k), stock_exact_scales=LITERT or not per_channel)


def batch_matmul(h, x_shape, w_shape, adj_x, adj_y):
    """x @ w with an int8 constant right-hand side (the converter's dynamic-range BATCH_MATMUL:
    one scale per tensor)."""
    x = h.b.input(x_shape)
    q = int8(w_shape, sum(w_shape))
    w = h.weights(q, [0.02], 0)
    k_axis = -1 if adj_y else -2
    h.abs_w[-1] = np.abs(q.astype(F32) * F32(0.02)).sum(axis=k_axis).reshape(-1)  # per output column
    m = x_shape[-1] if adj_x else x_shape[-2]
    n = w_shape[-2] if adj_y else w_shape[-1]
    batch = np.broadcast_shapes(x_shape[:-2], w_shape[:-2])
    y = h.b.tensor(tuple(batch) + (m, n))
    h.b.op("BATCH_MATMUL", [x, w], [y], adj_x=adj_x, adj_y=adj_y)
    return h.build(y)


@pytest.mark.parametrize("x_shape,w_shape,adj_x,adj_y", [
    ((2, 8, 64), (2, 64, 48), False, False), ((2, 8, 64), (64, 48), False, False),
    ((1, 3, 5, 40), (3, 24, 40), False, True), ((2, 40, 6), (2, 40, 16), True, False)])
def test_batch_matmul_constant_int8_rhs(x_shape, w_shape, adj_x, adj_y):
    model, ref, abs_w = both(lambda h: batch_matmul(h, x_shape, w_shape, adj_x, adj_y))
    compare(model, ref, abs_w, x_shape)


def zero_point_conv():
    b = ModelBuilder()
    x = b.input((1, 6, 6, 4))
    y = b.tensor((1, 6, 6, 8))
    w = b.const(int8((8, 3, 3, 4), 1), scale=np.array([0.02], F32), zero_point=np.array([3]), quantized_dimension=0)
    b.op("CONV_2D", [x, w, b.const(np.zeros(8, F32))], [y], padding="SAME", stride_w=1, stride_h=1)
    b.output(y)
    return b.build(), (1, 6, 6, 4)


def per_channel_batch_matmul():
    b = ModelBuilder()
    x = b.input((2, 4, 16))
    y = b.tensor((2, 4, 8))
    w = b.const(int8((16, 8), 2), scale=np.linspace(0.01, 0.03, 8).astype(F32), zero_point=np.zeros(8, np.int64),
                quantized_dimension=1)
    b.op("BATCH_MATMUL", [x, w], [y])
    b.output(y)
    return b.build(), (2, 4, 16)


@pytest.mark.parametrize("make,reason", [
    (zero_point_conv, "hybrid int8 weights with a nonzero zero point (stock ignores it)"),
    (per_channel_batch_matmul, "hybrid BATCH_MATMUL with per-channel scales (stock applies one)")])
def test_what_stock_computes_otherwise_stays_with_stock(make, reason):
    """Stock's hybrid kernels ignore a weight zero point, and BATCH_MATMUL's apply one scale to
    every channel: such a layer is left to them (the same answer as without the delegate), with
    the reason."""
    model, x_shape = make()
    xs = [np.random.default_rng(0).uniform(-1, 1, x_shape).astype(F32)]
    d = load_flex(cache_path="")
    got = invoke(make_interpreter(model, delegate=d), xs)[0]
    assert [f["reason"] for f in d.stats()["fallback"]] == [reason]
    assert np.array_equal(got, invoke(make_interpreter(model), xs)[0])


def test_per_tensor_depthwise_is_refused_as_stock_refuses_it():
    """Stock's hybrid depthwise refuses one scale for all channels at Prepare: the delegate
    leaves the node, so the load fails as it does without the delegate (no answer stock would
    not give)."""
    b = ModelBuilder()
    x = b.input((1, 6, 6, 8))
    y = b.tensor((1, 6, 6, 8))
    w = b.const(int8((1, 3, 3, 8), 1), scale=np.array([0.02], F32), zero_point=np.array([0]), quantized_dimension=3)
    b.op("DEPTHWISE_CONV_2D", [x, w, b.const(np.zeros(8, F32))], [y], padding="SAME", stride_w=1, stride_h=1,
         depth_multiplier=1)
    b.output(y)
    model = b.build()
    with pytest.raises((RuntimeError, ValueError)):
        make_interpreter(model)
    d = load_flex(cache_path="")
    with pytest.raises((RuntimeError, ValueError)):
        make_interpreter(model, delegate=d)
    assert [f["reason"] for f in d.stats()["fallback"]] == \
        ["hybrid depthwise weights without one scale per output channel (stock refuses them)"]


def net(h, seed=0, fc_out=10, size=8, pt_scale=0.05):
    """CONV 3x3 (per-channel, RELU6) -> DEPTHWISE 3x3 -> CONV 1x1 (per-tensor) -> ADD ->
    RESHAPE -> FC (per-channel): a MobileNet-like hybrid block."""
    x = h.b.input((1, size, size, 8))
    a = h.layer("CONV_2D", x, int8((16, 3, 3, 8), seed), scales(16, True), 0, np.linspace(-0.5, 0.5, 16),
                (1, size, size, 16), padding="SAME", stride_w=1, stride_h=1, fused_activation_function="RELU6")
    c = h.layer("DEPTHWISE_CONV_2D", a, int8((1, 3, 3, 16), seed + 1), scales(16, True), 3, np.zeros(16),
                (1, size, size, 16), padding="SAME", stride_w=1, stride_h=1, depth_multiplier=1,
                fused_activation_function="RELU")
    e = h.layer("CONV_2D", c, int8((16, 1, 1, 16), seed + 2), scales(16, False, pt_scale), 0, np.zeros(16),
                (1, size, size, 16), padding="VALID", stride_w=1, stride_h=1)
    s = h.b.tensor((1, size, size, 16))
    h.b.op("ADD", [a, e], [s])
    flat = h.b.tensor((1, size * size * 16))
    h.b.op("RESHAPE", [s, h.b.const(np.array([1, size * size * 16], np.int32))], [flat])
    y = h.layer("FULLY_CONNECTED", flat, int8((fc_out, size * size * 16), seed + 3), scales(fc_out, True, 0.002), 0,
                np.zeros(fc_out), (1, fc_out))
    return h.build(y)


def net_input(seed=0, size=8):
    return [np.random.default_rng(seed).uniform(-1, 1, (1, size, size, 8)).astype(F32)]


def test_network_is_one_partition_and_matches_float_math():
    model, ref, _ = both(net)
    d = load_flex(cache_path="")
    it = make_interpreter(model, delegate=d)
    stats = d.stats()
    assert stats["nodes_delegated"] == stats["nodes_total"] == 6 and stats["partitions"] == 1, stats
    for seed in range(2):
        got, want = invoke(it, net_input(seed))[0], invoke(make_interpreter(ref), net_input(seed))[0]
        assert max_error([want], [got]) <= FP32_TOL


@pytest.mark.skipif(not LITERT, reason="tflite-runtime 2.14's XNNPack leaves hybrid nodes to stock: "
                                       "there is no XNNPack hybrid path to compare with (CI's litert stage runs this)")
@pytest.mark.parametrize("make,x_shape", [
    (lambda h: conv(h, 3, 1, 1, "SAME", 16, 32, False, "NONE", (1, 16, 16)), (1, 16, 16, 16)),
    (lambda h: fc(h, 4, 256, 64, False, "NONE"), (4, 256)),
    (lambda h: fc(h, 4, 256, 64, True, "RELU"), (4, 256)),
    (net, (1, 8, 8, 8))])
def test_no_farther_from_stock_than_litert_xnnpack(make, x_shape):
    """(c): XNNPack quantizes the activations dynamically as well (its own way), so it lands
    farther from stock than float math does."""
    model, _, _ = both(make)
    x = [np.random.default_rng(3).uniform(-1, 1, x_shape).astype(F32)]
    stock = invoke(make_interpreter(model), x)[0]
    xnn = invoke(make_interpreter(model, stock="xnnpack"), x)[0]
    got = invoke(make_interpreter(model, delegate=load_flex(cache_path="")), x)[0]
    assert rms(xnn, stock) > 1e-5 * float(np.abs(stock).max()), "XNNPack left the hybrid node to stock"
    assert rms(got, stock) <= rms(xnn, stock), (rms(got, stock), rms(xnn, stock))


def test_dequantized_blobs_are_cached_and_mapped_warm(tmp_path):
    """The conv / FC weights are packed once from the int8 bytes into FP32 blobs of the cache
    file; a warm load maps them (packing nothing) and gives the same bytes."""
    model, path = both(net)[0], tmp_path / "h.fxc"
    outs, caches = [], []
    for _ in ("cold", "warm"):
        d = load_flex(cache_path=str(path))
        it = make_interpreter(model, delegate=d)
        outs.append(invoke(it, net_input())[0])
        caches.append(d.stats()["cache"])
        del it, d
    cold, warm = caches
    # 3 layers; the 3x3 conv may be Winograd, which also stores its GEMM form
    assert cold["blobs_packed"] in (3, 4) and cold["blobs_mapped"] == 0, cold
    assert warm["blobs_mapped"] == cold["blobs_packed"] and warm["blobs_packed"] == 0, warm
    assert np.array_equal(outs[0], outs[1])


def test_changed_scales_are_a_different_blob(tmp_path):
    """Same int8 bytes, another scale: the key covers the scales, so nothing stale is mapped."""
    path = tmp_path / "h.fxc"
    first = load_flex(cache_path=str(path))
    make_interpreter(net(Hybrid(False)), delegate=first)
    stored = first.stats()["cache"]["blobs_packed"]
    changed, ref = net(Hybrid(False), pt_scale=0.04), net(Hybrid(True), pt_scale=0.04)
    d = load_flex(cache_path=str(path))
    got = invoke(make_interpreter(changed, delegate=d), net_input())[0]
    cache = d.stats()["cache"]
    assert cache["blobs_packed"] == 1 and cache["blobs_mapped"] == stored - 1, cache  # the 1x1 conv's
    want = invoke(make_interpreter(ref), net_input())[0]
    assert max_error([want], [got]) <= FP32_TOL


def test_budget_streams_the_dequantized_blobs(tmp_path):
    """A budgeted load works as for FP32: the FP32 blobs packed from the int8 weights (8 MB for
    the 1024 x 2048 FC) stream from the cache file by slices, cold and warm, with float math's
    answer; below the minimum, the one-line refusal."""
    from budgetcheck import min_budget
    make = lambda h: net(h, fc_out=1024, size=16)  # noqa: E731
    model, ref, _ = both(make)
    x = net_input(5, size=16)
    want = invoke(make_interpreter(ref), x)
    cache = tmp_path / "h.fxc"
    lo = min_budget(model, cache)
    assert lo < 6, lo  # far below the 8 MB of FP32 FC weights
    for load in ("cold", "warm"):
        if load == "cold" and cache.exists():
            cache.unlink()
        d = load_flex(budget=lo + 0.5, cache_path=str(cache))
        it = make_interpreter(model, delegate=d)
        assert max_error(want, invoke(it, x)) <= FP32_TOL, load
        assert max_error(want, invoke(it, x)) <= FP32_TOL, load  # the loader reruns cleanly
        mem = d.stats()["partitions_memory"][0]
        assert mem["arena_bytes"] <= (lo + 0.5) * 2**20 and mem["steps"] > len(d.stats()["ops"]), mem
        if load == "warm":
            assert d.stats()["cache"]["blobs_packed"] == 0, d.stats()["cache"]
        del it, d


def test_warm_load_keeps_no_float_copy(tmp_path):
    """Three 2048 x 2048 hybrid FC layers (4 MB of int8 each, 16 MB as float32): a warm load, in a
    fresh process, maps the packed blobs and never dequantizes: less than one layer's float32
    copy of new anonymous memory."""
    h = Hybrid(False)
    prev = h.b.input((1, 2048))
    for i in range(3):
        prev = h.layer("FULLY_CONNECTED", prev, int8((2048, 2048), i), scales(2048, True, 0.0005), 0,
                       np.zeros(2048), (1, 2048), fused_activation_function="RELU" if i < 2 else "NONE")
    model, cache = tmp_path / "h.tflite", tmp_path / "h.fxc"
    model.write_bytes(h.build(prev))
    from budgetcheck import cold_then_warm
    cold, warm = cold_then_warm(model, cache, 2048)
    assert cold["cache"]["blobs_packed"] == 3 and warm["cache"]["blobs_mapped"] == 3, (cold["cache"], warm["cache"])
    assert warm["y"] == cold["y"]
    assert warm["anon"] < 16 * 2**20, warm["anon"]
