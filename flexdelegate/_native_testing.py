"""Typed wrappers over flexdelegate._native_testing_ext, the tester and benchmark entries
(native/testing/flex_testing.h): one kernel variant, or one planner, driven outside any model.
For tests/ and bench/ only: the library never imports this module.

One convention: `variant` indexes variants(family) (0 = the portable reference); every kernel
wrapper takes iters (runs) and timed, and returns y, or (y, seconds of each run) when timed."""
from __future__ import annotations

import numpy as np

from . import _native, _native_testing_ext as _ext

ffi, lib = _ext.ffi, _ext.lib

# flex_testing.h's FLEX_FAMILY_* by name: "gemm", "igemm", ..., "qs8-gemm", "qs8-dwconv", "qs8-ops"
FAMILIES = _native.enum("FLEX_FAMILY_", lib)

# Fused activations by name (flex_api.h FLEX_ACT_*; SIGMOID and SWISH are the curves the delegate
# fuses a following LOGISTIC, and MUL, into: native/ir/fuse.c).
_ACTS = _native.enum_names("FLEX_ACT_")


def variants(family: str) -> list[str]:
    """The variants of a kernel family this CPU runs, index 0 the portable reference ("igemm":
    the direct-conv kernel paired with each GEMM variant; "qs8-gemm": the GEMM / IGEMM pair)."""
    names = []
    while (p := lib.flex_variant(FAMILIES[family], len(names))) != ffi.NULL:
        names.append(ffi.string(p).decode())
    return names


def chosen(family: str) -> str:
    """The variant the delegate runs on this CPU (FLEXDELEGATE_ISA narrows it)."""
    return ffi.string(lib.flex_variant(FAMILIES[family], -1)).decode()


def hybrid_int8() -> bool:
    """Whether dynamic-range convs and FCs run on this CPU's int8 GEMM (else on the FP32 kernels)."""
    return bool(lib.flex_hybrid_int8())


def _act_code(act) -> int:
    return _ACTS[act.upper()] if isinstance(act, str) else int(act)


def _fptr(x):
    return ffi.NULL if x is None else ffi.cast("float *", ffi.from_buffer(x))


def _f32(x, shape=None, what="array"):
    """x as a contiguous float32 array (None stays None), checked against shape if given."""
    if x is None:
        return None
    x = np.ascontiguousarray(x, np.float32)
    if shape is not None and x.shape != tuple(shape):
        raise ValueError(f"{what} must have shape {tuple(shape)}")
    return x


def _run(entry, name: str, y, iters: int, timed: bool, *args):
    """Calls a tester entry with its trailing (iters, seconds) and applies the convention."""
    secs = ffi.new("double[]", max(1, iters))
    if entry(*args, iters, secs):
        raise ValueError(f"{name}: variant unavailable, unsupported or bad arguments")
    return (y, np.array(list(secs))) if timed else y


def aligned_empty(shape, align: int = 64) -> np.ndarray:
    """An uninitialised float32 array whose data starts on an `align`-byte boundary, as tensors
    in the TFLite and delegate arenas do (SIMD kernels run measurably slower on split lines)."""
    n = int(np.prod(shape))
    raw = np.empty(n * 4 + align, np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off:off + n * 4].view(np.float32).reshape(shape)


def aligned(x) -> np.ndarray:
    """A 64-byte-aligned float32 copy of x."""
    out = aligned_empty(np.shape(x))
    out[...] = x
    return out


def conv_out_size(same: bool, size: int, k: int, stride: int = 1, dilation: int = 1) -> int:
    """TFLite's SAME/VALID output size for one spatial dim."""
    eff = (k - 1) * dilation + 1
    return max(0, (size + stride - 1) // stride if same else (size + stride - eff) // stride)


def gemm(variant: int, a: np.ndarray, w: np.ndarray, bias=None, lo=-np.inf, hi=np.inf, *, residual=None,
         rlo=-np.inf, rhi=np.inf, iters: int = 1, timed: bool = False):
    """a [m, k] @ w [n, k].T + bias, clamped to [lo, hi], by GEMM variant `variant`; then
    + residual [m, n] clamped to [rlo, rhi] (a fused ADD)."""
    a, w = _f32(a), _f32(w)
    m, k = a.shape
    n, k2 = w.shape
    if k != k2:
        raise ValueError("a and w disagree on k")
    b, r = _f32(bias, (n,), "bias"), _f32(residual, (m, n), "residual")
    c = np.empty((m, n), np.float32)
    return _run(lib.flex_gemm_run, "gemm", c, iters, timed, variant, m, n, k, _fptr(a), _fptr(w), _fptr(b), _fptr(c),
                float(lo), float(hi), _fptr(r), float(rlo), float(rhi))


def vsigmoid(variant: int, x: np.ndarray, swish: bool = False, *, iters: int = 1, timed: bool = False):
    """sigmoid(x) (swish: x * sigmoid(x)) of a float32 array by one variant."""
    x = _f32(x)
    y = np.empty_like(x)
    return _run(lib.flex_vsigmoid_run, "vsigmoid", y, iters, timed, variant, _fptr(x), _fptr(y), x.size, int(swish))


def dwconv(variant: int, x: np.ndarray, filter: np.ndarray, bias=None, *, mult: int = 1, stride=(1, 1),
           dilation=(1, 1), padding: str = "SAME", act="NONE", iters: int = 1, timed: bool = False):
    """DEPTHWISE_CONV_2D of x [n,h,w,c] with filter [1,kh,kw,c*mult] (or [kh,kw,c*mult]) by
    variant number `variant`, one thread."""
    x, f = _f32(x), _f32(filter)
    if f.ndim == 4:
        f = f.reshape(f.shape[1:])
    n, h, w, c = x.shape
    kh, kw, oc = f.shape
    if oc != c * mult:
        raise ValueError("filter depth must be cin * mult")
    b = _f32(bias, (oc,), "bias")
    same = padding.upper() == "SAME"
    oh = conv_out_size(same, h, kh, stride[0], dilation[0])
    ow = conv_out_size(same, w, kw, stride[1], dilation[1])
    y = aligned_empty((n, oh, ow, oc))
    return _run(lib.flex_dwconv_run, "dwconv", y, iters, timed, variant, n, h, w, c, mult, kh, kw, stride[0],
                stride[1], dilation[0], dilation[1], int(same), _fptr(x), _fptr(f), _fptr(b), _act_code(act),
                _fptr(y), oh, ow)


def _pads(h, w, kh, kw, stride, dilation, padding, pads):
    """(top, left, oh, ow) for TFLite SAME/VALID padding, or explicit pads (top, left, bottom, right)."""
    eff = ((kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1)
    if pads is None:
        same = padding.upper() == "SAME"
        oh, ow = conv_out_size(same, h, kh, stride[0], dilation[0]), conv_out_size(same, w, kw, stride[1], dilation[1])
        top = max((oh - 1) * stride[0] + eff[0] - h, 0) // 2 if same else 0
        left = max((ow - 1) * stride[1] + eff[1] - w, 0) // 2 if same else 0
        return top, left, oh, ow
    top, left, bottom, right = pads
    return (top, left, max(0, (h + top + bottom - eff[0]) // stride[0] + 1),
            max(0, (w + left + right - eff[1]) // stride[1] + 1))


def winograd(variant: int, tile: int, x: np.ndarray, filter: np.ndarray, bias=None, *, padding="SAME",
             pads=None, act="NONE", threads: int = 1, iters: int = 1, timed: bool = False,
             slice_panels: int = 0, from_gemm: bool = False):
    """Stride-1 3x3 CONV_2D of x [n,h,w,cin] with filter [cout,3,3,cin] by Winograd F(tile,3)
    (tile 4 or 6) on GEMM variant `variant`: packs, then runs. padding SAME/VALID, or
    pads=(top, left, bottom, right). slice_panels > 0: run in output-channel slices of that many
    GEMM panels, each from a copy of its own packed bytes (as a budget plan streams them).
    from_gemm: pack the filter as GEMM panels and transform it at every run instead (the
    delegate's run-time Winograd)."""
    x, f = _f32(x), _f32(filter)
    n, h, w, cin = x.shape
    cout = f.shape[0]
    if f.shape != (cout, 3, 3, cin):
        raise ValueError("filter must be [cout, 3, 3, cin]")
    b = _f32(bias, (cout,), "bias")
    if pads is None:  # Winograd's SAME is symmetric: a 3x3 window pads one pixel each side
        pads = (1, 1, 1, 1) if padding.upper() == "SAME" else (0, 0, 0, 0)
    top, left, oh, ow = _pads(h, w, 3, 3, (1, 1), (1, 1), padding, pads)
    y = aligned_empty((n, oh, ow, cout))
    return _run(lib.flex_winograd_run, "winograd", y, iters, timed, variant, tile, threads, n, h, w, cin, cout, top,
                left, oh, ow, _fptr(x), _fptr(f), _fptr(b), _act_code(act), _fptr(y), slice_panels, int(from_gemm))


def conv2d(variant: int, x: np.ndarray, filter: np.ndarray, bias=None, *, direct: bool = True, stride=(1, 1),
           dilation=(1, 1), padding="SAME", pads=None, act="NONE", threads: int = 1, iters: int = 1,
           timed: bool = False, stem: bool = False):
    """CONV_2D of x [n,h,w,cin] with filter [cout,kh,kw,cin] over weights packed for GEMM
    variant `variant`, as direct conv (its paired IGEMM kernel) or im2col GEMM; stem=True: as
    stem conv (the paired conv-stem kernel; 3x3 filters over 3 channels only). padding
    SAME/VALID as TFLite, or pads=(top, left, bottom, right)."""
    x, f = _f32(x), _f32(filter)
    n, h, w, cin = x.shape
    cout, kh, kw, fcin = f.shape
    if fcin != cin:
        raise ValueError("filter must be [cout, kh, kw, cin]")
    b = _f32(bias, (cout,), "bias")
    if min(*stride, *dilation) < 1:
        raise ValueError("stride and dilation must be >= 1")
    top, left, oh, ow = _pads(h, w, kh, kw, stride, dilation, padding, pads)
    y = aligned_empty((n, oh, ow, cout))
    form = lib.FLEX_CONV_STEM if stem else lib.FLEX_CONV_DIRECT if direct else lib.FLEX_CONV_IM2COL
    return _run(lib.flex_conv2d_run, "conv2d", y, iters, timed, variant, form, threads, n, h, w, cin, cout,
                kh, kw, stride[0], stride[1], dilation[0], dilation[1], top, left, oh, ow, _fptr(x), _fptr(f),
                _fptr(b), _act_code(act), _fptr(y))


def plan_arena(sizes, first, last, greedy: bool = True) -> tuple[int, list[int]]:
    """Offsets for buffers with inclusive [first, last] lifetimes by the unlimited planner's
    placement (greedy) or back to back; returns (arena_size, offsets)."""
    n = len(sizes)
    if not (len(first) == len(last) == n):
        raise ValueError("sizes, first and last must have the same length")
    c_sizes = ffi.new("size_t[]", [int(s) for s in sizes] or [0])
    c_first = ffi.new("int[]", [int(f) for f in first] or [0])
    c_last = ffi.new("int[]", [int(l) for l in last] or [0])
    c_off = ffi.new("size_t[]", max(n, 1))
    total = lib.flex_plan_arena(int(greedy), n, c_sizes, c_first, c_last, c_off)
    if total == ffi.cast("size_t", -1):
        raise ValueError("invalid buffers: sizes must be >= 0 and first <= last")
    return int(total), [int(c_off[i]) for i in range(n)]
