"""Slicing: fewest slices that fit, SIMD-multiple channel counts, totals preserved."""
import pytest
from hypothesis import given, settings, strategies as st

from flexdelegate.planner.graph import KernelOption, align
from flexdelegate.planner.slicing import max_slices, min_need, slice_for_limit, split

MB = 1 << 20
FC1 = KernelOption("gemm", 25088 * 4096 * 4, 0, 20000.0, 205000.0, "weights",
                   out_channels=4096)


def check_totals(opt, form, cost):
    assert sum(s.weight_bytes for s in form.slices) == opt.weight_bytes
    assert sum(s.load_us for s in form.slices) == pytest.approx(opt.load_us)
    extra = cost * form.n if form.n > 1 else 0
    assert sum(s.compute_us for s in form.slices) == pytest.approx(opt.compute_us + extra)
    total = opt.out_channels if opt.slicing == "weights" else opt.out_rows
    if form.n > 1:
        assert sum(s.count for s in form.slices) == total
        starts = [s.start for s in form.slices]
        assert starts == sorted(starts) and starts[0] == 0


def test_fc_fewest_weight_slices():
    form = slice_for_limit(FC1, 60 * MB, 10.0)
    assert form is not None and form.n > 1 and form.need <= 60 * MB
    assert split(FC1, form.n - 1).need > 60 * MB  # one slice fewer would not fit
    assert all(s.count % 16 == 0 for s in form.slices)
    check_totals(FC1, form, 10.0)
    assert slice_for_limit(FC1, 500 * MB).n == 1


def test_channel_counts_are_simd_multiples_with_short_last():
    opt = KernelOption("gemm", 1000 * 4 * 100, 0, 100.0, 10.0, "weights", out_channels=100)
    form = split(opt, 3)
    counts = [s.count for s in form.slices]
    assert sum(counts) == 100 and all(c % 16 == 0 for c in counts[:-1]) and counts[-1] > 0
    assert max_slices(opt) == 7


def test_input_slicing_keeps_simd_rows():
    opt = KernelOption("im2col", 147456, 115 * MB, 46000.0, 74.0, "input", out_rows=50176)
    form = slice_for_limit(opt, 20 * MB)
    assert form.n > 1 and form.need <= 20 * MB and split(opt, form.n - 1).need > 20 * MB
    assert all(s.count >= 16 for s in form.slices)
    assert form.slices[0].weight_bytes == opt.weight_bytes  # weights: one unit
    assert sum(s.scratch_bytes for s in form.slices) == opt.scratch_bytes
    assert form.weight_units == [opt.weight_bytes]
    check_totals(opt, form, 10.0)
    tiny = KernelOption("im2col", 64, 1 * MB, 1.0, 1.0, "input", out_rows=40)
    assert max_slices(tiny) == 2  # 40 rows: at most two slices of >= 16


def test_unsliceable_and_hopeless():
    opt = KernelOption("direct", 10 * MB, 0, 1.0, 1.0, "none")
    assert slice_for_limit(opt, 10 * MB).n == 1
    assert slice_for_limit(opt, 10 * MB - 1) is None
    assert slice_for_limit(FC1, min_need(FC1) - 1) is None
    assert slice_for_limit(FC1, min_need(FC1)) is not None


@settings(max_examples=300, deadline=None)
@given(w=st.integers(0, 64 * MB), s=st.integers(0, 8 * MB), kind=st.sampled_from(["weights", "input", "none"]),
       total=st.integers(0, 5000), simd=st.sampled_from([1, 4, 8, 16]), limit=st.integers(-1, 80 * MB))
def test_slicing_property(w, s, kind, total, simd, limit):
    opt = KernelOption("k", w, s, 1000.0, w / 2000, kind,
                       out_channels=total if kind == "weights" else 0,
                       out_rows=total if kind == "input" else 0, simd=simd)
    form = slice_for_limit(opt, limit, 5.0)
    if form is None:
        assert min_need(opt) > limit
        return
    assert form.need <= limit
    assert form.n == 1 or split(opt, form.n - 1).need > limit
    check_totals(opt, form, 5.0)
    if kind == "weights" and form.n > 1:
        assert all(x.count % simd == 0 for x in form.slices[:-1])
    if kind == "input" and form.n > 1:
        assert all(x.count >= simd for x in form.slices)
    assert form.need == max(align(x.weight_bytes) + align(x.scratch_bytes) for x in form.slices) \
        if kind != "input" else True
