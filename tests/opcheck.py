"""Shared helpers for the op and folding tests: build a tiny model, run it on the stock
reference interpreter (no XNNPack) and with flexdelegate, and demand that (a) the outputs
agree (max_error <= tol, same NaN pattern) and (b) every node was delegated.

    from opcheck import single_op, check
    check(single_op("RELU", [(1, 4, 4, 3)], (1, 4, 4, 3)), scale=3)
"""
from __future__ import annotations

import numpy as np

from flexdelegate import load_flex
from flexdelegate.run import invoke, make_interpreter, max_error, random_inputs
from flexdelegate.tflite.reader import read_model
from flexdelegate.tflite.writer import ModelBuilder

F32 = np.float32
TOL = 1e-4
# Fused activations the delegate supports (SIGN_BIT is not in the contract).
ACTS = ["NONE", "RELU", "RELU_N1_TO_1", "RELU6", "TANH"]


def rand(shape, seed=0, scale=1.0, dtype=F32):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


class Input:
    """A graph input of a given dtype (plain tuples in single_op mean float32 inputs)."""

    def __init__(self, shape, dtype=F32):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)


def add_operand(b: ModelBuilder, spec):
    """tuple/list -> float32 graph input; Input -> typed graph input; ndarray -> constant;
    None -> absent optional input (-1); int -> an existing tensor index."""
    if spec is None:
        return -1
    if isinstance(spec, (int, np.integer)):
        return int(spec)
    if isinstance(spec, Input):
        return b.input(spec.shape, dtype=spec.dtype)
    if isinstance(spec, np.ndarray):
        return b.const(spec)
    return b.input(tuple(spec))


def single_op(op, ins, out_shape, out_dtype=F32, **options) -> bytes:
    """One-op model: operands as in add_operand (in order), one output of out_shape."""
    b = ModelBuilder()
    operands = [add_operand(b, s) for s in ins]
    y = b.tensor(out_shape, dtype=out_dtype)
    b.op(op, operands, [y], **options)
    b.output(y)
    return b.build()


def _inputs(it, seed, scale, positive):
    xs = random_inputs(it, seed)
    out = []
    for x in xs:
        if np.issubdtype(x.dtype, np.floating):
            x = (x * scale).astype(x.dtype)
            if positive:
                x = (np.abs(x) + 0.5).astype(x.dtype)
        out.append(x)
    return out


def _declared_output_shapes(model):
    m = read_model(model)
    return [tuple(int(d) for d in m.tensors[i].shape) for i in m.outputs]


def check(model, *, inputs=None, seed=0, scale=1.0, positive=False, tol=TOL,
          num_threads=None, invokes=2, flex=None) -> dict:
    """Runs `model` stock and delegated on the same inputs and asserts agreement and full
    delegation. inputs: list of arrays, or a callable(interpreter, seed) -> list; by
    default random_inputs scaled by `scale` (positive=True: |x| + 0.5). Each of `invokes`
    rounds uses fresh inputs (seed + round) on the same two interpreters, so state kept
    between invocations is exercised too. num_threads: the interpreters' thread count;
    flex: options for load_flex. Returns the delegate's stats()."""
    ref = make_interpreter(model)
    delegate = load_flex(**(flex or {}))
    got_it = make_interpreter(model, delegate=delegate, num_threads=num_threads)
    stats = delegate.stats()
    declared = _declared_output_shapes(model)
    for round_ in range(invokes):
        if inputs is None:
            xs = _inputs(ref, seed + round_, scale, positive)
        elif callable(inputs):
            xs = inputs(ref, seed + round_)
        else:
            xs = inputs
        r = invoke(ref, xs)
        # Test-construction sanity: the model we wrote must declare the shapes the stock
        # interpreter computes, or the delegate would be judged on a malformed model.
        assert [tuple(a.shape) for a in r] == declared, \
            f"test bug: declared output shapes {declared}, stock computes {[a.shape for a in r]}"
        g = invoke(got_it, xs)
        assert [a.dtype for a in g] == [a.dtype for a in r]
        for a, c in zip(r, g):
            if np.issubdtype(a.dtype, np.floating):
                # max_error skips NaN (max() with NaN), so compare the NaN pattern here.
                assert np.array_equal(np.isnan(a), np.isnan(c)), "NaN pattern differs"
        err = max_error(r, g)
        assert err <= tol, f"max_error {err:.3g} > {tol} (round {round_}); stats {stats}"
    assert stats["nodes_total"] > 0, stats
    assert stats["fallback"] == [], stats
    assert stats["nodes_delegated"] == stats["nodes_total"], stats
    return stats


def check_against(model, inputs, expected, tol=TOL, flex=None) -> dict:
    """Like check, but against known outputs: for the few cases where a stock runtime is
    itself wrong."""
    delegate = load_flex(**(flex or {}))
    got = invoke(make_interpreter(model, delegate=delegate), inputs)
    stats = delegate.stats()
    err = max_error(expected, got)
    assert err <= tol, f"max_error {err:.3g} > {tol}; stats {stats}"
    assert stats["fallback"] == [] and stats["nodes_delegated"] == stats["nodes_total"], stats
    return stats


# -- output shape formulas (TFLite conventions) -------------------------------------------

def window_out(size, k, stride, dilation, padding):
    eff = (k - 1) * dilation + 1
    if padding == "SAME":
        return -(-size // stride)
    return (size - eff) // stride + 1


def conv_model(x_shape, cout, kh, kw, *, stride=(1, 1), dilation=(1, 1), padding="SAME",
               act="NONE", bias=True, seed=0) -> bytes:
    n, h, w, cin = x_shape
    sh, sw = stride
    dh, dw = dilation
    oh, ow = window_out(h, kh, sh, dh, padding), window_out(w, kw, sw, dw, padding)
    wts = rand((cout, kh, kw, cin), seed + 1, 1 / np.sqrt(kh * kw * cin))
    b = rand((cout,), seed + 2) if bias else None
    return single_op("CONV_2D", [x_shape, wts, b], (n, oh, ow, cout), padding=padding,
                     stride_w=sw, stride_h=sh, dilation_w_factor=dw, dilation_h_factor=dh,
                     fused_activation_function=act)


def depthwise_model(x_shape, mult, kh, kw, *, stride=(1, 1), dilation=(1, 1),
                    padding="SAME", act="NONE", bias=True, seed=0,
                    depth_multiplier=None) -> bytes:
    n, h, w, cin = x_shape
    sh, sw = stride
    dh, dw = dilation
    oh, ow = window_out(h, kh, sh, dh, padding), window_out(w, kw, sw, dw, padding)
    wts = rand((1, kh, kw, cin * mult), seed + 1, 1 / np.sqrt(kh * kw))
    b = rand((cin * mult,), seed + 2) if bias else None
    return single_op("DEPTHWISE_CONV_2D", [x_shape, wts, b], (n, oh, ow, cin * mult),
                     padding=padding, stride_w=sw, stride_h=sh, dilation_w_factor=dw,
                     dilation_h_factor=dh, fused_activation_function=act,
                     depth_multiplier=mult if depth_multiplier is None else depth_multiplier)


def pool_model(op, x_shape, kh, kw, *, stride=(1, 1), padding="SAME", act="NONE") -> bytes:
    n, h, w, c = x_shape
    sh, sw = stride
    oh, ow = window_out(h, kh, sh, 1, padding), window_out(w, kw, sw, 1, padding)
    return single_op(op, [x_shape], (n, oh, ow, c), padding=padding, stride_w=sw,
                     stride_h=sh, filter_width=kw, filter_height=kh,
                     fused_activation_function=act)


def fc_model(x_shape, units, *, bias=True, keep_num_dims=False, act="NONE", seed=0) -> bytes:
    k = x_shape[-1]
    wts = rand((units, k), seed + 1, 1 / np.sqrt(k))
    b = rand((units,), seed + 2) if bias else None
    if keep_num_dims:
        out = (*x_shape[:-1], units)
    else:
        out = (int(np.prod(x_shape[:-1])), units)
    return single_op("FULLY_CONNECTED", [x_shape, wts, b], out, keep_num_dims=keep_num_dims,
                     fused_activation_function=act)


def transpose_conv_out(size, k, stride, padding):
    return size * stride if padding == "SAME" else (size - 1) * stride + k


def transpose_conv_model(x_shape, cout, kh, kw, *, stride=(1, 1), padding="SAME",
                         bias=False, act=None, out_hw=None, seed=0) -> bytes:
    """TRANSPOSE_CONV inputs: output_shape, weights (O, H, W, I), input[, bias]."""
    n, h, w, cin = x_shape
    sh, sw = stride
    oh, ow = out_hw or (transpose_conv_out(h, kh, sh, padding),
                        transpose_conv_out(w, kw, sw, padding))
    out = (n, oh, ow, cout)
    wts = rand((cout, kh, kw, cin), seed + 1, 1 / np.sqrt(kh * kw * cin))
    ins = [np.array(out, np.int32), wts, x_shape]
    if bias:
        ins.append(rand((cout,), seed + 2))
    opts = {} if act is None else {"fused_activation_function": act}
    return single_op("TRANSPOSE_CONV", ins, out, padding=padding, stride_w=sw, stride_h=sh,
                     **opts)


def broadcast_shape(a, b):
    return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
