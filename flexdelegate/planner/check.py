"""Independent validation of a Plan against its Graph (tests; also a runtime-side sanity check
before executing a plan loaded from disk). Raises PlanInvalid naming the first violation."""
from __future__ import annotations

import numpy as np

from .graph import ALIGN, Graph, align
from .result import Plan


class PlanInvalid(AssertionError):
    pass


def _fail(msg):
    raise PlanInvalid(msg)


def verify(plan: Plan, graph: Graph) -> None:
    L, nsteps = len(graph.layers), len(plan.steps)
    if len(plan.layers) != L:
        _fail("one LayerPlan per layer expected")
    if plan.arena_bytes > plan.budget_bytes:
        _fail(f"arena {plan.arena_bytes} exceeds budget {plan.budget_bytes}")
    # Counts before anything is enumerated: a plan read from disk may claim 2**62 slices.
    if any(lp.slices < 1 for lp in plan.layers) or sum(lp.slices for lp in plan.layers) != nsteps:
        _fail("every layer needs >= 1 slice, and the slices must add up to the steps")
    if [lp.index for lp in plan.layers] != list(range(L)):
        _fail("layer plans must be numbered 0..L-1 in order")
    for b in plan.blocks:  # what the checks below index by
        if b.kind not in ("activation", "weight", "scratch") or (b.kind != "activation" and not 0 <= b.owner < L):
            _fail(f"block of an unknown kind or layer: {b}")
    first = [lp.first_step for lp in plan.layers]
    last = [lp.first_step + lp.slices - 1 for lp in plan.layers]
    if plan.steps != [(j, s) for j in range(L) for s in range(plan.layers[j].slices)]:
        _fail("steps must enumerate (layer, slice) in compute order")
    if first != [sum(lp.slices for lp in plan.layers[:j]) for j in range(L)]:
        _fail("a layer's first_step must be the step of its first slice")

    # every block inside the arena, aligned, and no two overlapping in time x address
    bl = plan.blocks
    t0 = np.array([b.t0 for b in bl], np.int64)
    t1 = np.array([b.t1 for b in bl], np.int64)
    lo = np.array([b.offset for b in bl], np.int64)
    hi = lo + np.array([b.nbytes for b in bl], np.int64)
    for b in bl:
        if b.offset < 0 or b.offset + b.nbytes > plan.arena_bytes or b.nbytes <= 0:
            _fail(f"block outside the arena: {b}")
        if b.offset % ALIGN or b.nbytes % ALIGN:
            _fail(f"unaligned block: {b}")
        if not 0 <= b.t0 <= b.t1 < nsteps:
            _fail(f"block time out of range: {b}")
    # A band of rows of the blocks x blocks clash matrix at a time (~256K cells): a budgeted load
    # checks the plan it reads back under its budget, and the whole matrix of a 1000-step plan
    # took ~4 MB of temporaries.
    band = max(1, (1 << 18) // max(1, len(bl)))
    for r0 in range(0, len(bl), band):
        r = slice(r0, r0 + band)
        clash = ((t0[r, None] <= t1[None, :]) & (t0[None, :] <= t1[r, None]) &
                 (lo[r, None] < hi[None, :]) & (lo[None, :] < hi[r, None]))
        rows = np.arange(clash.shape[0])
        clash[rows, r0 + rows] = False  # a block against itself
        if clash.any():
            i, k = np.argwhere(clash)[0]
            _fail(f"blocks overlap: {bl[r0 + i]} and {bl[k]}")

    # activations resident over their lifetimes
    acts = {b.owner: b for b in bl if b.kind == "activation"}
    for tid, (a, b) in graph.lifetimes().items():
        n = align(graph.tensors[tid].nbytes)
        if n == 0:
            continue
        blk = acts.get(tid)
        if blk is None or blk.nbytes < n or blk.t0 > first[a] or blk.t1 < last[b]:
            _fail(f"tensor {tid} not resident over steps {first[a]}..{last[b]}: {blk}")
        if plan.tensor_offsets.get(tid) != blk.offset:
            _fail(f"tensor {tid}: tensor_offsets disagrees with its block")

    # weights present at every step of their layer, scratch at its step
    wblocks = {}
    for k, b in enumerate(bl):
        if b.kind in ("weight", "scratch"):
            wblocks.setdefault((b.kind, b.owner, b.slice), []).append(b)
    for lp, layer in zip(plan.layers, graph.layers):
        opt = next((o for o in layer.options if o.name == lp.kernel), None)
        if opt is None:
            _fail(f"layer {lp.index}: unknown kernel {lp.kernel}")
        total = opt.out_channels if opt.slicing == "weights" else opt.out_rows
        if lp.slicing not in ("none", opt.slicing):
            _fail(f"layer {lp.index}: kernel {lp.kernel} cannot be sliced by {lp.slicing}")
        if lp.slicing == "none" and lp.slices != 1:
            _fail(f"layer {lp.index}: {lp.slices} slices of an unsliced layer")
        if lp.slicing != "none":  # back to back from 0, each non-empty, exactly covering the layer
            starts = [0] + [sum(c for _, c in lp.slice_ranges[:i + 1]) for i in range(len(lp.slice_ranges))]
            if len(lp.slice_ranges) != lp.slices or any(c < (1 if total else 0) for _, c in lp.slice_ranges) or \
                    [s for s, _ in lp.slice_ranges] != starts[:-1] or starts[-1] != total:
                _fail(f"layer {lp.index}: slice ranges {lp.slice_ranges[:4]} do not tile [0, {total})")
        if opt.weight_bytes:
            units = lp.slices if opt.slicing == "weights" else 1
            if len(lp.weight_slots) != units:
                _fail(f"layer {lp.index}: {len(lp.weight_slots)} weight slots, {units} expected")
            if sum(s.nbytes for s in lp.weight_slots) < opt.weight_bytes:
                _fail(f"layer {lp.index}: weight slots smaller than the weights")
            for s, slot in enumerate(lp.weight_slots):
                if slot.nbytes == 0:
                    continue
                need = ((first[lp.index] + s, first[lp.index] + s) if opt.slicing == "weights"
                        else (first[lp.index], last[lp.index]))
                if lp.pinned:
                    need = (0, nsteps - 1)
                ok = [b for b in wblocks.get(("weight", lp.index, s), [])
                      if b.offset == slot.offset and b.t0 <= need[0] and b.t1 >= need[1]
                      and b.nbytes >= slot.nbytes]
                if not ok:
                    _fail(f"layer {lp.index} slice {s}: weights not resident at {need}")
        for s in range(lp.slices):
            step = first[lp.index] + s
            blocks = [b for b in wblocks.get(("scratch", lp.index, s), []) if b.t0 <= step <= b.t1]
            # the runtime uses the slot, not the block: each slot must lie inside a placed block
            for sl in (sl for sl in lp.scratch if sl.step == step):
                if not any(b.offset == sl.offset and b.nbytes >= sl.nbytes for b in blocks):
                    _fail(f"layer {lp.index} slice {s}: scratch slot {sl} not placed")
        if sum(sl.nbytes for sl in lp.scratch) < opt.scratch_bytes:
            _fail(f"layer {lp.index}: scratch smaller than the kernel needs")
        # an output-channel slice needs all of its kernel's scratch (Winograd: the whole input
        # transformed), as the C loader checks per step: a split of it is not a smaller slice
        if opt.slicing == "weights" and opt.scratch_bytes and \
                any(sl.nbytes < opt.scratch_bytes for sl in lp.scratch):
            _fail(f"layer {lp.index}: a channel slice's scratch is smaller than the kernel needs")

    # deps: monotone, never waiting on the future, and safe for every streamed load
    deps = [plan.deps_start] + list(plan.deps)
    if len(plan.deps) != nsteps or any(x > y for x, y in zip(deps, deps[1:])):
        _fail("deps must have one entry per step and be non-decreasing")
    for i, d in enumerate(plan.deps[:-1]):
        if d < i + 1:
            _fail(f"deps[{i}] = {d}: the next step's weights could never load")
    for k, b in enumerate(bl):
        if b.kind != "weight" or b.t1 - b.t0 == nsteps - 1 and plan.layers[b.owner].pinned:
            continue
        step = first[b.owner] + (b.slice if plan.layers[b.owner].slicing == "weights" else 0)
        gate = next(i - 1 for i, d in enumerate(deps) if d >= step)
        if gate >= step:
            _fail(f"load of layer {b.owner} slice {b.slice} gated after its own step")
        if b.t0 > gate + 1:
            _fail(f"block {b} starts after the loader may write it (gate {gate})")
        m = (lo < hi[k]) & (hi > lo[k]) & (t0 < b.t0)
        if m.any() and t1[m].max() > gate:
            _fail(f"load of {b} may start before step {int(t1[m].max())} frees its memory")
