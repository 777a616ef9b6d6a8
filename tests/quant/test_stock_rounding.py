"""The facts of native/kernels/quant/NOTES.md, kept honest on whichever stock interpreter is
installed: quant_rounding.detect() finds the documented rule per (op, type) on x86-64, and on
random single-op models that rule (NumPy model, tests/quant/qmodel.py) reproduces every output
while the other candidate rules do not."""
import platform
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cases import make_case, multipliers  # noqa: E402
from qbuild import RUNTIME, run_stock  # noqa: E402
from qmodel import finish  # noqa: E402

from flexdelegate import quant_rounding as qr  # noqa: E402

X86 = platform.machine().lower() in ("x86_64", "amd64")
# The NumPy rule names of qmodel.ROUNDINGS for each documented rule (AWAY_SAT only differs from
# AWAY on left-shift overflow, which these cases do not reach).
NUMPY_RULE = {qr.Rounding(qr.AWAY): "double", qr.Rounding(qr.AWAY_SAT): "double",
              qr.Rounding(qr.UP): "ruy_x86", qr.Rounding(qr.SINGLE): "single",
              qr.Rounding(qr.UP, qr.AWAY, True): "split8"}


@pytest.mark.skipif(not X86, reason="the documented table is for x86-64 wheels")
def test_detect_finds_the_documented_rules():
    assert qr.detect() == qr.KNOWN_X86[RUNTIME]


@pytest.mark.parametrize("op,dtype", [("conv", np.int8), ("dw", np.int8), ("fc", np.int8),
                                      ("conv", np.uint8), ("dw", np.uint8), ("fc", np.uint8)],
                         ids=lambda v: v if isinstance(v, str) else np.dtype(v).name)
def test_detected_rule_alone_explains_random_models(op, dtype):
    name = {"conv": "CONV_2D", "dw": "DEPTHWISE_CONV_2D", "fc": "FULLY_CONNECTED"}[op]
    rule = NUMPY_RULE[qr.detect()[(name, np.dtype(dtype).name)]]
    rng = np.random.default_rng(11)
    wins = {r: 0 for r in ("double", "ruy_x86", "single", "split8")}
    n = 80
    for i in range(n):
        c = make_case(rng, op, dtype, dyadic=i % 2 == 0)
        got = run_stock(c["model"], c["x"])
        for r in wins:
            m, s = multipliers(c, r == "single")
            want = finish(c["acc"], m, s, c["z_out"], c["lo"], c["hi"], r, c["dtype"])
            wins[r] += bool(np.array_equal(got.reshape(want.shape), want))
    assert wins[rule] == n, wins
    others = [r for r in wins if r != rule and (op == "dw" or r != "split8")]  # split8: a dw rule
    assert all(wins[r] < n for r in others), wins
