"""Thin typed wrappers over the CFFI module: the only Python module that touches `lib`.

Return codes become exceptions here; callers get plain Python values."""
from __future__ import annotations

import json
import os

import numpy as np

from . import _native_ext as _ext

ffi, lib = _ext.ffi, _ext.lib

OPTION_NAMES = ("budget", "cache_path", "num_threads", "log", "profile", "winograd")


def library_path() -> str:
    """The shared object TFLite loads as the external-delegate plugin."""
    return _ext.__file__


def check_option(key: str, value: str) -> None:
    err = lib.flex_check_option(key.encode(), value.encode())
    if err != ffi.NULL:
        raise ValueError(f"flexdelegate: option {key!r}={value!r}: {ffi.string(err).decode()}")


def stats(delegate_ptr: int) -> dict:
    ptr = ffi.cast("void *", delegate_ptr)
    cap = 1 << 14
    while True:  # another thread may grow the report between two calls: retry until it fits
        buf = ffi.new("char[]", cap)
        need = lib.flex_stats_json(ptr, buf, cap)
        if need < cap:
            return json.loads(ffi.string(buf).decode())
        cap = need + 1024


def set_budget(delegate_ptr: int, mb: float) -> None:
    msg = ffi.new("char[]", 512)
    try:
        mb = float(mb)
    except OverflowError:  # an int past any float: as invalid as infinity, and said so by C
        mb = float("inf")
    if lib.flex_set_budget(ffi.cast("void *", delegate_ptr), mb, msg, 512):
        raise ValueError(f"flexdelegate: {ffi.string(msg).decode()}")


def plan_arena(sizes, first, last, greedy: bool = True) -> tuple[int, list[int]]:
    """Offsets for buffers with inclusive [first, last] lifetimes; returns (arena_size, offsets)."""
    n = len(sizes)
    if not (len(first) == len(last) == n):
        raise ValueError("sizes, first and last must have the same length")
    c_sizes = ffi.new("size_t[]", [int(s) for s in sizes] or [0])
    c_first = ffi.new("int[]", [int(f) for f in first] or [0])
    c_last = ffi.new("int[]", [int(l) for l in last] or [0])
    c_off = ffi.new("size_t[]", max(n, 1))
    total = lib.flex_plan_arena(0 if greedy else 1, n, c_sizes, c_first, c_last, c_off)
    if total == ffi.cast("size_t", -1):
        raise ValueError("invalid buffers: sizes must be >= 0 and first <= last")
    return int(total), [int(c_off[i]) for i in range(n)]


def _names_until_null(name_at) -> list[str]:
    """name_at(0), name_at(1), ... decoded, up to the first NULL (a C variant table's names)."""
    names = []
    while (p := name_at(len(names))) != ffi.NULL:
        names.append(ffi.string(p).decode())
    return names


def gemm_kernel_name() -> str:
    return ffi.string(lib.flex_gemm_kernel_name()).decode()


def gemm_kernels() -> list[str]:
    """Microkernels this CPU can run; index 0 is the scalar reference."""
    return _names_until_null(lib.flex_gemm_kernel_at)


def gemm(kernel: int, a: np.ndarray, w: np.ndarray, bias=None, lo=-np.inf, hi=np.inf, *, residual=None,
         rlo=-np.inf, rhi=np.inf) -> np.ndarray:
    """a [m, k] @ w [n, k].T + bias, clamped to [lo, hi], computed by microkernel number `kernel`;
    then + residual [m, n] clamped to [rlo, rhi] (a fused ADD)."""
    a = np.ascontiguousarray(a, np.float32)
    w = np.ascontiguousarray(w, np.float32)
    m, k = a.shape
    n, k2 = w.shape
    if k != k2:
        raise ValueError("a and w disagree on k")
    b = None if bias is None else np.ascontiguousarray(bias, np.float32)
    if b is not None and b.shape != (n,):
        raise ValueError("bias must have n elements")
    r = None if residual is None else np.ascontiguousarray(residual, np.float32)
    if r is not None and r.shape != (m, n):
        raise ValueError("residual must be [m, n]")
    c = np.empty((m, n), np.float32)
    fp = lambda x: ffi.NULL if x is None else ffi.cast("float *", ffi.from_buffer(x))
    if lib.flex_gemm_run(kernel, m, n, k, fp(a), fp(w), fp(b), fp(c), float(lo), float(hi), fp(r), float(rlo),
                         float(rhi)):
        raise ValueError(f"gemm: kernel {kernel} unavailable or bad arguments")
    return c


def hash64(data, seed: int = 0) -> int:
    """The cache's content hash of a bytes-like object (see flexdelegate/cache/FORMAT.md)."""
    buf = ffi.from_buffer(data)
    return int(lib.flex_hash64(buf, len(buf), seed))


def cache_check(path) -> str | None:
    """The C loader's verdict on a cache file: None if a load would map it, else why not
    ("missing" for no file at all)."""
    raw = os.fsencode(path)
    if b"\0" in raw:
        return "not a valid path"
    msg = ffi.new("char[]", 256)
    rc = lib.flex_cache_check(raw, msg, 256)
    return None if rc == 0 else "missing" if rc == 1 else ffi.string(msg).decode(errors="replace")


# SIGMOID and SWISH are not TFLite fused activations: the delegate fuses a following LOGISTIC
# (and MUL) into conv / depthwise outputs as these (native/fuse.c).
_ACTS = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3, "TANH": 4, "SIGMOID": 5, "SWISH": 6}


def _act_code(act) -> int:
    return _ACTS[act.upper()] if isinstance(act, str) else int(act)


def _fptr(x):
    return ffi.NULL if x is None else ffi.cast("float *", ffi.from_buffer(x))


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


def vsigmoid_variants() -> list[str]:
    """Sigmoid / swish variants this CPU can run; index 0 is the scalar reference."""
    return _names_until_null(lib.flex_vsigmoid_variant_at)


def vsigmoid(variant: int, x: np.ndarray, swish: bool = False) -> np.ndarray:
    """sigmoid(x) (swish: x * sigmoid(x)) of a float32 array with one variant."""
    x = np.ascontiguousarray(x, np.float32)
    y = np.empty_like(x)
    if lib.flex_vsigmoid_run(variant, _fptr(x), _fptr(y), x.size, int(swish)):
        raise ValueError(f"vsigmoid variant {variant} is not available")
    return y


def dwconv_variants() -> list[str]:
    """Depthwise-conv variants this CPU can run; index 0 is the scalar reference."""
    return _names_until_null(lib.flex_dwconv_variant_at)


def dwconv(variant: int, x: np.ndarray, filter: np.ndarray, bias=None, *, mult: int = 1, stride=(1, 1),
           dilation=(1, 1), padding: str = "SAME", act="NONE", iters: int = 1, timed: bool = False):
    """DEPTHWISE_CONV_2D of x [n,h,w,c] with filter [1,kh,kw,c*mult] (or [kh,kw,c*mult]) by
    variant number `variant`, one thread. Returns y, or (y, best seconds of `iters`) if timed."""
    x = np.ascontiguousarray(x, np.float32)
    f = np.ascontiguousarray(filter, np.float32)
    if f.ndim == 4:
        f = f.reshape(f.shape[1:])
    n, h, w, c = x.shape
    kh, kw, oc = f.shape
    if oc != c * mult:
        raise ValueError("filter depth must be cin * mult")
    b = None if bias is None else np.ascontiguousarray(bias, np.float32)
    if b is not None and b.shape != (oc,):
        raise ValueError("bias must have cin * mult elements")
    same = padding.upper() == "SAME"
    oh = conv_out_size(same, h, kh, stride[0], dilation[0])
    ow = conv_out_size(same, w, kw, stride[1], dilation[1])
    y = aligned_empty((n, oh, ow, oc))
    secs = ffi.new("double *")
    if lib.flex_dwconv_run(variant, n, h, w, c, mult, kh, kw, stride[0], stride[1], dilation[0],
                           dilation[1], int(same), _fptr(x), _fptr(f), _fptr(b), _act_code(act),
                           _fptr(y), oh, ow, iters, secs):
        raise ValueError(f"dwconv: variant {variant} unavailable or bad arguments")
    return (y, float(secs[0])) if timed else y


def winograd(variant: int, tile: int, x: np.ndarray, filter: np.ndarray, bias=None, *, padding="SAME",
             pads=None, act="NONE", threads: int = 1, iters: int = 1, timed: bool = False,
             slice_panels: int = 0, from_gemm: bool = False):
    """Stride-1 3x3 CONV_2D of x [n,h,w,cin] with filter [cout,3,3,cin] by Winograd F(tile,3)
    (tile 4 or 6) on GEMM kernel number `variant` (see gemm_kernels()): packs, then runs.
    padding SAME/VALID, or pads=(top, left, bottom, right). slice_panels > 0: run in output-channel
    slices of that many GEMM panels, each from a copy of its own packed bytes (as a budget plan
    streams them). from_gemm: pack the filter as GEMM panels and transform it at every run
    instead (the delegate's run-time Winograd). Returns y, or (y, best seconds)."""
    x = np.ascontiguousarray(x, np.float32)
    f = np.ascontiguousarray(filter, np.float32)
    n, h, w, cin = x.shape
    cout = f.shape[0]
    if f.shape != (cout, 3, 3, cin):
        raise ValueError("filter must be [cout, 3, 3, cin]")
    b = None if bias is None else np.ascontiguousarray(bias, np.float32)
    if b is not None and b.shape != (cout,):
        raise ValueError("bias must have cout elements")
    if pads is None:
        same = padding.upper() == "SAME"
        pads = (1, 1, 1, 1) if same else (0, 0, 0, 0)
    top, left, bottom, right = pads
    oh, ow = max(0, h + top + bottom - 2), max(0, w + left + right - 2)
    y = aligned_empty((n, oh, ow, cout))
    secs = ffi.new("double *")
    if lib.flex_winograd_run(variant, tile, threads, n, h, w, cin, cout, top, left, oh, ow, _fptr(x),
                             _fptr(f), _fptr(b), _act_code(act), _fptr(y), slice_panels,
                             int(from_gemm), iters, secs):
        raise ValueError(f"winograd: kernel {variant} unavailable or bad arguments")
    return (y, float(secs[0])) if timed else y


def igemm_kernels() -> list[str]:
    """The IGEMM (direct conv) kernel paired with each of gemm_kernels(), or None."""
    names = []
    for i in range(len(gemm_kernels())):
        p = lib.flex_igemm_kernel_at(i)
        names.append(None if p == ffi.NULL else ffi.string(p).decode())
    return names


def conv2d(variant: int, x: np.ndarray, filter: np.ndarray, bias=None, *, direct: bool = True, stride=(1, 1),
           dilation=(1, 1), padding="SAME", pads=None, act="NONE", threads: int = 1, iters: int = 1,
           timed: bool = False):
    """CONV_2D of x [n,h,w,cin] with filter [cout,kh,kw,cin] on GEMM kernel number `variant`
    (see gemm_kernels()), as direct conv (its paired IGEMM kernel) or im2col GEMM over the same
    packed weights. padding SAME/VALID as TFLite, or pads=(top, left, bottom, right).
    Returns y, or (y, array of the `iters` runs' seconds) if timed."""
    x = np.ascontiguousarray(x, np.float32)
    f = np.ascontiguousarray(filter, np.float32)
    n, h, w, cin = x.shape
    cout, kh, kw, fcin = f.shape
    if fcin != cin:
        raise ValueError("filter must be [cout, kh, kw, cin]")
    b = None if bias is None else np.ascontiguousarray(bias, np.float32)
    if b is not None and b.shape != (cout,):
        raise ValueError("bias must have cout elements")
    if min(*stride, *dilation) < 1:
        raise ValueError("stride and dilation must be >= 1")
    eff = ((kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1)
    if pads is None:
        same = padding.upper() == "SAME"
        oh, ow = (conv_out_size(same, h, kh, stride[0], dilation[0]),
                  conv_out_size(same, w, kw, stride[1], dilation[1]))
        top = max((oh - 1) * stride[0] + eff[0] - h, 0) // 2 if same else 0
        left = max((ow - 1) * stride[1] + eff[1] - w, 0) // 2 if same else 0
    else:
        top, left, bottom, right = pads
        oh = max(0, (h + top + bottom - eff[0]) // stride[0] + 1)
        ow = max(0, (w + left + right - eff[1]) // stride[1] + 1)
    y = aligned_empty((n, oh, ow, cout))
    secs = ffi.new("double[]", max(1, iters))
    if lib.flex_conv2d_run(variant, int(direct), threads, n, h, w, cin, cout, kh, kw, stride[0], stride[1],
                           dilation[0], dilation[1], top, left, oh, ow, _fptr(x), _fptr(f), _fptr(b),
                           _act_code(act), _fptr(y), iters, secs):
        raise ValueError(f"conv2d: kernel {variant} unavailable, unsupported or bad arguments")
    return (y, np.array(list(secs))) if timed else y


@ffi.def_extern(error=-2)
def flex_plan_callback(desc, plan):
    """The C runtime asks for a budget plan (see planner/bridge.py)."""
    from .planner.bridge import fill_plan
    return fill_plan(ffi, desc, plan)
