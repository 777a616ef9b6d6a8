"""flexdelegate: a memory-aware FP32 CPU delegate for TensorFlow Lite.

    from flexdelegate import load_flex
    it = Interpreter(model_path="m.tflite", experimental_delegates=[load_flex()])
"""
from __future__ import annotations

import os

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
# The version of the ops option_text() covers: bumped when quant_rounding gains entries (2: PRELU;
# 3: TRANSPOSE_CONV and BATCH_MATMUL; 4: the hybrid layers' f32), so a rounding.json written before
# is asked again.
_ROUNDING_ENTRIES = 4

# Prints the "_rounding" option text for the runtime named argv[1] (run in a child process).
_DETECT = ("import sys; from flexdelegate import quant_rounding as q; from flexdelegate.runtime import detect; "
           "rt = detect(sys.argv[1]); "
           "print(q.option_text(q.detect(rt.Interpreter, rt.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)))")


def _rounding_option(rt) -> str:
    """The internal option "_rounding": stock's requantization rule per (op, type) on runtime
    rt (unknown ones left out: the plugin then leaves those ops to stock). Found by
    quant_rounding.detect() in a child process, since its probe interpreters would add ~6 MB
    to this process's peak (a budget counts it), once per installed runtime build: the answer
    is kept in the cache directory (rounding.json), keyed by the runtime module's file."""
    if rt.name not in _roundings:
        _roundings[rt.name] = _stored_rounding(rt)
    return _roundings[rt.name]


def _usable_rounding(text) -> bool:
    """A stored answer the plugin takes (one written by another version of this package, or
    damaged, is asked again rather than failing the load)."""
    from . import _native
    if not isinstance(text, str):
        return False
    try:
        _native.check_option("_rounding", text)
    except ValueError:
        return False
    return True


def _stored_rounding(rt) -> str:
    import json
    import sys
    from .runtime import RUNTIMES
    module = sys.modules.get(RUNTIMES[rt.name])
    file = getattr(module, "__file__", None) or ""
    st = os.stat(file) if file else None
    key = (f"{rt.name} {file} {st.st_size if st else 0} {st.st_mtime_ns if st else 0} {sys.version.split()[0]}"
           f" v{_ROUNDING_ENTRIES}")
    from .paths import default_dir
    path = os.path.join(default_dir(), "rounding.json")
    try:
        with open(path) as f:
            known = json.load(f)
        if isinstance(known, dict) and _usable_rounding(known.get(key)):
            return known[key]
        known = known if isinstance(known, dict) else {}
    except (OSError, ValueError):
        known = {}
    import subprocess  # only now: what a warm load imports counts against its budget
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(__file__)),
                                                       os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", _DETECT, rt.name], capture_output=True, text=True, env=env,
                         timeout=300)
    if run.returncode or not run.stdout.strip():  # no child: in this process, at its memory cost
        from . import quant_rounding
        return quant_rounding.option_text(
            quant_rounding.detect(rt.Interpreter, rt.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES))
    text = run.stdout.strip().splitlines()[-1]
    try:  # best effort: a read-only home only costs the child process again next time
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp.{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump({**(known if isinstance(known, dict) else {}), key: text}, f)
        os.replace(tmp, path)
    except OSError:
        pass
    return text


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
