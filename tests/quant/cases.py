"""Random single-op quantized cases (conv, depthwise, FC; int8 per-channel, uint8 per-tensor)
with their stock-TFLite model inputs and the NumPy accumulators, shared by the rounding probe
and the bit-exactness tests. Multipliers are drawn so that outputs land mostly inside the
int8/uint8 range; `dyadic` multipliers (powers of two, or 3 * 2^-e) make exact ties frequent,
which is where the rounding rules differ."""
import numpy as np

from qbuild import conv_model, dw_model, fc_model
from qmodel import act_range, conv_acc, quantize_multiplier, same_pads

ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def _dtype_range(dtype):
    return (-128, 127) if dtype == np.int8 else (0, 255)


def _pick_scales(rng, acc_std, nch, dyadic, per_channel):
    """(s_in, s_w[nch], s_out) with s_in * s_w / s_out near 40 / acc_std per channel."""
    s_in = np.float32(2.0 ** -int(rng.integers(3, 9)))
    s_out = np.float32(2.0 ** -int(rng.integers(0, 6))) if dyadic else np.float32(rng.uniform(0.01, 1.0))
    if not per_channel:
        acc_std = np.array([acc_std.max()])
    target = 40.0 / np.maximum(acc_std, 1.0) * rng.uniform(0.3, 3.0, acc_std.shape)
    if dyadic:
        e = np.round(np.log2(target)).astype(int)
        mant = rng.choice([1.0, 1.5], size=e.shape)
        target = mant * 2.0 ** e
    s_w = (target * float(s_out) / float(s_in)).astype(np.float32)
    return s_in, s_w, s_out


def make_case(rng, op, dtype, dyadic, act=None, per_channel=None):
    """Returns dict(model=bytes, x=input, acc=int64 accumulators (bias included), m, shift,
    z_out, lo, hi, dtype, info=str) for op in conv / dw / fc."""
    lo_t, hi_t = _dtype_range(dtype)
    act = act or rng.choice(ACTS)
    signed = dtype == np.int8
    per_channel = signed if per_channel is None else per_channel
    z_in = int(rng.choice([lo_t, hi_t, rng.integers(lo_t, hi_t + 1)]))
    z_out = int(rng.choice([lo_t, hi_t, rng.integers(lo_t, hi_t + 1)])) if rng.random() < 0.3 \
        else int(rng.integers(lo_t // 2 + (0 if signed else 64), hi_t // 2 + (0 if signed else 64)))
    z_w = 0 if signed else int(rng.integers(0, 256))
    # small weights now and then: small accumulators, multipliers near 1, frequent exact ties
    wr = int(rng.choice([127, 127, 3, 1]))
    wlo, whi = (-wr, wr + 1) if signed else (max(z_w - wr, 0), min(z_w + wr + 1, 256))
    if op == "fc":
        batch, k, n = int(rng.choice([1, 1, 2, 5])), int(rng.integers(1, 40)), int(rng.integers(1, 20))
        x = rng.integers(lo_t, hi_t + 1, (batch, k)).astype(dtype)
        w = rng.integers(wlo, whi, (n, k)).astype(dtype)
        bias = rng.integers(-3000, 3000, n)
        acc = (x.astype(np.int64) - z_in) @ (w.astype(np.int64) - z_w).T + bias
        nch, info = n, f"fc b{batch} k{k} n{n}"
        geom = dict(stride=(1, 1), dil=(1, 1), pads=(0, 0), out_hw=(1, 1), mult=1)
    else:
        h, wd = int(rng.integers(1, 8)), int(rng.integers(1, 8))
        kh, kw = (int(v) for v in rng.choice([1, 2, 3, 5], 2))
        stride = tuple(int(v) for v in rng.choice([1, 2], 2))
        dil = tuple(int(v) for v in rng.choice([1, 1, 2], 2))
        padding = str(rng.choice(["SAME", "VALID"]))
        if padding == "VALID" and ((kh - 1) * dil[0] + 1 > h or (kw - 1) * dil[1] + 1 > wd):
            padding = "SAME"
        if padding == "SAME":
            (oh, ph), (ow, pw) = same_pads(h, kh, stride[0], dil[0]), same_pads(wd, kw, stride[1], dil[1])
        else:
            oh, ow = (h - (kh - 1) * dil[0] - 1) // stride[0] + 1, (wd - (kw - 1) * dil[1] - 1) // stride[1] + 1
            ph = pw = 0
        cin = int(rng.integers(1, 12))
        mult = int(rng.choice([1, 1, 2, 3])) if op == "dw" else 1
        cout = cin * mult if op == "dw" else int(rng.integers(1, 12))
        x = rng.integers(lo_t, hi_t + 1, (1, h, wd, cin)).astype(dtype)
        wshape = (1, kh, kw, cout) if op == "dw" else (cout, kh, kw, cin)
        w = rng.integers(wlo, whi, wshape).astype(dtype)
        bias = rng.integers(-3000, 3000, cout)
        acc = conv_acc(x, z_in, w, z_w, bias, stride, dil, (ph, pw), (oh, ow), op == "dw", mult)
        nch = cout
        geom = dict(stride=stride, dil=dil, pads=(ph, pw), out_hw=(oh, ow), mult=mult)
        info = f"{op} {h}x{wd}x{cin} k{kh}x{kw} s{stride} d{dil} {padding} m{mult} cout{cout}"
    acc_std = acc.reshape(-1, nch).std(axis=0) + np.abs(acc.reshape(-1, nch).mean(axis=0)) * 0.2
    s_in, s_w, s_out = _pick_scales(rng, acc_std, nch, dyadic, per_channel)
    q = dict(s_in=s_in, z_in=z_in, s_w=s_w, z_w=z_w, s_out=s_out, z_out=z_out)
    if op == "fc":
        model = fc_model(x.shape, w, bias, q, act=act)
    elif op == "dw":
        model = dw_model(x.shape, w, bias, acc.shape, q, mult, stride, dil, padding, act)
    else:
        model = conv_model(x.shape, w, bias, acc.shape, q, stride, dil, padding, act)
    reals = [float(s_in) * float(s) / float(s_out) for s in np.broadcast_to(s_w, (nch,))]
    lo, hi = act_range(act, s_out, z_out, lo_t, hi_t)
    return dict(model=model, x=x, w=w, bias=bias, acc=acc, reals=reals, z_in=z_in, z_w=z_w, op=op, geom=geom,
                z_out=z_out, lo=lo, hi=hi, act=act, dtype=dtype, q=q,
                info=f"{info} {np.dtype(dtype).name} act={act} zin={z_in} zout={z_out}")


def multipliers(case, single_rounding):
    ms = [quantize_multiplier(r, single_rounding) for r in case["reals"]]
    return np.array([m for m, _ in ms], np.int64), np.array([s for _, s in ms], np.int64)
