"""ADD, SUB and MUL (kernels/qs8-ops/binary.c): every variant this CPU runs, in any output split,
reproduces the stock interpreter bit for bit on random single-op models from our writer: int8
and uint8, equal shapes, every broadcast class stock distinguishes (its five-fold element-wise
runs, scalar-broadcast runs, either input broadcast fastest, the generic walk), squeeze-excite
shapes, every fused activation, zero points at both ends and scales far apart."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from qbuild import RUNTIME  # noqa: E402
from qops import STOCK, binary_model, rand_data, rand_q, run_stock_inputs, variants  # noqa: E402

from flexdelegate import _qs8  # noqa: E402

SHAPES = [  # (a, b): equal, five-fold element-wise, scalar-broadcast, swapped, generic, SE
    ((1, 7, 9, 40), (1, 7, 9, 40)), ((37,), (37,)), ((3, 5, 33), (1, 1, 33)),
    ((1, 1, 33), (3, 5, 33)), ((1, 6, 5, 24), (1, 1, 1, 24)), ((1, 1, 1, 19), (1, 4, 4, 19)),
    ((2, 3, 1), (2, 3, 21)), ((2, 3, 21), (2, 3, 1)), ((4, 1, 6, 1), (1, 5, 1, 17)),
    ((2, 1, 3, 20), (2, 5, 3, 20)), ((1,), (3, 4, 18)), ((5, 1, 18), (5, 4, 18)),
    ((2, 1, 3, 1, 9), (2, 4, 3, 5, 9)), ((1, 10, 10, 96), (1, 1, 1, 96)),
]
# tflite-runtime 2.14 aborts (a failed check in its 4-D slow broadcast) on MUL broadcasts that
# neither fold into five dimensions nor fit in four; LiteRT runs them (kernels/qs8-ops/NOTES.md "MUL").
STOCK_ABORTS = lambda op, a, b: (RUNTIME == "tflite-runtime" and op == "MUL"  # noqa: E731
                                 and max(len(a), len(b)) > 4)
ACT_NAMES = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def case(rng, op, dtype, i):
    """Random parameters; every fifth case has inputs 2^18..2^22 apart in scale (exact ties in
    the input rescale), every fifth another an output scale near the smallest stock takes (sums
    and products far outside int16: where the NEON loops' narrowing differs)."""
    a_shape, b_shape = SHAPES[i % len(SHAPES)]
    hi = 0.05 if op == "MUL" else 0.5
    qa, qb = rand_q(rng, dtype, 1e-3, hi), rand_q(rng, dtype, 1e-3, hi)
    if i % 3 == 0:  # equal scales
        qb = (qa[0], qb[1])
    if i % 5 == 1:
        qb = (float(np.float32(qa[0] * 2.0 ** -int(rng.integers(18, 23)))), qb[1])
    big = max(qa[0], qb[0])
    if op != "MUL":
        qo = rand_q(rng, dtype, big * 0.25, big * 8)
        if i % 5 == 3:
            qo = (float(np.float32(2 * big * 2.0 ** -rng.uniform(12, 19.9))), qo[1])
    else:
        prod = qa[0] * qb[0]
        qo = rand_q(rng, dtype, prod * 2, prod * 20000)
        if i % 5 == 3:
            qo = (float(np.float32(prod * 2.0 ** -rng.uniform(0, 12))), qo[1])
    act = ACT_NAMES[i % 4] if i % 2 else "NONE"
    return a_shape, b_shape, qa, qb, qo, act


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_binary_matches_stock_bit_for_bit(op, dtype):
    assert STOCK is not None, f"{RUNTIME}: stock arithmetic not recognised"
    rng = np.random.default_rng(hash((op, np.dtype(dtype).name)) % 2**32)
    checked = 0
    for i in range(4 * len(SHAPES)):
        a_shape, b_shape, qa, qb, qo, act = case(rng, op, dtype, i)
        a, b = rand_data(rng, a_shape, dtype), rand_data(rng, b_shape, dtype)
        if STOCK_ABORTS(op, a_shape, b_shape):
            continue
        try:
            ours = {v: _qs8.binary(v, op, a, b, qa, qb, qo, act=act, stock=STOCK,
                                   chunk=[0, 7, 16][v % 3]) for v in variants()}
        except ValueError:  # refused: must be a model stock refuses too (or not ours to take)
            continue
        want = run_stock_inputs(binary_model(op, a_shape, b_shape, dtype, qa, qb, qo, act), [a, b])
        for v, got in ours.items():
            bad = np.flatnonzero(got.ravel() != want.ravel())
            assert bad.size == 0, (f"{RUNTIME} {op} {np.dtype(dtype).name} {a_shape}x{b_shape} "
                                   f"q={qa},{qb},{qo} act={act} variant {v}: {bad.size} differ, "
                                   f"first at {bad[:8]}: got {got.ravel()[bad[:8]]} "
                                   f"want {want.ravel()[bad[:8]]}")
        checked += 1
    assert checked >= 3 * len(SHAPES) - 4


# PRELU (x, alpha): alpha per channel, shared, of x's shape, broadcast in the middle; beyond 4-D
# (LiteRT only where alpha broadcasts: tflite-runtime 2.14 aborts there, kernels/qs8-ops/NOTES.md)
PRELU_SHAPES = [((1, 7, 9, 40), (40,)), ((1, 7, 9, 40), (1, 1, 40)), ((2, 5, 6, 3), (1, 1, 1)), ((2, 5, 6, 3), (1,)),
                ((3, 4, 5, 6), (4, 1, 6)), ((2, 7, 9), (2, 7, 9)), ((37,), (37,)), ((2, 3, 4, 5), (3, 1, 1)),
                ((2, 3, 2, 2, 4), (2, 3, 2, 2, 4)), ((2, 3, 2, 2, 4), (1, 1, 1, 1, 4)), ((1, 2, 3, 2, 2, 5), (2, 1, 2, 1, 5))]


def prelu_case(rng, dtype, i):
    """Random quantization; every third case the output scale a power of two off the input's
    (the identity multiplier exact: ties), every fourth a tiny output scale (multipliers above 1,
    saturation), every fifth zero points at the ends of the type."""
    lo, hi = INFO_OF[dtype]
    qx, qa = rand_q(rng, dtype, 1e-3, 0.5), rand_q(rng, dtype, 1e-3, 0.5)
    qo = rand_q(rng, dtype, qx[0] * 0.05, qx[0] * 4)
    if i % 3 == 0:
        qo = (float(np.float32(qx[0] * 2.0 ** int(rng.integers(-6, 4)))), qo[1])
    if i % 4 == 1:
        qo = (float(np.float32(qx[0] * 2.0 ** -rng.uniform(4, 14))), qo[1])
    if i % 5 == 2:
        qx, qa, qo = (qx[0], hi), (qa[0], lo), (qo[0], lo if i % 2 else hi)
    return qx, qa, qo


INFO_OF = {np.int8: (-128, 127), np.uint8: (0, 255)}


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_prelu_matches_stock_bit_for_bit(dtype):
    """PRELU (reference_ops::Prelu / BroadcastPrelu4DSlow on both wheels): MultiplyByQuantized-
    Multiplier by sx / so for x >= zx ("identity"), of (x - zx)(alpha - za) by sx * sa / so below
    ("alpha"), both multipliers float expressions; every alpha broadcast, random quantization."""
    rng = np.random.default_rng(31 + (dtype == np.uint8))
    checked = 0
    for i in range(4 * len(PRELU_SHAPES)):
        x_shape, a_shape = PRELU_SHAPES[i % len(PRELU_SHAPES)]
        qx, qa, qo = prelu_case(rng, dtype, i)
        x, alpha = rand_data(rng, x_shape, dtype), rand_data(rng, a_shape, dtype)
        aborts = RUNTIME == "tflite-runtime" and len(x_shape) > 4 and x_shape != a_shape
        try:
            ours = {v: _qs8.binary(v, "PRELU", x, alpha, qx, qa, qo, stock=STOCK, chunk=[0, 7, 16][v % 3])
                    for v in variants()}
        except ValueError:
            assert aborts, (x_shape, a_shape, qx, qa, qo)  # the only PRELU these kernels refuse here
            continue
        assert not aborts
        want = run_stock_inputs(binary_model("PRELU", x_shape, a_shape, dtype, qx, qa, qo, act=None), [x, alpha])
        for v, got in ours.items():
            bad = np.flatnonzero(got.ravel() != want.ravel())
            assert bad.size == 0, (f"{RUNTIME} PRELU {np.dtype(dtype).name} {x_shape}x{a_shape} q={qx},{qa},{qo} "
                                   f"variant {v}: {bad.size} differ, first at {bad[:8]}: x {x.ravel()[bad[:8]]} "
                                   f"got {got.ravel()[bad[:8]]} want {want.ravel()[bad[:8]]}")
        checked += 1
    assert checked >= 4 * len(PRELU_SHAPES) - (8 if RUNTIME == "tflite-runtime" else 0)
