"""kernels/attention: every fused-attention variant this CPU runs (and NEON under qemu) against
float64 and the scalar variant (tests/native/attention_check.c), then this CPU's variant against
stock TFLite running the converter's unfused sub-graph (BATCH_MATMUL, MUL, SELECT_V2 / ADD,
SOFTMAX, BATCH_MATMUL; attention/NOTES.md) on the same tensors, with its masks."""
import ctypes

import numpy as np
import pytest

import kernel_build as kb

FILL = np.float32(-2.3726709e38)  # Keras 3's masked-score value


def _ok(run):
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "ALL PASS" in out, out
    return out


def test_every_variant_here(tmp_path):
    exe = kb.build("attention_check.c", kb.sources("attention", gemm=True, pool=True), tmp_path / "attn_check")
    out = _ok(exe.run())
    if "avx2" in open("/proc/cpuinfo").read():
        assert "f32-attention-6x16-avx2: max" in out, out


def test_neon_under_qemu(tmp_path):
    exe = kb.build("attention_check.c", kb.sources("attention", gemm=True, pool=True), tmp_path / "attn_a64",
                   aarch64=True)
    assert "f32-attention-8x8-neon: max" in _ok(exe.run("quick"))


class In(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("batch", ctypes.c_ssize_t), ("head", ctypes.c_ssize_t),
                ("seq", ctypes.c_ssize_t)]


class Params(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int) for n in ("batch", "heads", "q_len", "kv_len", "head_dim", "value_dim")] + [
        ("scale", ctypes.c_float), ("causal", ctypes.c_int), ("causal_offset", ctypes.c_int), ("fill", ctypes.c_float),
        ("mask_kind", ctypes.c_int), ("mask", ctypes.c_void_p), ("mask_batch", ctypes.c_ssize_t),
        ("mask_head", ctypes.c_ssize_t), ("mask_row", ctypes.c_ssize_t)]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    so = kb.shared_library(kb.sources("attention", gemm=True, pool=True), tmp_path_factory.mktemp("attn") / "liba.so")
    so.fx_pool_new.restype = ctypes.c_void_p
    so.fx_pool_new.argtypes = [ctypes.c_int]
    so.fx_pool_free.argtypes = [ctypes.c_void_p]
    so.fx_attention_scratch_bytes.restype = ctypes.c_size_t
    so.fx_attention_scratch_bytes.argtypes = [ctypes.c_void_p, ctypes.POINTER(Params), ctypes.c_int]
    so.fx_attention_f32.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(Params), In, In, In, In,
                                    ctypes.c_void_p]
    so.fx_attn_mask_is_causal.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_ssize_t,
                                          ctypes.POINTER(ctypes.c_int)]
    return so


def converter_graph(b, s, h, d, mask, fill=FILL):
    """Keras MultiHeadAttention's core as the converter emits it: inputs Q, K, V [B,S,H,D] (and a
    bool [B,1,1,S] padding mask / float [B,1,S,S] additive mask), output [B,S,H,D]."""
    from flexdelegate.tflite.writer import ModelBuilder

    mb = ModelBuilder()
    q, k, v = (mb.input((b, s, h, d)) for _ in range(3))
    perm = mb.const(np.array([0, 2, 1, 3], np.int32))
    qt, kt, vt = mb.tensor((b, h, s, d)), mb.tensor((b, h, d, s)), mb.tensor((b, h, s, d))
    mb.op("TRANSPOSE", [q, perm], [qt])
    mb.op("TRANSPOSE", [k, mb.const(np.array([0, 2, 3, 1], np.int32))], [kt])
    mb.op("TRANSPOSE", [v, perm], [vt])
    sc, ss = mb.tensor((b, h, s, s)), mb.tensor((b, h, s, s))
    mb.op("BATCH_MATMUL", [qt, kt], [sc])
    mb.op("MUL", [sc, mb.const(np.array(1 / np.sqrt(d), np.float32))], [ss])
    if mask == "causal":
        sel = mb.tensor((b, h, s, s))
        mb.op("SELECT_V2", [mb.const(np.tril(np.ones((1, 1, s, s), bool))), ss, mb.const(FILL)], [sel])
        ss = sel
    elif mask == "padding":
        keep, sel = mb.input((b, 1, 1, s), dtype=np.bool_), mb.tensor((b, h, s, s))
        mb.op("SELECT_V2", [keep, ss, mb.const(np.asarray(fill, np.float32))], [sel])
        ss = sel
    elif mask == "add":
        add, summed = mb.input((b, 1, s, s)), mb.tensor((b, h, s, s))
        mb.op("ADD", [ss, add], [summed])
        ss = summed
    p, o, ot = mb.tensor((b, h, s, s)), mb.tensor((b, h, s, d)), mb.tensor((b, s, h, d))
    mb.op("SOFTMAX", [ss], [p], beta=1.0)
    mb.op("BATCH_MATMUL", [p, vt], [o])
    mb.op("TRANSPOSE", [o, perm], [ot])
    mb.output(ot)
    return mb.build()


@pytest.mark.parametrize("b,s,h,d", [(1, 197, 3, 64), (2, 64, 4, 32), (1, 130, 2, 80), (1, 600, 2, 64)])
@pytest.mark.parametrize("mask", ["none", "causal", "padding", "add"])
@pytest.mark.parametrize("threads", [1, 2])
def test_matches_stock_graph(lib, b, s, h, d, mask, threads):
    from flexdelegate.run import invoke, make_interpreter, max_error

    rng = np.random.default_rng(s * 7 + d)
    q, k, v = (rng.standard_normal((b, s, h, d)).astype(np.float32) for _ in range(3))
    inputs, kind, mptr, strides = [q, k, v], 0, None, (0, 0, 0)
    if mask == "padding":
        keep = rng.random((b, 1, 1, s)) < 0.8
        keep[0, 0, 0, :] = False if b > 1 else keep[0, 0, 0, :]  # batch 0 of 2: every key masked
        inputs.append(keep)
        kind, mptr, strides = 1, keep.ctypes.data, (s, 0, 0)
    elif mask == "add":
        add = np.where(rng.random((b, 1, s, s)) < 0.2, -1e4, rng.uniform(-1, 1, (b, 1, s, s))).astype(np.float32)
        inputs.append(add)
        kind, mptr, strides = 2, add.ctypes.data, (s * s, 0, s)
    want = invoke(make_interpreter(converter_graph(b, s, h, d, mask)), inputs)[0]
    o = np.full_like(q, np.nan)
    row = h * d
    views = [In(a.ctypes.data, s * row, d, row) for a in (q, k, v, o)]
    p = Params(b, h, s, s, d, d, 1 / np.sqrt(d), int(mask == "causal"), 0, FILL, kind, mptr, *strides)
    pool = lib.fx_pool_new(threads)
    try:
        scratch = np.empty(lib.fx_attention_scratch_bytes(None, ctypes.byref(p), threads) // 4 + 16, np.float32)
        assert lib.fx_attention_f32(None, pool, ctypes.byref(p), *views, scratch.ctypes.data) == 0
    finally:
        lib.fx_pool_free(pool)
    assert max_error([want], [o]) <= 2e-6


def test_causal_mask_recognised(lib):
    off = ctypes.c_int(99)
    for sq, sk, shift in [(16, 16, 0), (5, 12, 7), (8, 8, -1), (1, 1, 0)]:
        m = (np.arange(sk)[None, :] <= np.arange(sq)[:, None] + shift).astype(np.uint8)
        assert lib.fx_attn_mask_is_causal(m.ctypes.data, sq, sk, sk, ctypes.byref(off)) == 1 and off.value == shift
    m = np.tril(np.ones((8, 8), np.uint8))
    m[5, 2] = 0
    assert lib.fx_attn_mask_is_causal(m.ctypes.data, 8, 8, 8, ctypes.byref(off)) == 0
    upper = np.triu(np.ones((4, 4), np.uint8))
    assert lib.fx_attn_mask_is_causal(upper.ctypes.data, 4, 4, 4, ctypes.byref(off)) == 0
    # every key kept: causal with an offset that hides nothing (the flag then skips nothing)
    assert lib.fx_attn_mask_is_causal(np.ones((4, 4), np.uint8).ctypes.data, 4, 4, 4, ctypes.byref(off)) == 1
    assert off.value == 3


@pytest.mark.parametrize("fill", [FILL, -np.inf], ids=["keras-fill", "minus-inf"])
def test_fully_masked_rows_as_stock(lib, fill):
    """A batch whose keys are all masked: stock's SOFTMAX of equal fills is uniform (the mean of V),
    of -inf NaN (which tflite-runtime 2.14's BATCH_MATMUL then clamps to +inf; LiteRT 2.3 keeps NaN,
    as the kernel does); the other batch is untouched by it."""
    from flexdelegate.run import invoke, make_interpreter

    b, s, h, d = 2, 24, 2, 16
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((b, s, h, d)).astype(np.float32) for _ in range(3))
    keep = rng.random((b, 1, 1, s)) < 0.7
    keep[1] = False
    want = invoke(make_interpreter(converter_graph(b, s, h, d, "padding", fill)), [q, k, v, keep])[0]
    o = np.empty_like(q)
    views = [In(a.ctypes.data, s * h * d, d, h * d) for a in (q, k, v, o)]
    p = Params(b, h, s, s, d, d, 1 / np.sqrt(d), 0, 0, fill, 1, keep.ctypes.data, s, 0, 0)
    scratch = np.empty(lib.fx_attention_scratch_bytes(None, ctypes.byref(p), 1) // 4 + 16, np.float32)
    assert lib.fx_attention_f32(None, None, ctypes.byref(p), *views, scratch.ctypes.data) == 0
    if fill == -np.inf:
        assert np.isnan(o[1]).all() and not np.isfinite(want[1]).any()
    else:
        np.testing.assert_allclose(o[1], want[1], rtol=0, atol=2e-6)
    np.testing.assert_allclose(o[0], want[0], rtol=0, atol=2e-6)
