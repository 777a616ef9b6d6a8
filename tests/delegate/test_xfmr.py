"""Transformer patterns as the TFLite converter spells them (kernels/attention/README.md), written
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
