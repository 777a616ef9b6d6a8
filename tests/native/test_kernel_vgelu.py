"""kernels/vgelu: every GELU variant this CPU runs (and NEON under qemu) against the scalar
reference and the scalar reference against float64 (tests/native/vgelu_check.c), then this
CPU's variant against stock TFLite's GELU kernel on the same inputs."""
import ctypes
import re

import numpy as np
import pytest

import kernel_build as kb


def _check_output(run):
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "ALL PASS" in out, out
    return out


def test_every_variant_here(tmp_path):
    exe = kb.build("vgelu_check.c", kb.sources("vgelu"), tmp_path / "vgelu_check")
    out = _check_output(exe.run())
    for form in ("exact", "tanh"):
        assert re.search(rf"f32-vgelu-x1-scalar {form}: max [0-5]\.\d+ ulp vs float64", out), out
    if "avx2" in open("/proc/cpuinfo").read():
        assert "f32-vgelu-x8-avx2 exact" in out and "f32-vgelu-x8-avx2 tanh" in out, out


def test_every_variant_scalar_only_isa(tmp_path):
    """FLEXDELEGATE_ISA=scalar narrows the choice, but the checker still runs every variant."""
    exe = kb.build("vgelu_check.c", kb.sources("vgelu"), tmp_path / "vgelu_check")
    _check_output(exe.run(FLEXDELEGATE_ISA="scalar"))


def test_neon_under_qemu(tmp_path):
    exe = kb.build("vgelu_check.c", kb.sources("vgelu"), tmp_path / "vgelu_check_a64", aarch64=True)
    out = _check_output(exe.run())
    assert "f32-vgelu-x4-neon exact: max 0.00 ulp" in out and "f32-vgelu-x4-neon tanh: max 0.00 ulp" in out, out


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    so = kb.shared_library(kb.sources("vgelu"), tmp_path_factory.mktemp("vgelu") / "libvgelu.so")
    so.fx_vgelu_f32.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return so


def _gelu(lib, x, approximate):
    y = np.empty_like(x)
    lib.fx_vgelu_f32(x.ctypes.data, y.ctypes.data, x.size, int(approximate))
    return y


@pytest.mark.parametrize("approximate", [False, True], ids=["exact", "tanh"])
def test_matches_stock_tflite(lib, approximate):
    from opcheck import single_op
    from flexdelegate.run import invoke, make_interpreter, max_error

    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(4000) * 4, np.linspace(-12, 12, 997),
                        [0.0, -0.0, 1e-30, -1e-30, 1e30, -1e30, np.inf, -np.inf, np.nan]]).astype(np.float32)
    it = make_interpreter(single_op("GELU", [x.shape], x.shape, approximate=approximate))
    want = invoke(it, [x])[0]
    got = _gelu(lib, x, approximate)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    fin = np.isfinite(want)
    assert max_error([want[fin]], [got[fin]]) <= 1e-6
    assert np.array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])  # the infinities
    g, w, xf = got[fin].astype(np.float64), want[fin].astype(np.float64), x[fin].astype(np.float64)
    # Exact form: stock (erfc) is itself within a few ulp of the true function. Tanh form: stock's
    # 1 + tanh z cancels for x < -2 (ours does not): absolute errors up to ~2 ulp(1) |x| on its side.
    rel = np.abs(g - w) / np.maximum(np.abs(w), 1e-30)
    slack = 2.5e-7 * np.maximum(1.0, np.abs(xf)) if approximate else 1e-37
    assert np.all((rel <= 1e-5) | (np.abs(g - w) <= slack)), xf[(rel > 1e-5) & (np.abs(g - w) > slack)]
