"""Typed wrappers over the integer (QS8 / QU8) entries of flexdelegate._native_testing_ext
(native/testing/flex_testing.h): whole single-threaded layers, and the element-wise ops, on one
variant, from TFLite's layouts and quantization parameters. For tests/ and bench/ only: the
library never imports it.

_native_testing's convention: `variant` indexes _native_testing.variants(family) ("qs8-gemm",
"qs8-dwconv", "qs8-ops"; 0 = the scalar reference); every kernel wrapper takes iters (runs) and
timed, and returns y, or (y, seconds of each run) when timed."""
from __future__ import annotations

import numpy as np

from . import _native
from ._native import lib as api
from ._native_testing import _act_code, _run, ffi, lib
from .quant_rounding import AWAY, AWAY_SAT, SINGLE, STOCK_NEON, STOCK_PORTABLE, UP  # noqa: F401 (for callers)

NO_TAIL = 2**31 - 1


def quantize_multiplier(real: float, single_rounding: bool = False) -> tuple[int, int]:
    m, s = ffi.new("int32_t *"), ffi.new("int32_t *")
    lib.flex_quantize_multiplier(float(real), int(single_rounding), m, s)
    return int(m[0]), int(s[0])


def act_range(act: str, scale: float, zp: int, qmin: int, qmax: int) -> tuple[int, int]:
    lo, hi = ffi.new("int32_t *"), ffi.new("int32_t *")
    if lib.flex_qs8_act_range(_act_code(act), float(scale), int(zp), qmin, qmax, lo, hi):
        raise ValueError(f"no quantized range for activation {act}")
    return int(lo[0]), int(hi[0])


def requant_params(reals, single_rounding=False):
    """Per-channel (multiplier, shift) int32 arrays of the real multipliers."""
    ms = [quantize_multiplier(r, single_rounding) for r in reals]
    return np.array([m for m, _ in ms], np.int32), np.array([s for _, s in ms], np.int32)


def _ptr(a, kind="void *"):
    return ffi.NULL if a is None else ffi.cast(kind, ffi.from_buffer(a))


def _geom(x, kh, kw, stride, dilation, pads, out_hw):
    n, h, w, c = x.shape
    return [n, h, w, c], [kh, kw, stride[0], stride[1], dilation[0], dilation[1], pads[0], pads[1],
                          out_hw[0], out_hw[1]]


def conv(variant: int, x, w, bias, *, zx: int, zw: int = 0, mult, shift, zy: int, lo: int, hi: int,
         rounding: int, stride=(1, 1), dilation=(1, 1), pads=(0, 0), out_hw=None, iters: int = 1,
         timed: bool = False):
    """CONV_2D: x [n,h,w,cin] int8/uint8, w [cout,kh,kw,cin] of the same type into
    y [n,oh,ow,cout], in the form the delegate runs it. FULLY_CONNECTED is x [batch,1,1,k],
    w [n,1,1,k]."""
    x, w = np.ascontiguousarray(x), np.ascontiguousarray(w)
    u8 = int(x.dtype == np.uint8)
    cout, kh, kw, cin = w.shape
    out_hw = out_hw or x.shape[1:3]
    (n, h, wd, c), rest = _geom(x, kh, kw, stride, dilation, pads, out_hw)
    y = np.empty((n, out_hw[0], out_hw[1], cout), x.dtype)
    b = None if bias is None else np.ascontiguousarray(bias, np.int32)
    m, s = np.ascontiguousarray(mult, np.int32), np.ascontiguousarray(shift, np.int32)
    return _run(lib.flex_qs8_conv_run, "qs8 conv", y, iters, timed, variant, u8, n, h, wd, c, cout, *rest, _ptr(x),
                zx, _ptr(w), zw, _ptr(b, "int32_t *"), _ptr(m, "int32_t *"), _ptr(s, "int32_t *"), zy, lo, hi,
                rounding, _ptr(y))


def dwconv(variant: int, x, w, bias, *, depth_mult: int = 1, zx: int, zw: int = 0, mult, shift,
           zy: int, lo: int, hi: int, rounding: int, tail_rounding: int = AWAY,
           tail_from: int = NO_TAIL, stride=(1, 1), dilation=(1, 1), pads=(0, 0), out_hw=None,
           iters: int = 1, timed: bool = False):
    """DEPTHWISE_CONV_2D: w [1,kh,kw,cin*depth_mult]."""
    x, w = np.ascontiguousarray(x), np.ascontiguousarray(w)
    u8 = int(x.dtype == np.uint8)
    _, kh, kw, oc = w.shape
    out_hw = out_hw or x.shape[1:3]
    (n, h, wd, c), rest = _geom(x, kh, kw, stride, dilation, pads, out_hw)
    y = np.empty((n, out_hw[0], out_hw[1], oc), x.dtype)
    b = None if bias is None else np.ascontiguousarray(bias, np.int32)
    m, s = np.ascontiguousarray(mult, np.int32), np.ascontiguousarray(shift, np.int32)
    return _run(lib.flex_qs8_dwconv_run, "qs8 dwconv", y, iters, timed, variant, u8, n, h, wd, c, depth_mult, *rest,
                _ptr(x), zx, _ptr(w), zw, _ptr(b, "int32_t *"), _ptr(m, "int32_t *"), _ptr(s, "int32_t *"), zy, lo,
                hi, rounding, tail_rounding, tail_from, _ptr(y))


# ---- the element-wise integer ops (kernels/qs8-ops) ----
# flex_testing.h's FLEX_BINARY_* / FLEX_LUT_* by their TFLite names ("ADD", "RELU6", "GELU_APPROX")
BINARY_OPS = _native.enum_names("FLEX_BINARY_", lib)
LUT_KINDS = _native.enum_names("FLEX_LUT_", lib)


def _q(t):
    """(scale, zero point) of a quantization pair."""
    return float(t[0]), int(t[1])


def binary(variant: int, op: str, a, b, qa, qb, qo, *, act: str = "NONE", stock: int,
           chunk: int = 0, iters: int = 1, timed: bool = False):
    """ADD / MUL of int8 or uint8 arrays a, b with broadcasting; q* = (scale, zero point).
    ValueError where the kernels refuse."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    out_shape = np.broadcast_shapes(a.shape, b.shape)
    y = np.empty(out_shape, a.dtype)
    da, db = ffi.new("int[]", list(a.shape) or [1]), ffi.new("int[]", list(b.shape) or [1])
    return _run(lib.flex_qs8_binary_run, f"qs8 {op}", y, iters, timed, variant, BINARY_OPS[op],
                int(a.dtype == np.uint8), *_q(qa), *_q(qb), *_q(qo), _act_code(act), a.ndim, da, b.ndim, db,
                _ptr(a), _ptr(b), _ptr(y), stock, chunk)


QUANT_FORMS = {"DIVIDE": api.FLEX_QUANT_AWAY, "MUL_RNE": api.FLEX_QUANT_RECIP_EVEN}


def quantize(variant: int, x, scale: float, zp: int, *, form: str, out_dtype=np.int8,
             lo: int | None = None, hi: int | None = None, chunk: int = 0, iters: int = 1, timed: bool = False):
    """Float -> int8 / uint8 QUANTIZE of a float32 array, clamped to [lo, hi] (default the
    type's range)."""
    x = np.ascontiguousarray(x, np.float32)
    y = np.empty(x.shape, out_dtype)
    info = np.iinfo(out_dtype)
    return _run(lib.flex_qs8_quantize_run, "qs8 quantize", y, iters, timed, variant, QUANT_FORMS[form],
                int(y.dtype == np.uint8), float(scale), int(zp), info.min if lo is None else lo,
                info.max if hi is None else hi, x.size, _ptr(x, "const float *"), _ptr(y), chunk)


def lut_op(variant: int, kind: str, x, q_in, q_out, *, out_dtype=None, alpha: float = 0.0,
           stock: int, chunk: int = 0, iters: int = 1, timed: bool = False):
    """A table op (LUT_KINDS) on an int8/uint8 array."""
    x = np.ascontiguousarray(x)
    y = np.empty(x.shape, out_dtype or x.dtype)
    return _run(lib.flex_qs8_lut_op_run, f"qs8 {kind}", y, iters, timed, variant, LUT_KINDS[kind],
                int(x.dtype == np.uint8), int(y.dtype == np.uint8), *_q(q_in), *_q(q_out), float(alpha), x.size,
                _ptr(x), _ptr(y), stock, chunk)


def mean_hw(variant: int, x, q_in, q_out, *, axes=(1, 2), stock: int, stock_threads: int = 1,
            chunk: int = 0, iters: int = 1, timed: bool = False):
    """MEAN of int8 x [n,h,w,c] over H, W with keep_dims (axes: the model's axis tensor) into
    y [n,1,1,c]."""
    x = np.ascontiguousarray(x, np.int8)
    ax = np.ascontiguousarray(axes, np.int32)
    n, h, w, c = x.shape
    y = np.empty((n, 1, 1, c), np.int8)
    return _run(lib.flex_qs8_mean_hw_run, "qs8 MEAN", y, iters, timed, variant, n, h, w, c, _ptr(ax, "int32_t *"),
                ax.size, *_q(q_in), *_q(q_out), _ptr(x), _ptr(y), stock, stock_threads, chunk)


def softmax(x, q_in, beta: float, q_out, *, chunk: int = 0, iters: int = 1, timed: bool = False):
    """SOFTMAX over the last dimension of an int8/uint8 array (one portable kernel: no variant)."""
    x = np.ascontiguousarray(x)
    y = np.empty(x.shape, x.dtype)
    cols = x.shape[-1] if x.ndim else 1
    return _run(lib.flex_qs8_softmax_run, "qs8 SOFTMAX", y, iters, timed, int(x.dtype == np.uint8), float(q_in[0]),
                float(beta), *_q(q_out), x.size // max(cols, 1), cols, _ptr(x), _ptr(y), chunk)


def _reduction(entry, name: str, variant: int, x, axes, q_in, q_out, chunk: int, iters: int, timed: bool):
    """A reduction entry over `axes` (any order, negative, repeated; keep_dims is only a reshape)
    into y with the reduced dimensions dropped."""
    x = np.ascontiguousarray(x)
    resolved = sorted({a % x.ndim for a in axes})
    y = np.empty([d for i, d in enumerate(x.shape) if i not in resolved], x.dtype)
    d = ffi.new("int[]", list(x.shape) or [1])
    return _run(entry, name, y, iters, timed, variant, int(x.dtype == np.uint8), x.ndim, d,
                sum(1 << a for a in resolved), *_q(q_in), *_q(q_out), _ptr(x), _ptr(y), chunk)


def mean(variant: int, x, axes, q_in, q_out, *, chunk: int = 0, iters: int = 1, timed: bool = False):
    """MEAN on stock's general path (reference_ops::QuantizedMeanOrSum)."""
    return _reduction(lib.flex_qs8_mean_run, "qs8 MEAN", variant, x, axes, q_in, q_out, chunk, iters, timed)


def reduce_sum(variant: int, x, axes, q_in, q_out, *, chunk: int = 0, iters: int = 1, timed: bool = False):
    """SUM (stock's float rescale of the int32 sums)."""
    return _reduction(lib.flex_qs8_sum_run, "qs8 SUM", variant, x, axes, q_in, q_out, chunk, iters, timed)


def avgpool(variant: int, x, k, stride, pads, out_hw, lo: int, hi: int, *, chunk: int = 0,
            iters: int = 1, timed: bool = False):
    """AVERAGE_POOL_2D of int8/uint8 x [n,h,w,c]: window k (kh, kw), strides, leading pads
    (top, left), output size; clamp [lo, hi]."""
    x = np.ascontiguousarray(x)
    n, h, w, c = x.shape
    y = np.empty((n, out_hw[0], out_hw[1], c), x.dtype)
    return _run(lib.flex_qs8_avgpool_run, "qs8 AVERAGE_POOL_2D", y, iters, timed, variant, int(x.dtype == np.uint8),
                n, h, w, c, k[0], k[1], stride[0], stride[1], pads[0], pads[1], out_hw[0], out_hw[1], lo, hi,
                _ptr(x), _ptr(y), chunk)
