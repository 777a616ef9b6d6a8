"""Load-time folding: DEQUANTIZE (fp16, int8 per-tensor / per-channel), DENSIFY (plain and
block-sparse), the Keras-3 shape chain (SHAPE -> STRIDED_SLICE / GATHER -> PACK -> RESHAPE)
and constant-only GATHER. Every graph must be fully delegated, fold at least the nodes that
only depend on constants (or static shapes), and agree with the stock interpreter."""
from __future__ import annotations

import numpy as np
import pytest

from opcheck import F32, check, rand, window_out
from flexdelegate import load_flex
from flexdelegate.run import invoke, make_interpreter, max_error
from flexdelegate.tflite.writer import ModelBuilder

I32 = np.int32


def check_folded(model, folded, **kwargs):
    """check() plus: exactly `folded` nodes were evaluated at load."""
    stats = check(model, **kwargs)
    assert stats["nodes_folded"] == folded, stats
    return stats


def dequantized(b, const_index, shape):
    """DEQUANTIZE node from a quantized/fp16 constant to a new float32 tensor."""
    y = b.tensor(shape)
    b.op("DEQUANTIZE", [const_index], [y])
    return y


def quantize_per_channel(w, axis):
    """Symmetric int8 per-channel quantization along `axis`: (int8 array, scales)."""
    other = tuple(i for i in range(w.ndim) if i != axis)
    scale = np.max(np.abs(w), axis=other) / 127.0
    scale = np.where(scale == 0, 1.0, scale).astype(F32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    return q, scale


# ======================================================================================
# DEQUANTIZE fp16
# ======================================================================================
@pytest.mark.parametrize("bias_fp16", [False, True])
@pytest.mark.parametrize("padding,stride", [("SAME", 1), ("VALID", 2)])
def test_fp16_weights_into_conv(padding, stride, bias_fp16):
    b = ModelBuilder()
    x = b.input((1, 9, 8, 5))
    w = dequantized(b, b.const(rand((6, 3, 3, 5), 1, 0.3).astype(np.float16)), (6, 3, 3, 5))
    if bias_fp16:
        bias = dequantized(b, b.const(rand((6,), 2).astype(np.float16)), (6,))
    else:
        bias = b.const(rand((6,), 2))
    oh, ow = window_out(9, 3, stride, 1, padding), window_out(8, 3, stride, 1, padding)
    y = b.tensor((1, oh, ow, 6))
    b.op("CONV_2D", [x, w, bias], [y], padding=padding, stride_w=stride, stride_h=stride,
         fused_activation_function="RELU6")
    b.output(y)
    check_folded(b.build(), 2 if bias_fp16 else 1, scale=2)


def test_fp16_weights_into_depthwise():
    b = ModelBuilder()
    x = b.input((1, 7, 7, 4))
    w = dequantized(b, b.const(rand((1, 3, 3, 8), 1, 0.3).astype(np.float16)), (1, 3, 3, 8))
    bias = dequantized(b, b.const(rand((8,), 2).astype(np.float16)), (8,))
    y = b.tensor((1, 7, 7, 8))
    b.op("DEPTHWISE_CONV_2D", [x, w, bias], [y], padding="SAME", stride_w=1, stride_h=1,
         depth_multiplier=2)
    b.output(y)
    check_folded(b.build(), 2)


@pytest.mark.parametrize("bias", ["none", "fp32", "fp16"])
def test_fp16_weights_into_fully_connected(bias):
    b = ModelBuilder()
    x = b.input((3, 20))
    w = dequantized(b, b.const(rand((7, 20), 1, 0.3).astype(np.float16)), (7, 20))
    bias_t = {"none": lambda: -1, "fp32": lambda: b.const(rand((7,), 2)),
              "fp16": lambda: dequantized(b, b.const(rand((7,), 2).astype(np.float16)), (7,))
              }[bias]()
    y = b.tensor((3, 7))
    b.op("FULLY_CONNECTED", [x, w, bias_t], [y])
    b.output(y)
    check_folded(b.build(), 2 if bias == "fp16" else 1)


def test_fp16_special_values():
    """Subnormal, zero, negative zero, large and tiny halfs dequantize exactly."""
    vals = np.array([0.0, -0.0, 6e-8, -6e-8, 1e-5, 65504.0, -65504.0, 1.0, -2.5, 0.1, 3.0e-3,
                     -7.0], np.float16)
    b = ModelBuilder()
    x = b.input((2, 12))
    c = dequantized(b, b.const(vals), (12,))
    y = b.tensor((2, 12))
    b.op("MUL", [x, c], [y])
    b.output(y)
    check_folded(b.build(), 1, tol=0.0)


@pytest.mark.parametrize("declared", [(1, 2, 3, 8), (1, 3, 3, 4), (8,), (1, 1, 1, 1)])
def test_dequantize_output_takes_the_input_shape(declared):
    """TFLite resizes DEQUANTIZE's output to its input's shape at prepare: a model declaring a
    smaller or different output shape must fold to the input's shape (it read past a 2x3
    filter as if it were 3x3: a heap overflow, or 5994 wrong elements)."""
    b = ModelBuilder()
    x = b.input((1, 7, 7, 4))
    w = dequantized(b, b.const(rand((1, 3, 3, 8), 1, 0.3).astype(np.float16)), declared)
    y = b.tensor((1, 7, 7, 8))
    b.op("DEPTHWISE_CONV_2D", [x, w, b.const(rand((8,), 2))], [y], padding="SAME", stride_w=1, stride_h=1,
         depth_multiplier=2)
    b.output(y)
    check_folded(b.build(), 1)


def test_dequantized_partition_output_has_the_input_shape():
    """A folded value that is itself a model output: TFLite sees the shape it really has."""
    b = ModelBuilder()
    x = b.input((1, 4))
    w = dequantized(b, b.const(rand((3, 4), 1).astype(np.float16)), (2, 4))
    y = b.tensor((1, 3))
    b.op("FULLY_CONNECTED", [x, w, b.const(rand((3,), 2))], [y])
    b.output(y)
    b.output(w)
    model = b.build()
    stock = make_interpreter(model)
    x = [rand((1, 4), 3)]
    ref = invoke(stock, x)
    d = load_flex(cache_path="")
    got = invoke(make_interpreter(model, delegate=d), x)
    assert [a.shape for a in got] == [a.shape for a in ref] == [(1, 3), (3, 4)]
    assert max_error(ref, got) <= 1e-5
    assert d.stats()["nodes_folded"] == 1


# ======================================================================================
# DEQUANTIZE int8
# ======================================================================================
def test_int8_per_channel_into_conv():
    wf = rand((8, 3, 3, 4), 1, 0.3)
    q, scale = quantize_per_channel(wf, 0)
    b = ModelBuilder()
    x = b.input((1, 6, 6, 4))
    w = dequantized(b, b.const(q, scale=scale, zero_point=np.zeros(8, np.int64),
                               quantized_dimension=0), wf.shape)
    y = b.tensor((1, 6, 6, 8))
    b.op("CONV_2D", [x, w, b.const(rand((8,), 2))], [y], padding="SAME", stride_w=1,
         stride_h=1)
    b.output(y)
    check_folded(b.build(), 1)


def test_int8_per_channel_into_depthwise():
    """Depthwise weights are quantized along their last axis."""
    wf = rand((1, 3, 3, 6), 1, 0.3)
    q, scale = quantize_per_channel(wf, 3)
    b = ModelBuilder()
    x = b.input((1, 5, 5, 3))
    w = dequantized(b, b.const(q, scale=scale, zero_point=np.zeros(6, np.int64),
                               quantized_dimension=3), wf.shape)
    y = b.tensor((1, 5, 5, 6))
    b.op("DEPTHWISE_CONV_2D", [x, w, b.const(rand((6,), 2))], [y], padding="SAME",
         stride_w=1, stride_h=1, depth_multiplier=2)
    b.output(y)
    check_folded(b.build(), 1)


def test_int8_per_channel_into_fully_connected():
    wf = rand((9, 16), 1, 0.3)
    q, scale = quantize_per_channel(wf, 0)
    b = ModelBuilder()
    x = b.input((2, 16))
    w = dequantized(b, b.const(q, scale=scale, zero_point=np.zeros(9, np.int64),
                               quantized_dimension=0), wf.shape)
    y = b.tensor((2, 9))
    b.op("FULLY_CONNECTED", [x, w, b.const(rand((9,), 2))], [y],
         fused_activation_function="RELU")
    b.output(y)
    check_folded(b.build(), 1)


@pytest.mark.parametrize("dtype,zero_point", [(np.int8, -3), (np.int8, 0), (np.uint8, 128)])
def test_per_tensor_into_fully_connected(dtype, zero_point):
    info = np.iinfo(dtype)
    q = np.random.default_rng(1).integers(info.min, info.max + 1, (5, 12)).astype(dtype)
    b = ModelBuilder()
    x = b.input((3, 12))
    w = dequantized(b, b.const(q, scale=0.01, zero_point=zero_point), (5, 12))
    y = b.tensor((3, 5))
    b.op("FULLY_CONNECTED", [x, w, -1], [y])
    b.output(y)
    check_folded(b.build(), 1)


# ======================================================================================
# DENSIFY
# ======================================================================================
def sparse_weights(shape, density, seed, block=1):
    """Random weights where whole blocks of `block` along the last axis are zero."""
    rng = np.random.default_rng(seed)
    w = rand(shape, seed, 0.3)
    keep = rng.random((*shape[:-1], shape[-1] // block)) < density
    return (w * np.repeat(keep, block, axis=-1)).astype(F32)


@pytest.mark.parametrize("block", [None, (4,)], ids=["plain", "block4"])
def test_densify_into_fully_connected(block):
    wd = sparse_weights((10, 16), 0.3, 1, block=4 if block else 1)
    b = ModelBuilder()
    x = b.input((3, 16))
    w = b.tensor((10, 16))
    b.op("DENSIFY", [b.sparse_const(wd, block=block)], [w])
    y = b.tensor((3, 10))
    b.op("FULLY_CONNECTED", [x, w, b.const(rand((10,), 2))], [y])
    b.output(y)
    check_folded(b.build(), 1)


def test_densify_empty_rows_and_full_rows():
    """Rows that are all zero, and rows with no zero at all."""
    wd = rand((6, 8), 1)
    wd[1] = 0
    wd[4] = 0
    wd[2, ::2] = 0
    b = ModelBuilder()
    x = b.input((2, 8))
    w = b.tensor((6, 8))
    b.op("DENSIFY", [b.sparse_const(wd)], [w])
    y = b.tensor((2, 6))
    b.op("FULLY_CONNECTED", [x, w, -1], [y])
    b.output(y)
    check_folded(b.build(), 1)


def test_densify_into_conv():
    wd = sparse_weights((8, 3, 3, 4), 0.4, 1)
    b = ModelBuilder()
    x = b.input((1, 6, 6, 4))
    w = b.tensor(wd.shape)
    b.op("DENSIFY", [b.sparse_const(wd)], [w])
    y = b.tensor((1, 6, 6, 8))
    b.op("CONV_2D", [x, w, b.const(rand((8,), 2))], [y], padding="SAME", stride_w=1,
         stride_h=1)
    b.output(y)
    check_folded(b.build(), 1)


def test_densify_then_dequantize_fp16():
    """Sparse fp16 weights: DENSIFY (fp16) -> DEQUANTIZE -> FULLY_CONNECTED."""
    wd = sparse_weights((6, 12), 0.4, 1, block=4).astype(np.float16)
    b = ModelBuilder()
    x = b.input((2, 12))
    w16 = b.tensor((6, 12), dtype=np.float16)
    b.op("DENSIFY", [b.sparse_const(wd, block=(4,))], [w16])
    w = dequantized(b, w16, (6, 12))
    y = b.tensor((2, 6))
    b.op("FULLY_CONNECTED", [x, w, -1], [y])
    b.output(y)
    check_folded(b.build(), 2)


# ======================================================================================
# Keras-3 shape chain: SHAPE -> STRIDED_SLICE (shrink) / GATHER -> PACK -> RESHAPE
# ======================================================================================
def scalar_dim(b, shape_t, axis, how):
    """The int32 scalar shape[axis] taken from a SHAPE output, as Keras 3 exports it."""
    d = b.tensor((), dtype=I32)
    if how == "strided_slice":
        b.op("STRIDED_SLICE", [shape_t, b.const(np.array([axis], I32)),
                               b.const(np.array([axis + 1], I32)), b.const(np.array([1], I32))],
             [d], shrink_axis_mask=1)
    else:
        b.op("GATHER", [shape_t, b.const(np.array(axis, I32))], [d], axis=0)
    return d


def keras_flatten(x_shape, how="strided_slice", chain_outputs=False, packed_output=False):
    """x -> RESHAPE(x, PACK([shape(x)[0], -1])) -> FULLY_CONNECTED(4).

    chain_outputs: the SHAPE output and the batch scalar are also graph outputs;
    packed_output: the PACK result (the RESHAPE's shape) is also a graph output."""
    b = ModelBuilder()
    x = b.input(x_shape, name="x")
    s = b.tensor((len(x_shape),), dtype=I32)
    b.op("SHAPE", [x], [s])
    n = scalar_dim(b, s, 0, how)
    packed = b.tensor((2,), dtype=I32)
    b.op("PACK", [n, b.const(np.array(-1, I32))], [packed], axis=0)
    flat = int(np.prod(x_shape[1:]))
    r = b.tensor((x_shape[0], flat))
    b.op("RESHAPE", [x, packed], [r])
    y = b.tensor((x_shape[0], 4))
    b.op("FULLY_CONNECTED", [r, b.const(rand((4, flat), 1, 0.2)), b.const(rand((4,), 2))], [y])
    b.output(y)
    if chain_outputs:
        b.output(s, n)
    if packed_output:
        b.output(packed)
    return b.build()


@pytest.mark.parametrize("how", ["strided_slice", "gather"])
@pytest.mark.parametrize("x_shape", [(2, 4, 4, 8), (1, 3, 5), (3, 7)], ids=str)
def test_keras3_flatten(x_shape, how):
    check_folded(keras_flatten(x_shape, how), 3)


@pytest.mark.parametrize("how", ["strided_slice", "gather"])
def test_keras3_chain_result_is_also_an_output(how):
    """The PACK result feeds RESHAPE and is a graph output: its value must be [2, -1]."""
    model = keras_flatten((2, 4, 4, 8), how, packed_output=True)
    check_folded(model, 3)
    delegate = load_flex()
    it = make_interpreter(model, delegate=delegate)
    x = rand((2, 4, 4, 8), 5)
    outs = invoke(it, [x])
    assert outs[1].tolist() == [2, -1]


def test_keras3_intermediate_values_are_outputs():
    """SHAPE's output and the sliced batch scalar are graph outputs too."""
    model = keras_flatten((2, 3, 5, 4), chain_outputs=True)
    check_folded(model, 3)
    it = make_interpreter(model, delegate=load_flex())
    outs = invoke(it, [rand((2, 3, 5, 4), 5)])
    assert outs[1].tolist() == [2, 3, 5, 4]
    assert int(outs[2]) == 2


def test_keras3_reshape_to_several_dims():
    """RESHAPE to (batch, h, w * c) with two shape elements taken from the input."""
    b = ModelBuilder()
    x = b.input((2, 3, 4, 5))
    s = b.tensor((4,), dtype=I32)
    b.op("SHAPE", [x], [s])
    n = scalar_dim(b, s, 0, "strided_slice")
    h = scalar_dim(b, s, 1, "gather")
    packed = b.tensor((3,), dtype=I32)
    b.op("PACK", [n, h, b.const(np.array(20, I32))], [packed], axis=0)
    r = b.tensor((2, 3, 20))
    b.op("RESHAPE", [x, packed], [r])
    y = b.tensor((2, 3, 20))
    b.op("RELU", [r], [y])
    b.output(y)
    check_folded(b.build(), 4)


def test_keras3_chain_after_resize():
    """Resizing the input's batch after load: the chain's value must follow the new shape."""
    model = keras_flatten((2, 4, 4, 3), packed_output=True)
    outs = []
    delegate = load_flex()
    for d in (None, delegate):
        it = make_interpreter(model, delegate=d)
        it.resize_tensor_input(it.get_input_details()[0]["index"], (3, 4, 4, 3))
        it.allocate_tensors()
        outs.append(invoke(it, [rand((3, 4, 4, 3), 7)]))
    ref, got = outs
    assert got[1].tolist() == ref[1].tolist() == [3, -1]
    assert got[0].shape == ref[0].shape == (3, 4)
    assert max_error(ref, got) <= 1e-4
    stats = delegate.stats()
    assert stats["fallback"] == [] and stats["nodes_delegated"] == stats["nodes_total"], stats


# ======================================================================================
# GATHER / other ops on constants
# ======================================================================================
@pytest.mark.parametrize("axis,indices", [(0, [3, 1, 7]), (1, [0, 3, 3]), (0, [[1, 2], [9, 0]])],
                         ids=str)
def test_gather_on_constant(axis, indices):
    table = rand((10, 4), 3)
    idx = np.array(indices, I32)
    gathered = np.take(table, idx, axis=axis)
    b = ModelBuilder()
    x = b.input(gathered.shape)
    g = b.tensor(gathered.shape)
    b.op("GATHER", [b.const(table), b.const(idx)], [g], axis=axis)
    y = b.tensor(gathered.shape)
    b.op("ADD", [x, g], [y])
    b.output(y)
    check_folded(b.build(), 1)


def test_constant_chain_into_fully_connected():
    """fp16 -> DEQUANTIZE -> TRANSPOSE -> RESHAPE: a whole constant chain feeds FC weights."""
    wt = rand((4, 3, 6), 1, 0.3)                       # transposed to (6, 4, 3) -> (6, 12)
    b = ModelBuilder()
    x = b.input((2, 12))
    w = dequantized(b, b.const(wt.astype(np.float16)), wt.shape)
    t = b.tensor((6, 4, 3))
    b.op("TRANSPOSE", [w, b.const(np.array([2, 0, 1], I32))], [t])
    r = b.tensor((6, 12))
    b.op("RESHAPE", [t, b.const(np.array([6, 12], I32))], [r])
    y = b.tensor((2, 6))
    b.op("FULLY_CONNECTED", [x, r, -1], [y])
    b.output(y)
    check_folded(b.build(), 3)
