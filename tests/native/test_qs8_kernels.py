"""The integer kernels' testers (tests/native/qs8_*_tester.c), built outside the library with the
C compiler straight from the kernel sources, XNNPACK style: every variant this CPU runs against
a naive reference / the scalar output stage. Natively (x86: scalar + AVX2, and the AVX-512BW /
VNNI variants where the CPU has them), and for AArch64 under qemu-aarch64: `-cpu max` (NEON and
the dot-product kernels) and `-cpu cortex-a72` (no dot product: the NEON kernels alone)."""
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from test_gemm_neon import CC as AARCH64_CC, NATIVE_AARCH64, RUN as AARCH64_RUN, SYSROOT

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "flexdelegate" / "native"
HERE = Path(__file__).resolve().parent
TESTERS = {"requant": [], "gemm": ["300"], "dwconv": ["1500"]}
X86 = platform.machine().lower() in ("x86_64", "amd64")


def _sources():
    kernels = NATIVE / "kernels"
    return [str(NATIVE / "cpu.c"), *sorted(str(p) for p in kernels.rglob("*.c"))]


def _build(cc, name, out, static=False):
    cmd = [cc, "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-I", str(NATIVE), "-I",
           str(NATIVE / "include"), str(HERE / f"qs8_{name}_tester.c"), *_sources(), "-o", str(out), "-lm"]
    if static:
        r = subprocess.run(cmd[:1] + ["-static"] + cmd[1:], capture_output=True, text=True)
        if r.returncode == 0:
            return {}
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, " ".join(cmd) + "\n" + r.stderr
    return {"QEMU_LD_PREFIX": str(SYSROOT)} if static and SYSROOT.is_dir() else {}


def _check(run, name):
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "ALL PASS" in out, out[-3000:]
    for done, total in re.findall(r"(\d+)/(\d+) (?:pass|rows pass)", out):
        assert done == total, out
    return out


@pytest.fixture(scope="module")
def native_cc():
    cc = shutil.which(os.environ.get("CC") or "cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    return cc


@pytest.mark.parametrize("name", list(TESTERS))
def test_every_native_variant_matches_the_reference(native_cc, tmp_path, name):
    exe = tmp_path / name
    _build(native_cc, name, exe)
    env = {k: v for k, v in os.environ.items() if k != "FLEXDELEGATE_ISA"}
    out = _check(subprocess.run([str(exe), *TESTERS[name]], capture_output=True, text=True, env=env,
                                timeout=900), name)
    if X86 and name != "requant":
        assert "avx2" in out, out  # this machine and CI have AVX2 at least
        print(out.splitlines()[0])


needs_aarch64 = pytest.mark.skipif(AARCH64_CC is None or AARCH64_RUN is None,
                                   reason="no AArch64 compiler or qemu-aarch64")


@needs_aarch64
@pytest.mark.parametrize("cpu,dot", [("max", True), ("cortex-a72", False)])
@pytest.mark.parametrize("name", list(TESTERS))
def test_neon_variants_match_the_reference_under_qemu(tmp_path, name, cpu, dot):
    exe = tmp_path / f"{name}-aarch64"
    env = dict(os.environ, **_build(AARCH64_CC, name, exe, static=True))
    env.pop("FLEXDELEGATE_ISA", None)
    runner = AARCH64_RUN if NATIVE_AARCH64 else [*AARCH64_RUN, "-cpu", cpu]
    args = {"requant": ["300000"], "gemm": ["200"], "dwconv": ["600"]}[name]
    out = _check(subprocess.run([*runner, str(exe), *args], capture_output=True, text=True,
                                env=env, timeout=900), name)
    if name == "gemm" and not NATIVE_AARCH64:
        assert "qs8-gemm-4x16-neon" in out
        assert ("qs8-gemm-4x16c4-neondot" in out) == dot, out
