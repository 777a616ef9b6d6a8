"""Layout and clamp ops on int8 / uint8 data through the delegate, bit for bit against the
stock reference: RESHAPE, PAD/PADV2 (zero point fill), MAX_POOL_2D (fused activations),
CONCATENATION / PACK with equal quantization, STRIDED_SLICE, RESIZE_NEAREST_NEIGHBOR, RELU*."""
import numpy as np
import pytest

from qopcheck import Q, QModel, check_exact

S8, U8 = np.int8, np.uint8


def q(dtype, scale=0.05, zp=None):
    return Q(dtype, scale, (-3 if dtype == S8 else 120) if zp is None else zp)


@pytest.mark.parametrize("dtype", [S8, U8])
def test_reshape(dtype):
    m = QModel()
    x = m.input((1, 4, 4, 6), q(dtype))
    y = m.tensor((1, 16, 6), q(dtype))
    m.op("RESHAPE", [x, m.const(np.array([1, 16, 6], np.int32))], [y], new_shape=[1, 16, 6])
    check_exact(m.build(y))


@pytest.mark.parametrize("dtype,zp", [(S8, -3), (S8, -128), (S8, 127), (U8, 0), (U8, 255), (U8, 128)])
def test_pad_fills_zero_point(dtype, zp):
    m = QModel()
    x = m.input((1, 5, 4, 3), q(dtype, 0.1, zp))
    y = m.tensor((1, 8, 5, 3), q(dtype, 0.1, zp))
    m.op("PAD", [x, m.const(np.array([[0, 0], [1, 2], [0, 1], [0, 0]], np.int32))], [y])
    check_exact(m.build(y))


@pytest.mark.parametrize("dtype", [S8, U8])
def test_padv2_value(dtype):
    m = QModel()
    x = m.input((1, 3, 4, 2), q(dtype))
    y = m.tensor((1, 5, 4, 2), q(dtype))
    v = m.const(np.array([7], dtype), q(dtype))
    m.op("PADV2", [x, m.const(np.array([[0, 0], [1, 1], [0, 0], [0, 0]], np.int32)), v], [y])
    check_exact(m.build(y))


@pytest.mark.parametrize("dtype", [S8, U8])
@pytest.mark.parametrize("act", ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"])
@pytest.mark.parametrize("padding,stride,k", [("SAME", 2, 3), ("VALID", 1, 2), ("SAME", 1, 3)])
def test_max_pool(dtype, act, padding, stride, k):
    m = QModel()
    qt = q(dtype, 0.02)
    x = m.input((2, 9, 7, 5), qt)
    oh = (9 + stride - 1) // stride if padding == "SAME" else (9 - k) // stride + 1
    ow = (7 + stride - 1) // stride if padding == "SAME" else (7 - k) // stride + 1
    y = m.tensor((2, oh, ow, 5), qt)
    m.op("MAX_POOL_2D", [x], [y], padding=padding, stride_w=stride, stride_h=stride,
         filter_width=k, filter_height=k, fused_activation_function=act)
    check_exact(m.build(y))


@pytest.mark.parametrize("dtype", [S8, U8])
@pytest.mark.parametrize("op", ["RELU", "RELU6", "RELU_N1_TO_1"])
def test_relu_clamps(dtype, op):
    m = QModel()
    qt = q(dtype, 0.03)
    x = m.input((1, 6, 6, 4), qt)
    y = m.tensor((1, 6, 6, 4), qt)
    m.op(op, [x], [y])
    check_exact(m.build(y))


@pytest.mark.parametrize("dtype", [S8, U8])
def test_concat_and_pack_same_quant(dtype):
    m = QModel()
    qt = q(dtype)
    a = m.input((1, 4, 4, 3), qt)
    b = m.input((1, 4, 4, 5), qt)
    c = m.tensor((1, 4, 4, 8), qt)
    m.op("CONCATENATION", [a, b], [c], axis=3)
    d = m.input((1, 4, 4, 8), qt)
    p = m.tensor((2, 1, 4, 4, 8), qt)
    m.op("PACK", [c, d], [p], axis=0, values_count=2)
    check_exact(m.build(p))


def test_concat_different_scales_left_to_stock():
    """uint8 inputs quantized unlike the output are requantized by stock (int8 ones are refused)."""
    m = QModel()
    a = m.input((1, 4, 4, 3), q(U8, 0.05))
    b = m.input((1, 4, 4, 5), q(U8, 0.1))
    c = m.tensor((1, 4, 4, 8), q(U8, 0.1))
    m.op("CONCATENATION", [a, b], [c], axis=3)
    stats = check_exact(m.build(c), delegated=False)
    assert stats["nodes_delegated"] == 0 and "quantized differently" in str(stats["fallback"]), stats


@pytest.mark.parametrize("dtype", [S8, U8])
def test_strided_slice(dtype):
    m = QModel()
    qt = q(dtype)
    x = m.input((1, 8, 6, 5), qt)
    y = m.tensor((1, 3, 6, 2), qt)
    m.op("STRIDED_SLICE", [x, m.const(np.array([0, 1, 0, 1], np.int32)), m.const(np.array([1, 7, 6, 5], np.int32)),
                           m.const(np.array([1, 2, 1, 2], np.int32))], [y])
    check_exact(m.build(y))


@pytest.mark.parametrize("dtype", [S8, U8])
@pytest.mark.parametrize("ac,hp", [(False, False), (True, False), (False, True)])
def test_resize_nearest(dtype, ac, hp):
    m = QModel()
    qt = q(dtype)
    x = m.input((1, 3, 5, 4), qt)
    y = m.tensor((1, 7, 9, 4), qt)
    m.op("RESIZE_NEAREST_NEIGHBOR", [x, m.const(np.array([7, 9], np.int32))], [y], align_corners=ac,
         half_pixel_centers=hp)
    check_exact(m.build(y))


@pytest.mark.parametrize("dtype", [S8, U8])
def test_transpose_squeeze_and_block_moves(dtype):
    qt = q(dtype)
    m2 = QModel()
    x2 = m2.input((1, 4, 6, 8), qt)
    s = m2.tensor((1, 2, 3, 32), qt)
    m2.op("SPACE_TO_DEPTH", [x2], [s], block_size=2)
    d2 = m2.tensor((1, 4, 6, 8), qt)
    m2.op("DEPTH_TO_SPACE", [s], [d2], block_size=2)
    tr = m2.tensor((1, 8, 4, 6), qt)
    m2.op("TRANSPOSE", [d2, m2.const(np.array([0, 3, 1, 2], np.int32))], [tr])
    r = m2.tensor((8, 4, 6), qt)
    m2.op("SQUEEZE", [tr], [r], squeeze_dims=[0])
    check_exact(m2.build(r))
