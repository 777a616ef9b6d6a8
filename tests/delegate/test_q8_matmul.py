"""int8 TRANSPOSE_CONV through the delegate, bit for bit against the stock reference of the
runtime in use (its rounding found by quant_rounding.detect(): tflite-runtime 2.14 requantizes
half away, LiteRT 2.3 the first C - C % 8 channels half up and the rest half away), every node
delegated; and the variants stock computes otherwise, left to it with a reason."""
import numpy as np
import pytest

from flexdelegate import load_flex
from flexdelegate.run import invoke, make_interpreter
from qopcheck import Q, QModel, check_exact, random_input

S8 = np.int8
ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def weights(shape, seed):
    return np.random.default_rng(seed).integers(-127, 128, shape).astype(np.int8)


def wq(scale, cout, per_channel):
    if not per_channel:
        return Q(S8, scale, 0)
    s = tuple(float(v) for v in scale * np.linspace(0.5, 1.5, cout))
    return Q(S8, s, (0,) * cout, 0)


def tconv_out(size, k, stride, padding):
    return size * stride if padding == "SAME" else (size - 1) * stride + k


def tconv_model(x_shape, cout, k, stride, padding, *, act="NONE", per_channel=True, bias=True, xq=Q(S8, 0.05, 3),
                yq=Q(S8, 0.1, -4), sw=0.02, seed=0):
    """TRANSPOSE_CONV of an int8 input (batch, h, w, cin) to cout channels, k x k (or (kh, kw))
    filter, stride s (or (sh, sw)); output_shape a constant, as the converter writes it."""
    kh, kw = (k, k) if np.isscalar(k) else k
    sh, sw_ = (stride, stride) if np.isscalar(stride) else stride
    b_, h, w, cin = x_shape
    out = (b_, tconv_out(h, kh, sh, padding), tconv_out(w, kw, sw_, padding), cout)
    m = QModel()
    x = m.input(x_shape, xq)
    y = m.tensor(out, yq)
    wt = wq(sw, cout, per_channel)
    ins = [m.const(np.array(out, np.int32)), m.const(weights((cout, kh, kw, cin), seed + cin), wt), x]
    if bias:
        bs = np.atleast_1d(xq.scale * np.asarray(wt.scale))
        bv = np.random.default_rng(seed + 7).integers(-3000, 3000, cout).astype(np.int32)
        ins.append(m.const(bv, Q(np.int32, tuple(float(v) for v in bs), (0,) * bs.size, 0)))
    m.op("TRANSPOSE_CONV", ins, [y], padding=padding, stride_w=sw_, stride_h=sh, fused_activation_function=act)
    return m.build(y)


def kernels(stats):
    return sorted(o["kernel"] for o in stats["ops"])


# ---- TRANSPOSE_CONV ----

@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("act", ACTS)
def test_transpose_conv_activations(per_channel, act):
    """The fused activation of op version 4 applies on both runtimes; 11 channels: 8 + a tail
    of 3 under LiteRT's split rule; per-tensor weight scales too."""
    stats = check_exact(tconv_model((2, 5, 4, 6), 11, 3, 2, "SAME", act=act, per_channel=per_channel))
    assert kernels(stats) == ["transpose_conv_q8"], stats["ops"]


@pytest.mark.parametrize("k,stride,padding,cin,cout", [
    (3, 1, "SAME", 8, 16), (3, 1, "VALID", 5, 7), (3, 2, "SAME", 16, 24), (3, 2, "VALID", 3, 19),
    (2, 2, "VALID", 12, 8), (4, 2, "SAME", 7, 33), (5, 3, "SAME", 4, 9), (3, 3, "VALID", 9, 40),
    (1, 2, "SAME", 6, 5), (1, 1, "VALID", 20, 3), ((2, 3), (1, 2), "SAME", 5, 13), ((3, 1), (3, 1), "VALID", 4, 17),
    (2, 3, "VALID", 3, 6)])
def test_transpose_conv_windows(k, stride, padding, cin, cout):
    """Strides 1-3 (and mixed), kernels smaller than, equal to and larger than the stride (no
    tap at some outputs: bias alone), SAME / VALID, batch 2, channel counts across panels and
    with C % 8 tails."""
    check_exact(tconv_model((2, 6, 5, cin), cout, k, stride, padding, act="RELU6"))


def test_transpose_conv_without_bias():
    check_exact(tconv_model((1, 4, 4, 8), 12, 3, 2, "SAME", bias=False))


@pytest.mark.parametrize("zx,zy,sy", [(-128, 127, 0.3), (127, -128, 0.3), (0, 0, 1e-4), (5, -5, 500.0),
                                      (-128, -128, 3e-3)])
def test_transpose_conv_saturation_edges(zx, zy, sy):
    """Zero points at the ends of int8 (the zero-point taps of a stride), outputs saturating
    both ways, a huge and a tiny real multiplier (the tiny one flushes to 0)."""
    check_exact(tconv_model((2, 5, 5, 8), 21, 3, 2, "SAME", xq=Q(S8, 0.5, zx), yq=Q(S8, sy, zy), sw=0.05,
                            act="RELU_N1_TO_1"))


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("hw,cin,cout", [(3, 16, 200), (12, 24, 40), (20, 3, 9)])
def test_transpose_conv_split_between_threads(threads, hw, cin, cout):
    """Few output pixels split panels between the threads as well, many their pixels."""
    check_exact(tconv_model((1, hw, hw, cin), cout, 3, 2, "SAME", act="RELU"), num_threads=threads)


def test_transpose_conv_large_gather_blocks():
    """Output rows past one gathered block of the GEMM (AMX: 64-row blocks of K = 3 x 3 x 64)."""
    check_exact(tconv_model((1, 16, 16, 64), 48, 3, 2, "SAME"), num_threads=2)


def test_transpose_conv_weights_are_cached(tmp_path):
    """The packed weights are cache-file blobs: a warm load maps them, same answer."""
    model = tconv_model((1, 6, 6, 16), 24, 3, 2, "SAME")
    cache = str(tmp_path / "t.fxc")
    cold = check_exact(model, flex={"cache_path": cache})
    warm = check_exact(model, flex={"cache_path": cache})
    assert cold["cache"]["blobs_packed"] == 1 and warm["cache"]["blobs_packed"] == 0, (cold["cache"], warm["cache"])
    assert warm["cache"]["blobs_mapped"] == 1, warm["cache"]


def _stats_left(model, reason):
    d = load_flex()
    make_interpreter(model, delegate=d)
    s = d.stats()
    assert s["nodes_delegated"] == 0 and reason in s["fallback"][0]["reason"], s
    return s


def test_transpose_conv_with_a_run_time_output_shape_stays_with_stock():
    m = QModel()
    shape = m.input((4,), Q(np.int32, None))
    x = m.input((1, 3, 3, 4), Q(S8, 0.05, 0))
    y = m.tensor((1, 6, 6, 5), Q(S8, 0.1, 0))
    m.op("TRANSPOSE_CONV", [shape, m.const(weights((5, 3, 3, 4), 1), wq(0.02, 5, True)), x], [y], padding="SAME",
         stride_w=2, stride_h=2)
    _stats_left(m.build(y), "non-constant")


def test_transpose_conv_with_nonzero_weight_zero_point_stays_with_stock():
    m = QModel()
    x = m.input((1, 3, 3, 4), Q(S8, 0.05, 0))
    y = m.tensor((1, 6, 6, 5), Q(S8, 0.1, 0))
    w = m.const(weights((5, 3, 3, 4), 1), Q(S8, 0.02, 3))
    m.op("TRANSPOSE_CONV", [m.const(np.array([1, 6, 6, 5], np.int32)), w, x], [y], padding="SAME", stride_w=2,
         stride_h=2)
    model = m.build(y)
    _stats_left(model, "nonzero zero point")
    ref = make_interpreter(model)
    xs = random_input(ref, 0)
    got = make_interpreter(model, delegate=load_flex())
    assert np.array_equal(invoke(ref, xs)[0], invoke(got, xs)[0])
