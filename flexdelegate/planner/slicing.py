"""Slicing one layer's kernel option so its peak memory fits a limit.

"weights": output channels are split into slices (multiples of `simd` channels, the last one
may be short); each slice's weights are their own load unit and only one slice's weights need
be resident while it computes. Scratch is kept whole per slice: the Winograd input-transformed
tiles, which dominate it, do not shrink with output channels.
"input": the im2col working set is split by output rows (each slice >= `simd` rows, for SIMD
efficiency); the weights are one unit, resident across all slices.
Each extra slice costs `slice_cost_us` of compute (re-reading inputs, kernel launch), plus the
option's own `slice_us` (Winograd, either form: the input transform, redone per slice)."""
from __future__ import annotations

from dataclasses import dataclass

from .graph import KernelOption, align

SLICE_COST_US = 10.0


@dataclass(frozen=True)
class Slice:
    start: int  # first output channel (weights) or im2col row (input); 0 when unsliced
    count: int
    weight_bytes: int
    scratch_bytes: int
    compute_us: float
    load_us: float


@dataclass(frozen=True)
class Form:
    """A kernel option cut into slices (one slice = not sliced)."""
    option: KernelOption
    slices: tuple

    @property
    def n(self) -> int:
        return len(self.slices)

    @property
    def need(self) -> int:
        """Peak arena bytes (64-aligned blocks) while this layer computes, without preloading."""
        if self.option.slicing == "input":
            return align(self.option.weight_bytes) + max(align(s.scratch_bytes) for s in self.slices)
        return max(align(s.weight_bytes) + align(s.scratch_bytes) for s in self.slices)

    @property
    def weight_units(self) -> list:
        """Bytes of each separately loaded weight unit (empty when the option has no weights)."""
        if self.option.weight_bytes == 0:
            return []
        if self.option.slicing == "weights":
            return [s.weight_bytes for s in self.slices]
        return [self.option.weight_bytes]


def max_slices(opt: KernelOption) -> int:
    if opt.slicing == "weights" and opt.out_channels > 0:
        return -(-opt.out_channels // opt.simd)
    if opt.slicing == "input" and opt.out_rows > 0:
        return max(1, opt.out_rows // opt.simd)
    return 1


def _counts(total: int, n: int, unit: int) -> list[int]:
    """Split `total` into n balanced parts; with unit > 1, parts are multiples of unit except
    the last one, which takes the remainder."""
    if unit > 1:
        groups = -(-total // unit)
        base, extra = divmod(groups, n)
        counts = [(base + (i < extra)) * unit for i in range(n)]
        counts[-1] -= sum(counts) - total
        return counts
    base, extra = divmod(total, n)
    return [base + (i < extra) for i in range(n)]


def split(opt: KernelOption, n: int, slice_cost_us: float = SLICE_COST_US) -> Form:
    """`opt` cut into exactly n slices (1 <= n <= max_slices(opt))."""
    if not 1 <= n <= max_slices(opt):
        raise ValueError(f"{opt.name}: cannot cut into {n} slices (max {max_slices(opt)})")
    extra_us = slice_cost_us + opt.slice_us if n > 1 else 0.0
    if n == 1:
        total = opt.out_channels if opt.slicing == "weights" else opt.out_rows
        return Form(opt, (Slice(0, total, opt.weight_bytes, opt.scratch_bytes,
                                opt.compute_us, opt.load_us),))
    if opt.slicing == "weights":
        total = opt.out_channels
        counts = _counts(total, n, opt.simd)
    else:
        total = opt.out_rows
        counts = _counts(total, n, 1)  # rows need not be multiples; each is >= simd
    slices, start, prev_w, prev_s = [], 0, 0, 0
    for c in counts:
        end = start + c
        # Cumulative floor division so per-slice bytes sum exactly to the totals.
        if opt.slicing == "weights":
            w_end = opt.weight_bytes * end // total
            w, s = w_end - prev_w, opt.scratch_bytes
            load = opt.load_us * c / total
            prev_w = w_end
        else:
            s_end = opt.scratch_bytes * end // total
            w, s = (opt.weight_bytes if start == 0 else 0), s_end - prev_s
            load = opt.load_us if start == 0 else 0.0
            prev_s = s_end
        slices.append(Slice(start, c, w, s, opt.compute_us * c / total + extra_us, load))
        start = end
    return Form(opt, tuple(slices))


def min_need(opt: KernelOption) -> int:
    """The smallest peak this option can be sliced down to."""
    return split(opt, max_slices(opt), 0.0).need


def slice_for_limit(opt: KernelOption, limit: int,
                    slice_cost_us: float = SLICE_COST_US) -> Form | None:
    """The form of `opt` with the fewest slices whose peak fits `limit`, or None."""
    limit = int(limit)
    top = max_slices(opt)
    if limit < 0:
        return None
    form = split(opt, 1, slice_cost_us)
    if form.need <= limit or top == 1:
        return form if form.need <= limit else None
    if split(opt, top, 0.0).need > limit:  # even the finest cut does not fit
        return None
    # The largest slice is at least total/n, so fewer than this many slices cannot fit.
    if opt.slicing == "weights":
        room = limit - align(opt.scratch_bytes)
        lo = -(-opt.weight_bytes // room) if room > 0 else top + 1
    else:
        room = limit - align(opt.weight_bytes)
        lo = -(-opt.scratch_bytes // room) if room > 0 else top + 1
    for n in range(max(2, lo), top + 1):
        form = split(opt, n, slice_cost_us)
        if form.need <= limit:
            return form
    return None
