"""Transformer patterns as the TFLite converter spells them (kernels/attention/NOTES.md), written
with our own writer: each fusion where its pattern holds (stats name the fused kernel) and
refused where it does not (the ops run one by one), both against stock."""
from __future__ import annotations

import numpy as np
import pytest

from opcheck import F32, check, rand
from flexdelegate.tflite.writer import ModelBuilder

I32 = np.int32


def _kernels(stats):
    return [(o["op"], o["kernel"]) for o in stats["ops"]]


def _layernorms(stats):
    return sum(k == "layer_norm" for _, k in _kernels(stats))


def _mean(b, x, shape, axis=-1, keep=True):
    out_shape = list(shape)
    out_shape[axis] = 1
    y = b.tensor(tuple(out_shape) if keep else tuple(d for i, d in enumerate(shape) if i != axis % len(shape)))
    b.op("MEAN", [x, b.const(np.array([axis], I32))], [y], keep_dims=keep)
    return y


def _bin(b, op, p, q, shape):
    y = b.tensor(shape)
    b.op(op, [p, q], [y])
    return y


def layernorm_graph(shape=(2, 9, 40), *, center=True, scale=True, rms=False, eps=1e-3, swap=False,
                    shared_mean=False, var_out=False, axis=-1, gamma_input=False, seed=0):
    """x -> (ADD of a residual, so x is computed in the partition) -> Keras LayerNormalization's
    op-by-op spelling -> MUL by 2 (a consumer). swap: commuted operands everywhere;
    shared_mean: the mean also read outside the pattern (the converter's CSE);
    var_out: the variance is also a graph output; axis: the MEAN's axis;
    gamma_input: gamma is a run-time input, not a constant."""
    b = ModelBuilder()
    c = shape[axis]
    x0 = b.input(shape)
    x = _bin(b, "ADD", x0, b.const(rand(shape, seed + 1)), shape)
    red = list(shape)
    red[axis] = 1
    red = tuple(red)
    bshape = [1] * len(shape)
    bshape[axis] = c
    bshape = tuple(bshape)
    gamma = b.input(bshape) if gamma_input else b.const((1 + 0.3 * rand(bshape, seed + 2)).astype(F32))
    beta = b.const(rand(bshape, seed + 3))
    o = (lambda p, q: (q, p)) if swap else (lambda p, q: (p, q))
    mean = _mean(b, x, shape, axis)
    sd = _bin(b, "SQUARED_DIFFERENCE", *o(x, mean), shape)
    var = _mean(b, sd, shape, axis)
    ve = _bin(b, "ADD", *o(var, b.const(np.array(eps, F32))), red)
    r = b.tensor(red)
    b.op("RSQRT", [ve], [r])
    outs = []
    if rms:
        y = _bin(b, "MUL", *o(x, r), shape)
        if scale:
            y = _bin(b, "MUL", *o(y, gamma), shape)
    else:
        nm = b.tensor(red)
        b.op("NEG", [mean], [nm])
        g = _bin(b, "MUL", *o(r, gamma), shape) if scale else r
        a = _bin(b, "MUL", *o(nm, g), shape)
        if center:
            a = _bin(b, "ADD", *o(a, beta), shape)
        xg = _bin(b, "MUL", *o(x, g), shape)
        y = _bin(b, "ADD", *o(xg, a), shape)
    if shared_mean:
        outs.append(_bin(b, "MUL", mean, b.const(np.array(3.0, F32)), red))
    if var_out:
        outs.append(var)
    z = _bin(b, "MUL", y, b.const(np.array(2.0, F32)), shape)
    b.output(z, *outs)
    return b.build()


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("center,scale,rms", [
    (True, True, False), (False, True, False), (True, False, False), (False, False, False),
    (False, True, True), (False, False, True)], ids=["affine", "scale_only", "center_only", "plain",
                                                  "rms", "rms_no_gamma"])
def test_layernorm_fuses(center, scale, rms, swap):
    stats = check(layernorm_graph(center=center, scale=scale, rms=rms, swap=swap), scale=3)
    assert _layernorms(stats) == 1, _kernels(stats)


@pytest.mark.parametrize("shape", [(1, 197, 192), (3, 5), (2, 2, 3, 130)], ids=str)
def test_layernorm_shapes(shape):
    stats = check(layernorm_graph(shape), scale=5)
    assert _layernorms(stats) == 1


def test_layernorm_threads():
    stats = check(layernorm_graph((1, 300, 256)), scale=2, flex={"num_threads": 3})
    assert _layernorms(stats) == 1


def test_layernorm_constant_rows():
    """A constant row (variance 0): stock's x·g and mean·g cancel exactly; so must ours."""
    def inputs(it, seed):
        x = np.repeat(rand((2, 9, 1), seed) * 100, 40, axis=2).astype(F32)
        return [x]
    stats = check(layernorm_graph(), inputs=inputs)
    assert _layernorms(stats) == 1


@pytest.mark.parametrize("case", ["shared_mean", "var_out", "axis", "gamma_input"])
def test_layernorm_refused(case):
    """Where the pattern does not hold the ops run one by one, and still agree with stock."""
    opts = {case: True} if case != "axis" else {"axis": 1}
    stats = check(layernorm_graph(**opts), scale=3)
    assert _layernorms(stats) == 0, _kernels(stats)


# ======================================================================================
# Attention
# ======================================================================================
def _attention_kernels(stats):
    return [k for _, k in _kernels(stats) if k.startswith("attention")]


def mha_graph(b_=1, sq=12, sk=None, heads=2, dim=16, *, mask="none", scale=True, adj_y=False,
              out_transpose=True, scores_out=False, beta=1.0, k_perm=(0, 2, 3, 1), fill=-2.3726709e38,
              seed=0):
    """Keras MultiHeadAttention as the converter writes it (kernels/attention/NOTES.md): Q, K, V
    FULLY_CONNECTED (keep_num_dims) -> RESHAPE [B,S,H,D] -> TRANSPOSE; BATCH_MATMUL(Q, Kᵀ) -> MUL
    1/√D -> [SELECT_V2(mask, ·, fill)] -> SOFTMAX -> BATCH_MATMUL(·, V) -> TRANSPOSE -> RESHAPE.
    mask: none | causal (constant) | causal_offset (constant, keys ahead by 1) | constant
    (random constant) | padding (run-time [B,1,1,Sk] bool input) | full (run-time [B,H,Sq,Sk]).
    adj_y: K as [B,H,Sk,D] with adj_y (no K TRANSPOSE [0,2,3,1]); scores_out: the scores are also
    a graph output (refusal); beta: SOFTMAX's beta; k_perm: K's TRANSPOSE."""
    sk = sk or sq
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    c = heads * dim
    xq = b.input((b_, sq, c))
    xkv = b.input((b_, sk, c)) if sk != sq else xq
    mask_in = None
    if mask == "padding":
        mask_in = b.input((b_, 1, 1, sk), dtype=np.bool_)
    elif mask == "full":
        mask_in = b.input((b_, heads, sq, sk), dtype=np.bool_)

    def proj(x, s, perm):
        y = b.tensor((b_, s, c))
        b.op("FULLY_CONNECTED", [x, b.const((rng.standard_normal((c, c)) / np.sqrt(c)).astype(F32)), -1], [y],
             keep_num_dims=True)
        r = b.tensor((b_, s, heads, dim))
        b.op("RESHAPE", [y, b.const(np.array([-1, s, heads, dim], I32))], [r])
        if perm is None:
            return r
        shape = tuple((b_, s, heads, dim)[i] for i in perm)
        t = b.tensor(shape)
        b.op("TRANSPOSE", [r, b.const(np.array(perm, I32))], [t])
        return t

    q = proj(xq, sq, (0, 2, 1, 3))
    k = proj(xkv, sk, (0, 2, 1, 3) if adj_y else k_perm)
    v = proj(xkv, sk, (0, 2, 1, 3))
    s = b.tensor((b_, heads, sq, sk))
    b.op("BATCH_MATMUL", [q, k], [s], adj_y=adj_y)
    if scale:
        s2 = b.tensor((b_, heads, sq, sk))
        b.op("MUL", [s, b.const(np.array(1 / np.sqrt(dim), F32))], [s2])
        s = s2
    outs = []
    if mask != "none":
        if mask_in is None:
            if mask == "constant":
                m = rng.random((1, 1, sq, sk)) < 0.7
            else:
                m = np.tril(np.ones((sq, sk), bool), k=1 if mask == "causal_offset" else 0)[None, None]
                m = np.broadcast_to(m, (1, heads, sq, sk)).copy()
            mask_in = b.const(m)
        s3 = b.tensor((b_, heads, sq, sk))
        b.op("SELECT_V2", [mask_in, s, b.const(np.array(fill, F32))], [s3])
        s = s3
    if scores_out:
        outs.append(s)
    p = b.tensor((b_, heads, sq, sk))
    b.op("SOFTMAX", [s], [p], beta=beta)
    o = b.tensor((b_, heads, sq, dim))
    b.op("BATCH_MATMUL", [p, v], [o])
    if out_transpose:
        ot = b.tensor((b_, sq, heads, dim))
        b.op("TRANSPOSE", [o, b.const(np.array([0, 2, 1, 3], I32))], [ot])
        o = b.tensor((b_, sq, c))
        b.op("RESHAPE", [ot, b.const(np.array([b_, sq, c], I32))], [o])
    b.output(o, *outs)
    return b.build()


def _mask_inputs(it, seed):
    rng = np.random.default_rng(seed)
    xs = []
    for d in it.get_input_details():
        shape = tuple(d["shape"])
        if d["dtype"] == np.bool_:
            m = rng.random(shape) < 0.75
            m.reshape(-1, shape[-1])[0, :] = False  # a fully masked row: stock's uniform softmax
            xs.append(m)
        else:
            xs.append(rng.standard_normal(shape).astype(F32))
    return xs


@pytest.mark.parametrize("mask,want", [("none", "attention"), ("causal", "attention +causal"),
                                       ("causal_offset", "attention +causal"), ("constant", "attention +mask"),
                                       ("padding", "attention +mask"), ("full", "attention +mask")])
def test_attention_fuses(mask, want):
    stats = check(mha_graph(mask=mask), inputs=_mask_inputs)
    assert _attention_kernels(stats) == [want], _kernels(stats)


@pytest.mark.parametrize("case", [dict(adj_y=True), dict(out_transpose=False), dict(scale=False),
                                  dict(b_=2, sq=7, sk=33), dict(sq=197, heads=3, dim=64),
                                  dict(sq=130, mask="causal", heads=2, dim=32)], ids=str)
def test_attention_variants(case):
    stats = check(mha_graph(**case), inputs=_mask_inputs)
    assert len(_attention_kernels(stats)) == 1, _kernels(stats)


@pytest.mark.parametrize("threads", [2, 3])
def test_attention_threads(threads):
    stats = check(mha_graph(b_=2, sq=70, mask="causal"), inputs=_mask_inputs, flex={"num_threads": threads})
    assert len(_attention_kernels(stats)) == 1


def test_attention_with_budget():
    from budgetcheck import min_budget
    model = mha_graph(sq=64, heads=4, dim=64, mask="causal")
    stats = check(model, inputs=_mask_inputs, flex={"budget": min_budget(model, "") + 0.05})
    assert len(_attention_kernels(stats)) == 1


@pytest.mark.parametrize("case", [dict(scores_out=True), dict(beta=0.5), dict(k_perm=(0, 2, 1, 3))], ids=str)
def test_attention_refused(case):
    """Scores read elsewhere, a SOFTMAX beta, K not transposed as Kᵀ: the ops run one by one."""
    if "k_perm" in case:  # Q·K with K [B,H,Sk,D] is only well-formed when D == Sk
        stats = check(mha_graph(sq=16, dim=16, **case), inputs=_mask_inputs)
    else:
        stats = check(mha_graph(mask="causal", **case), inputs=_mask_inputs)
    assert _attention_kernels(stats) == [], _kernels(stats)


# ======================================================================================
# GELU into the FULLY_CONNECTED output stage
# ======================================================================================
def fc_gelu_graph(x_shape=(1, 20, 48), units=96, *, approximate=False, bias=True, extra_reader=False,
                  act="NONE", seed=0):
    """Dense(activation="gelu") on a 3-D input: FULLY_CONNECTED (keep_num_dims) -> GELU.
    extra_reader: the FC output is also a graph output (refusal)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input(x_shape)
    y_shape = (*x_shape[:-1], units)
    y = b.tensor(y_shape)
    w = (rng.standard_normal((units, x_shape[-1])) / np.sqrt(x_shape[-1])).astype(F32)
    b.op("FULLY_CONNECTED", [x, b.const(w), b.const(rand(units, seed + 1)) if bias else -1], [y],
         keep_num_dims=len(x_shape) > 2, fused_activation_function=act)
    z = b.tensor(y_shape)
    b.op("GELU", [y], [z], approximate=approximate)
    b.output(z, *([y] if extra_reader else []))
    return b.build()


def _fc_gelu(stats):
    return [k for op, k in _kernels(stats) if op == "FULLY_CONNECTED" and k.endswith("+gelu")]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("approximate", [False, True])
@pytest.mark.parametrize("x_shape", [(1, 20, 48), (7, 33), (2, 3, 5, 16)], ids=str)
def test_gelu_fuses_into_fc(x_shape, approximate, bias):
    stats = check(fc_gelu_graph(x_shape, approximate=approximate, bias=bias), scale=3)
    assert len(_fc_gelu(stats)) == 1, _kernels(stats)


def test_gelu_fused_fc_threads():
    stats = check(fc_gelu_graph((1, 197, 192), 768), scale=2, flex={"num_threads": 2})
    assert len(_fc_gelu(stats)) == 1


@pytest.mark.parametrize("case", [dict(extra_reader=True), dict(act="RELU")], ids=str)
def test_gelu_not_fused(case):
    """The FC output read elsewhere, or the FC already clamps: GELU runs as its own op."""
    stats = check(fc_gelu_graph(**case), scale=3)
    assert _fc_gelu(stats) == [], _kernels(stats)


# ======================================================================================
# End to end: a GPT-2-style block as the converter writes it, every pattern at once
# ======================================================================================
def _ln(b, x, shape, rng):
    """Keras LayerNormalization (center + scale) op by op, on tensor x of `shape`."""
    c, red = shape[-1], (*shape[:-1], 1)
    gamma = b.const((1 + 0.2 * rng.standard_normal((1, 1, c))).astype(F32))
    beta = b.const((0.1 * rng.standard_normal((1, 1, c))).astype(F32))
    mean = _mean(b, x, shape)
    nm = b.tensor(red)
    b.op("NEG", [mean], [nm])
    var = _mean(b, _bin(b, "SQUARED_DIFFERENCE", x, mean, shape), shape)
    r = b.tensor(red)
    b.op("RSQRT", [_bin(b, "ADD", var, b.const(np.array(1e-5, F32)), red)], [r])
    g = _bin(b, "MUL", r, gamma, shape)
    a = _bin(b, "ADD", _bin(b, "MUL", nm, g, shape), beta, shape)
    return _bin(b, "ADD", _bin(b, "MUL", x, g, shape), a, shape)


def _fc(b, x, shape, units, rng, gelu=False):
    y_shape = (*shape[:-1], units)
    y = b.tensor(y_shape)
    w = (rng.standard_normal((units, shape[-1])) / np.sqrt(shape[-1])).astype(F32)
    b.op("FULLY_CONNECTED", [x, b.const(w), b.const((0.1 * rng.standard_normal(units)).astype(F32))], [y],
         keep_num_dims=True)
    if gelu:
        z = b.tensor(y_shape)
        b.op("GELU", [y], [z])
        y = z
    return y


def gpt2_block_graph(seq=24, heads=2, dim=16, vocab=64, layers=2, seed=0):
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    c = heads * dim
    shape = (1, seq, c)
    ids = b.input((1, seq), dtype=I32)
    neg = b.tensor((1, seq), dtype=np.bool_)
    b.op("LESS", [ids, b.const(np.array(0, I32))], [neg])
    wrapped = _bin_t(b, "ADD", ids, b.const(np.array(vocab, I32)), (1, seq), I32)
    sel = b.tensor((1, seq), dtype=I32)
    b.op("SELECT_V2", [neg, wrapped, ids], [sel])
    emb = b.tensor(shape)
    b.op("GATHER", [b.const(rng.standard_normal((vocab, c)).astype(F32)), sel], [emb], axis=0)
    x = _bin(b, "ADD", emb, b.const((0.1 * rng.standard_normal(shape)).astype(F32)), shape)
    causal = b.const(np.broadcast_to(np.tril(np.ones((seq, seq), bool)), (1, heads, seq, seq)).copy())
    for _ in range(layers):
        h = _ln(b, x, shape, rng)

        def split(t, perm):
            r = b.tensor((1, seq, heads, dim))
            b.op("RESHAPE", [t, b.const(np.array([-1, seq, heads, dim], I32))], [r])
            out = b.tensor(tuple((1, seq, heads, dim)[i] for i in perm))
            b.op("TRANSPOSE", [r, b.const(np.array(perm, I32))], [out])
            return out

        q = split(_fc(b, h, shape, c, rng), (0, 2, 1, 3))
        k = split(_fc(b, h, shape, c, rng), (0, 2, 3, 1))
        v = split(_fc(b, h, shape, c, rng), (0, 2, 1, 3))
        s = b.tensor((1, heads, seq, seq))
        b.op("BATCH_MATMUL", [q, k], [s])
        s = _bin(b, "MUL", s, b.const(np.array(1 / np.sqrt(dim), F32)), (1, heads, seq, seq))
        sm = b.tensor((1, heads, seq, seq))
        b.op("SELECT_V2", [causal, s, b.const(np.array(-2.3726709e38, F32))], [sm])
        p = b.tensor((1, heads, seq, seq))
        b.op("SOFTMAX", [sm], [p], beta=1.0)
        o = b.tensor((1, heads, seq, dim))
        b.op("BATCH_MATMUL", [p, v], [o])
        ot = b.tensor((1, seq, heads, dim))
        b.op("TRANSPOSE", [o, b.const(np.array([0, 2, 1, 3], I32))], [ot])
        merged = b.tensor(shape)
        b.op("RESHAPE", [ot, b.const(np.array([1, seq, c], I32))], [merged])
        x = _bin(b, "ADD", x, _fc(b, merged, shape, c, rng), shape)
        h = _ln(b, x, shape, rng)
        x = _bin(b, "ADD", x, _fc(b, _fc(b, h, shape, 4 * c, rng, gelu=True), (1, seq, 4 * c), c, rng), shape)
    b.output(_ln(b, x, shape, rng))
    return b.build()


def _bin_t(b, op, p, q, shape, dtype):
    y = b.tensor(shape, dtype=dtype)
    b.op(op, [p, q], [y])
    return y


@pytest.mark.parametrize("threads", [1, 2])
def test_gpt2_block_end_to_end(threads):
    """One partition, every pattern fused (3 + 2 LayerNorms per 2 layers, 2 causal attentions, 2
    GELU FCs), within tolerance of stock; token ids include negatives (the converter's wrap)."""
    stats = check(gpt2_block_graph(), inputs=lambda it, seed: [
        np.random.default_rng(seed).integers(-64, 64, (1, 24)).astype(I32)], flex={"num_threads": threads})
    assert stats["partitions"] == 1
    kernels = [k for _, k in _kernels(stats)]
    assert kernels.count("layer_norm") == 5 and kernels.count("attention +causal") == 2, kernels
    assert len(_fc_gelu(stats)) == 2, kernels
