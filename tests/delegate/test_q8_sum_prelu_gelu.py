"""SUM, PRELU and GELU on int8 / uint8 through the delegate (ir/qop.c on kernels/qs8-ops), bit for
bit against the stock reference of the runtime in use, every node delegated: SUM over any axes
(negative, repeated, not adjacent) with and without keep_dims and stock's float rescale (equal
scales, tiny and huge ratios); PRELU with alpha per channel, shared, of x's shape or broadcast in
the middle, constant or an input, through both its multipliers; GELU exact and approximate over
every input value; zero points at the ends of the type; and what stays with stock."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from flexdelegate import load_flex
from flexdelegate.run import make_interpreter
from qopcheck import Q, QModel, check_exact

S8, U8 = np.int8, np.uint8


def ends(dtype):
    return (-128, 127) if dtype == S8 else (0, 255)


def reduced(shape, axes, keep):
    res = {a % len(shape) for a in axes}
    return [1 if i in res else d for i, d in enumerate(shape)] if keep else [d for i, d in enumerate(shape) if i not in res]


def sum_model(shape, axes, keep, qi, qo):
    m = QModel()
    x = m.input(shape, qi)
    y = m.tensor(reduced(shape, axes, keep), qo)
    m.op("SUM", [x, m.const(np.array(axes, np.int32))], [y], keep_dims=keep)
    return m.build(y)


SUMS = [((2, 5, 6, 7), [1, 2], True), ((3, 4, 5), [0, 2], False), ((4, 9), [-1, -1], True),
        ((2, 3, 4, 5), [3, 0, -3], False), ((1, 7, 7, 300), [1, 2], False), ((2, 3, 1, 4, 5), [1, 3], True),
        ((6, 5), [0, 1], False)]
# (input scale, output scale): a rescale, equal scales (stock still rescales by 1.0), a power of
# two (ties in the rounding), outputs past int32 (x86's conversion gives INT32_MIN: the low end),
# a huge output scale (everything rounds to the zero point)
SUM_SCALES = {"rescale": (0.05, 0.37), "same": (0.05, 0.05), "ties": (0.25, 0.5), "tiny": (0.3, 1e-7),
              "huge": (1e-4, 30.0)}


@pytest.mark.parametrize("scales", list(SUM_SCALES))
@pytest.mark.parametrize("shape,axes,keep", SUMS, ids=[f"{s}{a}{'k' if k else ''}" for s, a, k in SUMS])
@pytest.mark.parametrize("dtype", [S8, U8], ids=["int8", "uint8"])
def test_sum(dtype, shape, axes, keep, scales):
    lo, hi = ends(dtype)
    si, so = SUM_SCALES[scales]
    mid = (lo + hi) // 2 + 1
    # the ends where they leave outputs unsaturated: past int32 upward (tiny) must give the low end
    zi, zo = {"rescale": (lo, hi), "same": (lo + 3, lo + 3), "ties": (mid, mid), "tiny": (lo, hi), "huge": (hi, lo)}[scales]
    stats = check_exact(sum_model(shape, axes, keep, Q(dtype, si, zi), Q(dtype, so, zo)), seeds=(0, 1, 2),
                        num_threads=2)
    assert [o["kernel"] for o in stats["ops"]] == ["elementwise_q8"], stats["ops"]


@st.composite
def sums(draw):
    dtype = draw(st.sampled_from([S8, U8]))
    lo, hi = ends(dtype)
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=5)))
    r = len(shape)
    axes = draw(st.lists(st.integers(-r, r - 1), min_size=1, max_size=r + 1))
    scale = lambda: float(np.float32(10 ** draw(st.floats(-4, 0))))  # noqa: E731
    zp = lambda: draw(st.sampled_from([lo, hi, draw(st.integers(lo, hi))]))  # noqa: E731
    si = scale()
    so = draw(st.sampled_from([si, si * 2, si * 64, scale()]))
    return sum_model(shape, axes, draw(st.booleans()), Q(dtype, si, zp()), Q(dtype, so, zp()))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sums())
def test_sum_hypothesis(model):
    """Random ranks 1-5, dims 1-6, axis lists (negative, repeated, any order), keep_dims,
    scales over four decades (equal, power-of-two ratios), zero points anywhere or at the ends."""
    check_exact(model)


def test_sum_of_an_empty_tensor_stays_with_stock():
    """stock returns before writing the output of a SUM over an empty input (tflite-runtime
    leaves whatever the arena held): nothing to reproduce, the node is left to it."""
    delegate = load_flex()
    make_interpreter(sum_model((2, 0, 3), [1], False, Q(S8, 0.05, 3), Q(S8, 0.1, -3)), delegate=delegate)
    stats = delegate.stats()
    assert stats["nodes_delegated"] == 0 and "empty input" in stats["fallback"][0]["reason"], stats


def prelu_model(x_shape, a_shape, dtype, qx, qa, qo, alpha_input, seed=0):
    lo, hi = ends(dtype)
    m = QModel()
    x = m.input(x_shape, qx)
    if alpha_input:
        a = m.input(a_shape, qa)
    else:
        a = m.const(np.random.default_rng(seed).integers(lo, hi + 1, a_shape).astype(dtype), qa)
    y = m.tensor(x_shape, qo)
    m.op("PRELU", [x, a], [y])
    return m.build(y)


PRELUS = [((1, 8, 8, 16), (1, 1, 16)), ((1, 8, 8, 16), (16,)), ((2, 5, 5, 3), (1, 1, 1)), ((2, 5, 5, 3), (1,)),
          ((2, 7, 9), (2, 7, 9)), ((3, 4, 5, 6), (4, 1, 6)), ((37,), (37,))]
# (x, alpha, output scales): the identity multiplier below 1, above 1 (a left shift), both powers
# of two below 1 (ties: the alpha path's negative products round them away from zero), a tiny alpha
# scale; zero points: x's at the low end (the identity path only), the high end (the alpha one
# only), or inside with alpha's above and below
PRELU_SCALES = {"small": (0.05, 0.01, 0.07), "left-shift": (0.3, 0.02, 0.004), "ties": (0.125, 0.25, 0.5),
                "tiny-alpha": (0.02, 1e-5, 0.01)}


@pytest.mark.parametrize("scales", list(PRELU_SCALES))
@pytest.mark.parametrize("shapes", PRELUS, ids=[f"{a}x{b}" for a, b in PRELUS])
@pytest.mark.parametrize("dtype", [S8, U8], ids=["int8", "uint8"])
def test_prelu(dtype, shapes, scales):
    lo, hi = ends(dtype)
    sx, sa, so = PRELU_SCALES[scales]
    mid = (lo + hi) // 2 + 1
    zx, za, zo = {"small": (lo, hi, lo), "left-shift": (hi, lo, hi), "ties": (mid, lo + 40, mid),
                  "tiny-alpha": (mid + 3, hi - 20, mid - 7)}[scales]
    for alpha_input in (False, True):
        model = prelu_model(*shapes, dtype, Q(dtype, sx, zx), Q(dtype, sa, za), Q(dtype, so, zo), alpha_input)
        stats = check_exact(model, seeds=(0, 1), num_threads=2)
        assert [o["kernel"] for o in stats["ops"]] == ["elementwise_q8"], stats["ops"]


def test_prelu_beyond_4d():
    """Alpha of x's very shape runs element-wise on every rank; a broadcast alpha beyond 4-D goes
    to stock's BroadcastPrelu4DSlow, which LiteRT runs (delegated here, bit-exact) and
    tflite-runtime 2.14 aborts in (left to it, with the reason; never invoked here)."""
    q = (Q(S8, 0.05, -128), Q(S8, 0.02, 127), Q(S8, 0.03, 4))
    check_exact(prelu_model((2, 3, 2, 2, 4), (2, 3, 2, 2, 4), S8, *q, alpha_input=False))
    from flexdelegate.runtime import detect
    broadcast = prelu_model((2, 3, 2, 2, 4), (1, 1, 1, 1, 4), S8, *q, alpha_input=False)
    if detect(None).name == "ai_edge_litert":
        check_exact(broadcast)
        check_exact(prelu_model((1, 2, 3, 2, 2, 5), (2, 1, 2, 1, 5), S8, *q, alpha_input=True))
    else:
        delegate = load_flex()
        make_interpreter(broadcast, delegate=delegate)
        stats = delegate.stats()
        assert stats["nodes_delegated"] == 0 and "aborts" in stats["fallback"][0]["reason"], stats


GELU_Q = [((0.03, "hi"), (5e-7, "hi")), ((0.1, "lo"), (0.02, "lo")), ((0.02, "hi"), (0.05, "hi")),
          ((1e-3, "mid"), (1e-4, "lo")), ((0.3, "mid"), (0.1, "mid"))]


@pytest.mark.parametrize("approximate", [False, True])
@pytest.mark.parametrize("qi,qo", GELU_Q, ids=[f"{a[0]}-{b[0]}" for a, b in GELU_Q])
@pytest.mark.parametrize("dtype", [S8, U8], ids=["int8", "uint8"])
def test_gelu(dtype, qi, qo, approximate):
    """stock's 256-entry table (LUTPopulate of the erfc form or the tanh form): every input value,
    output scales down to 5e-7 (where 0.5 x (1 + erf(x / sqrt 2)) would differ), zero points at
    the ends."""
    lo, hi = ends(dtype)
    zp = {"lo": lo, "hi": hi, "mid": (lo + hi) // 2 + 1}
    m = QModel()
    x = m.input((3, 256), Q(dtype, qi[0], zp[qi[1]]))
    y = m.tensor((3, 256), Q(dtype, qo[0], zp[qo[1]]))
    m.op("GELU", [x], [y], approximate=approximate)
    every = lambda it, seed: [np.resize(np.random.default_rng(seed).permutation(256).astype(np.uint8),  # noqa: E731
                                        (3, 256)).view(dtype)]
    stats = check_exact(m.build(y), inputs=every)
    assert [o["kernel"] for o in stats["ops"]] == ["elementwise_q8"], stats["ops"]
