"""Winograd F(4x4,3x3) and F(6x6,3x3) stride-1 convolution, with every GEMM microkernel this CPU
runs (the transforms follow the kernel's ISA), against a float64 numpy direct convolution on
awkward shapes: sizes that are not multiples of the tile, 1x1 and 2x2 inputs, SAME / VALID /
asymmetric padding, channel counts 1..130, batch 2, fused activations, threads; pre-transformed
weights and the run-time transform from GEMM panels (winograd_rt.c) alike."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from convref import finish, rel_err
from flexdelegate import _native_testing as testing

KERNELS = testing.variants("gemm")
TILES = [4, 6]


def direct_conv(x, f, bias, pads, act="NONE"):
    """float64 stride-1 3x3 conv, x [n,h,w,cin], f [cout,3,3,cin], pads (top, left, bottom, right)."""
    top, left, bottom, right = pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (top, bottom), (left, right), (0, 0)))
    n, h, w, _ = xp.shape
    oh, ow = h - 2, w - 2
    y = np.zeros((n, oh, ow, f.shape[0]))
    for ky in range(3):
        for kx in range(3):
            y += np.einsum("nhwc,oc->nhwo", xp[:, ky:ky + oh, kx:kx + ow], f[:, ky, kx].astype(np.float64))
    return finish(y, bias, act)




def data(n, h, w, cin, cout, seed=0, bias=True):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, h, w, cin)).astype(np.float32)
    f = (rng.standard_normal((cout, 3, 3, cin)) / np.sqrt(9 * cin)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) if bias else None
    return x, f, b


@pytest.mark.parametrize("tile", TILES)
@pytest.mark.parametrize("kernel", range(len(KERNELS)), ids=KERNELS)
@pytest.mark.parametrize("n,h,w,cin,cout,padding", [
    (1, 8, 8, 3, 5, "SAME"),
    (2, 13, 11, 17, 130, "SAME"),    # batch 2, partial tiles at the right and bottom
    (2, 13, 11, 17, 130, "VALID"),
    (1, 1, 1, 4, 3, "SAME"),         # 1x1: every tap but the centre in the padding
    (1, 2, 2, 64, 64, "SAME"),
    (1, 2, 3, 1, 1, "SAME"),
    (1, 3, 3, 1, 17, "VALID"),       # a single output pixel
    (1, 7, 9, 64, 3, "SAME"),
    (1, 10, 10, 130, 64, "VALID"),
    (1, 6, 14, 3, 17, "SAME"),       # exact multiples of the tile in one dim
    (2, 9, 5, 33, 31, "SAME"),
], ids=str)
def test_matches_direct_conv(kernel, tile, n, h, w, cin, cout, padding):
    x, f, b = data(n, h, w, cin, cout, seed=h * w + cin)
    pads = (1, 1, 1, 1) if padding == "SAME" else (0, 0, 0, 0)
    got = testing.winograd(kernel, tile, x, f, b, padding=padding)
    ref = direct_conv(x, f, b, pads)
    assert got.shape == ref.shape
    assert rel_err(got, ref) <= 1e-4


@pytest.mark.parametrize("tile", TILES)
@pytest.mark.parametrize("act", ["NONE", "RELU", "RELU6", "RELU_N1_TO_1", "TANH"])
def test_activations_and_no_bias(tile, act):
    x, f, _ = data(2, 9, 10, 7, 19, seed=3)
    x *= 4
    k = len(KERNELS) - 1
    for b in (None, np.linspace(-2, 2, 19).astype(np.float32)):
        got = testing.winograd(k, tile, x, f, b, act=act)
        assert rel_err(got, direct_conv(x, f, b, (1, 1, 1, 1), act)) <= 1e-4
        if act == "RELU6":
            assert got.min() >= 0 and got.max() <= 6


@pytest.mark.parametrize("tile", TILES)
def test_explicit_asymmetric_padding(tile):
    x, f, b = data(1, 11, 12, 9, 10, seed=5)
    for pads in [(0, 0, 2, 2), (2, 1, 0, 0), (1, 0, 0, 1), (0, 2, 1, 0)]:
        got = testing.winograd(len(KERNELS) - 1, tile, x, f, b, pads=pads)
        assert rel_err(got, direct_conv(x, f, b, pads)) <= 1e-4, pads


@pytest.mark.parametrize("tile", TILES)
@pytest.mark.parametrize("kernel", range(len(KERNELS)), ids=KERNELS)
def test_threads_give_identical_results(kernel, tile):
    # Enough tiles for several blocks per thread and blocks that differ between 1 and 2 threads.
    x, f, b = data(2, 23, 21, 17, 40, seed=7)
    one = testing.winograd(kernel, tile, x, f, b, act="RELU6", threads=1)
    two = testing.winograd(kernel, tile, x, f, b, act="RELU6", threads=2)
    three = testing.winograd(kernel, tile, x, f, b, act="RELU6", threads=3)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(one, three)
    assert rel_err(one, direct_conv(x, f, b, (1, 1, 1, 1), "RELU6")) <= 1e-4


@pytest.mark.parametrize("tile", TILES)
def test_accuracy_with_512_channels(tile):
    # The brief's bound: max abs error / max abs reference <= 1e-3 at C = 512 (measured ~2e-5).
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 14, 14, 512)).astype(np.float32)
    f = rng.standard_normal((512, 3, 3, 512)).astype(np.float32)
    b = rng.standard_normal(512).astype(np.float32)
    got = testing.winograd(len(KERNELS) - 1, tile, x, f, b, threads=2)
    assert rel_err(got, direct_conv(x, f, b, (1, 1, 1, 1))) <= 1e-4


@settings(max_examples=40, deadline=None)
@given(kernel=st.integers(0, len(KERNELS) - 1), tile=st.sampled_from(TILES), n=st.integers(1, 2),
       h=st.integers(1, 15), w=st.integers(1, 15), cin=st.integers(1, 40), cout=st.integers(1, 70),
       top=st.integers(0, 2), left=st.integers(0, 2), bottom=st.integers(0, 2), right=st.integers(0, 2),
       threads=st.integers(1, 2), from_gemm=st.booleans())
def test_random_shapes(kernel, tile, n, h, w, cin, cout, top, left, bottom, right, threads, from_gemm):
    if h + top + bottom < 3 or w + left + right < 3:
        return  # no output
    x, f, b = data(n, h, w, cin, cout, seed=h * 31 + w)
    pads = (top, left, bottom, right)
    got = testing.winograd(kernel, tile, x, f, b, pads=pads, threads=threads, from_gemm=from_gemm)
    assert rel_err(got, direct_conv(x, f, b, pads)) <= 1e-4


@pytest.mark.parametrize("tile", TILES)
@pytest.mark.parametrize("kernel", range(len(KERNELS)), ids=KERNELS)
@pytest.mark.parametrize("act", ["RELU6", "TANH"])  # TANH: applied after the transform, per slice
def test_channel_slices_match_the_full_run(kernel, tile, act):
    """A budget plan runs a Winograd conv as slices of whole output-channel panels, each slice's
    packed weights one contiguous byte range (copied out on its own here): every slicing gives
    the full run's output (bit for bit before the activation: the same sums per channel; TANH's
    vector and tail paths may differ by an ulp), including a short last panel."""
    x, f, b = data(2, 13, 11, 17, 130, seed=9)
    full = testing.winograd(kernel, tile, x, f, b, act=act, threads=2)
    assert rel_err(full, direct_conv(x, f, b, (1, 1, 1, 1), act)) <= 1e-4
    for per in (1, 2, 3, 100):
        sliced = testing.winograd(kernel, tile, x, f, b, act=act, threads=2, slice_panels=per)
        if act == "TANH":
            assert rel_err(sliced, full) <= 1e-6, f"{per} panels per slice"
        else:
            np.testing.assert_array_equal(sliced, full, err_msg=f"{per} panels per slice")


@pytest.mark.parametrize("tile", TILES)
@pytest.mark.parametrize("kernel", range(len(KERNELS)), ids=KERNELS)
@pytest.mark.parametrize("act", ["RELU6", "TANH", "NONE"])
@pytest.mark.parametrize("n,h,w,cin,cout", [(2, 13, 11, 17, 130), (1, 14, 14, 256, 40), (1, 1, 2, 3, 33)])
def test_runtime_transform_matches_direct_conv(kernel, tile, act, n, h, w, cin, cout):
    """The filters transformed per run from the GEMM panels (short last panel, channels not a
    multiple of the vector, a 1x2 input) give the pre-transformed run's accuracy."""
    x, f, b = data(n, h, w, cin, cout, seed=cin)
    want = direct_conv(x, f, b, (1, 1, 1, 1), act)
    for threads in (1, 2):
        got = testing.winograd(kernel, tile, x, f, b, act=act, threads=threads, from_gemm=True)
        assert rel_err(got, want) <= 1e-4


def test_bad_arguments_raise():
    x, f, b = data(1, 4, 4, 3, 2)
    with pytest.raises(ValueError):
        testing.winograd(0, 5, x, f, b)           # tile must be 4 or 6
    with pytest.raises(ValueError):
        testing.winograd(len(KERNELS), 4, x, f, b)
    with pytest.raises(ValueError):
        testing.winograd(0, 4, x, np.ones((2, 3, 3, 4), np.float32))
    with pytest.raises(ValueError):
        testing.winograd(0, 4, x, f, b, slice_panels=-1)


@pytest.mark.parametrize("kernel", range(len(KERNELS)), ids=KERNELS)
@pytest.mark.parametrize("tile,slice_panels,act", [(4, 1, "RELU"), (6, 2, "TANH"), (4, 3, "NONE")])
def test_run_time_winograd_in_budget_slices_matches_direct_conv(kernel, tile, slice_panels, act):
    """A budget plan runs Winograd from the GEMM panels one output-channel slice at a time,
    each from its own copy of its panels: the same answer as the whole layer (bit for bit) and
    as a direct convolution (TANH: to its rounding), the activation applied to each slice's
    channels only."""
    x, f, b = data(1, 13, 11, 5, 50)  # 50 channels: a short last panel
    want = direct_conv(x, f, b, (1, 1, 1, 1), act)
    whole = testing.winograd(kernel, tile, x, f, b, act=act, from_gemm=True)
    for threads in (1, 2):
        got = testing.winograd(kernel, tile, x, f, b, act=act, threads=threads, slice_panels=slice_panels,
                               from_gemm=True)
        if act == "TANH":  # the curve's vector loop splits rows differently per slice
            assert rel_err(got, whole) <= 1e-6
        else:
            np.testing.assert_array_equal(got, whole)
        assert rel_err(got, want) <= 1e-4
