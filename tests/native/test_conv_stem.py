"""Stem conv (kernels/conv-stem/): a 3x3 conv over 3 channels, every stem kernel this CPU runs,
driven through conv/stem.c over the GEMM's packed weights, against a float64 numpy convolution,
its GEMM twin on im2col rows (same products, same order: the same bits) and the scalar
reference: strides 1..3, SAME / VALID / asymmetric explicit padding (border pixels and tap rows
outside the image), maps narrower than a window, odd widths, batch 2, cout around NR, threads."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from convref import rel_err
from flexdelegate import _native_testing as testing
from test_direct_conv import conv_ref, data, same_pads

KERNELS = testing.variants("gemm")
STEMS = testing.variants("stem")


def test_every_gemm_kernel_has_its_stem_twin():
    assert STEMS[0] == "f32-conv-stem-4x8-scalar"
    assert len(STEMS) == len(KERNELS)
    for g, s in zip(KERNELS, STEMS):
        assert s == g.replace("-gemm-", "-conv-stem-")  # same tile, same ISA: it reads the same panels


# (n, h, w, cout, stride, padding): cin 3, 3x3 always
SHAPES = [
    (1, 224, 224, 32, 2, "SAME"),   # MobileNetV2 / EfficientNet-B0: SAME pads bottom/right only
    (1, 17, 23, 40, 2, "SAME"),     # odd sizes: a right border pixel, cout past two AVX2 panels
    (2, 9, 9, 17, 2, "VALID"),      # batch 2, cout % NR != 0
    (1, 8, 13, 33, 1, "SAME"),      # stride 1: a left and a right border pixel per row
    (1, 11, 10, 7, 3, "SAME"),      # stride 3
    (1, 2, 2, 16, 2, "SAME"),       # a map smaller than the window: every pixel a border pixel
    (1, 1, 40, 5, 2, "SAME"),       # one input row: two tap rows outside the image
    (1, 3, 3, 1, 1, "VALID"),       # one output, one channel
    (2, 30, 31, 64, 2, "SAME"),     # several tiles per row, a tail tile, 64 channels
]


@pytest.mark.parametrize("kernel", range(len(KERNELS)), ids=STEMS)
@pytest.mark.parametrize("n,h,w,cout,stride,padding", SHAPES, ids=str)
def test_matches_numpy(kernel, n, h, w, cout, stride, padding):
    x, f, b = data(n, h, w, 3, cout, 3, 3, seed=h * w + cout)
    s = (stride, stride)
    pads = same_pads(h, w, 3, 3, s, (1, 1)) if padding == "SAME" else (0, 0, 0, 0)
    got = testing.conv2d(kernel, x, f, b, stem=True, stride=s, padding=padding, act="RELU6")
    ref = conv_ref(x, f, b, s, pads=pads, act="RELU6")
    assert got.shape == ref.shape
    assert rel_err(got, ref) <= 1e-5


@pytest.mark.parametrize("kernel", range(len(KERNELS)), ids=STEMS)
def test_explicit_padding_and_same_bits_as_im2col(kernel):
    """Every padding side, asymmetric; the stem sums the same products in the same order as its
    GEMM twin on im2col rows, so the outputs are equal, not merely close."""
    x, f, b = data(2, 12, 15, 3, 45, 3, 3, seed=5)
    for pads in [(1, 1, 1, 1), (0, 0, 2, 2), (2, 1, 0, 0), (1, 2, 2, 1), (0, 0, 0, 0)]:
        for stride in [(1, 1), (2, 2)]:
            got = testing.conv2d(kernel, x, f, b, stem=True, stride=stride, pads=pads, act="RELU")
            assert rel_err(got, conv_ref(x, f, b, stride, pads=pads, act="RELU")) <= 1e-5, (pads, stride)
            im2col = testing.conv2d(kernel, x, f, b, direct=False, stride=stride, pads=pads, act="RELU")
            np.testing.assert_array_equal(got, im2col)


@pytest.mark.parametrize("act", ["NONE", "RELU6", "RELU_N1_TO_1", "SIGMOID", "SWISH"])
def test_activations_threads_and_no_bias(act):
    x, f, _ = data(2, 21, 19, 3, 24, 3, 3, seed=3)
    x *= 4
    k = len(KERNELS) - 1
    for b in (None, np.linspace(-2, 2, 24).astype(np.float32)):
        for threads in (1, 2):
            got = testing.conv2d(k, x, f, b, stem=True, stride=(2, 2), act=act, threads=threads)
            ref = conv_ref(x, f, b, (2, 2), pads=same_pads(21, 19, 3, 3, (2, 2), (1, 1)), act=act)
            assert rel_err(got, ref) <= 1e-5


@settings(max_examples=40, deadline=None)
@given(kernel=st.integers(1, max(1, len(KERNELS) - 1)), n=st.integers(1, 2), h=st.integers(1, 14),
       w=st.integers(1, 14), cout=st.integers(1, 70), sh=st.integers(1, 3), same=st.booleans(),
       threads=st.integers(1, 2))
def test_simd_kernels_match_scalar_reference(kernel, n, h, w, cout, sh, same, threads):
    if kernel >= len(KERNELS):
        pytest.skip("no SIMD kernel on this CPU")
    if not same and (h < 3 or w < 3):
        same = True  # VALID would leave no output
    x, f, b = data(n, h, w, 3, cout, 3, 3, seed=h * w * cout)
    kw_args = dict(stride=(sh, sh), padding="SAME" if same else "VALID", threads=threads, stem=True)
    ref = testing.conv2d(0, x, f, b, **kw_args)
    got = testing.conv2d(kernel, x, f, b, **kw_args)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_only_3x3_convs_of_3_channels():
    for cin, k, dil in [(4, 3, 1), (3, 5, 1), (3, 3, 2), (1, 3, 1)]:
        x, f, b = data(1, 9, 9, cin, 8, k, k)
        with pytest.raises(ValueError):
            testing.conv2d(0, x, f, b, stem=True, dilation=(dil, dil))
    wide = np.zeros((1, 3, 5462, 3), np.float32)  # a row longer than the stem's zero row
    with pytest.raises(ValueError):
        testing.conv2d(0, wide, np.zeros((4, 3, 3, 3), np.float32), stem=True)
    testing.conv2d(0, wide, np.zeros((4, 3, 3, 3), np.float32), direct=False)  # im2col still runs it
