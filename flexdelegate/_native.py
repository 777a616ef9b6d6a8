"""Thin typed wrappers over the CFFI module: the only Python module that touches `lib`.

Return codes become exceptions here; callers get plain Python values."""
from __future__ import annotations

import json

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


def hash64(data, seed: int = 0) -> int:
    """The cache's content hash of a bytes-like object (see flexdelegate/cache/FORMAT.md)."""
    buf = ffi.from_buffer(data)
    return int(lib.flex_hash64(buf, len(buf), seed))


@ffi.def_extern(error=-2)
def flex_plan_callback(desc, plan):
    """The C runtime asks for a budget plan (see planner/bridge.py)."""
    from .planner.bridge import fill_plan
    return fill_plan(ffi, desc, plan)
