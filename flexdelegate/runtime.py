"""Finds the TFLite Python runtime an app already has: tflite_runtime, then ai_edge_litert,
then tensorflow.lite. FLEXDELEGATE_RUNTIME (or load_flex(runtime=...)) picks one by name."""
from __future__ import annotations

import importlib
import os
from types import SimpleNamespace

# name -> module holding Interpreter, Delegate, load_delegate, OpResolverType
RUNTIMES = {
    "tflite_runtime": "tflite_runtime.interpreter",
    "ai_edge_litert": "ai_edge_litert.interpreter",
    "tensorflow": "tensorflow.lite.python.interpreter",
}


def _load(name: str) -> SimpleNamespace:
    mod = importlib.import_module(RUNTIMES[name])
    return SimpleNamespace(name=name, Interpreter=mod.Interpreter, Delegate=mod.Delegate,
                           load_delegate=mod.load_delegate, OpResolverType=mod.OpResolverType)


def detect(name: str | None = None) -> SimpleNamespace:
    """The runtime called `name`, or the first one installed; ImportError if none is."""
    name = name or os.environ.get("FLEXDELEGATE_RUNTIME") or None
    if name is not None:
        if name not in RUNTIMES:
            raise ValueError(f"flexdelegate: runtime {name!r} unknown; accepted: {', '.join(RUNTIMES)}")
        return _load(name)
    errors = []
    for candidate in RUNTIMES:
        try:
            return _load(candidate)
        except ImportError as e:
            errors.append(f"{candidate}: {e}")
    raise ImportError("flexdelegate needs a TFLite runtime: pip install 'flexdelegate[tflite]' "
                      "or 'flexdelegate[litert]' (" + "; ".join(errors) + ")")
