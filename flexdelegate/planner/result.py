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


class BudgetTooSmall(ValueError):
    """The budget cannot hold the graph. `min_budget_bytes` is the smallest that can. The planner's
    own (bytes, layer index); the bridge turns it into C's flex_error, which the public
    flexdelegate.BudgetError reports (MB, TFLite node)."""

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
        """The plan of to_dict's output. Anything else (a plan file damaged or written by hand)
        raises ValueError: every field must be there with its type, integers within int64."""
        d = _fields(d, _PLAN, "plan")
        d["layers"] = [LayerPlan(**{**_fields(l, _LAYER, "layer"),
                                    "weight_slots": [Slot(**_fields(s, _SLOT, "slot")) for s in l["weight_slots"]],
                                    "scratch": [Slot(**_fields(s, _SLOT, "slot")) for s in l["scratch"]],
                                    "slice_ranges": [_pair(r, "slice range") for r in l["slice_ranges"]]})
                       for l in d["layers"]]
        d["blocks"] = [Block(**_fields(b, _BLOCK, "block")) for b in d["blocks"]]
        d["steps"] = [_pair(s, "step") for s in d["steps"]]
        if not all(_is_int(v) for v in d["deps"]):
            raise ValueError("plan: deps must be integers")
        offsets = {}
        for k, v in d["tensor_offsets"].items():
            if not (isinstance(k, str) and k.lstrip("-").isdigit() and _is_int(v)):
                raise ValueError("plan: tensor_offsets must map tensor ids to integers")
            offsets[int(k)] = v
        d["tensor_offsets"] = offsets
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> "Plan":
        return cls.from_dict(json.loads(text))


# ---- reading a plan back: the type of every field (to_dict writes exactly these) ----------
_INT, _NUM, _STR, _BOOL, _LIST, _DICT = "int", "number", "str", "bool", "list", "dict"
_SLOT = {"offset": _INT, "nbytes": _INT, "load_start_step": _INT, "step": _INT}
_BLOCK = {"kind": _STR, "owner": _INT, "t0": _INT, "t1": _INT, "offset": _INT, "nbytes": _INT, "slice": _INT}
_LAYER = {"index": _INT, "kernel": _STR, "slices": _INT, "pinned": _BOOL, "weight_slots": _LIST, "scratch": _LIST,
          "load_after": _INT, "op": _STR, "slicing": _STR, "first_step": _INT, "slice_ranges": _LIST,
          "compute_us": _LIST, "load_us": _LIST}
_PLAN = {"budget_bytes": _INT, "arena_bytes": _INT, "layers": _LIST, "blocks": _LIST, "deps": _LIST,
         "deps_start": _INT, "steps": _LIST, "tensor_offsets": _DICT, "pinned_bytes": _INT, "min_budget_bytes": _INT,
         "latency_us": _NUM, "graph_key": _STR, "isa": _STR, "threads": _INT, "max_preload": _INT}


def _is_int(v) -> bool:
    """An integer a C int64 holds (JSON has no other kind; bool is not one)."""
    return type(v) is int and -(1 << 63) <= v < (1 << 63)


_CHECKS = {_INT: _is_int, _NUM: lambda v: _is_int(v) or type(v) is float, _STR: lambda v: type(v) is str,
           _BOOL: lambda v: type(v) is bool, _LIST: lambda v: type(v) is list, _DICT: lambda v: type(v) is dict}


def _fields(d, schema: dict, what: str) -> dict:
    if type(d) is not dict or set(d) != set(schema):
        raise ValueError(f"plan: a {what} must have exactly the fields {sorted(schema)}")
    for name, kind in schema.items():
        if not _CHECKS[kind](d[name]):
            raise ValueError(f"plan: {what} field {name!r} must be {kind}, got {d[name]!r:.40}")
    if what == "layer" and not all(_CHECKS[_NUM](v) for v in d["compute_us"] + d["load_us"]):
        raise ValueError("plan: layer timings must be numbers")
    return dict(d)


def _pair(v, what: str) -> tuple:
    if type(v) is not list or len(v) != 2 or not all(_is_int(x) for x in v):
        raise ValueError(f"plan: a {what} must be two integers, got {v!r:.40}")
    return tuple(v)
