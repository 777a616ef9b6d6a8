"""Mixed graphs: a float island inside an int8 / uint8 graph (quantized CONV -> DEQUANTIZE -> float
op -> QUANTIZE -> quantized CONV) and a quantized island inside a float graph (float CONV ->
QUANTIZE -> quantized CONV -> DEQUANTIZE -> float op), each one partition with every node
delegated, the quantized parts bit-identical to the stock reference.

A float op is not bit-exact against stock (GELU differs by an ulp; a float conv sums in another
order), so a QUANTIZE after it could round differently on a value within an ulp of a rounding
boundary. The islands are built so that no value they hand to a QUANTIZE is that close: the
float conv sums small dyadic numbers (exact in any order; Winograd, whose transforms round, is
off), and GELU reads a DEQUANTIZE, whose 256 possible inputs are checked to land away from every
boundary. Then the whole output is bit-identical; where a float op is the last, it is compared
to float tolerance."""
import math

import numpy as np
import pytest

from flexdelegate import load_flex
from flexdelegate.run import invoke, make_interpreter
from qopcheck import F32, Q, QModel, check_exact

TYPES = [np.int8, np.uint8]
EXACT_FLOAT = {"winograd": "off"}  # Winograd's transforms round: the float conv would not be exact


def zero(dtype, zp):
    """A zero point for int8 given as zp, moved to the same place in uint8."""
    return zp + 128 if dtype == np.uint8 else zp


def qweights(dtype, shape, seed):
    """Weights of dtype with their Q: int8 symmetric per tensor, uint8 around zero point 131."""
    w = np.random.default_rng(seed).integers(-100, 101, shape)
    if dtype == np.uint8:
        return (w + 131).astype(np.uint8), Q(np.uint8, 0.01, 131)
    return w.astype(np.int8), Q(np.int8, 0.01, 0)


def qconv(m, dtype, x, sx, shape_in, cout, k, y_q, seed, act="NONE"):
    n, h, w, cin = shape_in
    wv, wq = qweights(dtype, (cout, k, k, cin), seed)
    y = m.tensor((n, h, w, cout), y_q)
    b = np.random.default_rng(seed + 1).integers(-500, 500, cout).astype(np.int32)
    m.op("CONV_2D", [x, m.const(wv, wq), m.const(b, Q(np.int32, float(np.float32(sx) * np.float32(0.01)), 0))], [y],
         padding="SAME", stride_w=1, stride_h=1, fused_activation_function=act)
    return y


def float_conv(m, x, shape_in, cout, seed):
    """A 3x3 float conv whose sums are exact: integer weights in [-2, 2] and bias, on inputs that
    are multiples of 1/8 below 2^6 in magnitude (|sum| < 2^14, 17 bits)."""
    n, h, w, cin = shape_in
    rng = np.random.default_rng(seed)
    y = m.tensor((n, h, w, cout), F32)
    m.op("CONV_2D", [x, m.const(rng.integers(-2, 3, (cout, 3, 3, cin)).astype(np.float32)),
                     m.const(rng.integers(-8, 8, cout).astype(np.float32))], [y],
         padding="SAME", stride_w=1, stride_h=1)
    return y


def gelu(v, approximate):
    if approximate:
        return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3)))
    return 0.5 * v * (1 + math.erf(v / math.sqrt(2)))


def far_from_boundaries(values, scale, zp, dtype, margin=1e-3):
    """Every value / scale that quantizes inside dtype's range at least `margin` steps (float
    error is ~1e-5 here) from a rounding boundary k + 1/2."""
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    t = np.asarray(values, np.float64) / scale
    t = t[(t + zp >= lo - 1) & (t + zp <= hi + 1)]
    return float(np.min(np.abs(t - np.floor(t) - 0.5))) >= margin


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("approximate", [False, True])
@pytest.mark.parametrize("dtype", TYPES, ids=["int8", "uint8"])
def test_gelu_island_inside_a_quantized_graph(dtype, approximate, threads):
    """CONV -> DEQUANTIZE -> GELU -> QUANTIZE -> CONV: one partition, every node delegated, the
    output bit-identical."""
    sa, za, sq, zq = 0.0625, zero(dtype, 3), 0.043, zero(dtype, -20)
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    island = [gelu((v - za) * sa, approximate) for v in range(lo, hi + 1)]
    assert far_from_boundaries(island, sq, zq, dtype), "pick other scales: a GELU value sits near a boundary"
    m = QModel()
    x = m.input((1, 10, 10, 6), Q(dtype, 0.05, zero(dtype, -3)))
    a = qconv(m, dtype, x, 0.05, (1, 10, 10, 6), 12, 3, Q(dtype, sa, za), 1)
    f = m.tensor((1, 10, 10, 12), F32)
    m.op("DEQUANTIZE", [a], [f])
    g = m.tensor((1, 10, 10, 12), F32)
    m.op("GELU", [f], [g], approximate=approximate)
    q = m.tensor((1, 10, 10, 12), Q(dtype, sq, zq))
    m.op("QUANTIZE", [g], [q])
    y = qconv(m, dtype, q, sq, (1, 10, 10, 12), 8, 1, Q(dtype, 0.3, zero(dtype, 5)), 2, act="RELU")
    stats = check_exact(m.build(y), seeds=(0, 1, 2), num_threads=threads)
    assert stats["partitions"] == 1, stats


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", TYPES, ids=["int8", "uint8"])
def test_float_conv_island_inside_a_quantized_graph(dtype, threads):
    """CONV -> DEQUANTIZE (a power-of-two scale: exact) -> float CONV (exact sums) -> QUANTIZE
    (exact ties, rounded by stock's rule) -> CONV: one partition, all delegated, bit-identical."""
    m = QModel()
    x = m.input((1, 9, 9, 5), Q(dtype, 0.05, zero(dtype, 0)))
    a = qconv(m, dtype, x, 0.05, (1, 9, 9, 5), 8, 3, Q(dtype, 0.125, zero(dtype, -7)), 3, act="RELU")
    f = m.tensor((1, 9, 9, 8), F32)
    m.op("DEQUANTIZE", [a], [f])
    g = float_conv(m, f, (1, 9, 9, 8), 8, 4)
    q = m.tensor((1, 9, 9, 8), Q(dtype, 4.0, zero(dtype, 2)))
    m.op("QUANTIZE", [g], [q])
    y = qconv(m, dtype, q, 4.0, (1, 9, 9, 8), 6, 3, Q(dtype, 20.0, zero(dtype, -1)), 5)
    stats = check_exact(m.build(y), seeds=(0, 1, 2), num_threads=threads, flex=EXACT_FLOAT)
    assert stats["partitions"] == 1, stats


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", TYPES, ids=["int8", "uint8"])
def test_quantized_island_inside_a_float_graph(dtype, threads):
    """float CONV (exact sums on inputs in steps of 1/8) -> QUANTIZE -> CONV -> DEQUANTIZE -> GELU:
    one partition, all delegated; the quantized CONV's output (a second model output) is
    bit-identical, the GELU within float tolerance of stock's."""
    m = QModel()
    x = m.input((1, 8, 8, 4), F32)
    f = float_conv(m, x, (1, 8, 8, 4), 8, 6)
    q = m.tensor((1, 8, 8, 8), Q(dtype, 1.0, zero(dtype, 0)))
    m.op("QUANTIZE", [f], [q])
    c = qconv(m, dtype, q, 1.0, (1, 8, 8, 8), 16, 3, Q(dtype, 0.5, zero(dtype, 10)), 7, act="RELU6")
    d = m.tensor((1, 8, 8, 16), F32)
    m.op("DEQUANTIZE", [c], [d])
    y = m.tensor((1, 8, 8, 16), F32)
    m.op("GELU", [d], [y], approximate=False)
    model = m.build(c, y)
    ref = make_interpreter(model, num_threads=threads)
    delegate = load_flex(**EXACT_FLOAT)
    got_it = make_interpreter(model, delegate=delegate, num_threads=threads)
    stats = delegate.stats()
    assert stats["fallback"] == [] and stats["nodes_delegated"] == stats["nodes_total"] == 5, stats
    assert stats["partitions"] == 1, stats
    for seed in range(3):
        xs = [(np.random.default_rng(seed).integers(-64, 65, (1, 8, 8, 4)) / 8).astype(np.float32)]
        (want_c, want_y), (got_c, got_y) = invoke(ref, xs), invoke(got_it, xs)
        assert want_c.dtype == got_c.dtype == dtype and np.array_equal(want_c, got_c), seed
        np.testing.assert_allclose(got_y, want_y, rtol=1e-6, atol=1e-6)
