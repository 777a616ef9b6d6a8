"""kernels/batch-matmul: the BATCH_MATMUL driver with every GEMM microkernel this CPU runs (and
NEON under qemu) against float64 (tests/native/bmm_check.c), then against stock TFLite's
BATCH_MATMUL (adj_x / adj_y, broadcast batch dims) on the same tensors, B constant and not."""
import ctypes

import numpy as np
import pytest

import kernel_build as kb

RANK = 6
SOURCES = ("batch-matmul", "qs8-gemm", "qs8-igemm", "quant")  # the int8 form runs on qs8-gemm's drivers


def _ok(run):
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "ALL PASS" in out, out
    return out


def test_every_kernel_here(tmp_path):
    exe = kb.build("bmm_check.c", kb.sources(*SOURCES, gemm=True, pool=True), tmp_path / "bmm_check")
    out = _ok(exe.run())
    if "avx2" in open("/proc/cpuinfo").read():
        assert "f32-gemm-6x16-avx2: max" in out, out


def test_neon_under_qemu(tmp_path):
    exe = kb.build("bmm_check.c", kb.sources(*SOURCES, gemm=True, pool=True), tmp_path / "bmm_a64", aarch64=True)
    assert "f32-gemm-8x8-neon: max" in _ok(exe.run("quick"))


class Plan(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int) for n in ("m", "k", "n", "adj_x", "adj_y", "rank")] + [
        ("dims", ctypes.c_int * RANK), ("batches", ctypes.c_size_t), ("a_batches", ctypes.c_size_t),
        ("b_batches", ctypes.c_size_t), ("a_step", ctypes.c_size_t * RANK), ("b_step", ctypes.c_size_t * RANK)]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    so = kb.shared_library(kb.sources(*SOURCES, gemm=True, pool=True), tmp_path_factory.mktemp("bmm") / "lib.so")
    so.fx_pool_new.restype = ctypes.c_void_p
    so.fx_pool_new.argtypes = [ctypes.c_int]
    so.fx_pool_free.argtypes = [ctypes.c_void_p]
    ip = ctypes.POINTER(ctypes.c_int)
    so.fx_bmm_plan_init.argtypes = [ctypes.POINTER(Plan), ip, ctypes.c_int, ip, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    for f in ("fx_bmm_packed_floats", "fx_bmm_scratch_floats"):
        getattr(so, f).restype = ctypes.c_size_t
    so.fx_bmm_packed_floats.argtypes = [ctypes.POINTER(Plan), ctypes.c_void_p]
    so.fx_bmm_scratch_floats.argtypes = [ctypes.POINTER(Plan), ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    so.fx_bmm_pack_b.argtypes = [ctypes.POINTER(Plan), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    so.fx_bmm_f32.argtypes = [ctypes.c_void_p, ctypes.POINTER(Plan), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    return so


def ints(shape):
    return (ctypes.c_int * len(shape))(*shape)


CASES = [  # a shape, b shape, adj_x, adj_y
    ((3, 197, 64), (3, 64, 197), False, False),
    ((1, 12, 128, 64), (1, 12, 128, 64), False, True),
    ((2, 1, 17, 33), (1, 5, 33, 9), False, False),
    ((4, 33, 7), (33, 40), True, False),
    ((2, 3, 24, 10), (3, 31, 24), True, True),
    ((1, 2, 2, 5, 8), (2, 1, 8, 6), False, False),
]


@pytest.mark.parametrize("a_shape,b_shape,adj_x,adj_y", CASES)
@pytest.mark.parametrize("constant", [False, True], ids=["runtime-B", "constant-B"])
@pytest.mark.parametrize("threads", [1, 2])
def test_matches_stock(lib, a_shape, b_shape, adj_x, adj_y, constant, threads):
    from flexdelegate.run import invoke, make_interpreter, max_error
    from flexdelegate.tflite.writer import ModelBuilder

    rng = np.random.default_rng(len(a_shape) * 31 + a_shape[-1])
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    p = Plan()
    assert lib.fx_bmm_plan_init(ctypes.byref(p), ints(a_shape), len(a_shape), ints(b_shape), len(b_shape),
                                int(adj_x), int(adj_y)) == 0
    out_shape = tuple(p.dims[: p.rank])
    mb = ModelBuilder()
    ai = mb.input(a_shape)
    bi = mb.const(b) if constant else mb.input(b_shape)
    y = mb.tensor(out_shape)
    mb.op("BATCH_MATMUL", [ai, bi], [y], adj_x=adj_x, adj_y=adj_y)
    mb.output(y)
    want = invoke(make_interpreter(mb.build()), [a] if constant else [a, b])[0]
    assert want.shape == out_shape
    c = np.full(out_shape, np.nan, np.float32)
    packed = None
    if constant:
        packed = np.empty(lib.fx_bmm_packed_floats(ctypes.byref(p), None), np.float32)
        lib.fx_bmm_pack_b(ctypes.byref(p), None, b.ctypes.data, packed.ctypes.data)
    scratch = np.empty(max(1, lib.fx_bmm_scratch_floats(ctypes.byref(p), None, threads, int(constant))), np.float32)
    pool = lib.fx_pool_new(threads)
    try:
        assert lib.fx_bmm_f32(pool, ctypes.byref(p), None, a.ctypes.data, None if constant else b.ctypes.data,
                              packed.ctypes.data if constant else None, c.ctypes.data, scratch.ctypes.data) == 0
    finally:
        lib.fx_pool_free(pool)
    assert max_error([want], [c]) <= 1e-5
