"""Builds the native core library once and the two CFFI extensions linked against it (see
flexdelegate/native/_build.py)."""
import os
import runpy

from setuptools import setup
from setuptools.command.build_ext import build_ext

BUILD_PY = "flexdelegate/native/_build.py"
BUILD = runpy.run_path(BUILD_PY)
CORE_NAME, CORE_INFO = BUILD["CORE_LIBRARY"]


class BuildExtWithCore(build_ext):
    """Builds the core library first (build_ext alone would not), recompiles it when the flags
    changed, and relinks an extension whenever the library is newer than it."""

    def run(self):
        clib = self.get_finalized_command("build_clib")
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


setup(libraries=[BUILD["CORE_LIBRARY"]], cmdclass={"build_ext": BuildExtWithCore},
      cffi_modules=[f"{BUILD_PY}:ffibuilder", f"{BUILD_PY}:testing_ffibuilder"])
