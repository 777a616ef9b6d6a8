"""Every sigmoid / swish variant this CPU runs against the portable scalar reference and float64
numpy, on lengths around the vector widths (masked tails) and awkward values: signed zeros,
the exp clamp at -87.3, huge magnitudes, infinities, NaN."""
import numpy as np
import pytest

from flexdelegate import _native_testing as testing

VARIANTS = testing.variants("vsigmoid")
ALL = list(range(len(VARIANTS)))


def numpy_sigmoid(x, swish):
    x = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        s = np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))))
        return x * s if swish else s


def test_reference_is_first():
    assert VARIANTS[0] == "f32-vsigmoid-scalar"


@pytest.mark.parametrize("variant", ALL, ids=VARIANTS)
@pytest.mark.parametrize("swish", [False, True], ids=["sigmoid", "swish"])
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1000])
def test_matches_numpy_and_reference(variant, swish, n):
    x = (np.random.default_rng(n).standard_normal(n) * 6).astype(np.float32)
    got = testing.vsigmoid(variant, x, swish)
    want = numpy_sigmoid(x, swish)
    # relative to the value, with an absolute floor where sigmoid is tiny
    assert np.all(np.abs(got - want) <= 4e-7 * np.maximum(np.abs(want), 1e-3)), VARIANTS[variant]
    np.testing.assert_allclose(got, testing.vsigmoid(0, x, swish), rtol=3e-7, atol=1e-37)


@pytest.mark.parametrize("variant", ALL, ids=VARIANTS)
@pytest.mark.parametrize("swish", [False, True], ids=["sigmoid", "swish"])
def test_awkward_values(variant, swish):
    x = np.array([0.0, -0.0, 1e-30, -1e-30, 87.0, -87.0, 87.3, -87.3, 88.0, -88.0, 100.0, -100.0,
                  3e38, -3e38, np.inf, -np.inf, np.nan, 0.5, -0.5, 20.0, -20.0], np.float32)
    got = testing.vsigmoid(variant, x, swish)
    want = numpy_sigmoid(x, swish)
    assert got[14] == (np.inf if swish else 1.0) and (np.isnan(got[15]) if swish else got[15] == 0.0)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), (x, got)
    # Below the exp clamp sigmoid flushes to 0 (numpy: < 1.2e-38); otherwise within a few ulp.
    tol = np.maximum(4e-7 * np.abs(want), 1.3e-38 * np.maximum(np.abs(x), 1) if swish else 1.3e-38)
    g, w = got[~nan].astype(np.float64), want[~nan]
    with np.errstate(invalid="ignore"):  # inf - inf
        ok = (g == w) | (np.abs(g - w) <= tol[~nan])
    assert ok.all(), list(zip(x[~nan][~ok], got[~nan][~ok], want[~nan][~ok]))
