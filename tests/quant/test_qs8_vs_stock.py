"""The bit-exactness claim: the integer kernels (the scalar reference and every SIMD variant this
CPU runs), given the rounding quant_rounding.detect() finds for the installed interpreter, produce
exactly the stock interpreter's outputs on random single-op models from our own writer: int8
per-channel CONV_2D / DEPTHWISE_CONV_2D, int8 per-tensor and per-channel FULLY_CONNECTED, uint8
per-tensor ones; zero points at both ends, exact ties, every fused clamp; plus edges (left shifts,
multipliers flushed to zero, output scales so small that the RELU6 bound overflows int32)."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cases import make_case  # noqa: E402
from qbuild import RUNTIME, conv_model, dw_model, fc_model, run_stock  # noqa: E402

from flexdelegate import _native_testing as testing, _qs8, quant_rounding  # noqa: E402

OP_NAMES = {"conv": "CONV_2D", "dw": "DEPTHWISE_CONV_2D", "fc": "FULLY_CONNECTED"}
RULES = quant_rounding.detect()
GEMM = range(len(testing.variants("qs8-gemm")))
DW = range(len(testing.variants("qs8-dwconv")))


def run_kernels(c, variant):
    """Our kernels on case c (cases.make_case) with the detected rounding of its op."""
    name = np.dtype(c["dtype"]).name
    rule = RULES[(OP_NAMES[c["op"]], name)]
    assert rule is not None, f"{RUNTIME}: no known rounding reproduces {c['op']} {name}"
    qmin, qmax = (0, 255) if name == "uint8" else (-128, 127)
    lo, hi = _qs8.act_range(c["act"], c["q"]["s_out"], c["z_out"], qmin, qmax)
    m, s = _qs8.requant_params(c["reals"], rule.rounding == _qs8.SINGLE)
    g = c["geom"]
    kw = dict(zx=c["z_in"], zw=c["z_w"], mult=m, shift=s, zy=c["z_out"], lo=lo, hi=hi,
              rounding=rule.rounding, stride=g["stride"], dilation=g["dil"], pads=g["pads"],
              out_hw=g["out_hw"])
    if c["op"] == "fc":
        x = c["x"].reshape(c["x"].shape[0], 1, 1, -1)
        w = c["w"].reshape(c["w"].shape[0], 1, 1, -1)
        return _qs8.conv(variant, x, w, c["bias"], **kw).reshape(c["x"].shape[0], -1)
    if c["op"] == "conv":
        return _qs8.conv(variant, c["x"], c["w"], c["bias"], **kw)
    channels = c["w"].shape[-1]
    return _qs8.dwconv(variant, c["x"], c["w"], c["bias"], depth_mult=g["mult"],
                       tail_rounding=rule.tail_rounding, tail_from=rule.tail_from(channels), **kw)


KINDS = [("conv", np.int8, None), ("dw", np.int8, None), ("fc", np.int8, False),
         ("fc", np.int8, True), ("conv", np.uint8, None), ("dw", np.uint8, None),
         ("fc", np.uint8, None)]


@pytest.mark.parametrize("op,dtype,per_channel", KINDS,
                         ids=[f"{o}-{np.dtype(d).name}{'' if p is None else ('-pc' if p else '-pt')}" for o, d, p in KINDS])
def test_random_single_op_models_match_stock_bit_for_bit(op, dtype, per_channel):
    rng = np.random.default_rng(hash((op, np.dtype(dtype).name, per_channel)) % 2**32)
    variants = DW if op == "dw" else GEMM
    mismatches, ties = [], 0
    for i in range(120):
        c = make_case(rng, op, dtype, dyadic=i % 2 == 0, per_channel=per_channel)
        want = run_stock(c["model"], c["x"])
        for v in variants:
            got = run_kernels(c, v)
            if not np.array_equal(got.reshape(want.shape), want):
                mismatches.append(f"variant {v}: {c['info']}")
    assert not mismatches, f"{RUNTIME}: {len(mismatches)} mismatches, e.g. {mismatches[:3]}"


def _edge_case(op, dtype, real, s_out, act, rng):
    """A conv / dw / fc case whose multipliers are all `real` and whose output scale is s_out."""
    u8 = dtype == np.uint8
    lo_t, hi_t = (0, 255) if u8 else (-128, 127)
    z_in, z_out, z_w = (lo_t, hi_t, 0) if not u8 else (0, 255, 200)
    x = rng.integers(lo_t, hi_t + 1, (1, 5, 6, 4)).astype(dtype)
    s_in = np.float32(0.5)
    s_w = np.float32(real * float(s_out) / float(s_in))
    bias = rng.integers(-50, 50, 4)
    q = dict(s_in=s_in, z_in=z_in, s_w=[s_w] if u8 else [s_w] * 4, z_w=z_w, s_out=np.float32(s_out), z_out=z_out)
    if op == "dw":
        w = rng.integers(-2, 3, (1, 3, 3, 4)) + (z_w if u8 else 0)
        model = dw_model(x.shape, w.astype(dtype), bias, (1, 5, 6, 4), q, act=act)
        geom = dict(stride=(1, 1), dil=(1, 1), pads=(1, 1), out_hw=(5, 6), mult=1)
    else:
        w = rng.integers(-2, 3, (4, 3, 3, 4)) + (z_w if u8 else 0)
        model = conv_model(x.shape, w.astype(dtype), bias, (1, 5, 6, 4), q, act=act)
        geom = dict(stride=(1, 1), dil=(1, 1), pads=(1, 1), out_hw=(5, 6), mult=1)
    reals = [float(s_in) * float(s_w) / float(np.float32(s_out))] * 4
    return dict(model=model, x=x, w=w.astype(dtype), bias=bias, reals=reals, z_in=z_in, z_w=z_w,
                z_out=z_out, act=act, dtype=dtype, q=q, op=op, geom=geom)


# multiplier and output scale: left shifts (2^0 .. 2^20; acc << shift overflows int32, which
# gemmlowp saturates and the others wrap), flushed tiny multipliers, output scales so small
# that round(6 / scale) leaves int32 (stock refuses the model; so must act_range).
EDGES = [(3.0, 0.5, "NONE"), (1024.5, 0.25, "RELU"), (2.0**20, 1.0, "NONE"), (2.0**-33, 0.5, "NONE"),
         (2.0**-31, 0.5, "RELU"), (0.3, 1e-9, "RELU6"), (0.3, 1e-9, "RELU_N1_TO_1"), (0.7, 3e5, "RELU6")]


@pytest.mark.parametrize("op", ["conv", "dw"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize("real,s_out,act", EDGES)
def test_edge_scales_match_stock(op, dtype, real, s_out, act):
    rng = np.random.default_rng(7)
    c = _edge_case(op, dtype, real, s_out, act, rng)
    try:
        want = run_stock(c["model"], c["x"])
    except RuntimeError as e:
        assert "no_integer_overflow_from_quantization" in str(e)
        qmin, qmax = (0, 255) if dtype == np.uint8 else (-128, 127)
        with pytest.raises(ValueError):
            _qs8.act_range(act, np.float32(s_out), c["z_out"], qmin, qmax)
        return
    for v in (DW if op == "dw" else GEMM):
        got = run_kernels(c, v)
        assert np.array_equal(got, want), f"variant {v}: {op} real={real} s_out={s_out} {act}"
