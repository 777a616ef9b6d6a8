"""The AArch64 NEON GEMM microkernel, checked on x86 hosts by cross-compiling
tests/native/gemm_neon_check.c and running it under qemu-aarch64 (or natively on AArch64).

Skips cleanly when neither an AArch64 compiler (aarch64-linux-gnu-gcc, or cc on an AArch64
host) nor a way to run the binary (qemu-aarch64, or an AArch64 host) is available, as on CI.
Also compiles every C file of the native tree for AArch64, so x86-only code that slips out of
its #if defined(__x86_64__) guard is caught here."""
import re

import pytest

import cbuild

RUN = cbuild.aarch64_runner()
needs_cc = pytest.mark.skipif(cbuild.aarch64_cc() is None, reason="no AArch64 C compiler (aarch64-linux-gnu-gcc)")
needs_run = pytest.mark.skipif(RUN is None, reason="cannot run AArch64 binaries (no qemu-aarch64)")


@pytest.fixture(scope="module")
def check_exe(tmp_path_factory):
    srcs = [cbuild.HERE / "gemm_neon_check.c",
            *cbuild.sources("runtime/cpu.c", "kernels/gemm/gemm_config.c", "kernels/gemm/f32-gemm-*.c")]
    return cbuild.build(srcs, tmp_path_factory.mktemp("neon") / "gemm_neon_check", aarch64=True, extra=["-Wextra"])


def _run(check_exe, *args, **env_extra):
    exe, env = check_exe
    return cbuild.run(exe, *args, aarch64=True, env={**env, "FLEXDELEGATE_ISA": None, **env_extra})


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
    for src in cbuild.sources("**/*.c"):
        try:
            cbuild.build([src], tmp_path / "x.o", aarch64=True, compile_only=True)
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, "\n".join(failures)
