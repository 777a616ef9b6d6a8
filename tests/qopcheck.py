"""Quantized models for the integer ops: tensors with scales and zero points from our own
writer, and the bit-exactness check: the stock reference interpreter of the runtime in use
(BUILTIN_WITHOUT_DEFAULT_DELEGATES) and flexdelegate must give identical bytes, with every node
delegated.

    from qopcheck import Q, QModel, check_exact
    m = QModel()
    x = m.input((1, 8, 8, 3), Q(np.int8, 0.05, -3))
    y = m.tensor((1, 8, 8, 3), Q(np.int8, 0.05, -3))
    m.op("RELU", [x], [y])
    check_exact(m.build(y))
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from flexdelegate import load_flex
from flexdelegate.run import invoke, make_interpreter
from flexdelegate.tflite.writer import ModelBuilder


@dataclass(frozen=True)
class Q:
    """A quantized type: numpy dtype, scale(s) (one, or one per channel along axis) and zero
    point(s); scale None = an integer tensor without quantization."""
    dtype: type
    scale: float | tuple | None = 1.0
    zero_point: int | tuple = 0
    axis: int = 0

    def params(self) -> dict:
        if self.scale is None:
            return {}
        scales = np.atleast_1d(np.asarray(self.scale, np.float32))
        zps = np.broadcast_to(np.atleast_1d(np.asarray(self.zero_point, np.int64)), scales.shape)
        return dict(scale=scales, zero_point=zps, quantized_dimension=self.axis)


F32 = Q(np.float32, None)


class QModel:
    """A ModelBuilder whose tensors take a Q (float32 when q is F32)."""

    def __init__(self):
        self.b = ModelBuilder()

    def input(self, shape, q: Q) -> int:
        return self.b.input(tuple(shape), dtype=q.dtype, **q.params())

    def tensor(self, shape, q: Q) -> int:
        return self.b.tensor(tuple(shape), dtype=q.dtype, **q.params())

    def const(self, array, q: Q | None = None) -> int:
        array = np.asarray(array) if q is None else np.asarray(array, q.dtype)
        return self.b.const(array, **(q.params() if q is not None else {}))

    def op(self, name, inputs, outputs, **options):
        self.b.op(name, inputs, outputs, **options)

    def build(self, *outputs) -> bytes:
        self.b.output(*outputs)
        return self.b.build()


def type_range(dtype) -> tuple[int, int]:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def random_input(it, seed: int) -> list[np.ndarray]:
    """Integer inputs uniform over their whole type (both ends included), float ones normal."""
    rng = np.random.default_rng(seed)
    out = []
    for d in it.get_input_details():
        shape = tuple(int(s) for s in d["shape"])
        if np.issubdtype(d["dtype"], np.integer):
            lo, hi = type_range(d["dtype"])
            out.append(rng.integers(lo, hi + 1, shape).astype(d["dtype"]))
        else:
            out.append((rng.standard_normal(shape) * 2).astype(d["dtype"]))
    return out


def check_exact(model: bytes, *, inputs=None, seeds=(0, 1), num_threads=None, flex=None,
                delegated: bool = True) -> dict:
    """Stock reference vs flexdelegate, bit for bit (float outputs too: NaNs in the same
    places, every other bit equal). inputs: arrays, or a callable(interpreter, seed); default
    random_input. delegated: also demand that every node ran on flexdelegate. Returns stats()."""
    ref = make_interpreter(model, num_threads=num_threads)
    delegate = load_flex(**(flex or {}))
    got_it = make_interpreter(model, delegate=delegate, num_threads=num_threads)
    stats = delegate.stats()
    for seed in seeds:
        xs = inputs(ref, seed) if callable(inputs) else inputs if inputs is not None else random_input(ref, seed)
        want, got = invoke(ref, xs), invoke(got_it, xs)
        for w, g in zip(want, got):
            assert w.dtype == g.dtype and w.shape == g.shape, (w.dtype, g.dtype, w.shape, g.shape)
            same = np.array_equal(w.view(np.uint8), g.view(np.uint8)) if w.dtype.kind == "f" else np.array_equal(w, g)
            if not same:
                bad = np.flatnonzero(w.reshape(-1) != g.reshape(-1))
                raise AssertionError(f"seed {seed}: {bad.size} of {w.size} outputs differ, e.g. at "
                                     f"{bad[:5].tolist()}: stock {w.reshape(-1)[bad[:5]].tolist()} vs "
                                     f"flex {g.reshape(-1)[bad[:5]].tolist()}; stats {stats}")
    if delegated:
        assert stats["nodes_total"] > 0 and stats["fallback"] == [], stats
        assert stats["nodes_delegated"] == stats["nodes_total"], stats
    return stats


# Scales whose product s_in * s_w rounded to float32 gives a Q31 multiplier 123 units off the
# double product's (2081595313 vs 2081595436, shift -16): what tells stock's legacy multiplier
# (GetQuantizedConvolutionMultipler: uint8 layers, int8 per-tensor FULLY_CONNECTED) apart.
LEGACY_SCALES = (0.036698252, 0.003332639, 8.268888)


def legacy_product_accumulators(rounding: int, scales=LEGACY_SCALES) -> np.ndarray:
    """Accumulators that requantize (requant.h's rule `rounding`) to different values in
    [-120, 120] under the float product's multiplier and the double product's: near each
    rounding boundary of the output, a few accumulators on either side."""
    from flexdelegate import _qs8, quant_rounding
    s_in, s_w, s_out = (np.float32(s) for s in scales)
    m_double, shift = _qs8.quantize_multiplier(float(s_in) * float(s_w) / float(s_out))
    m_float, shift_f = _qs8.quantize_multiplier(float(s_in * s_w) / float(s_out))
    assert shift == shift_f and m_float != m_double
    real = m_double * 2.0 ** (shift - 31)
    edges = np.round((np.arange(-120, 120) + 0.5) / real).astype(np.int64)
    acc = np.unique((edges[:, None] + np.arange(-3, 4)).ravel())
    requant = quant_rounding.requant
    return acc[requant(acc, m_double, shift, rounding) != requant(acc, m_float, shift, rounding)]
