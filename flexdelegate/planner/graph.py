"""The planner's view of a model: tensors, layers in compute order, kernel options.

The C runtime exports this (layer order = its execution order); tests/planner/synthetic.py makes test ones.
Sizes are bytes, times microseconds. MB means MiB (2**20) throughout the planner."""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

from .._native import lib

MB = 1 << 20
ALIGN = lib.FLEX_ARENA_ALIGN  # every arena block starts and ends on a multiple (flex_api.h)


def align(n: int) -> int:
    return -(-int(n) // ALIGN) * ALIGN


class GraphError(ValueError):
    pass


@dataclass(frozen=True)
class Tensor:
    id: int
    nbytes: int
    kind: str = "activation"  # "input" | "output" | "activation"


@dataclass(frozen=True)
class KernelOption:
    """One way to run a layer, with the caller's estimates.

    slicing: "weights" splits the weights by output channels (FC, GEMM, Winograd: `out_channels`
    must be set); "input" splits the im2col working set (scratch) by `out_rows` (im2col matrix
    rows, i.e. output pixels); "none" cannot be sliced. slice_us: what each slice past the
    first costs on top of the planner's flat per-slice cost (Winograd, pre-transformed or run-time,
    transforms the whole input again for every output-channel slice)."""
    name: str
    weight_bytes: int
    scratch_bytes: int
    compute_us: float
    load_us: float
    slicing: str = "none"
    out_channels: int = 0
    out_rows: int = 0
    simd: int = 16
    slice_us: float = 0.0


@dataclass(frozen=True)
class Layer:
    index: int
    op: str
    inputs: list
    output: int
    options: list = field(default_factory=list)

    @property
    def weighted(self) -> bool:
        return any(o.weight_bytes > 0 for o in self.options)


_KINDS = ("input", "output", "activation")
_SLICINGS = ("weights", "input", "none")


class Graph:
    """Tensors and layers in topological (= compute) order, validated on construction."""

    def __init__(self, tensors, layers):
        tensors = list(tensors)
        self.tensors = {t.id: t for t in tensors}
        self.layers = list(layers)
        if len(self.tensors) != len(tensors):
            raise GraphError("duplicate tensor ids")
        self._validate()
        self._key = None
        self._lifetimes = None

    def _validate(self):
        if not self.layers:
            raise GraphError("graph has no layers")
        producer: dict[int, int] = {}
        for i, layer in enumerate(self.layers):
            if layer.index != i:
                raise GraphError(f"layer at position {i} has index {layer.index}")
            if not layer.options:
                raise GraphError(f"layer {i} ({layer.op}) has no kernel options")
            for o in layer.options:
                if o.slicing not in _SLICINGS:
                    raise GraphError(f"layer {i}: unknown slicing {o.slicing!r}")
                if min(o.weight_bytes, o.scratch_bytes) < 0 or min(o.compute_us, o.load_us) < 0:
                    raise GraphError(f"layer {i}: negative size or time in option {o.name}")
                if o.simd < 1:
                    raise GraphError(f"layer {i}: simd must be >= 1")
            for t in layer.inputs:
                if t not in self.tensors:
                    raise GraphError(f"layer {i} reads unknown tensor {t}")
                if self.tensors[t].kind != "input" and producer.get(t, i) >= i:
                    raise GraphError(f"layer {i} reads tensor {t} before it is produced")
            if layer.output not in self.tensors:
                raise GraphError(f"layer {i} writes unknown tensor {layer.output}")
            if layer.output in producer or self.tensors[layer.output].kind == "input":
                raise GraphError(f"tensor {layer.output} written twice or is a graph input")
            producer[layer.output] = i
        for t in self.tensors.values():
            if t.kind not in _KINDS:
                raise GraphError(f"tensor {t.id}: unknown kind {t.kind!r}")
            if t.nbytes < 0:
                raise GraphError(f"tensor {t.id}: negative size")
            if t.kind != "input" and t.id not in producer:
                raise GraphError(f"tensor {t.id} ({t.kind}) is never produced")
        self.producer = producer

    def __len__(self):
        return len(self.layers)

    def lifetimes(self) -> dict[int, tuple[int, int]]:
        """tensor id -> [first, last] layer step during which it must be resident."""
        if self._lifetimes is None:
            last = len(self.layers) - 1
            life = {}
            for t in self.tensors.values():
                start = 0 if t.kind == "input" else self.producer[t.id]
                life[t.id] = [start, last if t.kind == "output" else start]
            for layer in self.layers:
                for t in layer.inputs:
                    life[t][1] = max(life[t][1], layer.index)
            self._lifetimes = {k: (a, b) for k, (a, b) in life.items()}
        return self._lifetimes

    def key(self) -> str:
        """Stable content hash: same structure and numbers -> same key, across processes."""
        if self._key is None:
            doc = {"tensors": [asdict(self.tensors[k]) for k in sorted(self.tensors)],
                   "layers": [{"op": l.op, "inputs": list(l.inputs), "output": l.output,
                               "options": [asdict(o) for o in l.options]} for l in self.layers]}
            blob = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
            self._key = hashlib.sha256(blob).hexdigest()[:32]
        return self._key
