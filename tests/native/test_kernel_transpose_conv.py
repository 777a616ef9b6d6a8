"""kernels/transpose-conv: the TRANSPOSE_CONV driver with every GEMM microkernel this CPU runs (and
NEON under qemu) against a float64 scatter reference (tests/native/tconv_check.c). Against stock
TFLite: tests/delegate/test_ops.py's TRANSPOSE_CONV cases."""
import kernel_build as kb

# fx_act_bounds / fx_apply_act (kernels/ops) and what they call; the int8 form's qs8-gemm drivers
SOURCES = ("transpose-conv", "ops", "dwconv", "vsigmoid", "vgelu", "qs8-gemm", "qs8-igemm", "quant")


def _ok(run):
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "ALL PASS" in out, out
    return out


def test_every_kernel_here(tmp_path):
    exe = kb.build("tconv_check.c", kb.sources(*SOURCES, gemm=True, pool=True), tmp_path / "tconv_check")
    out = _ok(exe.run())
    assert "f32-gemm-4x8-scalar: max" in out, out
    if "avx2" in open("/proc/cpuinfo").read():
        assert "f32-gemm-6x16-avx2: max" in out, out


def test_neon_under_qemu(tmp_path):
    exe = kb.build("tconv_check.c", kb.sources(*SOURCES, gemm=True, pool=True), tmp_path / "tconv_a64", aarch64=True)
    assert "f32-gemm-8x8-neon: max" in _ok(exe.run("quick"))
