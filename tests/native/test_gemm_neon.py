"""The AArch64 NEON GEMM microkernel, checked on x86 hosts by cross-compiling
tests/native/gemm_neon_check.c and running it under qemu-aarch64 (or natively on AArch64).

Skips cleanly when neither an AArch64 compiler (aarch64-linux-gnu-gcc, or cc on an AArch64
host) nor a way to run the binary (qemu-aarch64, or an AArch64 host) is available, as on CI.
Also compiles every C file of the native tree for AArch64, so x86-only code that slips out of
its #if defined(__x86_64__) guard is caught here."""
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "flexdelegate" / "native"
CHECK = Path(__file__).resolve().parent / "gemm_neon_check.c"
NATIVE_AARCH64 = platform.machine().lower() in ("aarch64", "arm64")
SYSROOT = Path("/usr/aarch64-linux-gnu")  # Debian/Ubuntu cross sysroot, for dynamic binaries


def _compiler():
    if os.environ.get("AARCH64_CC") and shutil.which(os.environ["AARCH64_CC"]):
        return shutil.which(os.environ["AARCH64_CC"])
    names = ["aarch64-linux-gnu-gcc", "aarch64-linux-gnu-gcc-12", "aarch64-linux-gnu-gcc-13"]
    if NATIVE_AARCH64:
        names = ["cc", "gcc", "clang"] + names
    return next((shutil.which(n) for n in names if shutil.which(n)), None)


def _runner():
    """argv prefix that runs an AArch64 binary here ([] when native), or None."""
    if NATIVE_AARCH64:
        return []
    for name in ("qemu-aarch64", "qemu-aarch64-static"):
        if shutil.which(name):
            return [shutil.which(name)]
    return None


CC = _compiler()
RUN = _runner()
needs_cc = pytest.mark.skipif(CC is None, reason="no AArch64 C compiler (aarch64-linux-gnu-gcc)")
needs_run = pytest.mark.skipif(RUN is None, reason="cannot run AArch64 binaries (no qemu-aarch64)")


@pytest.fixture(scope="module")
def check_exe(tmp_path_factory):
    out = tmp_path_factory.mktemp("neon") / "gemm_neon_check"
    gemm = NATIVE / "kernels" / "gemm"
    srcs = [str(CHECK), str(NATIVE / "runtime" / "cpu.c"), str(gemm / "gemm_config.c"), *sorted(str(p) for p in gemm.glob("f32-gemm-*.c"))]
    base = [CC, "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-I", str(NATIVE), *srcs,
            "-o", str(out), "-lm"]
    env = dict(os.environ)
    build = subprocess.run(base[:1] + ["-static"] + base[1:], capture_output=True, text=True)
    if build.returncode != 0:  # no static libc for the target: link dynamically
        build = subprocess.run(base, capture_output=True, text=True)
        if RUN and SYSROOT.is_dir():
            env.setdefault("QEMU_LD_PREFIX", str(SYSROOT))
    assert build.returncode == 0, "build failed:\n" + " ".join(base) + "\n" + build.stderr
    env.pop("FLEXDELEGATE_ISA", None)
    return out, env


def _run(check_exe, *args, **env_extra):
    exe, env = check_exe
    env = {**env, **env_extra}
    return subprocess.run([*RUN, str(exe), *args], capture_output=True, text=True, env=env,
                          timeout=600)


@needs_cc
@needs_run
def test_neon_kernel_matches_scalar_reference(check_exe):
    run = _run(check_exe)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "ALL PASS" in out
    shapes = re.search(r"shapes .*: (\d+)/(\d+) pass", out)
    assert shapes and shapes.group(1) == shapes.group(2) == str(17 * 33 * 71 * 2), out
    rem = re.search(r"remainders .*: (\d+)/(\d+) pass", out)
    assert rem and rem.group(1) == rem.group(2) == str(8 * 8), out


@needs_cc
@needs_run
def test_neon_chosen_by_default_and_isa_env_narrows(check_exe):
    run = _run(check_exe, "config")
    assert run.returncode == 0 and "chosen f32-gemm-8x8-neon" in run.stdout, run.stdout + run.stderr
    run = _run(check_exe, "config", FLEXDELEGATE_ISA="scalar")
    assert run.returncode == 0 and "chosen f32-gemm-4x8-scalar" in run.stdout, run.stdout + run.stderr


@needs_cc
def test_native_tree_compiles_for_aarch64(tmp_path):
    failures = []
    for src in sorted(NATIVE.rglob("*.c")):
        cmd = [CC, "-std=gnu11", "-O2", "-pthread", "-fno-math-errno", "-I", str(NATIVE),
               "-I", str(NATIVE / "include"), "-c", str(src), "-o", str(tmp_path / "x.o")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"{src.relative_to(ROOT)}:\n{r.stderr}")
    assert not failures, "\n".join(failures)
