"""The AArch64 NEON stem-conv microkernel, cross-compiled with tests/native/stem_neon_check.c and
run under qemu-aarch64 (or natively), as test_direct_conv_neon.py does for the NEON IGEMM: skips
where no AArch64 compiler or runner exists."""
import cbuild
from test_gemm_neon import needs_cc, needs_run


@needs_cc
@needs_run
def test_neon_stem_matches_scalar_reference_on_stems(tmp_path):
    srcs = [cbuild.HERE / "stem_neon_check.c",
            *cbuild.sources("runtime/cpu.c", "conv/stem.c", "kernels/gemm/gemm_config.c", "kernels/gemm/f32-gemm-*.c",
                            "kernels/conv-stem/*.c")]
    exe, env = cbuild.build(srcs, tmp_path / "stem_neon_check", aarch64=True, extra=["-Wextra", "-Wno-unused-parameter"])
    run = cbuild.run(exe, aarch64=True, env={**env, "FLEXDELEGATE_ISA": None})
    assert run.returncode == 0 and "ALL PASS" in run.stdout, run.stdout + run.stderr
    assert "f32-conv-stem-8x8-neon pairs with f32-gemm-8x8-neon" in run.stdout
