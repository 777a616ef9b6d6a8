"""PAD folded into the window that reads it (ir/fuse.c fuse_pad): Keras' ZeroPadding2D before a
VALID conv, depthwise conv or max pool. The PAD is skipped ("fused (skipped)") and the reader
pads its own window; where stock's result could tell the difference (another fill, channel
pads, more padding than a SAME window has, a max pool over values below the fill, non-finite
weights, a second reader) the PAD runs as a node. Float models against stock within the usual
tolerance, int8 / uint8 bit for bit, at 1 and 2 threads and under a budget plan."""
import numpy as np
import pytest

from budgetcheck import min_budget
from flexdelegate.tflite.writer import ModelBuilder
from opcheck import check, rand
from qopcheck import Q, QModel, check_exact

S8, U8 = np.int8, np.uint8
FOLDED = "fused (skipped)"


def pad_kernel(stats):
    (kernel,) = [o["kernel"] for o in stats["ops"] if o["op"] in ("PAD", "PADV2")]
    return kernel


def pads_of(t, b, l, r, c=(0, 0)):
    return np.array([[0, 0], [t, b], [l, r], list(c)], np.int32)


def out_extent(n, k, stride):
    return (n - k) // stride + 1


def f32_pad_model(x_shape, pads, reader, k, stride, *, cout=8, act="NONE", value=None, weights=None,
                  producer_act=None, padding="VALID", second_reader=False):
    """[CONV(producer_act) ->] PAD(V2) -> reader (CONV_2D, DEPTHWISE_CONV_2D or MAX_POOL_2D)."""
    b = ModelBuilder()
    x = b.input(x_shape)
    n, h, w, c = x_shape
    if producer_act is not None:  # a 1x1 conv whose clamp decides the max pool rule
        p = b.tensor(x_shape)
        b.op("CONV_2D", [x, b.const(rand((c, 1, 1, c), 5, 0.5)), b.const(rand((c,), 6))], [p],
             padding="VALID", stride_w=1, stride_h=1, fused_activation_function=producer_act)
        x = p
    ph, pw = h + pads[1].sum(), w + pads[2].sum()
    padded = b.tensor((n, ph, pw, c + pads[3].sum()))
    if value is None:
        b.op("PAD", [x, b.const(pads)], [padded])
    else:
        b.op("PADV2", [x, b.const(pads), b.const(np.array([value], np.float32))], [padded])
    c += pads[3].sum()
    if padding == "SAME":
        oh, ow = -(-ph // stride), -(-pw // stride)
    else:
        oh, ow = out_extent(ph, k, stride), out_extent(pw, k, stride)
    if reader == "MAX_POOL_2D":
        y = b.tensor((n, oh, ow, c))
        b.op(reader, [padded], [y], padding=padding, stride_w=stride, stride_h=stride, filter_width=k,
             filter_height=k, fused_activation_function=act)
    elif reader == "DEPTHWISE_CONV_2D":
        y = b.tensor((n, oh, ow, c))
        wt = rand((1, k, k, c), 1, 0.3) if weights is None else weights
        b.op(reader, [padded, b.const(wt), b.const(rand((c,), 2))], [y], padding=padding, stride_w=stride,
             stride_h=stride, depth_multiplier=1, fused_activation_function=act)
    else:
        y = b.tensor((n, oh, ow, cout))
        wt = rand((cout, k, k, c), 1, 0.3) if weights is None else weights
        b.op(reader, [padded, b.const(wt), b.const(rand((cout,), 2))], [y], padding=padding, stride_w=stride,
             stride_h=stride, fused_activation_function=act)
    b.output(y)
    if second_reader:
        z = b.tensor((n, ph, pw, c))
        b.op("RELU", [padded], [z])
        b.output(z)
    return b.build()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("x_shape,pads,reader,k,stride", [
    ((1, 32, 30, 3), pads_of(3, 3, 3, 3), "CONV_2D", 7, 2),             # ResNet's stem
    ((1, 17, 16, 3), pads_of(0, 1, 0, 1), "CONV_2D", 3, 2),             # Keras correct_pad, 3 channels
    ((2, 9, 11, 6), pads_of(1, 1, 1, 0), "CONV_2D", 3, 1),
    ((1, 12, 13, 16), pads_of(1, 1, 0, 1), "DEPTHWISE_CONV_2D", 3, 2),  # MobileNet's stride-2 pad
    ((1, 10, 10, 8), pads_of(2, 2, 2, 2), "DEPTHWISE_CONV_2D", 5, 1),
    ((1, 9, 9, 4), pads_of(1, 1, 1, 1).astype(np.int64), "CONV_2D", 3, 1),  # int64 paddings
], ids=str)
def test_pad_folds_into_a_valid_conv(x_shape, pads, reader, k, stride, threads):
    stats = check(f32_pad_model(x_shape, pads, reader, k, stride, act="RELU"), num_threads=threads)
    assert pad_kernel(stats) == FOLDED, stats["ops"]


@pytest.mark.parametrize("producer_act", ["RELU", "RELU6"])
def test_pad_folds_into_a_max_pool_over_a_clamped_producer(producer_act):
    """ResNet's pool: conv(RELU) -> PAD 1 -> MAX_POOL 3x3/2; nothing below the fill, so the
    padding cells stock counts change no maximum."""
    model = f32_pad_model((1, 15, 14, 8), pads_of(1, 1, 1, 1), "MAX_POOL_2D", 3, 2, producer_act=producer_act)
    for threads in (1, 2):
        assert pad_kernel(check(model, num_threads=threads)) == FOLDED


@pytest.mark.parametrize("case", ["producer_unclamped", "no_producer", "value", "channel_pads", "same_reader",
                                  "pad_past_window", "second_reader", "nonfinite_weights"])
def test_pad_stays_a_node_where_folding_would_differ(case):
    """Every case runs as PAD + reader and still agrees with stock (negative inputs make a
    max pool over a zero fill differ; an inf weight times a padded zero is NaN in stock)."""
    shape, pads, reader, k, stride, kw = (1, 11, 10, 4), pads_of(1, 1, 1, 1), "CONV_2D", 3, 2, {}
    if case == "producer_unclamped":
        reader, kw = "MAX_POOL_2D", dict(producer_act="NONE")
    elif case == "no_producer":  # a partition input: its values may be anything
        reader = "MAX_POOL_2D"
    elif case == "value":
        kw = dict(value=1.5)
    elif case == "channel_pads":
        pads = pads_of(1, 1, 1, 1, c=(0, 2))
    elif case == "same_reader":
        kw = dict(padding="SAME")
    elif case == "pad_past_window":
        pads = pads_of(2, 0, 0, 0)
    elif case == "second_reader":
        kw = dict(second_reader=True)
    elif case == "nonfinite_weights":
        w = rand((8, 3, 3, 4), 1, 0.3)
        w[2, 0, 0, 1] = np.inf
        kw = dict(weights=w)
    stats = check(f32_pad_model(shape, pads, reader, k, stride, **kw))
    assert pad_kernel(stats) == "pad", stats["ops"]


def test_folded_pad_under_a_budget_plan(tmp_path):
    """The smallest budget plan runs the folded conv in slices; the skipped PAD's output has no
    buffer in it."""
    model = f32_pad_model((1, 40, 40, 16), pads_of(1, 1, 1, 1), "MAX_POOL_2D", 3, 2, producer_act="RELU")
    cache = tmp_path / "m.fxc"
    low = min_budget(model, cache)
    for budget in (low, 64.0):
        assert pad_kernel(check(model, flex=dict(budget=budget, cache_path=str(cache)))) == FOLDED


def q8_pad_model(dtype, zp, reader, *, k=3, stride=2, pads=None, fill=None, producer_act=None, act="NONE"):
    """int8 / uint8: [CONV(producer_act) ->] PAD(V2) -> reader, the PAD keeping the input's
    scale and zero point."""
    m = QModel()
    shape, cin, cout = (1, 13, 12, 6), 6, 10
    pads = pads_of(1, 1, 1, 1) if pads is None else pads
    lo, w8 = (0, U8) if dtype == U8 else (-128, S8)
    qx = Q(dtype, 0.05, zp)
    x = m.input(shape, qx)
    if producer_act is not None:
        p = m.tensor(shape, qx)
        w = np.random.default_rng(3).integers(-127, 128, (cin, 1, 1, cin)).astype(S8)
        if dtype == U8:
            w = (w.astype(np.int16) + 128).astype(U8)
        m.op("CONV_2D", [x, m.const(w, Q(w8, 0.02, 0 if dtype == S8 else 128)), m.const(np.arange(cin, dtype=np.int32) * 40,
                                                             Q(np.int32, 0.05 * 0.02, 0))],
             [p], padding="VALID", stride_w=1, stride_h=1, fused_activation_function=producer_act)
        x = p
    ph, pw = shape[1] + pads[1].sum(), shape[2] + pads[2].sum()
    padded = m.tensor((1, ph, pw, cin), qx)
    if fill is None:
        m.op("PAD", [x, m.const(pads)], [padded])
    else:
        m.op("PADV2", [x, m.const(pads), m.const(np.array([fill], dtype), qx)], [padded])
    oh, ow = out_extent(ph, k, stride), out_extent(pw, k, stride)
    rng = np.random.default_rng(4)
    if reader == "MAX_POOL_2D":
        y = m.tensor((1, oh, ow, cin), qx)
        m.op(reader, [padded], [y], padding="VALID", stride_w=stride, stride_h=stride, filter_width=k,
             filter_height=k, fused_activation_function=act)
    elif reader == "DEPTHWISE_CONV_2D":
        y = m.tensor((1, oh, ow, cin), Q(dtype, 0.2, lo + 100))
        wq = rng.integers(-127, 128, (1, k, k, cin)).astype(S8) if dtype == S8 else \
            rng.integers(0, 256, (1, k, k, cin)).astype(U8)
        m.op(reader, [padded, m.const(wq, Q(w8, 0.01, 0 if dtype == S8 else 120)),
                      m.const(rng.integers(-900, 900, cin).astype(np.int32), Q(np.int32, 0.05 * 0.01, 0))],
             [y], padding="VALID", stride_w=stride, stride_h=stride, depth_multiplier=1, fused_activation_function=act)
    else:
        y = m.tensor((1, oh, ow, cout), Q(dtype, 0.3, lo + 120))
        wq = rng.integers(-127, 128, (cout, k, k, cin)).astype(S8) if dtype == S8 else \
            rng.integers(0, 256, (cout, k, k, cin)).astype(U8)
        m.op(reader, [padded, m.const(wq, Q(w8, 0.01, 0 if dtype == S8 else 131)),
                      m.const(rng.integers(-900, 900, cout).astype(np.int32), Q(np.int32, 0.05 * 0.01, 0))],
             [y], padding="VALID", stride_w=stride, stride_h=stride, fused_activation_function=act)
    return m.build(y)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype,zp", [(S8, -5), (S8, 127), (U8, 130)])
@pytest.mark.parametrize("reader,k,pads", [("CONV_2D", 3, pads_of(1, 1, 1, 1)), ("CONV_2D", 7, pads_of(3, 3, 3, 3)),
                                           ("DEPTHWISE_CONV_2D", 3, pads_of(0, 1, 0, 1))], ids=str)
def test_q8_pad_folds_bit_exact(dtype, zp, reader, k, pads, threads):
    stats = check_exact(q8_pad_model(dtype, zp, reader, k=k, pads=pads, act="RELU"), num_threads=threads)
    assert pad_kernel(stats) == FOLDED, stats["ops"]


@pytest.mark.parametrize("dtype,zp", [(S8, -5), (U8, 130)])
def test_q8_pad_folds_into_max_pool_after_a_relu(dtype, zp):
    stats = check_exact(q8_pad_model(dtype, zp, "MAX_POOL_2D", producer_act="RELU"))
    assert pad_kernel(stats) == FOLDED, stats["ops"]


@pytest.mark.parametrize("case", ["fill", "producer_unclamped"])
def test_q8_pad_stays_a_node_where_folding_would_differ(case):
    """A PADV2 fill other than the zero point; a max pool over values below the fill."""
    kw = dict(fill=np.int8(20)) if case == "fill" else dict(producer_act="NONE")
    stats = check_exact(q8_pad_model(S8, -5, "CONV_2D" if case == "fill" else "MAX_POOL_2D", **kw))
    assert pad_kernel(stats) == "pad", stats["ops"]
