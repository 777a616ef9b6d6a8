"""Builds the standalone C checkers of flexdelegate/native/kernels/ (and small shared libraries of
those kernels for ctypes), natively and for AArch64 (run under qemu-aarch64 on x86 hosts), the way
test_gemm_neon.py does for the GEMM. Imported by the test_kernel_*.py files beside it."""
import ctypes
import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "flexdelegate" / "native"
HERE = Path(__file__).resolve().parent
NATIVE_AARCH64 = platform.machine().lower() in ("aarch64", "arm64")
SYSROOT = Path("/usr/aarch64-linux-gnu")  # Debian/Ubuntu cross sysroot, for dynamic binaries
FLAGS = ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", "-fno-math-errno"]


def native_cc():
    return shutil.which(os.environ.get("CC") or "cc") or shutil.which("gcc")


def aarch64_cc():
    if os.environ.get("AARCH64_CC") and shutil.which(os.environ["AARCH64_CC"]):
        return shutil.which(os.environ["AARCH64_CC"])
    names = ["aarch64-linux-gnu-gcc", "aarch64-linux-gnu-gcc-12", "aarch64-linux-gnu-gcc-13"]
    if NATIVE_AARCH64:
        names = ["cc", "gcc", "clang"] + names
    return next((shutil.which(n) for n in names if shutil.which(n)), None)


def aarch64_runner():
    """argv prefix that runs an AArch64 binary here ([] when native), or None."""
    if NATIVE_AARCH64:
        return []
    for name in ("qemu-aarch64", "qemu-aarch64-static"):
        if shutil.which(name):
            return [shutil.which(name)]
    return None


def sources(*families, gemm=False, pool=False):
    """cpu.c, every .c of the named kernel families, and optionally the GEMM and thread pool."""
    out = [NATIVE / "cpu.c"]
    for f in families:
        out += sorted((NATIVE / "kernels" / f).glob("*.c"))
    if gemm:
        out += [NATIVE / "gemm" / "config.c", *sorted((NATIVE / "gemm").glob("f32-gemm-*.c"))]
    if pool:
        out += [NATIVE / "threadpool.c"]
    return [str(p) for p in out]


class Exe:
    def __init__(self, path, runner, env):
        self.path, self.runner, self.env = path, runner, env

    def run(self, *args, timeout=900, **env):
        return subprocess.run([*self.runner, str(self.path), *map(str, args)], capture_output=True, text=True,
                              env={**self.env, **env}, timeout=timeout)


def build(checker, srcs, out, aarch64=False):
    """Compiles tests/native/<checker> with srcs into out; skips when no (cross) compiler or runner."""
    cc = aarch64_cc() if aarch64 else native_cc()
    runner = aarch64_runner() if aarch64 else []
    if cc is None:
        pytest.skip("no AArch64 C compiler (aarch64-linux-gnu-gcc)" if aarch64 else "no C compiler")
    if runner is None:
        pytest.skip("cannot run AArch64 binaries (no qemu-aarch64)")
    base = [cc, *FLAGS, "-I", str(NATIVE), str(HERE / checker), *srcs, "-o", str(out), "-lm"]
    env = {k: v for k, v in os.environ.items() if k != "FLEXDELEGATE_ISA"}
    r = subprocess.run(base[:1] + ["-static"] + base[1:] if aarch64 and not NATIVE_AARCH64 else base,
                       capture_output=True, text=True)
    if r.returncode != 0 and aarch64:  # no static libc for the target: link dynamically
        r = subprocess.run(base, capture_output=True, text=True)
        if SYSROOT.is_dir():
            env.setdefault("QEMU_LD_PREFIX", str(SYSROOT))
    assert r.returncode == 0, "build failed:\n" + " ".join(base) + "\n" + r.stderr
    return Exe(out, runner, env)


def shared_library(srcs, out):
    """The kernels as a shared library for ctypes (native only)."""
    cc = native_cc()
    if cc is None:
        pytest.skip("no C compiler")
    cmd = [cc, *FLAGS, "-fPIC", "-shared", "-I", str(NATIVE), *srcs, "-o", str(out), "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, "build failed:\n" + " ".join(cmd) + "\n" + r.stderr
    return ctypes.CDLL(str(out))
