"""Preload-aware static arena planning (FlexNN's slicing-loading-computing joint plan).

1. Activations are laid out once per graph, independent of the budget, as two stacks growing
   from the buffer's two ends (FlexNN alternates ends; we pick per tensor the end that keeps
   bottom+top extent lowest, alternating on ties). Between the stacks at layer j lies one
   contiguous free range of `capacity - pinned - B[j] - T[j]` bytes.
2. Each layer's kernel and slicing is chosen to fit that range (choice.py). That makes a plan
   without preloading always placeable, so the minimum budget is exact and closed-form:
   max_j(B[j] + T[j] + smallest need of layer j).
3. Weight units are then placed in step order as early as memory allows (monotone loader
   order, at most `max_preload` layers ahead), each followed by its step's scratch; if the
   scratch no longer fits, the unit is retried with a later start, down to no preload.
4. Weights are pinned (resident for the whole run) when they all fit; otherwise I/O-bound
   layers (compute < 2 x load) are pinned greedily while every layer still fits, and the
   variant with the best simulated latency is kept."""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from .choice import choose, layer_min_need
from .graph import ALIGN, Graph, align
from .result import Block, BudgetTooSmall, LayerPlan, Plan, Slot
from .slicing import SLICE_COST_US, Form, slice_for_limit, split

_INF = 1 << 62


# ---------------------------------------------------------------- time x address occupancy

class Plane:
    """Blocks over time x address, indexed per step; searches free ranges over a time span.
    Pure Python: spans hold a handful of blocks each, where numpy's per-call cost dominates."""

    def __init__(self, cap: int, nsteps: int):
        self.cap = cap
        self.blocks: list[tuple] = []  # (t0, t1, lo, hi)
        self.by_step: list[list] = [[] for _ in range(nsteps)]

    @property
    def n(self) -> int:
        return len(self.blocks)

    def add(self, t0: int, t1: int, lo: int, size: int):
        k = len(self.blocks)
        self.blocks.append((t0, t1, lo, lo + size))
        for s in range(t0, t1 + 1):
            self.by_step[s].append(k)

    def truncate(self, n: int):
        """Drop the blocks added after the first n (undo a trial placement)."""
        while len(self.blocks) > n:
            t0, t1, _, _ = self.blocks.pop()
            for s in range(t0, t1 + 1):
                self.by_step[s].pop()

    def ids(self, t0: int, t1: int) -> set:
        out = set()
        for s in range(t0, t1 + 1):
            out.update(self.by_step[s])
        return out

    def gaps(self, t0: int, t1: int) -> list:
        """Free [start, end) ranges common to steps t0..t1, by address."""
        return complement(sorted(self.blocks[k][2:] for k in self.ids(t0, t1)), self.cap)

    def find(self, size: int, t0: int, t1: int, mode: str = "first"):
        return pick(self.gaps(t0, t1), size, mode)


def complement(ivs, cap: int) -> list:
    gaps, cur = [], 0
    for lo, hi in ivs:
        if lo > cur:
            gaps.append((cur, lo))
        cur = max(cur, hi)
    if cur < cap:
        gaps.append((cur, cap))
    return gaps


def subtract(gaps: list, ivs) -> list:
    for lo, hi in ivs:
        out = []
        for g0, g1 in gaps:
            if hi <= g0 or lo >= g1:
                out.append((g0, g1))
                continue
            if lo > g0:
                out.append((g0, lo))
            if hi < g1:
                out.append((hi, g1))
        gaps = out
    return gaps


def pick(gaps: list, size: int, mode: str = "first"):
    """Offset in the first / smallest ("best") / last ("top") gap holding `size`, or None."""
    fit = [g for g in gaps if g[1] - g[0] >= size]
    if not fit:
        return None
    if mode == "top":
        return fit[-1][1] - size
    if mode == "best":
        return min(fit, key=lambda g: g[1] - g[0])[0]
    return fit[0][0]


# ---------------------------------------------------------------- activation layout

@dataclass
class Layout:
    acts: list          # (tensor id, first layer, last layer, stack offset, bytes, top?)
    B: np.ndarray       # bottom stack extent at each layer step
    T: np.ndarray       # top stack extent at each layer step
    need_min: np.ndarray
    min_cap: int
    bottleneck: int


_LAYOUTS: OrderedDict = OrderedDict()  # graph.key() -> Layout (a plan of the same graph at another budget reuses it)
_LOCK = threading.Lock()


def layout(graph: Graph) -> Layout:
    """The activation layout of `graph` (memoized: it does not depend on the budget)."""
    key = graph.key()
    with _LOCK:
        if key in _LAYOUTS:
            _LAYOUTS.move_to_end(key)
            return _LAYOUTS[key]
    L = len(graph.layers)
    need = np.array([layer_min_need(l) for l in graph.layers], np.int64)
    life = graph.lifetimes()
    B, T = np.zeros(L, np.int64), np.zeros(L, np.int64)
    bottom, top = Plane(_INF, L), Plane(_INF, L)
    acts, last_top = [], True
    order = sorted(graph.tensors.values(), key=lambda t: (life[t.id][0], t.id))
    for t in order:
        a, b = life[t.id]
        z = align(t.nbytes)
        if z == 0:
            acts.append((t.id, a, b, 0, 0, False))
            continue
        ob, ot = bottom.find(z, a, b), top.find(z, a, b)
        bn, tn = np.maximum(B[a:b + 1], ob + z), np.maximum(T[a:b + 1], ot + z)
        base = B + T + need
        peak_out = max(base[:a].max(initial=0), base[b + 1:].max(initial=0))
        cost_b = (max(peak_out, int((bn + T[a:b + 1] + need[a:b + 1]).max())),
                  int((bn + T[a:b + 1]).sum()))
        cost_t = (max(peak_out, int((B[a:b + 1] + tn + need[a:b + 1]).max())),
                  int((B[a:b + 1] + tn).sum()))
        use_top = cost_t < cost_b or (cost_t == cost_b and not last_top)
        if use_top:
            top.add(a, b, ot, z)
            T[a:b + 1] = tn
            acts.append((t.id, a, b, ot, z, True))
        else:
            bottom.add(a, b, ob, z)
            B[a:b + 1] = bn
            acts.append((t.id, a, b, ob, z, False))
        last_top = use_top
    total = B + T + need
    j = int(np.argmax(total))
    lay = Layout(acts, B, T, need, max(int(total[j]), ALIGN), j)
    with _LOCK:
        _LAYOUTS[key] = lay
        while len(_LAYOUTS) > 16:
            _LAYOUTS.popitem(last=False)
    return lay


def min_budget(graph: Graph) -> tuple[int, int]:
    """(smallest feasible budget in bytes, bottleneck layer index)."""
    lay = layout(graph)
    return lay.min_cap, lay.bottleneck


def _budget_error(graph: Graph, budget: int) -> BudgetTooSmall:
    lay = layout(graph)
    return BudgetTooSmall(budget, lay.min_cap, lay.bottleneck, graph.layers[lay.bottleneck].op)


# ---------------------------------------------------------------- building one plan

def _pinned_need(form: Form) -> int:
    """Peak of a pinned layer at its step: its weights live in the pinned region."""
    return max(align(s.scratch_bytes) for s in form.slices)


def _unit_bytes(form: Form) -> int:
    return sum(align(u) for u in form.weight_units)


def _build(graph: Graph, lay: Layout, cap: int, forms: list, pinned: set,
           max_preload: int) -> Plan:
    L = len(graph.layers)
    first, steps = [], []
    for j, f in enumerate(forms):
        first.append(len(steps))
        steps += [(j, s) for s in range(f.n)]
    last = [first[j] + forms[j].n - 1 for j in range(L)]
    nsteps = len(steps)
    wp = sum(_unit_bytes(forms[j]) for j in pinned)
    base = cap - wp  # the top stack hangs down from here; pinned weights sit above it
    plane = Plane(base, nsteps)  # the pinned region above `base` is never searched
    blocks: list[Block] = []

    def put(kind, owner, t0, t1, off, size, sl=0):
        plane.add(t0, t1, off, size)
        blocks.append(Block(kind, owner, t0, t1, off, size, sl))

    layer_plans = []
    for j, f in enumerate(forms):
        layer_plans.append(LayerPlan(
            index=j, kernel=f.option.name, slices=f.n, pinned=j in pinned, weight_slots=[],
            scratch=[], load_after=-1, op=graph.layers[j].op, slicing=f.option.slicing,
            first_step=first[j], slice_ranges=[(s.start, s.count) for s in f.slices],
            compute_us=[s.compute_us for s in f.slices],
            load_us=[] if j in pinned else
            ([s.load_us for s in f.slices] if f.option.slicing == "weights" else
             [f.option.load_us]) if f.weight_units else []))

    off = base
    for j in sorted(pinned):
        for s, u in enumerate(forms[j].weight_units):
            blocks.append(Block("weight", j, 0, nsteps - 1, off, align(u), s))
            layer_plans[j].weight_slots.append(Slot(off, align(u), -1, first[j] + s))
            off += align(u)

    tensor_offsets = {}
    for tid, a, b, o, z, is_top in lay.acts:
        offset = base - o - z if is_top else o
        tensor_offsets[tid] = offset
        if z:
            put("activation", tid, first[a], last[b], offset, z)

    units = []  # streamed weight units in step order: (layer, slice, block index, step)
    prev_start = 0
    for j, f in enumerate(forms):
        lp = layer_plans[j]
        scratch = [(first[j] + s, align(sl.scratch_bytes), s) for s, sl in enumerate(f.slices)]
        if f.weight_units and j not in pinned:
            lo_step = first[max(0, j - max_preload)]
            if f.option.slicing == "weights":
                groups = [(first[j] + s, first[j] + s, [scratch[s]], align(u), s)
                          for s, u in enumerate(f.weight_units)]
            else:
                groups = [(first[j], last[j], scratch, align(f.weight_units[0]), 0)]
            for a, e, scr, size, s in groups:
                start, woff, soffs = _place_unit(plane, size, a, e, scr,
                                                 max(prev_start, lo_step))
                prev_start = start
                bi = None
                if size:
                    bi = len(blocks)
                    blocks.append(Block("weight", j, start, e, woff, size, s))
                units.append((j, s, bi, a))
                lp.weight_slots.append(Slot(woff, size, start, a))
                for (u, z, ss), o in zip(scr, soffs):
                    if z:
                        blocks.append(Block("scratch", j, u, u, o, z, ss))
                        lp.scratch.append(Slot(o, z, u, u))
        else:
            for u, z, ss in scratch:
                if z:
                    o = plane.find(z, u, u, "best")
                    assert o is not None, "scratch must fit the middle range"
                    put("scratch", j, u, u, o, z, ss)
                    lp.scratch.append(Slot(o, z, u, u))

    deps_start, deps = _resolve_deps(blocks, units, layer_plans, nsteps)
    arena = max((b.offset + b.nbytes for b in blocks), default=0)
    return Plan(budget_bytes=cap, arena_bytes=arena, layers=layer_plans, blocks=blocks,
                deps=deps, deps_start=deps_start, steps=steps, tensor_offsets=tensor_offsets,
                pinned_bytes=wp, min_budget_bytes=lay.min_cap, graph_key=graph.key(),
                max_preload=max_preload)


def _place_unit(plane: Plane, size: int, a: int, e: int, scratch: list, lo: int):
    """Place a weight unit needed over steps a..e, then its scratch [(step, bytes, slice)].

    Start as early as a free range exists over [start, e], walking back from a (free space
    only shrinks as the span grows); if the scratch then does not fit, retry later starts,
    ending with no preload (start = a), which always fits because the layer's form fits the
    middle range. Returns (start, weight offset, scratch offsets); blocks stay in the plane."""
    earliest = a
    if size:
        seen = plane.ids(a, e)
        gaps = complement(sorted(plane.blocks[k][2:] for k in seen), plane.cap)
        while earliest > lo:
            new = [k for k in plane.by_step[earliest - 1] if k not in seen]
            if not new:
                earliest -= 1
                continue
            wider = subtract(gaps, [plane.blocks[k][2:] for k in new])
            if pick(wider, size) is None:
                break
            gaps, earliest = wider, earliest - 1
            seen.update(new)
    starts, s = [], earliest
    while True:
        starts.append(s)
        if s >= a:
            break
        s = max(s + 1, (s + a + 1) // 2)
    for start in starts:
        mark = plane.n
        woff = 0
        if size:
            woff = pick(gaps if start == earliest else plane.gaps(start, e), size, "best")
            plane.add(start, e, woff, size)
        soffs = []
        for u, z, _ in scratch:
            o = plane.find(z, u, u, "best") if z else 0
            if o is None:
                break
            if z:
                plane.add(u, u, o, z)
            soffs.append(o)
        if len(soffs) == len(scratch):
            return start, woff, soffs
        plane.truncate(mark)
    raise AssertionError("no-preload placement must always fit")  # choice guarantees it


def _resolve_deps(blocks: list, units: list, layer_plans: list, nsteps: int):
    """Loader dependencies from the placed blocks.

    A unit may start loading once every block that overlaps its addresses and ends before it
    has ended (comp(i) -> load(j) when their memory overlaps). Loads are serial in step order,
    so the gate is the running maximum; each unit's block then starts right after its gate
    (it may only grow earlier: that memory is free since its last earlier user ended)."""
    t0 = np.array([b.t0 for b in blocks], np.int64)
    t1 = np.array([b.t1 for b in blocks], np.int64)
    lo = np.array([b.offset for b in blocks], np.int64)
    hi = lo + np.array([b.nbytes for b in blocks], np.int64)
    gates, g = [], -1
    for j, s, bi, a in units:
        if bi is not None:
            m = (lo < hi[bi]) & (hi > lo[bi]) & (t1 < t0[bi])
            if m.any():
                g = max(g, int(t1[m].max()))
        gates.append(g)
    seen = set()
    for (j, s, bi, a), g in zip(units, gates):
        if bi is not None:
            blocks[bi].t0 = g + 1
        slot = layer_plans[j].weight_slots[s]
        slot.load_start_step = g + 1
        if j not in seen:
            layer_plans[j].load_after = g
            seen.add(j)

    def allowed(i):
        while allowed.k < len(units) and gates[allowed.k] <= i:
            allowed.k += 1
        return units[allowed.k][3] - 1 if allowed.k < len(units) else nsteps - 1
    allowed.k = 0
    deps_start = allowed(-1)
    return deps_start, [allowed(i) for i in range(nsteps)]


def simulate(plan: Plan, graph: Graph | None = None) -> float:
    """Estimated latency (us): one compute thread running steps in order and one loader
    thread loading streamed units in step order, each after its deps gate; a step waits for
    its weights. Pinned weights cost nothing (loaded at setup)."""
    if graph is not None and plan.graph_key and graph.key() != plan.graph_key:
        raise ValueError("plan was made for another graph")
    nsteps = len(plan.steps)
    comp = [0.0] * nsteps
    loads = []
    for lp in plan.layers:
        for s, c in enumerate(lp.compute_us):
            comp[lp.first_step + s] = c
        if not lp.pinned:
            for slot, us in zip(lp.weight_slots, lp.load_us):
                loads.append((slot.step, us))
    loads.sort()
    # gate of a unit at step a: the first step after which deps allow it
    gate_of, i = {}, -1
    for a, _ in loads:
        while (plan.deps_start if i < 0 else plan.deps[i]) < a:
            i += 1
        gate_of[a] = i
    done = [0.0] * nsteps
    ready = {}
    loader, k, t = 0.0, 0, 0.0
    for u in range(nsteps):
        while k < len(loads) and loads[k][0] <= u:
            a, us = loads[k]
            g = gate_of[a]
            loader = max(loader, done[g] if g >= 0 else 0.0) + us
            ready[a] = loader
            k += 1
        t = max(t, ready.get(u, 0.0)) + comp[u]
        done[u] = t
    return t


# ---------------------------------------------------------------- the planner

def _pin_greedy(graph: Graph, forms: list, limits: np.ndarray,
                io_bound_only: bool = True) -> list:
    """I/O-bound layers (compute < 2 x load) pinned, most I/O-bound first, while every layer
    still fits its middle range. Returns them in the order added (each prefix is feasible)."""
    need = np.array([f.need for f in forms], np.int64)
    slack = limits - need
    cand = []
    for j, f in enumerate(forms):
        load = sum(s.load_us for s in f.slices)
        comp = sum(s.compute_us for s in f.slices)
        if f.weight_units and (comp < 2 * load or not io_bound_only):
            cand.append((comp / load if load else 0.0, j))
    order = []
    for _, j in sorted(cand):
        w = _unit_bytes(forms[j])
        trial = slack - w
        trial[j] += need[j] - _pinned_need(forms[j])
        if trial.min() >= 0:
            slack = trial
            order.append(j)
    return order


def _balance(fast: list, lean: list, target: float = 1.0) -> list:
    """Start from the load-lean choice and switch layers to their compute-fastest form, best
    compute saved per load added first, while total loading stays below `target` x total
    compute (the loader then hides behind compute instead of idling)."""
    def tot(f, attr):
        return sum(getattr(s, attr) for s in f.slices)
    forms = list(lean)
    comp = sum(tot(f, "compute_us") for f in forms)
    load = sum(tot(f, "load_us") for f in forms)
    gains = []
    for j, (a, b) in enumerate(zip(fast, lean)):
        saved, extra = tot(b, "compute_us") - tot(a, "compute_us"), tot(a, "load_us") - tot(b, "load_us")
        if a is not b and saved > 0:
            gains.append((-saved / max(extra, 1e-9), j, saved, extra))
    for _, j, saved, extra in sorted(gains):
        if load + extra <= target * (comp - saved):
            forms[j] = fast[j]
            load, comp = load + extra, comp - saved
    return forms


def _finer(forms: list, gran: int, slice_cost_us: float) -> list:
    """Weight-sliced layers re-cut so that no weight unit exceeds `gran` bytes (where the
    option allows); the kernel choice is kept."""
    out = []
    for f in forms:
        if f.option.slicing == "weights" and f.weight_units and max(f.weight_units) > gran:
            f = slice_for_limit(f.option, gran + align(f.option.scratch_bytes),
                                slice_cost_us) or f
        out.append(f)
    return out


def plan(graph: Graph, budget_bytes: int, threads: int = 1, isa: str = "",
         max_preload: int = 50, *, slice_cost_us: float = SLICE_COST_US) -> Plan:
    """Plan `graph` into `budget_bytes`. Raises BudgetTooSmall below the minimum budget."""
    lay = layout(graph)
    cap = int(budget_bytes) // ALIGN * ALIGN
    if cap < lay.min_cap:
        raise _budget_error(graph, int(budget_bytes))
    ext = lay.B + lay.T

    # Everything resident: the fastest kernels unsliced, all pinned, in the smallest arena that
    # holds them.
    forms_all = [split(min(layer.options, key=lambda o: o.compute_us), 1, slice_cost_us) for layer in graph.layers]
    w_all = sum(_unit_bytes(f) for f in forms_all)
    u_all = w_all + int(max(ext + np.array([_pinned_need(f) for f in forms_all])))
    if cap >= u_all:
        best = _build(graph, lay, u_all, forms_all,
                      {j for j, f in enumerate(forms_all) if f.weight_units}, max_preload)
        best.latency_us = simulate(best)
    else:
        limits = cap - ext
        tried: dict = {}  # (forms, pinned) signature -> (latency, order tried, forms, plan)

        def consider(forms, pinned):
            sig = (tuple((f.option.name, f.n) for f in forms), tuple(sorted(pinned)))
            if sig not in tried:
                p = _build(graph, lay, cap, forms, set(pinned), max_preload)
                p.latency_us = simulate(p)
                tried[sig] = (p.latency_us, len(tried), forms, p)

        def ranked(k):
            return [v[2] for v in sorted(tried.values(), key=lambda v: v[:2])[:k]]
        # Stage 1: kernel choice ranked by compute, by max(compute, load), or balanced.
        fast = choose(graph, limits, slice_cost_us, "compute")
        lean = choose(graph, limits, slice_cost_us, "pipelined")
        for forms in (fast, lean, _balance(fast, lean), _balance(fast, lean, 0.8)):
            consider(forms, ())
        # Stage 1b: finer weight slices than needed let the loader start on a big layer
        # (VGG's FC) long before it runs.
        for forms in ranked(2):
            for g in (cap // 4, cap // 16):
                consider(_finer(forms, g, slice_cost_us), ())
        # Stage 2: in the three best variants, pin I/O-bound layers (FlexNN: compute < 2 x
        # load) that fit, or half of them; or pin any layers that fit, most I/O-bound first.
        for forms in ranked(3):
            order = _pin_greedy(graph, forms, limits)
            w = np.cumsum([0] + [_unit_bytes(forms[j]) for j in order])
            for frac in (1.0, 0.5):
                k = int(np.searchsorted(w, frac * w[-1], side="right")) - 1
                consider(forms, order[:k])
            consider(forms, _pin_greedy(graph, forms, limits, io_bound_only=False))
        best = min(tried.values(), key=lambda v: v[:2])[3]
    best.budget_bytes = int(budget_bytes)
    best.isa, best.threads = isa, threads
    return best
