"""The one CFFI builder: compiles every C source under native/ into flexdelegate._native.

The same shared object serves Python (through cffi) and the TFLite runtime (which loads it
with dlopen as an external-delegate plugin and calls tflite_plugin_create_delegate)."""
import os
import pathlib

from cffi import FFI

HERE = pathlib.Path(__file__).resolve().parent
API_HEADER = HERE / "include" / "flex_api.h"


def _cdef_text(header: pathlib.Path) -> str:
    # cdef cannot read preprocessor lines; the header keeps its guards for C users.
    return "\n".join(l for l in header.read_text().splitlines() if not l.lstrip().startswith("#"))


def _sources():
    return sorted(str(p.relative_to(HERE.parent.parent)) for p in HERE.rglob("*.c"))


def _compile_args():
    args = ["-std=gnu11", "-O3", "-pthread", "-fno-math-errno", "-Wall", "-Wno-unused-function"]
    # Baseline ISA only: faster paths are chosen at run time with per-function target attributes.
    if os.environ.get("FLEXDELEGATE_DEBUG"):
        args += ["-O0", "-g", "-fsanitize=address,undefined"]
    return args


ffibuilder = FFI()
ffibuilder.cdef(_cdef_text(API_HEADER))
ffibuilder.set_source(
    "flexdelegate._native_ext",
    '#include "flex_api.h"',
    sources=_sources(),
    include_dirs=[str(HERE / "include"), str(HERE)],
    extra_compile_args=_compile_args(),
    extra_link_args=["-pthread", "-lm"] + (["-fsanitize=address,undefined"] if os.environ.get("FLEXDELEGATE_DEBUG") else []),
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
