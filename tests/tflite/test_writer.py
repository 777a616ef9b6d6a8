"""The writer's output must load and compute correctly in the stock TFLite
interpreter (tflite-runtime or ai-edge-litert), and read back through reader."""

import numpy as np
import pytest

from flexdelegate.tflite import schema as S
from flexdelegate.tflite.demo_model import build_demo_model
from flexdelegate.tflite.reader import read_model
from flexdelegate.tflite.writer import ModelBuilder

try:
    from tflite_runtime.interpreter import Interpreter, OpResolverType
except ImportError:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

F32 = np.float32


def rand(*shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(F32)


def interpreter(data, resize=None):
    it = Interpreter(model_content=data, experimental_op_resolver_type=(
        OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES))
    for i, shape in (resize or {}).items():
        it.resize_tensor_input(it.get_input_details()[i]["index"], shape)
    it.allocate_tensors()
    return it


def run(data, *inputs, resize=None):
    it = interpreter(data, resize)
    for detail, value in zip(it.get_input_details(), inputs):
        it.set_tensor(detail["index"], value)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def conv2d(x, w, b, stride=1, padding="SAME"):
    """NHWC input, OHWI weights."""
    _, h, wd, _ = x.shape
    _, kh, kw, _ = w.shape
    if padding == "SAME":
        oh, ow = -(-h // stride), -(-wd // stride)
        ph, pw = max((oh - 1) * stride + kh - h, 0), max((ow - 1) * stride + kw - wd, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    else:
        oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[0]), np.float64)
    for i in range(kh):
        for j in range(kw):
            patch = x[:, i:i + stride * oh:stride, j:j + stride * ow:stride, :]
            out += patch @ w[:, i, j, :].T
    return (out + b).astype(F32)


def single_op(op, in_shapes, out_shape, consts=(), out_dtype=F32, out_quant=None,
              **options):
    """A model with float inputs of in_shapes, then constant inputs, one op."""
    b = ModelBuilder()
    ins = [b.input(s) for s in in_shapes] + [b.const(c) for c in consts]
    y = b.tensor(out_shape, dtype=out_dtype, **(out_quant or {}))
    b.op(op, ins, [y], **options)
    b.output(y)
    return b.build()


# -- focused correctness tests ----------------------------------------------

def test_conv2d_matches_numpy():
    x, w, bias = rand(1, 8, 8, 3), rand(4, 3, 3, 3, seed=1), rand(4, seed=2)
    for stride, padding, act in [(1, "SAME", "NONE"), (2, "VALID", "RELU")]:
        ref = conv2d(x, w, bias, stride, padding)
        if act == "RELU":
            ref = np.maximum(ref, 0)
        data = single_op("CONV_2D", [x.shape], ref.shape, [w, bias], padding=padding,
                         stride_w=stride, stride_h=stride,
                         fused_activation_function=act)
        np.testing.assert_allclose(run(data, x)[0], ref, rtol=1e-4, atol=1e-5)


def test_fully_connected_keep_num_dims_and_absent_bias():
    x, w, bias = rand(2, 3, 5), rand(4, 5, seed=1), rand(4, seed=2)
    data = single_op("FULLY_CONNECTED", [x.shape], (2, 3, 4), [w, bias],
                     keep_num_dims=True)
    np.testing.assert_allclose(run(data, x)[0], x @ w.T + bias, rtol=1e-5, atol=1e-5)

    b = ModelBuilder()
    xi, y = b.input(x.shape), b.tensor((6, 4))
    b.op("FULLY_CONNECTED", [xi, b.const(w), -1], [y], weights_format="DEFAULT")
    b.output(y)
    np.testing.assert_allclose(run(b.build(), x)[0], x.reshape(6, 5) @ w.T,
                               rtol=1e-5, atol=1e-5)


def test_add_broadcast_fused_relu():
    x, c = rand(1, 4, 4, 3), rand(3, seed=1)
    data = single_op("ADD", [x.shape], x.shape, [c], fused_activation_function="RELU")
    np.testing.assert_allclose(run(data, x)[0], np.maximum(x + c, 0), rtol=1e-6)


def test_dequantize_fp16_const_feeding_conv():
    x, w, bias = rand(1, 6, 6, 3), rand(4, 3, 3, 3, seed=1).astype(np.float16), rand(4)
    b = ModelBuilder()
    xi = b.input(x.shape)
    w32 = b.tensor(w.shape)
    b.op("DEQUANTIZE", [b.const(w)], [w32])
    y = b.tensor((1, 6, 6, 4))
    b.op("CONV_2D", [xi, w32, b.const(bias)], [y], padding="SAME", stride_w=1,
         stride_h=1)
    b.output(y)
    ref = conv2d(x, w.astype(F32), bias)
    np.testing.assert_allclose(run(b.build(), x)[0], ref, rtol=1e-4, atol=1e-5)


def test_dequantize_int8_per_channel():
    q = np.random.default_rng(0).integers(-127, 128, (4, 3)).astype(np.int8)
    scale = [0.1, 0.2, 0.3, 0.4]
    x = rand(2, 3)
    b = ModelBuilder()
    xi = b.input(x.shape)
    w = b.tensor((4, 3))
    qi = b.const(q, scale=scale, zero_point=[0] * 4, quantized_dimension=0)
    b.op("DEQUANTIZE", [qi], [w])
    y = b.tensor((2, 4))
    b.op("FULLY_CONNECTED", [xi, w, -1], [y])
    b.output(y)
    w_ref = q.astype(F32) * np.array(scale, F32)[:, None]
    np.testing.assert_allclose(run(b.build(), x)[0], x @ w_ref.T, rtol=1e-5, atol=1e-5)
    t = read_model(b.build()).tensors[qi]
    np.testing.assert_array_equal(t.data, q)
    assert t.quantization == dict(scale=pytest.approx(scale), zero_point=[0] * 4,
                                  quantized_dimension=0)


def test_quantized_int8_depthwise_and_uint8_conv_run_and_read_back():
    """Full-integer single-op models (what tests/quant builds by the hundred): int8 activations
    with per-channel int8 weights on the depthwise axis (quantized_dimension 3) and int32 bias,
    and the uint8 per-tensor form; they run on the stock interpreter and read back intact."""
    rng = np.random.default_rng(0)
    x8 = rng.integers(-128, 128, (1, 4, 4, 3)).astype(np.int8)
    w8 = rng.integers(-127, 128, (1, 3, 3, 3)).astype(np.int8)
    b = ModelBuilder()
    xi = b.input(x8.shape, dtype=np.int8, scale=[0.5], zero_point=[-3])
    wi = b.const(w8, scale=[0.01, 0.02, 0.03], zero_point=[0] * 3, quantized_dimension=3)
    bi = b.const(np.array([10, -20, 30], np.int32), scale=[0.005, 0.01, 0.015], zero_point=[0] * 3)
    y = b.tensor((1, 4, 4, 3), dtype=np.int8, scale=[0.25], zero_point=[7])
    b.op("DEPTHWISE_CONV_2D", [xi, wi, bi], [y], padding="SAME", stride_w=1, stride_h=1,
         depth_multiplier=1)
    b.output(y)
    out = run(b.build(), x8)[0]
    assert out.dtype == np.int8 and out.shape == (1, 4, 4, 3)
    m = read_model(b.build())
    assert m.tensors[wi].quantization == dict(scale=pytest.approx([0.01, 0.02, 0.03]),
                                              zero_point=[0] * 3, quantized_dimension=3)
    np.testing.assert_array_equal(m.tensors[wi].data, w8)
    np.testing.assert_array_equal(m.tensors[bi].data, [10, -20, 30])
    assert m.tensors[y].quantization["zero_point"] == [7]

    xu = rng.integers(0, 256, (1, 4, 4, 2)).astype(np.uint8)
    wu = rng.integers(0, 256, (3, 1, 1, 2)).astype(np.uint8)
    b = ModelBuilder()
    xi = b.input(xu.shape, dtype=np.uint8, scale=[0.5], zero_point=[128])
    wi = b.const(wu, scale=[0.01], zero_point=[120])
    bi = b.const(np.array([5, 6, 7], np.int32), scale=[0.005], zero_point=[0])
    y = b.tensor((1, 4, 4, 3), dtype=np.uint8, scale=[0.1], zero_point=[100])
    b.op("CONV_2D", [xi, wi, bi], [y], padding="VALID", stride_w=1, stride_h=1)
    b.output(y)
    acc = (xu.astype(np.int64) - 128) @ (wu[:, 0, 0, :].astype(np.int64) - 120).T + [5, 6, 7]
    ref = np.clip(np.round(acc * 0.005 / 0.1) + 100, 0, 255)  # exact rounding: tests/quant
    got = run(b.build(), xu)[0].astype(np.int64)
    assert np.abs(got - ref).max() <= 1
    np.testing.assert_array_equal(read_model(b.build()).tensors[wi].data, wu)


@pytest.mark.parametrize("block", [None, (4,)])
def test_densify_sparse_const_matches_dense(block):
    rng = np.random.default_rng(0)
    w = rand(8, 16, seed=1)
    if block is None:
        w[rng.random(w.shape) < 0.7] = 0
    else:
        w.reshape(8, 4, 4)[rng.random((8, 4)) < 0.5] = 0
    x, bias = rand(3, 16, seed=2), rand(8, seed=3)

    def model(sparse):
        b = ModelBuilder()
        xi = b.input(x.shape)
        if sparse:
            wt = b.tensor(w.shape)
            b.op("DENSIFY", [b.sparse_const(w, block=block)], [wt])
        else:
            wt = b.const(w)
        y = b.tensor((3, 8))
        b.op("FULLY_CONNECTED", [xi, wt, b.const(bias)], [y])
        b.output(y)
        return b.build()

    dense, sparse = run(model(False), x)[0], run(model(True), x)[0]
    np.testing.assert_allclose(sparse, dense, rtol=1e-6)
    np.testing.assert_allclose(dense, x @ w.T + bias, rtol=1e-5, atol=1e-5)
    (t,) = [t for t in read_model(model(True)).tensors if t.sparse]
    assert t.shape == (8, 16) and t.data.size == np.count_nonzero(
        w if block is None else w.reshape(8, 4, 4).any(axis=2).repeat(4, axis=1))


def test_shape_stridedslice_pack_reshape_dynamic_batch():
    """Keras 3 flatten: reshape(x, [shape(x)[0], -1]) with a dynamic batch."""
    b = ModelBuilder()
    x = b.input((1, 4, 6), name="x", shape_signature=(-1, 4, 6))
    shape = b.tensor((3,), dtype=np.int32)
    b.op("SHAPE", [x], [shape], out_type="INT32")
    one = np.array([1], np.int32)
    batch = b.tensor((), dtype=np.int32)
    b.op("STRIDED_SLICE", [shape, b.const(np.array([0], np.int32)), b.const(one),
                           b.const(one)], [batch], shrink_axis_mask=1)
    new_shape = b.tensor((2,), dtype=np.int32)
    b.op("PACK", [batch, b.const(np.array(-1, np.int32))], [new_shape],
         values_count=2, axis=0)
    y = b.tensor((1, 24), shape_signature=(-1, 24))
    b.op("RESHAPE", [x, new_shape], [y])
    b.output(y)
    data = b.build()

    xv = rand(3, 4, 6)
    out = run(data, xv, resize={0: [3, 4, 6]})[0]
    np.testing.assert_array_equal(out, xv.reshape(3, 24))
    m = read_model(data)
    assert m.tensors[x].shape_signature == (-1, 4, 6)
    assert m.tensors[new_shape].shape_signature is None
    assert [o.op for o in m.operators] == ["SHAPE", "STRIDED_SLICE", "PACK", "RESHAPE"]


def test_builtin_code_above_127():
    x = rand(2, 5)
    data = single_op("GELU", [x.shape], x.shape, approximate=False)
    out = run(data, x)[0]
    from math import erf
    ref = x * 0.5 * (1 + np.vectorize(erf)(x / np.sqrt(2)))
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    assert read_model(data).operator_codes == ["GELU"]


def test_signature():
    b = ModelBuilder()
    x = b.input((2, 3), name="x")
    y = b.tensor((2, 3), name="y")
    b.op("RELU", [x], [y])
    b.output(y)
    b.signature("serving_default")
    runner = interpreter(b.build()).get_signature_runner("serving_default")
    xv = rand(2, 3)
    np.testing.assert_array_equal(runner(x=xv)["y"], np.maximum(xv, 0))


def test_demo_model_outputs_probabilities():
    data = build_demo_model(seed=0)
    image = np.random.default_rng(1).random((1, 64, 64, 3), F32)
    probs = run(data, image)[0]
    assert probs.shape == (1, 10)
    assert np.all(np.isfinite(probs)) and np.all(probs >= 0)
    assert probs.sum() == pytest.approx(1.0, abs=1e-5)
    assert probs.max() < 0.999          # activations stayed O(1): not saturated
    assert build_demo_model(seed=0) == data
    m = read_model(data)
    assert m.tensors[m.inputs[0]].name == "image"
    assert {"CONV_2D", "DEPTHWISE_CONV_2D", "ADD", "MEAN", "FULLY_CONNECTED",
            "SOFTMAX"} == set(m.operator_codes)


# -- file layout and the reader ---------------------------------------------

def test_file_layout_and_reader_round_trip():
    b = ModelBuilder()
    x = b.input((1, 8, 8, 3), name="x")
    w = np.arange(4 * 27, dtype=F32).reshape(4, 3, 3, 3) + 0.5
    wi = b.const(w, name="w")
    y1, y2 = b.tensor((1, 8, 8, 4), name="y1"), b.tensor((1, 8, 8, 4), name="y2")
    b.op("CONV_2D", [x, wi, -1], [y1], padding="SAME", stride_w=1, stride_h=1,
         fused_activation_function="RELU6", dilation_w_factor=1, dilation_h_factor=1)
    b.op("CONV_2D", [x, wi, -1], [y2], padding="VALID", stride_w=2, stride_h=3)
    b.output(y1, y2)
    data = b.build()

    assert data[4:8] == b"TFL3"
    m = read_model(data)
    assert m.version == 3 and m.description == "flexdelegate"
    assert m.operator_codes == ["CONV_2D"]                 # deduplicated
    assert m.buffers[0] == b"" and m.inputs == [x] and m.outputs == [y1, y2]
    assert [t.name for t in m.tensors] == ["x", "w", "y1", "y2"]
    assert m.tensors[wi].buffer == 1 and m.tensors[x].buffer == 0
    np.testing.assert_array_equal(m.tensors[wi].data, w)
    assert m.tensors[x].data is None and m.tensors[x].dtype == np.float32
    assert data.find(w.tobytes()) % 16 == 0               # mmap-friendly buffers
    op1, op2 = m.operators
    assert (op1.op, op1.inputs, op1.outputs) == ("CONV_2D", [x, wi, -1], [y1])
    assert op1.options["fused_activation_function"] == "RELU6"
    assert op2.options == dict(padding="VALID", stride_w=2, stride_h=3,
                               fused_activation_function="NONE",
                               dilation_w_factor=1, dilation_h_factor=1,
                               quantized_bias_type="FLOAT32")


OPTION_CASES = [
    ("DEPTHWISE_CONV_2D", dict(padding="VALID", stride_w=2, stride_h=2,
                               depth_multiplier=2, fused_activation_function="TANH",
                               dilation_w_factor=2, dilation_h_factor=3)),
    ("FULLY_CONNECTED", dict(fused_activation_function="RELU_N1_TO_1",
                             weights_format="SHUFFLED4x16INT8", keep_num_dims=True)),
    ("SUB", dict(fused_activation_function="RELU", pot_scale_int16=False)),
    ("MAX_POOL_2D", dict(padding="SAME", stride_w=1, stride_h=2, filter_width=3,
                         filter_height=2, fused_activation_function="RELU6")),
    ("STRIDED_SLICE", dict(begin_mask=1, end_mask=2, ellipsis_mask=4,
                           new_axis_mask=8, shrink_axis_mask=16, offset=True)),
    ("RESHAPE", dict(new_shape=[1, -1, 3])),
    ("SQUEEZE", dict(squeeze_dims=[0, 2])),
    ("RESIZE_BILINEAR", dict(align_corners=True, half_pixel_centers=False)),
    ("LEAKY_RELU", dict(alpha=0.25)),
    ("SOFTMAX", dict(beta=0.5)),
    ("GATHER", dict(axis=1, batch_dims=1)),
    ("PACK", dict(values_count=3, axis=-1)),
    ("SHAPE", dict(out_type="INT64")),
    ("CONCATENATION", dict(axis=-1, fused_activation_function="RELU")),
    ("TRANSPOSE_CONV", dict(padding="VALID", stride_w=2, stride_h=2,
                            fused_activation_function="RELU")),
    ("MEAN", dict(keep_dims=True)),
    ("CAST", dict(in_data_type="FLOAT32", out_data_type="INT8")),
    ("BUCKETIZE", dict(boundaries=[0.5, 1.5])),
]


@pytest.mark.parametrize("op,options", OPTION_CASES, ids=[c[0] for c in OPTION_CASES])
def test_options_round_trip(op, options):
    b = ModelBuilder()
    x, y = b.input((2,)), b.tensor((2,))
    b.op(op, [x], [y], **options)
    got = read_model(b.build()).operators[0].options
    assert {k: got[k] for k in options} == options


def test_builder_rejects_bad_input():
    b = ModelBuilder()
    x, y = b.input((2,)), b.tensor((2,))
    with pytest.raises(ValueError, match="no option"):
        b.op("CONV_2D", [x], [y], stride=1)
    with pytest.raises(ValueError, match="takes no options"):
        b.op("RELU", [x], [y], alpha=1)
    with pytest.raises(ValueError, match="not a Padding"):
        b.op("CONV_2D", [x], [y], padding="FULL")
    with pytest.raises(ValueError, match="unknown builtin"):
        b.op("NOPE", [x], [y])
    with pytest.raises(ValueError, match="no tensor"):
        b.op("RELU", [x], [7])


def test_schema_enums():
    assert len(S.BUILTIN_OPS) == 208 and S.BUILTIN_OPS["COMPLEX"] == 207
    assert S.BUILTIN_OPS["DENSIFY"] == 124 and S.BUILTIN_OPS["HARD_SWISH"] == 117
    assert S.OPTIONS_TYPE["Conv2DOptions"] == 1
    assert S.OPTIONS_TYPE["RightShiftOptions"] == 126
    assert S.TENSOR_TYPES["INT8"] == 9 and S.TENSOR_TYPES["BFLOAT16"] == 18
    assert all(t in S.OPTION_TABLES for t in S.OP_OPTIONS.values())


def test_reader_rejects_garbage():
    data = single_op("RELU", [(2, 3)], (2, 3), [])
    bogus = bytearray(np.random.default_rng(0).integers(0, 256, 256, np.uint8))
    bogus[4:8] = b"TFL3"
    for bad in [b"", b"TFL3", b"\x00" * 100, b"garbage bytes, not a model!",
                bytes(bogus), b"\xff\xff\xff\x7fTFL3" + b"\x00" * 16]:
        with pytest.raises(ValueError, match="not a TFLite model"):
            read_model(bad)
    full = single_op("CONV_2D", [(1, 4, 4, 3)], (1, 4, 4, 2), [rand(2, 3, 3, 3)],
                     padding="SAME")
    read_model(full)
    for cut in [8, 16, 64, len(full) // 2, len(full) - 16, len(full) - 1]:
        with pytest.raises(ValueError, match="not a TFLite model"):
            read_model(full[:cut])
    read_model(data)


# -- every supported op builds and runs in the stock interpreter -------------

def unary(op, fn, shape=(1, 4, 4, 3), out_shape=None, **options):
    def case():
        x = rand(*shape, scale=3)
        return single_op(op, [shape], out_shape or shape, **options), [x], fn(x)
    return case


def binary(op, fn, **options):
    def case():
        x, c = rand(1, 4, 4, 3), np.abs(rand(3, seed=1)) + 1
        return single_op(op, [x.shape], x.shape, [c], **options), [x], fn(x, c)
    return case


def pool(op, fn):
    def case():
        x = rand(1, 4, 4, 3)
        data = single_op(op, [x.shape], (1, 2, 2, 3), padding="VALID", stride_w=2,
                         stride_h=2, filter_width=2, filter_height=2)
        return data, [x], fn(x.reshape(1, 2, 2, 2, 2, 3), axis=(2, 4))
    return case


def case_depthwise():
    x, w, bias = rand(1, 5, 5, 3), rand(1, 3, 3, 6, seed=1), rand(6, seed=2)
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0))).repeat(2, axis=3)
    ref = sum(xp[:, i:i + 5, j:j + 5, :] * w[0, i, j] for i in range(3)
              for j in range(3)) + bias
    data = single_op("DEPTHWISE_CONV_2D", [x.shape], ref.shape, [w, bias],
                     padding="SAME", stride_w=1, stride_h=1, depth_multiplier=2)
    return data, [x], ref


def case_conv():
    x, w, bias = rand(1, 6, 6, 2), rand(3, 3, 3, 2, seed=1), rand(3, seed=2)
    ref = np.clip(conv2d(x, w, bias), 0, 6)
    return single_op("CONV_2D", [x.shape], ref.shape, [w, bias], padding="SAME",
                     stride_w=1, stride_h=1, fused_activation_function="RELU6"), [x], ref


def case_fc():
    x, w = rand(2, 6), rand(4, 6, seed=1)
    return single_op("FULLY_CONNECTED", [x.shape], (2, 4), [w, np.zeros(4, F32)]), \
        [x], x @ w.T


def case_transpose_conv():
    x, w, bias = rand(1, 4, 4, 3), rand(2, 3, 3, 3, seed=1), rand(2, seed=2)
    full = np.zeros((1, 9, 9, 2), F32)
    for i in range(4):
        for j in range(4):
            full[0, 2 * i:2 * i + 3, 2 * j:2 * j + 3] += np.einsum(
                "c,ohwc->hwo", x[0, i, j], w)
    b = ModelBuilder()
    xi = b.input(x.shape)
    y = b.tensor((1, 8, 8, 2))
    b.op("TRANSPOSE_CONV", [b.const(np.array([1, 8, 8, 2], np.int32)), b.const(w), xi,
                            b.const(bias)], [y], padding="SAME", stride_w=2, stride_h=2)
    b.output(y)
    return b.build(), [x], full[:, :8, :8] + bias


def case_with_consts(op, x_shape, out_shape, consts, fn, out_dtype=F32, **options):
    def case():
        x = rand(*x_shape)
        return (single_op(op, [x_shape], out_shape, consts, out_dtype, **options),
                [x], fn and fn(x))
    return case


def case_dequantize():
    x, c = rand(4, 3), rand(4, 3, seed=1).astype(np.float16)
    b = ModelBuilder()
    xi, d, y = b.input(x.shape), b.tensor(c.shape), b.tensor(c.shape)
    b.op("DEQUANTIZE", [b.const(c)], [d])
    b.op("ADD", [xi, d], [y])
    b.output(y)
    return b.build(), [x], x + c.astype(F32)


def case_densify():
    x, w = rand(4, 8), rand(4, 8, seed=1)
    w[np.abs(w) < 0.8] = 0
    b = ModelBuilder()
    xi, d, y = b.input(x.shape), b.tensor(w.shape), b.tensor(w.shape)
    b.op("DENSIFY", [b.sparse_const(w)], [d])
    b.op("ADD", [xi, d], [y])
    b.output(y)
    return b.build(), [x], x + w


def case_pack():
    x1, x2 = rand(2, 3), rand(2, 3, seed=1)
    b = ModelBuilder()
    a, c, y = b.input((2, 3)), b.input((2, 3)), b.tensor((2, 2, 3))
    b.op("PACK", [a, c], [y], values_count=2, axis=1)
    b.output(y)
    return b.build(), [x1, x2], np.stack([x1, x2], axis=1)


def case_concat():
    x1, x2 = rand(1, 2, 2, 3), rand(1, 2, 2, 1, seed=1)
    b = ModelBuilder()
    a, c, y = b.input(x1.shape), b.input(x2.shape), b.tensor((1, 2, 2, 4))
    # Float CONCATENATION rejects fused activations; options_round_trip covers it.
    b.op("CONCATENATION", [a, c], [y], axis=3)
    b.output(y)
    return b.build(), [x1, x2], np.concatenate([x1, x2], 3)


def case_maxmin(op, fn):
    def case():
        x1, x2 = rand(2, 3), rand(2, 3, seed=1)
        b = ModelBuilder()
        a, c, y = b.input((2, 3)), b.input((2, 3)), b.tensor((2, 3))
        b.op(op, [a, c], [y])
        b.output(y)
        return b.build(), [x1, x2], fn(x1, x2)
    return case


def i32(*values):
    return np.array(values, np.int32)


def d2s(x, bs=2):
    n, h, w, c = x.shape
    return x.reshape(n, h, w, bs, bs, c // bs ** 2).transpose(0, 1, 3, 2, 4, 5).reshape(
        n, h * bs, w * bs, c // bs ** 2)


def s2d(x, bs=2):
    n, h, w, c = x.shape
    return x.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5).reshape(
        n, h // bs, w // bs, c * bs * bs)


def bilinear_half_pixel(x, size):
    """Resize NHWC x to size x size, half-pixel centers, edge-clamped."""
    n_in = x.shape[1]
    m = np.zeros((size, n_in), F32)
    for o in range(size):
        src = (o + 0.5) * n_in / size - 0.5
        lo = int(np.floor(src))
        frac = src - lo
        m[o, np.clip(lo, 0, n_in - 1)] += 1 - frac
        m[o, np.clip(lo + 1, 0, n_in - 1)] += frac
    return np.einsum("ph,qw,nhwc->npqc", m, m, x)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


SMOKE = {
    "CONV_2D": case_conv,
    "DEPTHWISE_CONV_2D": case_depthwise,
    "FULLY_CONNECTED": case_fc,
    "ADD": binary("ADD", lambda x, c: np.maximum(x + c, 0), fused_activation_function="RELU"),
    "SUB": binary("SUB", lambda x, c: np.clip(x - c, 0, 6), fused_activation_function="RELU6"),
    "MUL": binary("MUL", lambda x, c: np.clip(x * c, -1, 1),
                  fused_activation_function="RELU_N1_TO_1"),
    "DIV": binary("DIV", lambda x, c: x / c),
    "MAXIMUM": case_maxmin("MAXIMUM", np.maximum),
    "MINIMUM": case_maxmin("MINIMUM", np.minimum),
    "MAX_POOL_2D": pool("MAX_POOL_2D", np.max),
    "AVERAGE_POOL_2D": pool("AVERAGE_POOL_2D", np.mean),
    "MEAN": case_with_consts("MEAN", (1, 4, 4, 3), (1, 3), [i32(1, 2)],
                             lambda x: x.mean((1, 2)), keep_dims=False),
    "SUM": case_with_consts("SUM", (1, 4, 4, 3), (1, 1, 1, 3), [i32(1, 2)],
                            lambda x: x.sum((1, 2), keepdims=True), keep_dims=True),
    "PAD": case_with_consts("PAD", (1, 2, 2, 3), (1, 4, 3, 3),
                            [i32(0, 0, 1, 1, 0, 1, 0, 0).reshape(4, 2)],
                            lambda x: np.pad(x, ((0, 0), (1, 1), (0, 1), (0, 0)))),
    "PADV2": case_with_consts("PADV2", (1, 2, 2, 3), (1, 4, 3, 3),
                              [i32(0, 0, 1, 1, 0, 1, 0, 0).reshape(4, 2),
                               np.array(7, F32)],
                              lambda x: np.pad(x, ((0, 0), (1, 1), (0, 1), (0, 0)),
                                               constant_values=7)),
    "CONCATENATION": case_concat,
    "RESHAPE": case_with_consts("RESHAPE", (1, 4, 4, 3), (1, 48), [i32(1, 48)],
                                lambda x: x.reshape(1, 48), new_shape=[1, 48]),
    "SQUEEZE": unary("SQUEEZE", lambda x: x.reshape(4, 3), shape=(1, 4, 1, 3),
                     out_shape=(4, 3), squeeze_dims=[0, 2]),
    "SOFTMAX": unary("SOFTMAX", lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True),
                     shape=(2, 5)),
    "RELU": unary("RELU", lambda x: np.maximum(x, 0)),
    "RELU6": unary("RELU6", lambda x: np.clip(x, 0, 6)),
    "RELU_N1_TO_1": unary("RELU_N1_TO_1", lambda x: np.clip(x, -1, 1)),
    "LOGISTIC": unary("LOGISTIC", sigmoid),
    "TANH": unary("TANH", np.tanh),
    "HARD_SWISH": unary("HARD_SWISH", lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "PRELU": case_with_consts("PRELU", (1, 4, 4, 3), (1, 4, 4, 3),
                              [np.array([0.1, 0.2, 0.3], F32)],
                              lambda x: np.where(x > 0, x, x * np.array([.1, .2, .3], F32))),
    "LEAKY_RELU": unary("LEAKY_RELU", lambda x: np.where(x > 0, x, x * F32(0.2)),
                        alpha=0.2),
    "RESIZE_BILINEAR": case_with_consts("RESIZE_BILINEAR", (1, 4, 4, 3), (1, 8, 8, 3),
                                        [i32(8, 8)], lambda x: bilinear_half_pixel(x, 8),
                                        align_corners=False,
                                        half_pixel_centers=True),
    "RESIZE_NEAREST_NEIGHBOR": case_with_consts(
        "RESIZE_NEAREST_NEIGHBOR", (1, 4, 4, 3), (1, 8, 8, 3), [i32(8, 8)],
        lambda x: x.repeat(2, axis=1).repeat(2, axis=2), align_corners=False,
        half_pixel_centers=False),
    "DEPTH_TO_SPACE": unary("DEPTH_TO_SPACE", d2s, shape=(1, 2, 2, 8),
                            out_shape=(1, 4, 4, 2), block_size=2),
    "SPACE_TO_DEPTH": case_with_consts("SPACE_TO_DEPTH", (1, 4, 4, 2), (1, 2, 2, 8), [],
                                       s2d, block_size=2),
    "STRIDED_SLICE": case_with_consts("STRIDED_SLICE", (1, 4, 4, 3), (2, 4, 3),
                                      [i32(0, 1, 0, 0), i32(1, 4, 4, 3), i32(1, 2, 1, 1)],
                                      lambda x: x[0, 1:4:2], shrink_axis_mask=1),
    "TRANSPOSE": case_with_consts("TRANSPOSE", (1, 4, 5, 3), (1, 3, 4, 5),
                                  [i32(0, 3, 1, 2)], lambda x: x.transpose(0, 3, 1, 2)),
    "TRANSPOSE_CONV": case_transpose_conv,
    "DEQUANTIZE": case_dequantize,
    "DENSIFY": case_densify,
    "SHAPE": case_with_consts("SHAPE", (2, 3, 4), (3,), [], lambda x: i32(2, 3, 4),
                              out_dtype=np.int32),
    "PACK": case_pack,
    "GATHER": case_with_consts("GATHER", (5, 3), (3, 3), [i32(4, 0, 2)],
                               lambda x: x[[4, 0, 2]], axis=0, batch_dims=0),
    "CAST": case_with_consts("CAST", (2, 3), (2, 3), [],
                             lambda x: x.astype(np.int32), out_dtype=np.int32),
    "SLICE": case_with_consts("SLICE", (1, 4, 4, 3), (1, 2, 3, 3),
                              [i32(0, 1, 1, 0), i32(1, 2, -1, 3)],
                              lambda x: x[:, 1:3, 1:, :]),
    "ARG_MAX": case_with_consts("ARG_MAX", (1, 4, 4, 3), (1, 4, 4), [i32(3)],
                                lambda x: x.argmax(3), out_dtype=np.int64),
    "QUANTIZE": lambda: (single_op("QUANTIZE", [(2, 8)], (2, 8), (), np.int8,
                                   dict(scale=[0.05], zero_point=[3])),
                         [rand(2, 8, scale=2)], None),
}

REQUIRED_OPS = """CONV_2D DEPTHWISE_CONV_2D FULLY_CONNECTED ADD SUB MUL DIV MAXIMUM MINIMUM
MAX_POOL_2D AVERAGE_POOL_2D MEAN PAD PADV2 CONCATENATION RESHAPE SQUEEZE SOFTMAX RELU
RELU6 RELU_N1_TO_1 LOGISTIC TANH HARD_SWISH PRELU LEAKY_RELU RESIZE_BILINEAR
RESIZE_NEAREST_NEIGHBOR DEPTH_TO_SPACE SPACE_TO_DEPTH STRIDED_SLICE TRANSPOSE
TRANSPOSE_CONV DEQUANTIZE DENSIFY SHAPE PACK GATHER CAST SLICE SUM ARG_MAX
QUANTIZE""".split()


def test_smoke_covers_required_ops():
    assert set(REQUIRED_OPS) <= set(SMOKE)


@pytest.mark.parametrize("op", sorted(SMOKE))
def test_op_runs_in_stock_interpreter(op):
    data, inputs, expected = SMOKE[op]()
    assert op in read_model(data).operator_codes
    out = run(data, *inputs)[0]
    m = read_model(data)
    assert out.shape == m.tensors[m.outputs[0]].shape
    if op == "QUANTIZE":
        expected = np.clip(np.round(inputs[0] / F32(0.05)) + 3, -128, 127)
        assert np.abs(out.astype(int) - expected).max() <= 1
    elif expected is not None:
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_flatbuffer_verifier_accepts_every_model():
    """LiteRT's analyzer runs the flatbuffers Verifier (alignment, offsets,
    union types); only ai-edge-litert ships it."""
    analyzer = pytest.importorskip("ai_edge_litert._pywrap_analyzer_wrapper")
    models = [case()[0] for case in SMOKE.values()] + [build_demo_model()]
    for data in models:
        assert "not a valid Flatbuffer" not in analyzer.ModelAnalyzer(data, False, False)
