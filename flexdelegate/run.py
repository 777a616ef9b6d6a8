"""Running a model on the stock interpreter or with flexdelegate: one place for the demo,
the CLI and the tests."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .runtime import detect


def _model_kwargs(model) -> dict:
    if isinstance(model, (bytes, bytearray)):
        return {"model_content": bytes(model)}
    return {"model_path": str(model)}


def make_interpreter(model, *, delegate=None, stock: str = "reference", num_threads=None, runtime=None):
    """Interpreter for `model` (path or bytes). stock='reference' disables the default XNNPack
    delegate (the true stock fallback); stock='xnnpack' keeps it; stock='ref-kernels' runs
    TFLite's unoptimized reference kernels (BUILTIN_REF: the ops' definitions)."""
    rt = detect(runtime or (delegate.runtime.name if delegate is not None else None))
    kwargs = _model_kwargs(model)
    if delegate is not None:
        kwargs["experimental_delegates"] = [delegate]
    if stock == "ref-kernels":
        kwargs["experimental_op_resolver_type"] = rt.OpResolverType.BUILTIN_REF
    elif delegate is not None or stock == "reference":
        # Keep TFLite's lazy XNNPack from grabbing what flexdelegate leaves behind.
        kwargs["experimental_op_resolver_type"] = rt.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    if num_threads is not None:
        kwargs["num_threads"] = num_threads
    try:
        it = rt.Interpreter(**kwargs)
        it.allocate_tensors()
    except RuntimeError:
        # The runtime's text glues ours to its own; a failed plan is clearer as our exception.
        err = delegate.last_error() if delegate is not None else None
        if err is None:
            raise
        raise err from None
    return it


def random_inputs(it, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for d in it.get_input_details():
        shape = tuple(int(s) for s in d["shape"])
        if np.issubdtype(d["dtype"], np.floating):
            out.append(rng.standard_normal(shape).astype(d["dtype"]))
        else:
            out.append(rng.integers(0, 4, size=shape).astype(d["dtype"]))
    return out


def invoke(it, inputs) -> list[np.ndarray]:
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [_output(it, d) for d in it.get_output_details()]


def _output(it, d) -> np.ndarray:
    # An output of no element reads as an empty array: tflite-runtime 2.14's get_tensor raises
    # "Invalid tensor size." on one that the stock kernel computed at prepare (STRIDED_SLICE of
    # a constant: a persistent tensor without data), where the delegate's reads fine.
    if 0 in d["shape"]:
        return np.zeros(d["shape"], d["dtype"])
    return it.get_tensor(d["index"]).copy()


@dataclass
class Timing:
    samples_ms: list = field(default_factory=list)

    @property
    def min(self): return min(self.samples_ms)

    @property
    def median(self): return float(np.median(self.samples_ms))


def time_invokes(it, inputs, iterations: int, warmup: int = 2) -> Timing:
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    for _ in range(warmup):
        it.invoke()
    t = Timing()
    for _ in range(iterations):
        t0 = time.perf_counter()
        it.invoke()
        t.samples_ms.append((time.perf_counter() - t0) * 1e3)
    return t


def max_error(ref: list[np.ndarray], got: list[np.ndarray]) -> float:
    """max |err| / max(1, max |ref|) over all outputs: the project's agreement measure. NaN and
    infinities must sit at the same places with the same signs (inf if not); the error and
    the scale are measured over the finite elements, so one infinity cannot hide the rest."""
    if len(ref) != len(got):
        return float("inf")
    worst = 0.0
    for r, g in zip(ref, got):
        if r.shape != g.shape:
            return float("inf")
        r64, g64 = r.astype(np.float64), g.astype(np.float64)
        fin_r = np.isfinite(r64)
        if (fin_r != np.isfinite(g64)).any() or (np.isnan(r64) != np.isnan(g64)).any() or \
                (r64[np.isinf(r64)] != g64[np.isinf(r64)]).any():
            return float("inf")  # NaN or an infinity where the reference has another value
        r64, g64 = r64[fin_r], g64[fin_r]
        scale = max(1.0, float(np.max(np.abs(r64))) if r64.size else 1.0)
        err = float(np.max(np.abs(r64 - g64))) if r64.size else 0.0
        worst = max(worst, err / scale)
    return worst
