"""Per-layer kernel choice under a memory limit: the fastest option whose (possibly sliced)
form fits what is left at that layer's step."""
from __future__ import annotations

from .graph import Graph, Layer, align
from .slicing import SLICE_COST_US, Form, min_need, slice_for_limit, split


class NoFit(ValueError):
    def __init__(self, layer: Layer, limit: int, need: int):
        self.layer, self.limit, self.need = layer, limit, need
        super().__init__(f"layer {layer.index} ({layer.op}) needs {need} bytes, "
                         f"{max(limit, 0)} left at its step")


def ranked(layer: Layer, rank: str = "compute") -> list:
    """Options fastest first. "pipelined" ranks a streamed layer by max(compute, load): its
    loads overlap other layers' compute, so the slower of the two bounds its cost."""
    if rank == "pipelined":
        return sorted(layer.options, key=lambda o: max(o.compute_us, o.load_us))
    return sorted(layer.options, key=lambda o: o.compute_us)


def layer_min_need(layer: Layer) -> int:
    return min(min_need(o) for o in layer.options)


def choose_layer(layer: Layer, limit: int, slice_cost_us: float = SLICE_COST_US,
                 rank: str = "compute") -> Form | None:
    for o in ranked(layer, rank):
        form = slice_for_limit(o, limit, slice_cost_us)
        if form is not None:
            return form
    return None


def choose(graph: Graph, limits, slice_cost_us: float = SLICE_COST_US, rank: str = "compute") -> list[Form]:
    """limits[j]: bytes available to layer j's weights + scratch. Raises NoFit."""
    forms = []
    for layer, limit in zip(graph.layers, limits):
        form = choose_layer(layer, int(limit), slice_cost_us, rank)
        if form is None:
            raise NoFit(layer, int(limit), layer_min_need(layer))
        forms.append(form)
    return forms


def live_bytes(graph: Graph) -> list[int]:
    """Aligned bytes of the activations resident at each layer step."""
    live = [0] * len(graph.layers)
    for tid, (a, b) in graph.lifetimes().items():
        n = align(graph.tensors[tid].nbytes)
        for t in range(a, b + 1):
            live[t] += n
    return live


def choose_for_budget(graph: Graph, budget: int, slice_cost_us: float = SLICE_COST_US,
                      rank: str = "compute") -> list[Form]:
    """Choice against budget minus live activations (ignores fragmentation; the arena
    planner uses the contiguous free range its activation layout leaves instead)."""
    return choose(graph, [budget - x for x in live_bytes(graph)], slice_cost_us, rank=rank)
