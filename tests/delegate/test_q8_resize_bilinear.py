"""RESIZE_BILINEAR on int8 / uint8 through the delegate (kernels/ops/resize.c), bit for bit against
the stock reference of the runtime in use, every node delegated: int8 as stock's integer kernel
(10-bit fixed point, ties half away from zero), uint8 as its float loop (and its exact 8x
half-pixel path); all three valid flag combinations, upscale and downscale, odd sizes, batch > 1,
1 and 2 threads; and the sizes left to stock."""
import numpy as np
import pytest

from flexdelegate import load_flex
from flexdelegate.run import make_interpreter
from qopcheck import Q, QModel, check_exact

S8, U8 = np.int8, np.uint8
FLAGS = [(False, False), (True, False), (False, True)]  # align_corners, half_pixel_centers
# (input NHWC, output HW): odd upscale, downscale with batch 2, 2x (ties), 8x with 16 channels
# (uint8's ResizeBilinear888Uint8 under half-pixel centers), one row, mixed, 1x1 output, identity
CASES = [((1, 3, 5, 4), (7, 9)), ((2, 6, 7, 3), (3, 4)), ((1, 5, 5, 8), (10, 10)), ((2, 3, 2, 16), (24, 16)),
         ((2, 1, 4, 5), (1, 9)), ((1, 7, 3, 9), (13, 2)), ((3, 9, 11, 3), (4, 5)), ((1, 4, 6, 2), (1, 1)),
         ((1, 4, 5, 3), (4, 5))]


def resize_model(x_shape, out_hw, dtype, ac, hp, qx=None, qy=None):
    lo, hi = (-128, 127) if dtype == S8 else (0, 255)
    m = QModel()
    x = m.input(x_shape, qx or Q(dtype, 0.05, lo))
    y = m.tensor((x_shape[0], *out_hw, x_shape[3]), qy or Q(dtype, 0.05, lo))
    m.op("RESIZE_BILINEAR", [x, m.const(np.array(out_hw, np.int32))], [y], align_corners=ac, half_pixel_centers=hp)
    return m.build(y)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("ac,hp", FLAGS, ids=["plain", "align_corners", "half_pixel"])
@pytest.mark.parametrize("x_shape,out_hw", CASES, ids=[f"{a}->{b}" for a, b in CASES])
@pytest.mark.parametrize("dtype", [S8, U8], ids=["int8", "uint8"])
def test_resize_bilinear(dtype, x_shape, out_hw, ac, hp, threads):
    stats = check_exact(resize_model(x_shape, out_hw, dtype, ac, hp), seeds=(0, 1, 2), num_threads=threads)
    assert [o["kernel"] for o in stats["ops"]] == ["resize_bilinear"], stats["ops"]


@pytest.mark.parametrize("dtype", [S8, U8], ids=["int8", "uint8"])
def test_resize_bilinear_ignores_quantization(dtype):
    """Stock interpolates the stored values whatever the scales and zero points say (it checks
    none, and requantizes nothing): an output quantized unlike the input gets the same bytes."""
    hi = 127 if dtype == S8 else 255
    check_exact(resize_model((2, 3, 5, 6), (7, 4), dtype, False, True, Q(dtype, 0.3, hi), Q(dtype, 1e-4, 0)))


def test_resize_bilinear_past_2_20_pixels_a_side_stays_with_stock():
    """stock's int8 positions (1024 x size) overflow int32 there: not reproduced (never invoked)."""
    delegate = load_flex()
    make_interpreter(resize_model((1, 1, 2, 1), (1, 1 << 20), S8, False, False), delegate=delegate)
    stats = delegate.stats()
    assert stats["nodes_delegated"] == 0 and "2^20" in stats["fallback"][0]["reason"], stats
