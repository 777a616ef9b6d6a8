"""MEAN over H, W with keep_dims (stock's fast path; axis tensors it takes and ones it does not), MEAN
on stock's general path, SUM and SOFTMAX (kernels/qs8-ops): every variant
this CPU runs, in any split, reproduces the stock interpreter bit for bit on random single-op
models from our writer; MEAN also under a 2-thread interpreter (stock splits channels per thread,
which moves LiteRT's NEON blocks), with channel counts around the 16-blocks and ties."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from qbuild import RUNTIME  # noqa: E402
from qops import STOCK, rand_data, rand_q, run_stock_inputs, unary_model, variants  # noqa: E402

from flexdelegate import _qs8  # noqa: E402

MEAN_SHAPES = [(1, 7, 7, 40), (1, 4, 4, 16), (2, 3, 5, 17), (1, 1, 1, 33), (1, 8, 8, 1280),
               (1, 2, 2, 8), (3, 6, 1, 71), (1, 14, 14, 96)]


@pytest.mark.parametrize("threads", [None, 2])
def test_mean_hw_matches_stock_bit_for_bit(threads):
    assert STOCK is not None, f"{RUNTIME}: stock arithmetic not recognised"
    rng = np.random.default_rng(11 + (threads or 0))
    for i in range(3 * len(MEAN_SHAPES)):
        shape = MEAN_SHAPES[i % len(MEAN_SHAPES)]
        qi = rand_q(rng, np.int8, 1e-3, 0.5)
        qo = rand_q(rng, np.int8, qi[0] * 0.05, qi[0] * 4)
        if i % 3 == 0:  # equal scales and a power-of-two count: exact ties
            qo = (qi[0], qo[1])
        axes = np.array([[1, 2], [2, 1], [-3, -2], [-2, 1, 2]][i % 4], np.int32)
        x = rand_data(rng, shape, np.int8)
        model = unary_model("MEAN", shape, np.int8, qi, qo, extra=[axes], keep_dims=True,
                            out_shape=(shape[0], 1, 1, shape[3]))
        want = run_stock_inputs(model, [x], threads=threads)
        for v in variants():
            try:
                _qs8.mean_hw(v, x, qi, qo, axes=axes, stock=STOCK)
            except ValueError:  # stock's general path: left to stock (it must be that path)
                assert STOCK == _qs8.STOCK_PORTABLE and sorted(axes) != [1, 2]
                continue
            got = _qs8.mean_hw(v, x, qi, qo, axes=axes, stock=STOCK, stock_threads=threads or 1,
                               chunk=i % 2)
            bad = np.flatnonzero(got.ravel() != want.ravel())
            assert bad.size == 0, (f"{RUNTIME} MEAN {shape} q={qi},{qo} threads={threads} "
                                   f"variant {v}: {bad.size} differ at {bad[:8]}: "
                                   f"got {got.ravel()[bad[:8]]} want {want.ravel()[bad[:8]]}")


SOFTMAX_SHAPES = [(1, 10), (4, 1000), (2, 3, 7), (1, 1), (5, 33), (1, 8, 8, 12)]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_softmax_matches_stock_bit_for_bit(dtype):
    rng = np.random.default_rng(5 + (dtype == np.uint8))
    zo = 0 if dtype == np.uint8 else -128
    for i in range(4 * len(SOFTMAX_SHAPES)):
        shape = SOFTMAX_SHAPES[i % len(SOFTMAX_SHAPES)]
        qi = rand_q(rng, dtype, 1e-3, 0.3)
        beta = float(np.float32([1.0, 0.5, 2.0, rng.uniform(0.1, 3)][i % 4]))
        x = rand_data(rng, shape, dtype)
        if i % 5 == 0:  # a flat row: every probability equal
            x[...] = x.flat[0]
        model = unary_model("SOFTMAX", shape, dtype, qi, (1 / 256, zo), beta=beta)
        want = run_stock_inputs(model, [x])
        got = _qs8.softmax(x, qi, beta, (1 / 256, zo), chunk=i % 3)
        bad = np.flatnonzero(got.ravel() != want.ravel())
        assert bad.size == 0, (f"{RUNTIME} SOFTMAX {shape} q={qi} beta={beta}: {bad.size} differ "
                               f"at {bad[:8]}: got {got.ravel()[bad[:8]]} want {want.ravel()[bad[:8]]}")


def reduced_shape(shape, axes, keep):
    res = {a % len(shape) for a in axes}
    return tuple(1 if j in res else d for j, d in enumerate(shape)) if keep else \
        tuple(d for j, d in enumerate(shape) if j not in res)


def check_reduction(op, x, axes, keep, qi, qo, chunk):
    """MEAN (general path) or SUM of x on every variant against the stock interpreter."""
    model = unary_model(op, x.shape, x.dtype.type, qi, qo, extra=[np.array(axes, np.int32)], keep_dims=keep,
                        out_shape=reduced_shape(x.shape, axes, keep))
    want = run_stock_inputs(model, [x]).reshape(-1)
    for v in variants():
        got = (_qs8.mean if op == "MEAN" else _qs8.reduce_sum)(v, x, axes, qi, qo, chunk=chunk).reshape(-1)
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, (f"{RUNTIME} {op} {x.dtype.name} {x.shape} axes={axes} keep={keep} q={qi},{qo} "
                               f"variant {v}: {bad.size} differ at {bad[:8]}: got {got[bad[:8]]} want {want[bad[:8]]}")


GENERAL = [((1, 7, 7, 40), [1, 2], False), ((2, 5, 5, 17), [-3, -2], True), ((3, 10, 6), [2], False),
           ((4, 9, 5), [0, 1], True), ((1, 7, 7, 1280), [1, 2], False), ((6, 7), [1], False),
           ((2, 3, 4, 5, 6), [1, 2, 3], False), ((1, 16, 16, 8), [1, 2], False),
           # axes that are not adjacent (one walk over alternating kept and reduced groups)
           ((3, 4, 5), [0, 2], False), ((2, 6, 5, 7), [0, 2], True), ((2, 3, 1, 4, 5), [3, 1, -4], False),
           ((2, 3, 4, 5), [3, 0, -3], False)]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_mean_general_matches_stock_bit_for_bit(dtype):
    """stock's general path (QuantizedMeanOrSum): no keep_dims, other axes (adjacent or not), uint8."""
    rng = np.random.default_rng(21 + (dtype == np.uint8))
    ran = 0
    for i in range(3 * len(GENERAL)):
        shape, axes, keep = GENERAL[i % len(GENERAL)]
        if keep and len(shape) == 4 and (axes in ([1, 2], [2, 1]) or (
                STOCK == _qs8.STOCK_NEON and sorted({a % 4 for a in axes}) == [1, 2])):
            continue  # stock's fast path (int8: tested above; uint8: not reproduced)
        qi = rand_q(rng, dtype, 1e-3, 0.5)
        qo = rand_q(rng, dtype, qi[0] * 0.05, qi[0] * 4)
        if i % 3 == 0:
            qo = (qi[0], qo[1])
        x = rand_data(rng, shape, dtype)
        check_reduction("MEAN", x, axes, keep, qi, qo, chunk=i % 4 * 3)
        ran += 1
    assert ran >= 2 * len(GENERAL)


SUMS = [((2, 5, 6, 7), [1, 2], True), ((3, 4, 5), [0, 2], False), ((4, 9), [-1, -1], True),
        ((2, 3, 4, 5), [3, 0, -3], False), ((1, 7, 7, 40), [1, 2], False), ((2, 3, 1, 4, 5), [1, 3], False),
        ((6, 7), [0, 1], True), ((5, 1, 3), [1], False), ((1, 300, 33), [1], True), ((7,), [0], False),
        ((2, 9, 4, 3), [2, 1, 3, 0], True)]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_sum_matches_stock_bit_for_bit(dtype):
    """SUM (optimized_ops::QuantizedMeanOrSum on both wheels): the int32 sum times si / so plus
    -zi * (si / so) * count, in float, rounded half away, converted (x86's INT32_MIN past int32),
    + zo, clamped. Equal scales (the rescale by 1.0), output scales a power of two off (ties),
    tiny output scales (values past int32: INT32_MIN, so the low end, not the high one), huge ones,
    zero points at the ends; any axes, keep_dims or not."""
    rng = np.random.default_rng(41 + (dtype == np.uint8))
    lo, hi = (0, 255) if dtype == np.uint8 else (-128, 127)
    for i in range(4 * len(SUMS)):
        shape, axes, keep = SUMS[i % len(SUMS)]
        count = int(np.prod([shape[a % len(shape)] for a in set(a % len(shape) for a in axes)]))
        qi = rand_q(rng, dtype, 1e-3, 0.5)
        qo = rand_q(rng, dtype, qi[0] * 0.5, qi[0] * count * 4)
        if i % 4 == 0:
            qo = (qi[0], qo[1])
        elif i % 4 == 1:
            qo = (float(np.float32(qi[0] * 2.0 ** int(rng.integers(-3, 3)))), qo[1])
        elif i % 8 == 2:
            qo = (float(np.float32(qi[0] * 1e-6)), qo[1])
        elif i % 8 == 6:
            qo = (float(np.float32(qi[0] * 1e4)), qo[1])
        if i % 3 == 2:
            qi, qo = (qi[0], [lo, hi][i % 2]), (qo[0], [hi, lo][i % 2])
        check_reduction("SUM", rand_data(rng, shape, dtype), axes, keep, qi, qo, chunk=i % 4 * 3)
