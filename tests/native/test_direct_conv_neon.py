"""The AArch64 NEON IGEMM (direct conv) microkernel, cross-compiled with
tests/native/igemm_neon_check.c and run under qemu-aarch64 (or natively), as
test_gemm_neon.py does for the NEON GEMM: skips where no AArch64 compiler or runner exists."""
import subprocess

import pytest

from test_gemm_neon import CC, NATIVE, RUN, SYSROOT, needs_cc, needs_run
from pathlib import Path

CHECK = Path(__file__).resolve().parent / "igemm_neon_check.c"


@needs_cc
@needs_run
def test_neon_igemm_matches_scalar_reference_on_convs(tmp_path):
    out = tmp_path / "igemm_neon_check"
    kernels = NATIVE / "kernels"
    srcs = [CHECK, NATIVE / "runtime" / "cpu.c", NATIVE / "conv" / "direct.c", kernels / "gemm" / "gemm_config.c",
            *sorted((kernels / "gemm").glob("f32-gemm-*.c")), *sorted((kernels / "igemm").glob("*.c"))]
    base = [CC, "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-I", str(NATIVE),
            *map(str, srcs), "-o", str(out), "-lm"]
    env = {}
    build = subprocess.run(base[:1] + ["-static"] + base[1:], capture_output=True, text=True)
    if build.returncode != 0:  # no static libc for the target: link dynamically
        build = subprocess.run(base, capture_output=True, text=True)
        if SYSROOT.is_dir():
            env["QEMU_LD_PREFIX"] = str(SYSROOT)
    assert build.returncode == 0, "build failed:\n" + build.stderr
    run = subprocess.run([*RUN, str(out)], capture_output=True, text=True, timeout=600,
                         env={"PATH": "/usr/bin:/bin", **env})
    assert run.returncode == 0 and "ALL PASS" in run.stdout, run.stdout + run.stderr
    assert "f32-igemm-8x8-neon pairs with f32-gemm-8x8-neon" in run.stdout
