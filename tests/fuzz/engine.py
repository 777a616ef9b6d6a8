"""A model runner in a child process, so a crash (a signal, a sanitizer report) or a hang in
the runtime or the delegate is a finding the fuzzer can name instead of its own death.

    with Engine(env={"XDG_CACHE_HOME": d}) as e:
        outcome = e.run(model_bytes, flex={"cache_path": ""})   # None: the stock interpreter
        # ("ok", [arrays]) | ("refused", "RuntimeError: ...")   raises EngineDied on a crash

The child speaks length-prefixed pickles over its own pipe pair; its stdout goes to its
stderr, and its stderr to a file whose tail EngineDied carries (the sanitizer's report)."""
from __future__ import annotations

import os
import pickle
import select
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_LEN = struct.Struct("<Q")


class EngineDied(RuntimeError):
    """The child crashed or hung; the message ends with the tail of its stderr."""


def _send(fd: int, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_LEN.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _recv_exact(fd: int, n: int) -> bytes:
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _recv(fd: int):
    (n,) = _LEN.unpack(_recv_exact(fd, _LEN.size))
    return pickle.loads(_recv_exact(fd, n))


class Engine:
    """One persistent child; restarted after it dies."""

    def __init__(self, env: dict | None = None, timeout: float = 120.0):
        self.env = dict(os.environ, **(env or {}))
        self.env["PYTHONPATH"] = os.pathsep.join([str(ROOT), self.env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        self.timeout = timeout
        self.proc = None
        self.deaths = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _start(self):
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        self._log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, __file__, str(to_child_r), str(from_child_w)], env=self.env,
            pass_fds=(to_child_r, from_child_w), stdin=subprocess.DEVNULL, stdout=self._log,
            stderr=self._log, cwd=str(ROOT))
        os.close(to_child_r)
        os.close(from_child_w)

    def close(self):
        if self.proc is not None:
            for fd in (self._to_child, self._from_child):
                os.close(fd)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self._log.close()
            self.proc = None

    def _died(self, what: str, hung: bool = False):
        if hung:
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        what = f"hung (> {self.timeout:.0f} s) in {what}" if hung else \
            f"died (exit status {self.proc.returncode}) in {what}"
        self._log.seek(0)
        tail = self._log.read()[-6000:].decode(errors="replace")
        for fd in (self._to_child, self._from_child):
            os.close(fd)
        self._log.close()
        self.proc = None
        self.deaths += 1
        raise EngineDied(f"engine {what}\n--- its stderr, last lines ---\n{tail}")

    def call(self, *request):
        if self.proc is None:
            self._start()
        try:
            _send(self._to_child, request)
            ready, _, _ = select.select([self._from_child], [], [], self.timeout)
            if not ready:
                self._died(request[0], hung=True)
            return _recv(self._from_child)
        except (EOFError, OSError):  # BrokenPipeError is an OSError
            self._died(request[0])

    def run(self, model: bytes, flex: dict | None = None, seed: int = 0, threads: int | None = None,
            specials: bool = False, stock: str = "reference"):
        """Loads `model` (stock if flex is None, else load_flex(**flex)), invokes it once on
        random_inputs(seed): ("ok", outputs, delegate stats or None), ("refused", "Type: first
        line", stage: build | allocate | invoke | other), or ("skipped", why) for a model
        whose tensors exceed MAX_TENSOR_BYTES. specials: float inputs start with NaN, inf,
        -inf, -0.0. stock: which stock kernels run what flexdelegate leaves (run.make_interpreter)."""
        return self.call("run", model, flex, seed, threads, specials, stock)

    def claimed(self, model: bytes, flex: dict, threads: int | None = None):
        """("ok", None, delegate stats) after building and allocating, never invoking; or
        ("refused", ...) as run() says it."""
        return self.call("run", model, flex, 0, threads, False, "reference", False)


# ------------------------------------------------------------------------------------ child

MAX_TENSOR_BYTES = 256 << 20  # a mutated shape must not take the machine's memory


def _tensor_bytes(it) -> int:
    import numpy as np
    total = 0
    for d in it.get_tensor_details():
        total += int(np.prod(d["shape"], dtype=np.float64)) * np.dtype(d["dtype"]).itemsize
    return total


def _stage(e: Exception) -> str:
    """Where a refusal came from: "build" (the Interpreter constructor: the flatbuffer parser,
    and applying delegates), "allocate", "invoke" or "other"."""
    import traceback
    names = [f.name for f in traceback.extract_tb(e.__traceback__)]
    for name, stage in (("invoke", "invoke"), ("set_tensor", "invoke"), ("allocate_tensors", "allocate"),
                        ("__init__", "build")):
        if name in names:
            return stage
    return "other"


def _run(model, flex, seed, threads, specials=False, stock="reference", run=True):
    from flexdelegate import load_flex
    from flexdelegate.planner import bridge
    from flexdelegate.run import invoke, make_interpreter, random_inputs
    bridge._memo.clear()  # a plan file rewritten under us must be read again
    try:
        delegate = None if flex is None else load_flex(**flex)
        it = make_interpreter(model, delegate=delegate, num_threads=threads, stock=stock)
        if not run:  # built and allocated only: what the delegate claimed
            return ("ok", None, delegate.stats() if delegate is not None else None)
        if _tensor_bytes(it) > MAX_TENSOR_BYTES:  # allocated, not yet touched: don't
            return ("skipped", "tensors too large to run here")
        inputs = random_inputs(it, seed)
        for x in inputs if specials else ():
            if x.dtype.kind == "f":
                flat = x.reshape(-1)
                flat[:4] = [float("nan"), float("inf"), -float("inf"), -0.0][:flat.size]
        outputs = invoke(it, inputs)
        stats = delegate.stats() if delegate is not None else None
    except Exception as e:  # noqa: BLE001 - a refusal is an outcome, reported by type
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return ("refused", f"{type(e).__name__}: {first}", _stage(e))
    return ("ok", outputs, stats)


def _min_budget(model, flex):
    """("refused", MB, message): the minimum budget a load of `model` with `flex` and a 0.01 MB
    budget names, read from its BudgetError's field; ("ok",) if that budget was accepted."""
    from flexdelegate import BudgetError, load_flex
    from flexdelegate.planner import bridge
    from flexdelegate.run import make_interpreter
    bridge._memo.clear()
    try:
        make_interpreter(model, delegate=load_flex(**flex, budget=0.01))
    except BudgetError as e:
        return ("refused", e.min_budget_mb, str(e))
    return ("ok",)


def _plan_info(model, flex):
    """The budget planner's graph and plan key inputs after one load (for the plan target)."""
    from flexdelegate import load_flex
    from flexdelegate.planner import bridge
    from flexdelegate.run import make_interpreter
    bridge._memo.clear()
    bridge.keep_plans = True
    try:
        make_interpreter(model, delegate=load_flex(**flex))
        p, graph, _ = bridge.last_plan()
        return ("ok", graph, p.budget_bytes, p.isa, p.threads)
    finally:
        bridge.keep_plans = False
        bridge._memo.clear()


def _die_with_parent() -> None:
    """A request can run for minutes (a big model under a sanitizer): the parent kills it after
    its timeout, but a parent that dies first (a finding ends the fuzzer; a kill) left it on a
    core at 100 % for 12 minutes once. Linux kills it with its parent (PR_SET_PDEATHSIG = 1)."""
    try:
        import ctypes
        import signal
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the timeout alone
        pass


def _serve(rfd: int, wfd: int) -> None:
    os.dup2(2, 1)  # prints from the runtime must not reach the protocol pipe (it is not fd 1)
    _die_with_parent()
    handlers = {"run": _run, "min_budget": _min_budget, "plan_info": _plan_info, "ping": lambda: ("ok",),
                "sleep": lambda seconds: (time.sleep(seconds), ("ok",))[1]}
    while True:
        try:
            request = _recv(rfd)
        except EOFError:
            return
        _send(wfd, handlers[request[0]](*request[1:]))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    _serve(int(sys.argv[1]), int(sys.argv[2]))
