"""Thin typed wrappers over the CFFI module: the only Python module that touches `lib`.

Return codes become exceptions here; callers get plain Python values."""
from __future__ import annotations

import json
import os

from . import _native_ext as _ext

ffi, lib = _ext.ffi, _ext.lib



def enum_names(prefix: str, source=lib) -> dict[str, int]:
    """flex_api.h's constants (or those of another cffi lib, source) named prefix + NAME, as
    {NAME: value} (FLEX_LUT_RELU6 -> "RELU6")."""
    return {name[len(prefix):]: getattr(source, name) for name in dir(source) if name.startswith(prefix)}


def enum(prefix: str, source=lib) -> dict[str, int]:
    """enum_names with NAME lowercased and its underscores turned into dashes
    (FLEX_KERNEL_GEMM_ROWS -> "gemm-rows")."""
    return {name.lower().replace("_", "-"): value for name, value in enum_names(prefix, source).items()}


def _options() -> dict[str, tuple[int, str]]:
    out, i = {}, 0
    while (o := lib.flex_option_at(i)) != ffi.NULL:
        out[ffi.string(o.name).decode()] = (int(o.kind), ffi.string(o.help).decode())
        i += 1
    return out


# The delegate's options as C defines them (tflite/options.c): name -> (FLEX_OPTION_* kind, help);
# INTERNAL_OPTIONS are the ones load_flex sets itself (a leading underscore), never a user.
_ALL_OPTIONS = _options()
OPTIONS = {k: v for k, v in _ALL_OPTIONS.items() if not k.startswith("_")}
INTERNAL_OPTIONS = {k: v for k, v in _ALL_OPTIONS.items() if k.startswith("_")}


def library_path(plain: bool = False) -> str:
    """The shared object TFLite loads as the external-delegate plugin: this extension, or the
    plain library (no Python) setup.py links beside it."""
    if not plain:
        return _ext.__file__
    import os
    return os.path.join(os.path.dirname(_ext.__file__), "libflexdelegate.so")


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
    """ValueError for a budget C refuses; BudgetError (with its fields from C's flex_error) for an
    infeasible one."""
    err = ffi.new("flex_error *")
    try:
        mb = float(mb)
    except OverflowError:  # an int past any float: as invalid as infinity, and said so by C
        mb = float("inf")
    if lib.flex_set_budget(ffi.cast("void *", delegate_ptr), mb, err):
        raise _exception(err)


def last_error(delegate_ptr: int):
    """The delegate's last failed memory plan as an exception object (not raised), or None."""
    err = ffi.new("flex_error *")
    return _exception(err) if lib.flex_last_error(ffi.cast("void *", delegate_ptr), err) else None


def _exception(err) -> ValueError:
    """BudgetError (with its fields) for an infeasible budget, else ValueError."""
    from . import BudgetError
    message = f"flexdelegate: {ffi.string(err.message).decode()}"
    if err.min_budget_mb > 0:
        return BudgetError(message, min_budget_mb=float(err.min_budget_mb), node=int(err.node),
                           op=ffi.string(err.op).decode())
    return ValueError(message)


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
    msg = ffi.new("char[]", lib.FLEX_MSG_LEN)
    rc = lib.flex_cache_check(raw, msg, lib.FLEX_MSG_LEN)
    return None if rc == 0 else "missing" if rc == 1 else ffi.string(msg).decode(errors="replace")


@ffi.def_extern(error=-2)
def flex_plan_callback(desc, plan):
    """The C runtime asks for a budget plan (see planner/bridge.py)."""
    from .planner.bridge import fill_plan
    return fill_plan(ffi, desc, plan)
