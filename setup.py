"""Builds the native core library once and the two CFFI extensions linked against it (see
flexdelegate/native/_build.py)."""
import os
import runpy
import shutil
import sys
import sysconfig

from setuptools import setup
from setuptools.command.build_ext import build_ext

BUILD_PY = "flexdelegate/native/_build.py"
BUILD = runpy.run_path(BUILD_PY)
CORE_NAME, CORE_INFO = BUILD["CORE_LIBRARY"]


TOOLCHAIN_HELP = ("flexdelegate needs a C compiler and Python headers to install: e.g. "
                  "`apt install gcc python3-dev` (Debian/Ubuntu), `dnf install gcc python3-devel` "
                  "(Fedora), `xcode-select --install` (macOS)")


def check_toolchain(compiler) -> None:
    """One clear line instead of the compiler's own failure deep in pip's log."""
    cc = getattr(compiler, "compiler_so", None) or getattr(compiler, "compiler", None) or ["cc"]
    missing = []
    if not shutil.which(cc[0]):
        missing.append(f"no C compiler ({cc[0]!r} not found)")
    if not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        missing.append(f"no Python.h in {sysconfig.get_paths()['include']}")
    if missing:
        raise SystemExit(f"error: {TOOLCHAIN_HELP}; {', '.join(missing)}")


class BuildExtWithCore(build_ext):
    """Builds the core library first (build_ext alone would not), recompiles it when the flags
    changed, and relinks an extension whenever the library is newer than it."""

    def run(self):
        clib = self.get_finalized_command("build_clib")
        from distutils.ccompiler import new_compiler
        from distutils.sysconfig import customize_compiler
        probe = new_compiler(compiler=self.compiler)
        customize_compiler(probe)  # reads CC like the real build
        check_toolchain(probe)
        stamp = os.path.join(clib.build_temp, BUILD["FLAGS_STAMP"])
        flags = " ".join(CORE_INFO["cflags"]) + "\n"
        os.makedirs(clib.build_temp, exist_ok=True)
        if not os.path.exists(stamp) or open(stamp).read() != flags:
            with open(stamp, "w") as f:
                f.write(flags)
        CORE_INFO["obj_deps"][""] = CORE_INFO["obj_deps"][""] + [stamp]
        self.run_command("build_clib")
        core = os.path.join(clib.build_clib, clib.compiler.library_filename(CORE_NAME))
        for ext in self.extensions:
            ext.depends = list(ext.depends) + [core]
        super().run()
        self.build_plain_library(core)

    def build_plain_library(self, core):
        """libflexdelegate.so beside the extension: the whole core library plus plain/, no
        Python, so a C/C++ host can dlopen it (native/plain/README.md)."""
        out_dir = os.path.dirname(self.get_ext_fullpath("flexdelegate._native_ext"))
        target = os.path.join(out_dir, BUILD["PLAIN_LIBRARY"])
        inputs = BUILD["PLAIN_SOURCES"] + [core]
        if not self.force and os.path.exists(target) and \
                max(map(os.path.getmtime, inputs)) <= os.path.getmtime(target):
            return
        objects = self.compiler.compile(BUILD["PLAIN_SOURCES"], output_dir=self.build_temp,
                                        include_dirs=BUILD["CORE_LIBRARY"][1]["include_dirs"],
                                        extra_postargs=BUILD["compile_args"]())
        whole = ([f"-Wl,-force_load,{core}"] if sys.platform == "darwin"
                 else ["-Wl,--whole-archive", core, "-Wl,--no-whole-archive"])
        self.compiler.link_shared_object(objects, target, extra_postargs=whole + BUILD["link_args"]())


setup(libraries=[BUILD["CORE_LIBRARY"]], cmdclass={"build_ext": BuildExtWithCore},
      cffi_modules=[f"{BUILD_PY}:ffibuilder", f"{BUILD_PY}:testing_ffibuilder"])
