"""The integer kernels' testers (tests/native/qs8_*_tester.c), built outside the library with the
C compiler straight from the kernel sources, XNNPACK style: every variant this CPU runs against
a naive reference / the scalar output stage. Natively (x86: scalar + AVX2, and the AVX-512BW / AMX /
VNNI variants where the CPU has them), and for AArch64 under qemu-aarch64: `-cpu max` (NEON and
the dot-product kernels) and `-cpu cortex-a72` (no dot product: the NEON kernels alone)."""
import platform
import re

import pytest

import cbuild

TESTERS = {"requant": [], "gemm": ["300"], "dwconv": ["1500"], "ops": ["150"]}
NEON_TESTERS = ["requant", "gemm", "dwconv", "ops"]
X86 = platform.machine().lower() in ("x86_64", "amd64")
SOURCES = ("runtime/cpu.c", "kernels/quant/*.c", "kernels/qs8-*/*.c")


def _build(name, out, aarch64=False):
    exe, env = cbuild.build([cbuild.HERE / f"qs8_{name}_tester.c", *cbuild.sources(*SOURCES)], out,
                            aarch64=aarch64, extra=["-Wextra"])
    return exe, {"FLEXDELEGATE_ISA": None, **env}


def _check(run, name):
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "ALL PASS" in out, out[-3000:]
    for done, total in re.findall(r"(\d+)/(\d+) (?:pass|rows pass)", out):
        assert done == total, out
    return out


@pytest.mark.parametrize("name", list(TESTERS))
def test_every_native_variant_matches_the_reference(tmp_path, name):
    exe, env = _build(name, tmp_path / name)
    out = _check(cbuild.run(exe, *TESTERS[name], env=env, timeout=900), name)
    if X86 and name not in ("requant", "ops"):
        assert "avx2" in out, out  # this machine and CI have AVX2 at least
        print(out.splitlines()[0])


needs_aarch64 = pytest.mark.skipif(cbuild.aarch64_cc() is None or cbuild.aarch64_runner() is None,
                                   reason="no AArch64 compiler or qemu-aarch64")


@needs_aarch64
@pytest.mark.parametrize("cpu,dot", [("max", True), ("cortex-a72", False)])
@pytest.mark.parametrize("name", NEON_TESTERS)
def test_neon_variants_match_the_reference_under_qemu(tmp_path, name, cpu, dot):
    exe, env = _build(name, tmp_path / f"{name}-aarch64", aarch64=True)
    if not cbuild.AARCH64_HOST:
        env["QEMU_CPU"] = cpu
    args = {"requant": ["300000"], "gemm": ["200"], "dwconv": ["600"], "ops": ["300"]}[name]
    out = _check(cbuild.run(exe, *args, aarch64=True, env=env, timeout=900), name)
    if name == "gemm" and not cbuild.AARCH64_HOST:
        assert "qs8-gemm-4x16-neon" in out
        assert ("qs8-gemm-4x16c4-neondot" in out) == dot, out
    if name == "ops":
        assert "qs8-ops-neon," in out, out
