"""What the planner hands to the runtime: a static arena plan over time x address.

Time is measured in STEPS: one step per slice of a layer (an unsliced layer is one step), in
compute order; `Plan.steps[i] = (layer, slice)`. For a graph with no sliced layer steps are the
layer indices. A block occupies [offset, offset+nbytes) during steps t0..t1 inclusive.

Loader protocol: one loader thread loads the streamed weight units in step order. Before any
compute it may load units whose step is <= deps_start; after computing step i it may load
units whose step is <= deps[i]. A step's compute waits until its weight unit is loaded.
Pinned weights are loaded once at setup and stay resident."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from .graph import MB


class BudgetError(ValueError):
    """The budget cannot hold the graph. `min_budget_bytes` is the smallest that can."""

    def __init__(self, budget_bytes: int, min_budget_bytes: int, layer: int, op: str):
        self.budget_bytes, self.min_budget_bytes = budget_bytes, min_budget_bytes
        self.layer, self.op = layer, op
        super().__init__(
            f"memory budget {budget_bytes / MB:.2f} MB is too small: the minimum is "
            f"{min_budget_bytes / MB:.2f} MB ({min_budget_bytes} bytes), "
            f"bottleneck layer {layer} ({op})")


@dataclass
class Slot:
    offset: int
    nbytes: int
    load_start_step: int  # weights: earliest step the slot is free to load into (0 = at
    #                       start, before step 0); pinned: -1; scratch: the step using it
    step: int = -1        # the (first) step that uses the slot


@dataclass
class LayerPlan:
    index: int
    kernel: str
    slices: int
    pinned: bool
    weight_slots: list  # [Slot]: one per slice (weights slicing) or one (input/none)
    scratch: list       # [Slot]: one per slice (empty when no scratch)
    load_after: int     # loading this layer's first unit may start after computing this step
    #                     (-1: before step 0; also -1 when pinned or without weights)
    op: str = ""
    slicing: str = "none"
    first_step: int = 0
    slice_ranges: list = field(default_factory=list)  # [(start, count)] channels or rows
    compute_us: list = field(default_factory=list)    # per slice
    load_us: list = field(default_factory=list)       # per weight slot


@dataclass
class Block:
    kind: str   # "activation" | "weight" | "scratch"
    owner: int  # tensor id (activation) or layer index
    t0: int
    t1: int
    offset: int
    nbytes: int
    slice: int = 0


@dataclass
class Plan:
    budget_bytes: int
    arena_bytes: int
    layers: list
    blocks: list
    deps: list                 # per step, monotone non-decreasing
    deps_start: int = -1       # loads allowed before step 0
    steps: list = field(default_factory=list)
    tensor_offsets: dict = field(default_factory=dict)  # tensor id -> offset
    pinned_bytes: int = 0
    min_budget_bytes: int = 0
    latency_us: float = 0.0    # simulate() of this plan
    graph_key: str = ""
    isa: str = ""
    threads: int = 1
    max_preload: int = 50

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: dict) -> "Plan":
        d = dict(d)
        d["layers"] = [LayerPlan(**{**l, "weight_slots": [Slot(**s) for s in l["weight_slots"]],
                                    "scratch": [Slot(**s) for s in l["scratch"]],
                                    "slice_ranges": [tuple(r) for r in l["slice_ranges"]]})
                       for l in d["layers"]]
        d["blocks"] = [Block(**b) for b in d["blocks"]]
        d["steps"] = [tuple(s) for s in d["steps"]]
        d["tensor_offsets"] = {int(k): v for k, v in d["tensor_offsets"].items()}
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> "Plan":
        return cls.from_dict(json.loads(text))
