"""The one CFFI builder: compiles every C source under native/ into flexdelegate._native.

The same shared object serves Python (through cffi) and the TFLite runtime (which loads it
with dlopen as an external-delegate plugin and calls tflite_plugin_create_delegate)."""
import os
import pathlib

from cffi import FFI

HERE = pathlib.Path(__file__).resolve().parent
API_HEADER = HERE / "include" / "flex_api.h"


def _cdef_text(header: pathlib.Path) -> str:
    # cdef cannot read preprocessor lines; the header keeps its guards for C users. Lines marked
    # "c-only" are prototypes of functions Python implements: the cdef declares those as
    # extern "Python+C" (same signature, callable from every C file) instead.
    lines = []
    for line in header.read_text().splitlines():
        if line.lstrip().startswith("#"):
            continue
        if "/* c-only */" in line:
            line = 'extern "Python+C" ' + line.replace("/* c-only */", "")
        lines.append(line)
    return "\n".join(lines)


def _sources():
    return sorted(str(p.relative_to(HERE.parent.parent)) for p in HERE.rglob("*.c"))


def _sanitizers() -> str:
    """FLEXDELEGATE_SANITIZE=address,undefined (any -fsanitize= list) builds a sanitizer build;
    FLEXDELEGATE_DEBUG=1 is an alias for address,undefined. Run it with the sanitizer runtime
    preloaded (tests/sanitize/README.md)."""
    return os.environ.get("FLEXDELEGATE_SANITIZE") or ("address,undefined" if os.environ.get("FLEXDELEGATE_DEBUG") else "")


def _compile_args():
    args = ["-std=gnu11", "-O3", "-pthread", "-fno-math-errno", "-Wall", "-Wno-unused-function"]
    # Baseline ISA only: faster paths are chosen at run time with per-function target attributes.
    if _sanitizers():  # -O1 (last wins): fast enough for the suite, frames still readable
        args += [f"-fsanitize={_sanitizers()}", "-fno-omit-frame-pointer", "-g", "-O1"]
    return args


ffibuilder = FFI()
ffibuilder.cdef(_cdef_text(API_HEADER))
ffibuilder.set_source(
    "flexdelegate._native_ext",
    '#include "flex_api.h"',
    sources=_sources(),
    include_dirs=[str(HERE / "include"), str(HERE)],
    extra_compile_args=_compile_args(),
    extra_link_args=["-pthread", "-lm"] + ([f"-fsanitize={_sanitizers()}"] if _sanitizers() else []),
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
