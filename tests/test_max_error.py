"""The agreement measure every comparison with stock relies on must see every difference."""
import numpy as np

from flexdelegate.run import max_error

F = np.float32


def test_equal_outputs_agree_exactly():
    a = np.array([1.0, -np.inf, np.inf, np.nan, 3.0], F)
    assert max_error([a], [a.copy()]) == 0


def test_an_infinity_in_the_reference_does_not_hide_a_wrong_finite_value():
    # Before: scale = max|ref| = inf, so every error divided by it vanished (or became NaN).
    ref = np.array([np.inf, 1.0, 2.0], F)
    got = np.array([np.inf, 1.0, 9.0], F)
    assert max_error([ref], [got]) == 7.0 / 2.0


def test_infinities_must_match_in_place_and_sign():
    ref = np.array([np.inf, 1.0], F)
    assert max_error([ref], [np.array([-np.inf, 1.0], F)]) == float("inf")
    assert max_error([ref], [np.array([5.0, 1.0], F)]) == float("inf")
    assert max_error([np.array([5.0, 1.0], F)], [ref]) == float("inf")


def test_nan_pattern_and_shape_and_count_must_match():
    ref = np.array([np.nan, 1.0], F)
    assert max_error([ref], [np.array([0.0, 1.0], F)]) == float("inf")
    assert max_error([ref], [np.array([np.nan, np.inf], F)]) == float("inf")
    assert max_error([ref], [ref.reshape(1, 2)]) == float("inf")
    assert max_error([ref, ref], [ref]) == float("inf")


def test_relative_to_the_largest_finite_reference_value():
    ref = np.array([100.0, 1.0], F)
    assert max_error([ref], [np.array([100.0, 2.0], F)]) == 1.0 / 100.0
    ints = np.array([3, 4], np.int32)
    assert max_error([ints], [np.array([3, 5], np.int32)]) == 1.0 / 4.0
