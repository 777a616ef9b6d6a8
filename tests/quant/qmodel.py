"""NumPy models of how stock TFLite computes integer CONV_2D / DEPTHWISE_CONV_2D /
FULLY_CONNECTED, with the requantization rounding as a parameter, so the stock interpreters can
be compared against each candidate (flexdelegate/native/kernels/quant/NOTES.md has the facts).

Everything is exact int64 arithmetic; int32 wrap-around is modelled where C wraps."""
import math

import numpy as np

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1


def quantize_multiplier(real, single_rounding=False):
    """TFLite's QuantizeMultiplier(double) -> (Q31 multiplier, shift; shift > 0 = left)."""
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    fixed = int(math.floor(abs(q) * (1 << 31) + 0.5)) * (1 if q > 0 else -1)  # std::round: half away
    if fixed == 1 << 31:
        fixed //= 2
        shift += 1
    if shift < -31:
        shift, fixed = 0, 0
    if single_rounding and shift > 30:
        shift, fixed = 30, (1 << 31) - 1
    return fixed, shift


def wrap32(x):
    x = np.asarray(x, np.int64) & 0xFFFFFFFF
    return np.where(x >= 1 << 31, x - (1 << 32), x)


def _left(acc, shift):
    return wrap32(np.asarray(acc, np.int64) << np.maximum(shift, 0))


def requant_double(acc, m, shift):
    """TFLite reference / gemmlowp: SaturatingRoundingDoublingHighMul (nudge, then a division
    truncating toward zero: ties toward +inf; INT32_MIN*INT32_MIN saturates), then
    RoundingDivideByPOT (ties away from zero)."""
    x = _left(acc, shift)
    m = np.broadcast_to(np.asarray(m, np.int64), x.shape)
    ab = x * m
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    num = ab + nudge
    high = np.where(num >= 0, num >> 31, -((-num) >> 31))  # C division truncates toward zero
    high = np.where((x == I32_MIN) & (m == I32_MIN), I32_MAX, high)
    rs = np.broadcast_to(np.maximum(-np.asarray(shift, np.int64), 0), x.shape)
    mask = (np.int64(1) << rs) - 1
    rem = high & mask
    thr = (mask >> 1) + (high < 0)
    return (high >> rs) + (rem > thr)


def requant_single(acc, m, shift):
    """TFLITE_SINGLE_ROUNDING and ruy's reference path: one rounding, ties toward +inf."""
    acc = np.asarray(acc, np.int64)
    total = 31 - np.asarray(shift, np.int64)
    return (acc * np.asarray(m, np.int64) + (np.int64(1) << (total - 1))) >> total


def requant_ruy_x86(acc, m, shift):
    """ruy's AVX / AVX2 / AVX-512 8-bit kernels: wrapping left shift, (x*m + 2^30) >> 31,
    then a rounding right shift; both roundings ties toward +inf."""
    x = _left(acc, shift)
    high = (x * np.asarray(m, np.int64) + (1 << 30)) >> 31
    rs = np.maximum(-np.asarray(shift, np.int64), 0)
    nudge = np.where(rs > 0, np.int64(1) << np.maximum(rs - 1, 0), 0)
    return (high + nudge) >> rs


def requant_floor_avx2(acc, m, shift):
    """TFLite's avx2_utils::MultiplyByQuantizedMultiplier (optimized_ops::Quantize on AVX2
    builds): wrapping left shift, (x*m) >> 31 truncated toward -inf (no rounding), then a
    rounding right shift with ties toward +inf that saturates to INT32_MAX on overflow."""
    x = _left(acc, shift)
    high = (x * np.asarray(m, np.int64)) >> 31
    rs = np.maximum(-np.asarray(shift, np.int64), 0)
    nudge = np.where(rs > 0, np.int64(1) << np.maximum(rs - 1, 0), 0)
    return np.where(high > I32_MAX - nudge, I32_MAX, (high + nudge) >> rs)


def requant_split8(acc, m, shift):
    """ai-edge-litert 2.3's int8 depthwise on x86 (optimized_ops::Quantize with NEON_2_SSE):
    per pixel, channels in whole groups of 8 go through vqrdmulh + rounding shift (= ruy_x86),
    the last C mod 8 channels through the scalar MultiplyByQuantizedMultiplier (= double)."""
    acc = np.asarray(acc, np.int64)
    c = acc.shape[-1]
    m, shift = np.broadcast_to(m, (c,)), np.broadcast_to(shift, (c,))
    main = c - c % 8
    return np.concatenate([requant_ruy_x86(acc[..., :main], m[:main], shift[:main]),
                           requant_double(acc[..., main:], m[main:], shift[main:])], axis=-1)


ROUNDINGS = {"double": requant_double, "single": requant_single, "ruy_x86": requant_ruy_x86,
             "floor_avx2": requant_floor_avx2, "split8": requant_split8}


def act_range(act, scale, zp, qmin, qmax):
    """CalculateActivationRangeQuantized: float f/scale, std::round, int32 cast (x86:
    out-of-range casts give INT32_MIN), clamped to the type's range."""
    def q(f):
        v = np.float32(f) / np.float32(scale)
        r = np.float32(math.copysign(math.floor(abs(float(v)) + 0.5), float(v))) if np.isfinite(v) else v
        if not np.isfinite(r) or r >= 2.0 ** 31 or r < -(2.0 ** 31):
            return int(wrap32(zp + I32_MIN))
        return int(wrap32(zp + int(r)))
    if act == "RELU":
        return max(qmin, q(0.0)), qmax
    if act == "RELU6":
        return max(qmin, q(0.0)), min(qmax, q(6.0))
    if act == "RELU_N1_TO_1":
        return max(qmin, q(-1.0)), min(qmax, q(1.0))
    return qmin, qmax


def finish(acc, m, shift, zp_out, lo, hi, rounding, dtype):
    r = ROUNDINGS[rounding](acc, m, shift)
    return np.clip(wrap32(r + zp_out), lo, hi).astype(dtype)


def conv_acc(x, zx, w, zw, bias, stride, dilation, pads, out_hw, depthwise=False, mult=1):
    """int64 accumulators of an NHWC conv: x [n,h,w,c]; w [cout,kh,kw,cin] (conv) or
    [1,kh,kw,cout] (depthwise); taps outside the input contribute nothing (= input zero point)."""
    n, h, wd, cin = x.shape
    kh, kw = w.shape[1:3]
    oh, ow = out_hw
    xs = x.astype(np.int64) - zx
    ws = w.astype(np.int64) - np.asarray(zw, np.int64).reshape(-1, *(1,) * (w.ndim - 1)) \
        if not depthwise else w.astype(np.int64) - np.asarray(zw, np.int64)
    cout = w.shape[0] if not depthwise else w.shape[3]
    acc = np.zeros((n, oh, ow, cout), np.int64) + np.asarray(bias, np.int64)
    for ky in range(kh):
        for kx in range(kw):
            iy = np.arange(oh) * stride[0] - pads[0] + ky * dilation[0]
            ix = np.arange(ow) * stride[1] - pads[1] + kx * dilation[1]
            vy, vx = (iy >= 0) & (iy < h), (ix >= 0) & (ix < wd)
            patch = np.zeros((n, oh, ow, cin), np.int64)
            patch[:, vy[:, None] & vx[None, :]] = xs[:, iy[vy]][:, :, ix[vx]].reshape(n, -1, cin)
            if depthwise:
                acc += np.repeat(patch, mult, axis=3) * ws[0, ky, kx]
            else:
                acc += patch @ ws[:, ky, kx, :].T
    return acc


def same_pads(size, k, stride, dilation):
    out = -(-size // stride)
    eff = (k - 1) * dilation + 1
    total = max((out - 1) * stride + eff - size, 0)
    return out, total // 2
