"""The one C build description, for setup.py and for the C tests (tests/native/cbuild.py):

  - compile_args() / link_args(): the flags of every C build, with the sanitizer switch
    FLEXDELEGATE_SANITIZE=address,undefined (any -fsanitize= list: built with -O1 -g and frame
    pointers, linked with the runtime; FLEXDELEGATE_DEBUG=1 is an alias of address,undefined);
  - CORE_LIBRARY: every C source under native/ but testing/, compiled once into a static library;
  - ffibuilder: flexdelegate._native_ext, the shipped module (flex_api.h). The same shared object
    serves Python (through cffi) and the TFLite runtime, which dlopens it as an external-delegate
    plugin and calls tflite_plugin_create_delegate;
  - PLAIN_SOURCES / PLAIN_LIBRARY: flexdelegate/libflexdelegate.so, the core library linked
    whole with plain/ and no Python, for C/C++ hosts (setup.py links it after the extensions);
  - testing_ffibuilder: flexdelegate._native_testing_ext, the tester and benchmark entries of
    testing/ (testing/flex_testing.h). Built alongside, imported only by tests/ and bench/.

Both extensions link the core library, so each core source is compiled once. Flags changed
(e.g. the sanitizer switch) recompile it: setup.py's build_ext stamps them (FLAGS_STAMP)."""
import os
import pathlib
import re

from cffi import FFI

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent  # the source tree: setup.py takes paths relative to it
API_HEADER = HERE / "include" / "flex_api.h"
TESTING_HEADER = HERE / "testing" / "flex_testing.h"
INCLUDE_DIRS = [HERE / "include", HERE]


def sanitizers() -> list[str]:
    """The -fsanitize= list asked for in the environment, [] for none."""
    spec = os.environ.get("FLEXDELEGATE_SANITIZE", "").strip()
    if not spec and os.environ.get("FLEXDELEGATE_DEBUG", "") not in ("", "0"):
        spec = "address,undefined"
    names = [s for s in spec.split(",") if s]
    for s in names:
        if not re.fullmatch(r"[a-z][a-z0-9-]*", s):
            raise ValueError(f"FLEXDELEGATE_SANITIZE: {s!r} is not a sanitizer name")
    return names


def compile_args(sanitize: bool = True) -> list[str]:
    """Flags of every C compile; sanitize=False leaves the switch out (cross builds: their
    toolchains carry no sanitizer runtimes)."""
    # Baseline ISA only: faster paths are chosen at run time with per-function target attributes.
    args = ["-std=gnu11", "-O3", "-pthread", "-fno-math-errno", "-Wall", "-Wno-unused-function"]
    if sanitize and sanitizers():  # later flags win: -O1 replaces -O3
        args += [f"-fsanitize={','.join(sanitizers())}", "-fno-omit-frame-pointer", "-g", "-O1"]
    return args


def link_args(sanitize: bool = True) -> list[str]:
    args = ["-pthread", "-lm"]
    if sanitize and sanitizers():
        args.append(f"-fsanitize={','.join(sanitizers())}")
    return args


def _rel(paths) -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in paths)


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


# plain/ holds what the plain library puts where the CFFI module has Python (plain/README.md).
CORE_SOURCES = _rel(p for p in HERE.rglob("*.c") if not {"testing", "plain"} & set(p.relative_to(HERE).parts))
PLAIN_SOURCES = _rel((HERE / "plain").glob("*.c"))
PLAIN_LIBRARY = "libflexdelegate.so"  # next to the extension module
TESTING_SOURCES = _rel((HERE / "testing").glob("*.c"))
CORE_HEADERS = _rel([*HERE.rglob("*.h"), *HERE.rglob("*.inc")])
FLAGS_STAMP = "flexcore.flags"  # in build_clib's temp dir, a dependency of every core object

CORE_LIBRARY = ("flexcore", {
    "sources": CORE_SOURCES,
    "include_dirs": [str(p) for p in INCLUDE_DIRS],
    "cflags": compile_args(),
    "obj_deps": {"": CORE_HEADERS},  # a header change recompiles the library
})

ffibuilder = FFI()
ffibuilder.cdef(_cdef_text(API_HEADER))
ffibuilder.set_source("flexdelegate._native_ext", '#include "flex_api.h"',
                      include_dirs=[str(p) for p in INCLUDE_DIRS], extra_compile_args=compile_args(),
                      extra_link_args=link_args())

testing_ffibuilder = FFI()
testing_ffibuilder.cdef(_cdef_text(TESTING_HEADER))
testing_ffibuilder.set_source("flexdelegate._native_testing_ext", '#include "testing/flex_testing.h"',
                              sources=TESTING_SOURCES, include_dirs=[str(p) for p in INCLUDE_DIRS],
                              extra_compile_args=compile_args(), extra_link_args=link_args())
