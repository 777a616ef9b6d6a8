"""Every depthwise-conv variant this CPU runs (AVX-512F, AVX2, NEON), against the portable
scalar reference and a float64 numpy depthwise conv, on awkward shapes: channel counts that
are not multiples of any vector width, depth multipliers, 1x1 inputs, strides, dilation,
SAME/VALID, batches, fused activations (fast interior path and border path alike)."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from convref import finish, rel_err
from flexdelegate import _native_testing as testing

VARIANTS = testing.variants("dwconv")
SIMD = list(range(1, len(VARIANTS)))


def numpy_dwconv(x, f, bias, mult, stride, dilation, padding, act):
    x, f = x.astype(np.float64), f.astype(np.float64)
    n, h, w, c = x.shape
    kh, kw, oc = f.shape
    same = padding == "SAME"
    oh = testing.conv_out_size(same, h, kh, stride[0], dilation[0])
    ow = testing.conv_out_size(same, w, kw, stride[1], dilation[1])
    pt = max(0, ((oh - 1) * stride[0] + (kh - 1) * dilation[0] + 1 - h)) // 2 if same else 0
    pl = max(0, ((ow - 1) * stride[1] + (kw - 1) * dilation[1] + 1 - w)) // 2 if same else 0
    xe = np.repeat(x, mult, axis=3)  # output channel oc reads input channel oc // mult
    y = np.zeros((n, oh, ow, oc))
    for fy, fx in itertools.product(range(kh), range(kw)):
        iy = np.arange(oh) * stride[0] - pt + fy * dilation[0]
        ix = np.arange(ow) * stride[1] - pl + fx * dilation[1]
        vy, vx = (iy >= 0) & (iy < h), (ix >= 0) & (ix < w)
        patch = xe[:, np.clip(iy, 0, h - 1)][:, :, np.clip(ix, 0, w - 1)]
        patch = patch * (vy[:, None] & vx[None, :])[None, :, :, None]
        y += patch * f[fy, fx]
    return finish(y, bias, act)




def run_case(variant, n, h, w, c, mult, k, stride, dilation, padding, act="NONE", bias=True, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    f = rng.standard_normal((k[0], k[1], c * mult)).astype(np.float32)
    b = rng.standard_normal(c * mult).astype(np.float32) if bias else None
    kw = dict(mult=mult, stride=stride, dilation=dilation, padding=padding, act=act)
    ref = testing.dwconv(0, x, f, b, **kw)
    got = testing.dwconv(variant, x, f, b, **kw)
    assert got.shape == ref.shape
    assert rel_err(got, ref.astype(np.float64)) <= 1e-5, (VARIANTS[variant], got.shape)
    return x, f, b, ref, kw


def test_reference_is_first_and_chosen_variant_is_fast():
    assert VARIANTS[0] == "f32-dwconv-scalar"
    import platform
    if platform.machine() in ("x86_64", "AMD64"):
        assert all(v.startswith("f32-dwconv-") for v in VARIANTS)
    elif platform.machine() in ("aarch64", "arm64"):
        assert "f32-dwconv-neon" in VARIANTS


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("mult", [1, 2, 3])
@pytest.mark.parametrize("c", [1, 3, 17, 33, 64, 96])
def test_scalar_reference_matches_numpy(c, mult, padding):
    rng = np.random.default_rng(c * 10 + mult)
    x = rng.standard_normal((2, 7, 6, c)).astype(np.float32)
    f = rng.standard_normal((3, 3, c * mult)).astype(np.float32)
    b = rng.standard_normal(c * mult).astype(np.float32)
    for stride, dil, act in (((1, 1), (1, 1), "NONE"), ((2, 2), (1, 1), "RELU6"), ((1, 1), (2, 2), "RELU")):
        got = testing.dwconv(0, x, f, b, mult=mult, stride=stride, dilation=dil, padding=padding, act=act)
        ref = numpy_dwconv(x, f, b, mult, stride, dil, padding, act)
        assert rel_err(got, ref) <= 1e-5


GRID = list(itertools.product(
    [1, 3, 17, 33, 64, 96],                      # channels
    [1, 2, 3],                                   # depth multiplier
    [(3, 3), (5, 5)],                            # kernel (fast-path sizes)
    [(1, 1), (2, 2)],                            # strides (fast-path strides)
    ["SAME", "VALID"],
))


@pytest.mark.skipif(not SIMD, reason="no SIMD variant on this CPU")
@pytest.mark.parametrize("variant", SIMD, ids=[VARIANTS[i] for i in SIMD])
@pytest.mark.parametrize("c,mult,k,stride,padding", GRID, ids=str)
def test_simd_matches_reference_grid(variant, c, mult, k, stride, padding):
    # 11x9: odd sizes, interior and border pixels for 3x3 and 5x5; batch 2.
    run_case(variant, 2, 11, 9, c, mult, k, stride, (1, 1), padding, act="RELU6" if c % 2 else "NONE",
             bias=c != 33, seed=c + mult)


@pytest.mark.skipif(not SIMD, reason="no SIMD variant on this CPU")
@pytest.mark.parametrize("variant", SIMD, ids=[VARIANTS[i] for i in SIMD])
@pytest.mark.parametrize("case", [
    # n, h, w, c, mult, kernel, stride, dilation, padding
    (1, 1, 1, 17, 1, (3, 3), (1, 1), (1, 1), "SAME"),     # 1x1 spatial: every tap but one OOB
    (2, 1, 1, 33, 2, (5, 5), (2, 2), (1, 1), "SAME"),
    (1, 1, 1, 3, 3, (1, 1), (1, 1), (1, 1), "VALID"),
    (2, 9, 8, 17, 1, (3, 3), (1, 1), (2, 2), "SAME"),     # dilation: generic path
    (1, 12, 11, 64, 1, (3, 3), (1, 1), (2, 2), "VALID"),
    (1, 10, 13, 96, 1, (3, 3), (2, 1), (1, 1), "SAME"),   # unequal strides: generic path
    (1, 6, 7, 1, 4, (3, 2), (2, 1), (1, 2), "SAME"),      # cin 1, mult 4
    (1, 5, 5, 3, 1, (1, 1), (1, 1), (1, 1), "SAME"),      # 1x1 kernel
    (2, 8, 8, 7, 16, (3, 3), (1, 1), (1, 1), "SAME"),     # mult 16: 112 output channels
    (1, 4, 5, 17, 1, (5, 5), (1, 1), (1, 1), "SAME"),     # smaller than the window: no interior
    (1, 3, 3, 33, 1, (3, 3), (2, 2), (1, 1), "VALID"),    # a single output pixel
    (1, 112, 16, 32, 1, (3, 3), (1, 1), (1, 1), "SAME"),  # MobileNet-like rows
    (1, 15, 15, 96, 1, (3, 3), (2, 2), (1, 1), "SAME"),
    (2, 6, 40, 19, 1, (3, 3), (2, 2), (1, 1), "SAME"),    # 3x3 pixel tiles, tail pixels, channel tail
    (1, 5, 31, 8, 1, (3, 3), (1, 1), (1, 1), "VALID"),    # 3x3 tiles with no border pixels
    (1, 4, 10, 24, 1, (3, 3), (1, 1), (1, 1), "SAME"),    # interior of 8: one tile and two singles
    (1, 7, 7, 160, 1, (5, 5), (1, 1), (1, 1), "SAME"),
    (1, 9, 9, 40, 1, (5, 5), (2, 2), (1, 1), "VALID"),
], ids=str)
def test_simd_matches_reference_edges(variant, case):
    n, h, w, c, mult, k, stride, dil, padding = case
    for act in ("NONE", "RELU"):
        run_case(variant, n, h, w, c, mult, k, stride, dil, padding, act=act)


@pytest.mark.skipif(not SIMD, reason="no SIMD variant on this CPU")
@pytest.mark.parametrize("variant", SIMD, ids=[VARIANTS[i] for i in SIMD])
@pytest.mark.parametrize("act", ["NONE", "RELU", "RELU6", "RELU_N1_TO_1", "TANH", "SIGMOID", "SWISH"])
def test_simd_activations_and_numpy(variant, act):
    x, f, b, ref, kw = run_case(variant, 2, 9, 10, 19, 1, (3, 3), (1, 1), (1, 1), "SAME", act=act)
    got = testing.dwconv(variant, x, f, b, **kw)
    assert rel_err(got, numpy_dwconv(x, f, b, 1, (1, 1), (1, 1), "SAME", act)) <= 1e-5


@pytest.mark.skipif(not SIMD, reason="no SIMD variant on this CPU")
def test_out_of_bounds_infinity_is_skipped_not_multiplied():
    # TFLite skips out-of-bounds taps; an inf at the border must not turn padding into NaN
    # (NONE clamps to the float range, as stock does, so inf reads as FLT_MAX).
    x = np.ones((1, 5, 5, 16), np.float32)
    x[0, 0, :, :] = np.inf
    f = np.ones((3, 3, 16), np.float32)
    for v in range(len(VARIANTS)):
        y = testing.dwconv(v, x, f, None, padding="SAME")
        fmax = np.finfo(np.float32).max
        assert (y[0, :2] == fmax).all() and (np.abs(y[0, 2:]) <= 9).all(), VARIANTS[v]


@settings(max_examples=60, deadline=None)
@given(variant=st.sampled_from(SIMD or [0]), n=st.integers(1, 2), h=st.integers(1, 13),
       w=st.integers(1, 13), c=st.integers(1, 40), mult=st.integers(1, 3),
       k=st.sampled_from([(1, 1), (3, 3), (5, 5), (2, 3), (3, 1)]), s=st.sampled_from([(1, 1), (2, 2), (1, 2), (3, 3)]),
       d=st.sampled_from([(1, 1), (2, 2), (1, 2)]), padding=st.sampled_from(["SAME", "VALID"]),
       bias=st.booleans())
def test_simd_matches_reference_random(variant, n, h, w, c, mult, k, s, d, padding, bias):
    if padding == "VALID" and (h < (k[0] - 1) * d[0] + 1 or w < (k[1] - 1) * d[1] + 1):
        return  # no output
    run_case(variant, n, h, w, c, mult, k, s, d, padding, act="RELU6", bias=bias, seed=h * 100 + w)


def test_bad_arguments_raise():
    x = np.ones((1, 4, 4, 3), np.float32)
    with pytest.raises(ValueError):
        testing.dwconv(len(VARIANTS), x, np.ones((3, 3, 3)))
    with pytest.raises(ValueError):
        testing.dwconv(0, x, np.ones((3, 3, 4)))
