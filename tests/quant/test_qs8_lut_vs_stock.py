"""The table ops (kernels/qs8-ops/tables.c: output byte = table[input byte], the table built
from stock's own per-element arithmetic): every variant, in any split, reproduces the stock
interpreter bit for bit on single-op models from our writer that feed every one of the 256 input
values (and lengths around stock's NEON blocks), random scales and zero points."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from qbuild import RUNTIME  # noqa: E402
from qops import INFO, STOCK, rand_q, run_stock_inputs, unary_model, variants  # noqa: E402

from flexdelegate import _qs8  # noqa: E402

I8, U8 = np.int8, np.uint8
# kind, input dtype, output dtype, fixed output quantization (stock checks it) or None
CASES = [("LOGISTIC", I8, I8, (1 / 256, -128)), ("LOGISTIC", U8, U8, (1 / 256, 0)),
         ("TANH", I8, I8, (1 / 128, 0)), ("TANH", U8, U8, (1 / 128, 128)),
         ("HARD_SWISH", I8, I8, None), ("HARD_SWISH", U8, U8, None),
         ("LEAKY_RELU", I8, I8, None), ("LEAKY_RELU", U8, U8, None),
         ("RELU", I8, I8, None), ("RELU6", I8, I8, None), ("RELU_N1_TO_1", I8, I8, None),
         ("RELU", U8, U8, None), ("RELU6", U8, U8, None),
         ("QUANTIZE", I8, I8, None), ("QUANTIZE", U8, U8, None), ("QUANTIZE", I8, U8, None),
         ("QUANTIZE", U8, I8, None), ("GELU", I8, I8, None), ("GELU", U8, U8, None),
         ("GELU_APPROX", I8, I8, None), ("GELU_APPROX", U8, U8, None)]


def all_values(dtype, n, rng):
    lo, hi = INFO[dtype]
    vals = np.arange(lo, hi + 1)
    return np.concatenate([rng.permutation(vals), rng.integers(lo, hi + 1, n - 256)]).astype(dtype)


@pytest.mark.parametrize("kind,din,dout,fixed", CASES,
                         ids=[f"{k}-{np.dtype(a).name}-{np.dtype(b).name}" for k, a, b, _ in CASES])
def test_table_op_matches_stock_bit_for_bit(kind, din, dout, fixed):
    rng = np.random.default_rng(abs(hash((kind, np.dtype(din).name, np.dtype(dout).name))) % 2**32)
    ran = 0
    for i in range(12):
        n = [256, 300, 263, 1024 + 7][i % 4]
        qi = rand_q(rng, din, 1e-3, 0.2)
        qo = fixed or rand_q(rng, dout, qi[0] * 0.1, qi[0] * 10)
        if kind == "QUANTIZE" and din == dout and i % 3 == 0:
            qo = (float(np.float32(qi[0] * 2.0 ** -int(rng.integers(-3, 4)))), qo[1])  # ties
        alpha = float(np.float32(rng.choice([0.1, 0.2, 0.01, rng.uniform(0, 1)])))
        x = all_values(din, n, rng)
        name = "GELU" if kind == "GELU_APPROX" else kind
        opts = {"alpha": alpha} if kind == "LEAKY_RELU" else {"approximate": kind == "GELU_APPROX"} \
            if name == "GELU" else {}
        try:
            ours = {v: _qs8.lut_op(v, "REQUANTIZE" if kind == "QUANTIZE" else kind, x, qi, qo,
                                   out_dtype=dout, alpha=alpha, stock=STOCK, chunk=[0, 5, 16][v % 3])
                    for v in variants()}
        except ValueError:
            continue
        want = run_stock_inputs(unary_model(name, (n,), din, qi, qo, out_dtype=dout, **opts), [x])
        for v, got in ours.items():
            bad = np.flatnonzero(got != want)
            assert bad.size == 0, (f"{RUNTIME} {kind} {np.dtype(din).name}->{np.dtype(dout).name} "
                                   f"n={n} q={qi},{qo} alpha={alpha} variant {v}: {bad.size} "
                                   f"differ: x={x[bad[:6]]} got {got[bad[:6]]} want {want[bad[:6]]}")
        ran += 1
    assert ran >= 8


@pytest.mark.parametrize("approximate", [False, True])
@pytest.mark.parametrize("dtype", [I8, U8], ids=["int8", "uint8"])
def test_gelu_table_matches_stock_where_the_formulas_part(dtype, approximate):
    """GELU's table (LUTPopulate over reference_ops::GeluTransform: 0.5 x erfc(-x / sqrt 2), or
    the tanh form) at the quantizations that tell the formulas apart: output scales of 1e-6 and
    below, where 0.5 x (1 + erf(x / sqrt 2)) cancels catastrophically for x < -3 and the tanh
    form's x^3 term shows; zero points at the ends; input scales up to 0.3 (x down to -77)."""
    lo, hi = INFO[dtype]
    kind = "GELU_APPROX" if approximate else "GELU"
    x = np.arange(lo, hi + 1).astype(dtype)
    for qi, qo in [((0.03, hi), (5e-7, hi)), ((0.04, hi), (2e-6, hi // 2 + 1)), ((0.02, lo), (0.05, lo)),
                   ((0.3, (lo + hi) // 2), (0.1, lo)), ((1e-3, hi), (1e-4, hi)), ((0.05, lo + 100), (3e-5, hi))]:
        want = run_stock_inputs(unary_model("GELU", (256,), dtype, qi, qo, approximate=approximate), [x])
        for v in variants():
            got = _qs8.lut_op(v, kind, x, qi, qo, stock=STOCK)
            bad = np.flatnonzero(got != want)
            assert bad.size == 0, (f"{RUNTIME} {kind} {np.dtype(dtype).name} q={qi},{qo} variant {v}: "
                                   f"x={x[bad[:6]]} got {got[bad[:6]]} want {want[bad[:6]]}")
