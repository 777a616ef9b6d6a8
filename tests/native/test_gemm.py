"""Every GEMM microkernel this CPU runs, against the scalar reference and numpy, on awkward
shapes (remainders in m and n, k = 0 and 1, clamping), with the fused output stage (residual
ADD)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from flexdelegate import _native_testing as testing

KERNELS = testing.variants("gemm")


def test_scalar_reference_is_first_and_chosen_kernel_is_listed():
    assert KERNELS[0].endswith("scalar")
    assert testing.chosen("gemm") in KERNELS


@pytest.mark.parametrize("kernel", range(len(KERNELS)), ids=KERNELS)
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (1, 33, 7), (7, 1, 3), (9, 17, 0), (13, 31, 65),
                                   (8, 32, 16), (25, 48, 129), (6, 16, 1)])
def test_kernel_matches_numpy(kernel, m, n, k):
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    a, w, b = rng.standard_normal((m, k)), rng.standard_normal((n, k)), rng.standard_normal(n)
    got = testing.gemm(kernel, a, w, b)
    ref = a.astype(np.float32) @ w.astype(np.float32).T + b.astype(np.float32)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)


@settings(max_examples=40, deadline=None)
@given(kernel=st.integers(1, max(1, len(KERNELS) - 1)), m=st.integers(1, 40), n=st.integers(1, 70),
       k=st.integers(0, 50), clamp=st.booleans(), bias=st.booleans())
def test_simd_kernels_match_scalar_reference(kernel, m, n, k, clamp, bias):
    if kernel >= len(KERNELS):
        pytest.skip("no SIMD kernel on this CPU")
    rng = np.random.default_rng(0)
    a, w = rng.standard_normal((m, k)), rng.standard_normal((n, k))
    b = rng.standard_normal(n) if bias else None
    lo, hi = (-0.5, 0.5) if clamp else (-np.inf, np.inf)
    ref = testing.gemm(0, a, w, b, lo, hi)
    got = testing.gemm(kernel, a, w, b, lo, hi)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    if clamp:
        assert got.min() >= -0.5 and got.max() <= 0.5


@pytest.mark.parametrize("kernel", range(len(KERNELS)), ids=KERNELS)
@pytest.mark.parametrize("m,n,k", [(1, 33, 7), (13, 31, 65), (8, 32, 16), (25, 48, 129), (9, 5, 3)])
def test_residual_output_stage_matches_numpy(kernel, m, n, k):
    rng = np.random.default_rng(m + n + k)
    a, w, b = rng.standard_normal((m, k)), rng.standard_normal((n, k)), rng.standard_normal(n)
    res = rng.standard_normal((m, n)).astype(np.float32)
    got = testing.gemm(kernel, a, w, b, 0.0, np.inf, residual=res, rlo=-0.25, rhi=1.5)
    conv = np.maximum(a.astype(np.float32) @ w.astype(np.float32).T + b.astype(np.float32), 0.0)
    np.testing.assert_allclose(got, np.clip(conv + res, -0.25, 1.5), rtol=1e-5, atol=1e-4)
    assert got.min() >= -0.25 and got.max() <= 1.5


@pytest.mark.parametrize("kernel", range(len(KERNELS)), ids=KERNELS)
@pytest.mark.parametrize("n,k", [(32, 37), (16, 64), (70, 9)])
def test_a_row_has_the_same_bits_in_every_tile(kernel, n, k):
    """Bands and thread splits cut M anywhere, so a row may land in a full tile or alone in a
    one-row remainder; each must sum its k-steps in the same order (the AVX-512 one-row path
    once split k over 4 accumulators and broke test_band's bit-equality)."""
    rng = np.random.default_rng(n + k)
    a, w, b = rng.standard_normal((9, k)), rng.standard_normal((n, k)), rng.standard_normal(n)
    whole = testing.gemm(kernel, a, w, b)
    for i in range(len(a)):
        assert np.array_equal(testing.gemm(kernel, a[i:i + 1], w, b), whole[i:i + 1]), i
    assert np.array_equal(testing.gemm(kernel, a[1:4], w, b), whole[1:4])


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        testing.gemm(len(KERNELS), np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError):
        testing.gemm(0, np.ones((2, 3)), np.ones((2, 2)))
    with pytest.raises(ValueError):
        testing.gemm(0, np.ones((2, 2)), np.ones((3, 2)), residual=np.ones((3, 2)))


@pytest.mark.parametrize("kernel", range(len(KERNELS)), ids=KERNELS)
@pytest.mark.parametrize("m,threads", [(7, 1), (40, 2)])
def test_wide_fc_run_in_panel_blocks_has_the_same_bits(kernel, m, threads):
    """A few rows against weights past L2 (here 9001 x 64: 2.3 MB packed) run in blocks of panels
    with the next block prefetched (choose.c fx_conv_panel_block): every output still comes from
    the same microkernel call as in the panel-by-panel GEMM, so the bits are the same. N and m
    leave partial panels and row tiles."""
    rng = np.random.default_rng(m)
    n, k = 9001, 64
    a, w, b = rng.standard_normal((m, k)), rng.standard_normal((n, k)), rng.standard_normal(n)
    x = testing.aligned(a.reshape(1, m, 1, k))
    got = testing.conv2d(kernel, x, w.reshape(n, 1, 1, k), b, direct=False, padding="VALID", act="RELU6",
                         threads=threads)
    ref = testing.gemm(kernel, a, w, b, 0.0, 6.0)
    assert np.array_equal(got.reshape(m, n), ref)
    np.testing.assert_allclose(ref, np.clip(a @ w.T + b, 0.0, 6.0), rtol=1e-4, atol=1e-4)
