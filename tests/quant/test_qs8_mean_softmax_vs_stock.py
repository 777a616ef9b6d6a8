"""MEAN over H, W with keep_dims (stock's fast path; axis tensors it takes and ones it does not) and SOFTMAX (kernels/qs8-ops): every variant
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
                               chunk=i % 2)[0]
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
        got = _qs8.softmax(x, qi, beta, (1 / 256, zo), chunk=i % 3)[0]
        bad = np.flatnonzero(got.ravel() != want.ravel())
        assert bad.size == 0, (f"{RUNTIME} SOFTMAX {shape} q={qi} beta={beta}: {bad.size} differ "
                               f"at {bad[:8]}: got {got.ravel()[bad[:8]]} want {want.ravel()[bad[:8]]}")
