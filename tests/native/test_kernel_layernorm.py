"""kernels/layernorm: every LayerNorm kernel this CPU runs (and NEON under qemu) against the scalar
reference and float64 (tests/native/layernorm_check.c), then this CPU's kernel against stock
TFLite running the converter's op-by-op LayerNorm graph (attention/NOTES.md) on the same rows."""
import ctypes

import numpy as np
import pytest

import kernel_build as kb


def _ok(run):
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "ALL PASS" in out, out
    return out


def test_every_kernel_here(tmp_path):
    exe = kb.build("layernorm_check.c", kb.sources("layernorm", pool=True), tmp_path / "ln_check")
    out = _ok(exe.run())
    if "avx2" in open("/proc/cpuinfo").read():
        assert "f32-layernorm-x32-avx2: max" in out, out


def test_neon_under_qemu(tmp_path):
    exe = kb.build("layernorm_check.c", kb.sources("layernorm", pool=True), tmp_path / "ln_check_a64", aarch64=True)
    assert "f32-layernorm-x16-neon: max" in _ok(exe.run())


class Params(ctypes.Structure):
    _fields_ = [("gamma", ctypes.c_void_p), ("beta", ctypes.c_void_p), ("eps", ctypes.c_float), ("mode", ctypes.c_int)]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    so = kb.shared_library(kb.sources("layernorm", pool=True), tmp_path_factory.mktemp("ln") / "libln.so")
    so.fx_pool_new.restype = ctypes.c_void_p
    so.fx_pool_new.argtypes = [ctypes.c_int]
    so.fx_pool_free.argtypes = [ctypes.c_void_p]
    so.fx_layernorm_f32.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                                    ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(Params)]
    return so


def stock_graph(shape, gamma, beta, eps, rms):
    """The converter's LayerNormalization(axis=-1) graph, op for op (Keras 3.15 / TF 2.21)."""
    from flexdelegate.tflite.writer import ModelBuilder

    b = ModelBuilder()
    c = shape[-1]
    x = b.input(shape)
    axis = b.const(np.array([-1], np.int32))
    red = tuple(shape[:-1]) + (1,)

    def t(s=shape):
        return b.tensor(s)

    mean, neg, sq, var, ve, r = t(red), t(red), t(), t(red), t(red), t(red)
    b.op("MEAN", [x, axis], [mean], keep_dims=True)
    b.op("NEG", [mean], [neg])
    b.op("SQUARED_DIFFERENCE", [x, mean], [sq])
    b.op("MEAN", [sq, axis], [var], keep_dims=True)
    b.op("ADD", [var, b.const(np.array(eps, np.float32))], [ve])
    b.op("RSQRT", [ve], [r])
    y = t()
    if rms:
        xr = t()
        b.op("MUL", [x, r], [xr])
        b.op("MUL", [xr, b.const(gamma.reshape(1, 1, c))], [y])
    else:
        g = r
        if gamma is not None:
            g = t()
            b.op("MUL", [r, b.const(gamma.reshape(1, 1, c))], [g])
        gshape = shape if gamma is not None else red
        nmg, xg = b.tensor(gshape), t()
        b.op("MUL", [neg, g], [nmg])
        if beta is not None:
            nb = t()
            b.op("ADD", [nmg, b.const(beta.reshape(1, 1, c))], [nb])
            nmg = nb
        b.op("MUL", [x, g], [xg])
        b.op("ADD", [xg, nmg], [y])
    b.output(y)
    return b.build()


@pytest.mark.parametrize("c", [64, 192, 768, 1000])
@pytest.mark.parametrize("spelling", ["affine", "no_beta", "no_gamma", "plain", "rms"])
@pytest.mark.parametrize("threads", [1, 2])
def test_matches_stock_graph(lib, c, spelling, threads):
    from flexdelegate.run import invoke, make_interpreter, max_error

    rng = np.random.default_rng(c)
    shape = (1, 37, c)
    x = (rng.standard_normal(shape) * 3 + rng.standard_normal((1, 37, 1))).astype(np.float32)
    x[0, 5] = 1.5  # a constant row
    gamma = None if spelling in ("no_gamma", "plain") else (1 + 0.3 * rng.standard_normal(c)).astype(np.float32)
    beta = None if spelling in ("no_beta", "plain", "rms") else rng.standard_normal(c).astype(np.float32)
    eps = np.float32(1e-6)
    want = invoke(make_interpreter(stock_graph(shape, gamma, beta, eps, spelling == "rms")), [x])[0]
    got = np.empty_like(x)
    p = Params(gamma.ctypes.data if gamma is not None else None, beta.ctypes.data if beta is not None else None,
               eps, 1 if spelling == "rms" else 0)
    pool = lib.fx_pool_new(threads)
    try:
        lib.fx_layernorm_f32(pool, 37, c, x.ctypes.data, c, got.ctypes.data, c, ctypes.byref(p))
    finally:
        lib.fx_pool_free(pool)
    assert max_error([want], [got]) <= 1e-6
    rel = np.abs(got - want) / np.maximum(np.max(np.abs(want), axis=-1, keepdims=True), 1e-30)
    assert rel.max() <= 2e-6
    np.testing.assert_array_equal(got[0, 5], want[0, 5])  # the constant row, bit for bit
