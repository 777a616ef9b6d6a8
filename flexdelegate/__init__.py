"""flexdelegate: a memory-aware FP32 CPU delegate for TensorFlow Lite.

    from flexdelegate import load_flex
    it = Interpreter(model_path="m.tflite", experimental_delegates=[load_flex()])
"""
from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["load_flex", "FlexDelegate", "BudgetError", "library_path"]

_classes: dict = {}


class BudgetError(ValueError):
    """A budget the model cannot run in (raised by set_budget(), returned by last_error()). min_budget_mb is the smallest
    that runs, node the TFLite node it is bottlenecked on and op that node's operator, as the
    native planner reported them (never parsed back out of the message)."""

    def __init__(self, message: str, *, min_budget_mb: float, node: int, op: str):
        super().__init__(message)
        self.min_budget_mb, self.node, self.op = min_budget_mb, node, op


def _delegate_class(rt):
    """FlexDelegate subclasses the runtime's own Delegate, so Interpreter accepts it."""
    cls = _classes.get(rt.name)
    if cls is None:
        class FlexDelegate(rt.Delegate):
            """A loaded flexdelegate; pass it in `experimental_delegates`."""
            runtime = rt

            def __init__(self, options: dict[str, str]):
                from . import _native
                self.options = dict(options)
                super().__init__(_native.library_path(), self.options)

            def set_budget(self, mb: float) -> None:
                """Re-plans for a new memory budget (MB, 0 = unlimited) between invokes. An
                infeasible budget raises BudgetError (a ValueError) with the minimum; the old
                one stays."""
                from . import _native
                self._check_open()
                if isinstance(mb, bool) or not isinstance(mb, (int, float)):
                    raise ValueError(f"flexdelegate: budget must be a number of MB, got {mb!r}")
                _native.set_budget(self._get_native_delegate_pointer(), mb)

            def last_error(self) -> ValueError | None:
                """Why the last memory plan failed, or None: an interpreter's Prepare under
                an infeasible budget (the runtime raises its own RuntimeError at
                Interpreter() / allocate_tensors) or a refused set_budget(). A BudgetError
                (min_budget_mb, node, op) for an infeasible budget; raise it to re-raise
                cleanly. Cleared by the next plan that works."""
                from . import _native
                self._check_open()
                return _native.last_error(self._get_native_delegate_pointer())

            def stats(self) -> dict:
                """Coverage of the last load: nodes_total, nodes_delegated, partitions,
                fallback ([{node, op, reason}]), and the kernel/threads in use."""
                from . import _native
                self._check_open()
                return _native.stats(self._get_native_delegate_pointer())

            def _check_open(self):
                if getattr(self, "_library", None) is None:  # the runtime's Delegate.__del__ ran
                    raise ValueError("flexdelegate: this delegate was destroyed")

        FlexDelegate.__qualname__ = FlexDelegate.__name__ = "FlexDelegate"
        cls = _classes[rt.name] = FlexDelegate
    return cls


def load_flex(*, runtime: str | None = None, **options):
    """Creates the delegate. Options (all optional): budget (MB, 0 = unlimited), cache_path
    (str; "" = in memory), num_threads (int, -1 = the interpreter's), log (comma list of
    partition, plan, cache, exec, all), profile (0/1), winograd (auto | all | off).
    runtime: tflite_runtime | ai_edge_litert | tensorflow."""
    from . import _native
    from .runtime import detect

    strings = {}
    for key, value in options.items():
        if key not in _native.OPTIONS:
            raise ValueError(f"flexdelegate: unknown option {key!r}; accepted: {', '.join(_native.OPTIONS)}")
        if value is None:
            continue
        if isinstance(value, bool) and _native.OPTIONS[key][0] == _native.lib.FLEX_OPTION_NUMBER:
            raise ValueError(f"flexdelegate: option {key!r} takes a number, not {value!r}")
        text = str(int(value)) if isinstance(value, bool) else str(value)
        _native.check_option(key, text)
        strings[key] = text
    rt = detect(runtime)
    strings["_rounding"] = _rounding_option(rt)
    _native.check_option("_rounding", strings["_rounding"])
    return _delegate_class(rt)(strings)


_roundings: dict = {}


def _rounding_option(rt) -> str:
    """The internal option "_rounding": stock's requantization rule per (op, type) on runtime
    rt, found once per process by quant_rounding.detect() (unknown ones left out: the plugin
    then leaves those ops to stock)."""
    if rt.name not in _roundings:
        from . import quant_rounding
        found = quant_rounding.detect(rt.Interpreter, rt.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        _roundings[rt.name] = quant_rounding.option_text(found)
    return _roundings[rt.name]


def library_path(plain: bool = False) -> str:
    """The delegate's shared library as a TFLite external-delegate plugin.

    plain=False: the extension module, for a Python process (`load_delegate(path, options)`);
    it needs the Python interpreter it runs in, and plans budgets with Python's planner.
    plain=True: libflexdelegate.so, the same core without Python, for C/C++ hosts
    (`benchmark_model --external_delegate_path`, dlopen); it refuses a `budget` option."""
    from . import _native
    return _native.library_path(plain)


def __getattr__(name):
    if name == "FlexDelegate":  # the class for the default runtime
        from .runtime import detect
        return _delegate_class(detect())
    raise AttributeError(name)
