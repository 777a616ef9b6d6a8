"""Direct (implicit-GEMM) convolution: every IGEMM kernel this CPU runs, driven through conv.c
over the GEMM's packed weights, against a float64 numpy convolution and against the scalar
reference, on awkward shapes: odd channels, cin 1 and 3, 1x1 spatial, stride 2, dilation 2,
asymmetric padding, 1x3 / 5x5 / 7x7 kernels, batch 2, cout not a multiple of NR, threads."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from convref import finish, rel_err
from flexdelegate import _native_testing as testing

KERNELS = testing.variants("gemm")
IGEMM = testing.variants("igemm")


def same_pads(h, w, kh, kw, stride, dilation):
    """TFLite SAME padding (top, left, bottom, right): the odd pixel goes to the bottom/right."""
    pads = []
    for size, k, s, d in ((h, kh, stride[0], dilation[0]), (w, kw, stride[1], dilation[1])):
        out = (size + s - 1) // s
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        pads.append((total // 2, total - total // 2))
    return pads[0][0], pads[1][0], pads[0][1], pads[1][1]


def conv_ref(x, f, bias, stride=(1, 1), dilation=(1, 1), pads=(0, 0, 0, 0), act="NONE"):
    """float64 CONV_2D, x [n,h,w,cin], f [cout,kh,kw,cin], pads (top, left, bottom, right)."""
    top, left, bottom, right = pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (top, bottom), (left, right), (0, 0)))
    _, kh, kw, _ = f.shape
    (sh, sw), (dh, dw) = stride, dilation
    oh = (xp.shape[1] - (kh - 1) * dh - 1) // sh + 1
    ow = (xp.shape[2] - (kw - 1) * dw - 1) // sw + 1
    y = np.zeros((x.shape[0], oh, ow, f.shape[0]))
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[:, ky * dh:ky * dh + (oh - 1) * sh + 1:sh, kx * dw:kx * dw + (ow - 1) * sw + 1:sw]
            y += np.einsum("nhwc,oc->nhwo", patch, f[:, ky, kx].astype(np.float64))
    return finish(y, bias, act)


def data(n, h, w, cin, cout, kh, kw, seed=0, bias=True):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, h, w, cin)).astype(np.float32)
    f = (rng.standard_normal((cout, kh, kw, cin)) / np.sqrt(kh * kw * cin)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) if bias else None
    return x, f, b


def test_every_gemm_kernel_has_its_igemm_twin():
    assert IGEMM[0] == "f32-igemm-4x8-scalar"
    for g, i in zip(KERNELS, IGEMM):
        assert i == g.replace("-gemm-", "-igemm-")  # same tile, same ISA: it reads the same panels


# (n, h, w, cin, cout, kh, kw, stride, dilation, padding)
SHAPES = [
    (1, 9, 9, 3, 32, 3, 3, (2, 2), (1, 1), "SAME"),      # MobileNetV2-like stem: cin 3, stride 2
    (1, 17, 15, 3, 64, 7, 7, (2, 2), (1, 1), "SAME"),    # ResNet-like 7x7 s2 stem, odd sizes
    (2, 8, 7, 5, 17, 3, 3, (1, 1), (1, 1), "SAME"),      # batch 2, odd channels, cout % NR != 0
    (1, 1, 1, 7, 9, 3, 3, (1, 1), (1, 1), "SAME"),       # 1x1 spatial: every tap but the centre padded
    (1, 1, 1, 4, 33, 5, 5, (2, 2), (1, 1), "SAME"),
    (1, 11, 12, 1, 40, 5, 5, (1, 1), (1, 1), "VALID"),   # cin 1
    (1, 13, 13, 6, 16, 3, 3, (1, 1), (2, 2), "SAME"),    # dilation 2
    (2, 10, 9, 9, 31, 3, 3, (2, 1), (2, 1), "SAME"),     # mixed stride and dilation
    (1, 6, 20, 8, 24, 1, 3, (1, 1), (1, 1), "SAME"),     # 1x3
    (1, 20, 6, 8, 24, 3, 1, (1, 2), (1, 1), "VALID"),    # 3x1, stride only in w
    (1, 12, 12, 3, 65, 7, 7, (1, 1), (1, 1), "SAME"),    # 7x7 s1: several pointer blocks per task
    (1, 7, 7, 130, 70, 3, 3, (1, 1), (1, 1), "SAME"),    # channels past a panel and a cache line
    (2, 5, 5, 16, 8, 1, 1, (1, 1), (1, 1), "VALID"),     # 1x1 (runs direct too)
    (1, 9, 9, 16, 8, 1, 1, (2, 2), (1, 1), "SAME"),      # 1x1 stride 2
]


@pytest.mark.parametrize("kernel", range(len(KERNELS)), ids=IGEMM)
@pytest.mark.parametrize("n,h,w,cin,cout,kh,kw,stride,dilation,padding", SHAPES, ids=str)
def test_matches_numpy(kernel, n, h, w, cin, cout, kh, kw, stride, dilation, padding):
    x, f, b = data(n, h, w, cin, cout, kh, kw, seed=h * w + cin + kh)
    pads = same_pads(h, w, kh, kw, stride, dilation) if padding == "SAME" else (0, 0, 0, 0)
    got = testing.conv2d(kernel, x, f, b, stride=stride, dilation=dilation, padding=padding)
    ref = conv_ref(x, f, b, stride, dilation, pads)
    assert got.shape == ref.shape
    assert rel_err(got, ref) <= 1e-5


@pytest.mark.parametrize("kernel", range(len(KERNELS)), ids=IGEMM)
def test_asymmetric_explicit_padding(kernel):
    x, f, b = data(1, 10, 11, 5, 21, 3, 5, seed=7)
    for pads in [(0, 0, 2, 4), (2, 3, 0, 0), (1, 0, 0, 2), (0, 4, 2, 0)]:
        for stride in [(1, 1), (2, 2)]:
            got = testing.conv2d(kernel, x, f, b, stride=stride, pads=pads)
            assert rel_err(got, conv_ref(x, f, b, stride, pads=pads)) <= 1e-5, (pads, stride)


@pytest.mark.parametrize("kernel", range(len(KERNELS)), ids=IGEMM)
def test_same_bits_as_im2col_gemm_of_its_kernel(kernel):
    """Direct conv sums the same products in the same order as its GEMM twin on im2col rows."""
    x, f, b = data(2, 9, 8, 7, 45, 3, 3, seed=11)
    for stride in [(1, 1), (2, 2)]:
        direct = testing.conv2d(kernel, x, f, b, stride=stride, act="RELU6")
        im2col = testing.conv2d(kernel, x, f, b, stride=stride, act="RELU6", direct=False)
        np.testing.assert_array_equal(direct, im2col)


@pytest.mark.parametrize("act", ["NONE", "RELU", "RELU6", "RELU_N1_TO_1", "SIGMOID", "SWISH"])
def test_activations_threads_and_no_bias(act):
    x, f, _ = data(2, 15, 13, 11, 50, 3, 3, seed=3)
    x *= 4
    k = len(KERNELS) - 1
    for b in (None, np.linspace(-2, 2, 50).astype(np.float32)):
        for threads in (1, 2):
            got = testing.conv2d(k, x, f, b, stride=(2, 2), act=act, threads=threads)
            ref = conv_ref(x, f, b, (2, 2), pads=same_pads(15, 13, 3, 3, (2, 2), (1, 1)), act=act)
            assert rel_err(got, ref) <= 1e-5
            if act == "RELU6":
                assert got.min() >= 0 and got.max() <= 6


@settings(max_examples=40, deadline=None)
@given(kernel=st.integers(1, max(1, len(KERNELS) - 1)), n=st.integers(1, 2), h=st.integers(1, 12),
       w=st.integers(1, 12), cin=st.integers(1, 20), cout=st.integers(1, 70), kh=st.integers(1, 5),
       kw=st.integers(1, 5), sh=st.integers(1, 3), sw=st.integers(1, 3), dh=st.integers(1, 2),
       dw=st.integers(1, 2), same=st.booleans(), threads=st.integers(1, 2))
def test_simd_kernels_match_scalar_reference(kernel, n, h, w, cin, cout, kh, kw, sh, sw, dh, dw, same, threads):
    if kernel >= len(KERNELS):
        pytest.skip("no SIMD kernel on this CPU")
    if not same and (h < (kh - 1) * dh + 1 or w < (kw - 1) * dw + 1):
        same = True  # VALID would leave no output
    x, f, b = data(n, h, w, cin, cout, kh, kw, seed=cin * cout)
    kw_args = dict(stride=(sh, sw), dilation=(dh, dw), padding="SAME" if same else "VALID", threads=threads)
    ref = testing.conv2d(0, x, f, b, **kw_args)
    got = testing.conv2d(kernel, x, f, b, **kw_args)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_unsupported_and_bad_arguments_raise():
    x, f, b = data(1, 2, 2, 3, 4, 3, 3)
    with pytest.raises(ValueError):
        testing.conv2d(len(KERNELS), x, f, b)
    with pytest.raises(ValueError):
        testing.conv2d(0, x, f, b, stride=(0, 1))
    big = np.zeros((1, 1, 1, 16385), np.float32)  # more channels than the shared zero row
    with pytest.raises(ValueError):
        testing.conv2d(0, big, np.zeros((1, 3, 3, 16385), np.float32))
    testing.conv2d(0, big, np.zeros((1, 3, 3, 16385), np.float32), direct=False)  # im2col still runs it
