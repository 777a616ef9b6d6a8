"""Builds the standalone C checkers of flexdelegate/native/kernels/ (and small shared libraries of
those kernels for ctypes), natively and for AArch64 (run under qemu-aarch64 on x86 hosts), through
cbuild (the one compile helper). Imported by the test_kernel_*.py files beside it."""
import ctypes
import os

import pytest

import cbuild

NATIVE, HERE = cbuild.NATIVE, cbuild.HERE


def sources(*families, gemm=False, pool=False):
    """The CPU probe, every .c of the named kernel families, and optionally the f32 GEMM and the
    thread pool."""
    pats = ["runtime/cpu.c", *(f"kernels/{f}/*.c" for f in families)]
    if gemm:
        pats += ["kernels/gemm/gemm_config.c", "kernels/gemm/f32-gemm-*.c"]
    if pool:
        pats += ["runtime/threadpool.c"]
    return cbuild.sources(*pats)


class Exe:
    def __init__(self, path, aarch64, env):
        self.path, self.aarch64, self.env = path, aarch64, env

    def run(self, *args, timeout=900, **env):
        return cbuild.run(self.path, *args, aarch64=self.aarch64, env={**self.env, **env}, timeout=timeout)


def build(checker, srcs, out, aarch64=False):
    """Compiles tests/native/<checker> with srcs into out; skips when no (cross) compiler or runner."""
    if (cbuild.aarch64_cc() if aarch64 else cbuild.host_cc()) is None:
        pytest.skip("no AArch64 C compiler (aarch64-linux-gnu-gcc)" if aarch64 else "no C compiler")
    if aarch64 and cbuild.aarch64_runner() is None:
        pytest.skip("cannot run AArch64 binaries (no qemu-aarch64)")
    # -O2: aarch64-linux-gnu-gcc 12 crashes vectorising attention_check.c at -O3 (an ICE).
    exe, env = cbuild.build([HERE / checker, *srcs], out, aarch64=aarch64, extra=["-Wextra", "-O2"])
    return Exe(exe, aarch64, {"FLEXDELEGATE_ISA": None, **env})


def shared_library(srcs, out):
    """The kernels as a shared library for ctypes (native only)."""
    if cbuild.host_cc() is None:
        pytest.skip("no C compiler")
    lib, _ = cbuild.build(srcs, out, extra=["-fPIC", "-shared"])
    return ctypes.CDLL(str(lib))
