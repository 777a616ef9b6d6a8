"""Re-planning for a new budget, keeping the slicing already written to the weight cache.

Each layer keeps its old (kernel, slice count) when that form still fits at the new budget;
only layers that no longer fit are re-chosen and re-sliced. The activation layout is reused
(cached per graph), so this costs one kernel choice and arena placement pass per variant."""
from __future__ import annotations

from .arena import plan
from .graph import Graph
from .result import Plan


def replan(graph: Graph, old_plan: Plan, new_budget: int, **kw) -> Plan:
    if old_plan.graph_key and old_plan.graph_key != graph.key():
        raise ValueError("old plan was made for another graph")
    prefer = {lp.index: (lp.kernel, lp.slices) for lp in old_plan.layers}
    kw.setdefault("threads", old_plan.threads)
    kw.setdefault("isa", old_plan.isa)
    kw.setdefault("max_preload", old_plan.max_preload)
    return plan(graph, new_budget, prefer=prefer, **kw)


def resliced(old_plan: Plan, new_plan: Plan) -> list[int]:
    """Layers whose kernel or slicing changed (their cached weights must be rewritten)."""
    return [b.index for a, b in zip(old_plan.layers, new_plan.layers)
            if (a.kernel, a.slices) != (b.kernel, b.slices)]
