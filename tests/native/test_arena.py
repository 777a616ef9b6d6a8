"""The arena planners: greedy reuses memory without ever overlapping live buffers; the
trivial one lays buffers back to back."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from flexdelegate import _native_testing as testing
from flexdelegate._native import lib

ALIGN = lib.FLEX_ARENA_ALIGN


def overlaps(sizes, first, last, offsets):
    n = len(sizes)
    for i in range(n):
        for j in range(i + 1, n):
            if last[i] < first[j] or last[j] < first[i] or not sizes[i] or not sizes[j]:
                continue
            if offsets[i] < offsets[j] + sizes[j] and offsets[j] < offsets[i] + sizes[i]:
                return (i, j)
    return None


buffers = st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 20), st.integers(0, 6)),
                   min_size=0, max_size=40)


@settings(max_examples=200, deadline=None)
@given(buffers)
def test_greedy_never_overlaps_live_buffers(bufs):
    sizes = [s for s, _, _ in bufs]
    first = [f for _, f, _ in bufs]
    last = [f + d for _, f, d in bufs]
    total, offsets = testing.plan_arena(sizes, first, last, greedy=True)
    assert overlaps(sizes, first, last, offsets) is None
    assert all(o % ALIGN == 0 for o in offsets)
    assert all(o + s <= total for o, s in zip(offsets, sizes))
    # never worse than no reuse, never better than the peak of live bytes
    trivial, _ = testing.plan_arena(sizes, first, last, greedy=False)
    assert total <= trivial
    live_peak = max([sum(-(-s // ALIGN) * ALIGN for s, f, l in zip(sizes, first, last) if f <= t <= l)
                     for t in range(0, 27)] + [0])
    assert total >= live_peak


def test_greedy_reuses_dead_buffers():
    # a chain: each buffer dies when the next-but-one is born, so two slots suffice
    sizes, first, last = [1024] * 6, list(range(6)), [i + 1 for i in range(6)]
    total, offsets = testing.plan_arena(sizes, first, last)
    assert total == 2048
    assert len(set(offsets)) == 2


def test_trivial_is_back_to_back_aligned():
    total, offsets = testing.plan_arena([10, 100, 1], [0, 0, 0], [0, 0, 0], greedy=False)
    assert offsets == [0, 64, 192] and total == 256


@pytest.mark.parametrize("sizes,first,last", [([1], [2], [1]), ([1, 2], [0], [0])])
def test_invalid_input_raises(sizes, first, last):
    with pytest.raises(ValueError):
        testing.plan_arena(sizes, first, last)
