"""Thin typed wrappers over the CFFI module: the only Python module that touches `lib`.

Return codes become exceptions here; callers get plain Python values."""
from __future__ import annotations

import json

import numpy as np

from . import _native_ext as _ext

ffi, lib = _ext.ffi, _ext.lib

OPTION_NAMES = ("budget", "cache_path", "num_threads", "log", "profile")


def library_path() -> str:
    """The shared object TFLite loads as the external-delegate plugin."""
    return _ext.__file__


def check_option(key: str, value: str) -> None:
    err = lib.flex_check_option(key.encode(), value.encode())
    if err != ffi.NULL:
        raise ValueError(f"flexdelegate: option {key!r}={value!r}: {ffi.string(err).decode()}")


def stats(delegate_ptr: int) -> dict:
    ptr = ffi.cast("void *", delegate_ptr)
    need = lib.flex_stats_json(ptr, ffi.NULL, 0)
    buf = ffi.new("char[]", need + 1)
    lib.flex_stats_json(ptr, buf, need + 1)
    return json.loads(ffi.string(buf).decode())


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


def gemm_kernel_name() -> str:
    return ffi.string(lib.flex_gemm_kernel_name()).decode()


def gemm_kernels() -> list[str]:
    """Microkernels this CPU can run; index 0 is the scalar reference."""
    names, i = [], 0
    while (p := lib.flex_gemm_kernel_at(i)) != ffi.NULL:
        names.append(ffi.string(p).decode())
        i += 1
    return names


def gemm(kernel: int, a: np.ndarray, w: np.ndarray, bias=None, lo=-np.inf, hi=np.inf) -> np.ndarray:
    """a [m, k] @ w [n, k].T + bias, clamped, computed by microkernel number `kernel`."""
    a = np.ascontiguousarray(a, np.float32)
    w = np.ascontiguousarray(w, np.float32)
    m, k = a.shape
    n, k2 = w.shape
    if k != k2:
        raise ValueError("a and w disagree on k")
    b = None if bias is None else np.ascontiguousarray(bias, np.float32)
    if b is not None and b.shape != (n,):
        raise ValueError("bias must have n elements")
    c = np.empty((m, n), np.float32)
    fp = lambda x: ffi.NULL if x is None else ffi.cast("float *", ffi.from_buffer(x))
    if lib.flex_gemm_run(kernel, m, n, k, fp(a), fp(w), fp(b), fp(c), float(lo), float(hi)):
        raise ValueError(f"gemm: kernel {kernel} unavailable or bad arguments")
    return c


def hash64(data, seed: int = 0) -> int:
    """The cache's content hash of a bytes-like object (see flexdelegate/cache/FORMAT.md)."""
    buf = ffi.from_buffer(data)
    return int(lib.flex_hash64(buf, len(buf), seed))
