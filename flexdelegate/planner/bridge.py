"""Between the C runtime and the planner: the partition the runtime describes (cffi structs,
see flexdelegate/native/include/flex_api.h) becomes a planner Graph, and the Plan goes back as
the runtime's flat step list. Called from C through the flex_plan_callback extern."""
from __future__ import annotations

import dataclasses
import math
import threading

from .. import _native
from ..memstat import release_heap, rss_bytes, sanitizer_allocator
from ..tflite.schema import BUILTIN_OP_NAMES
from .arena import plan as make_plan
from .cache import PlanCache
from .check import verify
from .graph import Graph, KernelOption, Layer, Tensor
from .result import BudgetTooSmall

# flex_api.h's enums by the planner's names: tensor kinds, slicings and the FLEX_KERNEL_* a
# kernel option is named after ("gemm", "gemm-rows", ...; the node's own kernel, FLEX_KERNEL_NODE,
# is named after its op instead).
KINDS = {v: k for k, v in _native.enum("FLEX_TENSOR_").items()}
SLICING = _native.enum("FLEX_SLICE_")
SLICING_NAMES = {v: k for k, v in SLICING.items()}
KERNELS = {k: v for k, v in _native.enum("FLEX_KERNEL_").items() if v != _native.lib.FLEX_KERNEL_NODE}
KERNEL_NAMES = {v: k for k, v in KERNELS.items()}

# The last plans, so the runtime's second call (when it needed more room for the steps)
# does not plan again.
_memo: dict = {}
# What a new plan may leave resident in the Python heap within the runtime's reserve
# (plan/budget.c FX_BUDGET_RUNTIME_RESERVE); beyond it the arena makes room (fill_plan), in
# at most HEAP_PLANS plans.
HEAP_KEPT = 512 << 10
HEAP_PLANS = 6
# The resident set before the first attempt at a plan, per thread: a retry (desc.attempt > 0,
# the runtime turned a layer chain off after the planner refused) counts what the refused
# attempts kept too, the first plan's first-time costs above all.
_first_attempt = threading.local()
# Under a sanitizer the resident set measures its quarantine, not the heap: no replanning.
MEASURE_HEAP = not sanitizer_allocator()
keep_plans = False  # `flexdelegate plan` sets it to read the whole plan back


def kernel_option(op: str, k) -> KernelOption:
    """One flex_kernel_desc as the planner's option (its name says which C kernel runs it)."""
    wb, sb = int(k.weight_bytes), int(k.scratch_bytes)
    return KernelOption(KERNEL_NAMES.get(int(k.kernel), op.lower()), wb, sb, float(k.compute_us),
                        float(k.load_us) if wb else 0.0, SLICING_NAMES[int(k.slicing)],
                        out_channels=int(k.out_channels), out_rows=int(k.out_rows), simd=max(1, int(k.simd)),
                        slice_us=float(k.slice_us))


def graph_from_desc(ffi, desc) -> Graph:
    tensors = [Tensor(int(t.id), int(t.nbytes), KINDS[t.kind]) for t in (desc.tensors[i] for i in range(desc.n_tensors))]
    layers = []
    for i in range(desc.n_layers):
        d = desc.layers[i]
        op = BUILTIN_OP_NAMES.get(d.builtin, f"OP{d.builtin}")
        options = [kernel_option(op, d.kernels[k]) for k in range(d.n_kernels)]
        layers.append(Layer(i, op, [int(d.inputs[k]) for k in range(d.n_inputs)], int(d.output), options))
    return Graph(tensors, layers)


def _steps(p) -> list[tuple]:
    """(layer, slice, kernel, slicing, start, count, w_off, w_bytes, pinned, new, s_off, s_bytes, dep)."""
    out = []
    for i, (li, si) in enumerate(p.steps):
        lp = p.layers[li]
        start, count = lp.slice_ranges[si] if lp.slice_ranges else (0, 0)
        if lp.weight_slots:
            w = lp.weight_slots[si if lp.slicing == "weights" else 0]
            w_off, w_bytes, new = w.offset, w.nbytes, int(lp.slicing == "weights" or si == 0)
        else:
            w_off = w_bytes = new = 0
        s = lp.scratch[si] if lp.scratch else None
        out.append((li, si, KERNELS.get(lp.kernel, 0), SLICING[lp.slicing], start, count, w_off, w_bytes,
                    int(lp.pinned), new, s.offset if s else 0, s.nbytes if s else 0, p.deps[i]))
    return out


# The C types of flex_step_plan's fields, in _steps' order (flex_api.h).
_I32, _I64, _U64 = (-(1 << 31), (1 << 31) - 1), (-(1 << 63), (1 << 63) - 1), (0, (1 << 64) - 1)
_STEP_TYPES = (_I32, _I32, _I32, _I32, _I64, _I64, _U64, _U64, _I32, _I32, _U64, _U64, _I32)


def _fits_c(p) -> bool:
    """Every value the runtime's structs receive fits its C type (else cffi raises mid-copy)."""
    def ok(v, r):
        return r[0] <= v <= r[1]
    return (all(ok(v, r) for s in _steps(p) for v, r in zip(s, _STEP_TYPES)) and ok(p.deps_start, _I32)
            and ok(p.arena_bytes, _U64) and ok(p.min_budget_bytes, _U64)
            and all(ok(v, _U64) for v in p.tensor_offsets.values()))


def _cached_or_new(graph, budget: int, threads: int, isa: str, arena_limit: int):
    """(plan, made now?). Plans are cached on disk by graph, budget, ISA and threads, so warm
    loads skip planning; one read back is verified before it runs (a damaged or foreign file is
    just replanned). A new plan is made for arena_limit (<= budget; below it, the cache is not
    read) and cached under budget."""
    cache = PlanCache()
    try:
        p = cache.get(graph, budget, isa, threads) if arena_limit == budget else None
        if p is not None:
            verify(p, graph)
            if not _fits_c(p):
                raise ValueError("plan values out of range for the runtime")
            return p, False
    except Exception:  # unreadable or inconsistent: plan afresh
        pass
    try:
        p = make_plan(graph, arena_limit, threads=threads, isa=isa)
    except BudgetTooSmall as e:  # in the caller's terms: what the limit left out counts too
        raise BudgetTooSmall(budget, e.min_budget_bytes + budget - arena_limit, e.layer, e.op) from None
    p = dataclasses.replace(p, budget_bytes=budget)  # fits a smaller limit: fits the budget
    try:
        cache.put(graph, p)
    except OSError:  # a read-only cache directory only costs the next load a replan
        pass
    return p, True


def last_plan():
    """(plan, graph, TFLite node of each layer) of the latest plan made with keep_plans set."""
    if not _memo:
        return None
    p, _, graph, nodes, _ = next(iter(_memo.values()))
    return (p, graph, nodes) if p is not None else None


def _write_string(ffi, field, text: str) -> None:
    raw = text.encode()[: len(field) - 1]
    ffi.memmove(field, raw + b"\0", len(raw) + 1)


def fill_plan(ffi, desc, out) -> int:
    """0 ok (or out.n_steps > out.capacity: call again), -1 infeasible budget, -2 other error."""
    try:
        graph = graph_from_desc(ffi, desc)
        isa = ffi.string(desc.isa).decode() if desc.isa != ffi.NULL else ""
        arena_budget = max(0, int(desc.budget_bytes) - int(desc.reserve_bytes))
        key = (graph.key(), arena_budget, int(desc.threads), isa)
        if key not in _memo:
            _memo.clear()
            # Planning is the budget's Python-side cost: keep only the flat steps (the whole
            # plan only for `flexdelegate plan`), and give the freed heap back to the OS. What
            # stays resident still counts: the heap a new plan leaves fragmented, pinned by the
            # few objects that outlive it (GPT-2-small: ~3 MB, measured; ~0 for a plan read
            # back from the cache). The runtime's reserve holds HEAP_KEPT of it (CNN-sized
            # graphs: ~0.1 MB); while the rest and the arena exceed the arena budget, plan
            # again for what is left. A rerun mostly reuses the freed heap, but the first plan
            # in a process also keeps what it used for the first time (EfficientNet-B0 cold at
            # 12 MB: 2.7, 0.8, 0.2 MB over three plans; stopping at the third ran 0.2 MB over
            # the budget). What never settles is refused, never run over the budget.
            if int(desc.attempt) == 0 or not hasattr(_first_attempt, "rss"):
                _first_attempt.rss = rss_bytes()
            before, limit, last_kept = _first_attempt.rss, arena_budget, None
            for attempt in range(HEAP_PLANS):
                try:
                    p, new = _cached_or_new(graph, arena_budget, int(desc.threads), isa, limit)
                except BudgetTooSmall:
                    _memo.clear()  # not the previous run's plan, which did not fit
                    raise
                nodes = [int(desc.layers[i].node) for i in range(desc.n_layers)]
                offsets = [int(p.tensor_offsets.get(int(desc.tensors[i].id), 0)) for i in range(desc.n_tensors)]
                summary = (p.deps_start, p.arena_bytes, p.min_budget_bytes + int(desc.reserve_bytes), offsets)
                _memo[key] = (p if keep_plans else None, _steps(p), graph if keep_plans else None, nodes, summary)
                arena = p.arena_bytes
                del p
                release_heap()
                kept = rss_bytes() - before - HEAP_KEPT
                if not new or not MEASURE_HEAP or kept <= 0 or arena + kept <= arena_budget:
                    break
                if attempt + 1 == HEAP_PLANS:
                    _memo.clear()
                    raise BudgetTooSmall(arena_budget, arena + kept, -1, "what planning keeps resident")
                # room for what the next plan keeps too: about what the last one added (each
                # rerun adds 0.2-0.4 MB on EfficientNet-B0: without it six plans never fit 9 MB)
                limit = arena_budget - kept - (kept - last_kept if last_kept is not None else 0)
                last_kept = kept
        _, steps, _, _, (deps_start, arena_bytes, min_budget_bytes, offsets) = _memo[key]
        out.n_steps = len(steps)
        if len(steps) > out.capacity:
            return 0
        for i, s in enumerate(steps):
            st = out.steps[i]
            (st.layer, st.slice, st.kernel, st.slicing, st.start, st.count, st.w_offset, st.w_bytes, st.w_pinned,
             st.w_new, st.s_offset, st.s_bytes, st.dep) = s
        out.deps_start, out.arena_bytes, out.min_budget_bytes = deps_start, arena_bytes, min_budget_bytes
        for i, off in enumerate(offsets):
            out.tensor_offsets[i] = off
        return 0
    except BudgetTooSmall as e:
        node = desc.layers[e.layer].node if 0 <= e.layer < desc.n_layers else -1
        # In the user's terms (arena + what the budget also holds), rounded up so the figure
        # quoted back as a budget is feasible.
        user_min = int(e.min_budget_bytes) + int(desc.reserve_bytes)
        user_budget = int(desc.budget_bytes)
        min_mb = math.ceil(user_min / 2**20 * 100) / 100
        where = f"node {node} ({e.op})" if node >= 0 else e.op
        _write_string(ffi, out.error.message, f"budget {user_budget / 2**20:.4g} MB is infeasible: the minimum is "
                                              f"{min_mb:.2f} MB ({user_min} bytes); bottleneck: {where}")
        out.error.min_budget_mb, out.error.node = min_mb, node
        _write_string(ffi, out.error.op, e.op)
        out.min_budget_bytes = user_min
        return -1
    except Exception as e:  # never let an exception cross into C
        _write_string(ffi, out.error.message, f"budget planner error: {type(e).__name__}: {e}")
        return -2
