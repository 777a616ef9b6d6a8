"""Leak check: create / invoke / destroy a delegate and its interpreter many times, without
and with a memory budget (a plan, a weight loader thread, streamed slices), with a cache
file (mapped, written in the background) and without. Run under LeakSanitizer:

    source tests/sanitize/env.sh leaks && python tests/sanitize/leak_cycles.py --check 200

LeakSanitizer reports, at exit, every block nothing points to any more; tests/sanitize/lsan.supp
suppresses what the Python runtime leaves behind by design, so any report left is a leak and
makes the process exit non-zero. --check N runs this script twice, for 1 and for N cycles,
and also fails if the N-cycle run needed the suppressions for more blocks than the 1-cycle
run (a per-cycle leak allocated under a suppressed frame, e.g. a Python object we keep).
Every answer is checked against stock, so a cycle that silently stopped working cannot pass."""
from __future__ import annotations

import gc
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parents[1])]

from budgetcheck import heavy_model, min_budget  # noqa: E402
from flexdelegate import load_flex  # noqa: E402
from flexdelegate.run import invoke, make_interpreter, max_error, random_inputs  # noqa: E402


def cycles(model, n: int, **options) -> None:
    stock = make_interpreter(model)
    x = random_inputs(stock, seed=3)
    ref = invoke(stock, x)
    for i in range(n):
        d = load_flex(**options)
        it = make_interpreter(model, delegate=d)
        err = max_error(ref, invoke(it, x))
        assert err <= 1e-4, (options, i, err)
        if i % 2:  # both teardown orders
            del d
            gc.collect()
            del it
        else:
            del it
            gc.collect()
            del d
        gc.collect()


def suppressed_blocks(stderr: str) -> int | None:
    """Blocks LeakSanitizer suppressed (its "Suppressions used" table), None without a table."""
    if "Suppressions used:" not in stderr:
        return None
    table = stderr.split("Suppressions used:", 1)[1].split("-----", 1)[0]
    return sum(int(line.split()[0]) for line in table.splitlines()[2:] if line.split())


def check(n: int) -> int:
    import os
    import subprocess
    counts = {}
    for cycles_ in (1, n):
        run = subprocess.run([sys.executable, __file__, str(cycles_)], capture_output=True, text=True,
                             env=dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=1"))
        sys.stdout.write(run.stdout)
        if run.returncode:
            sys.stderr.write(run.stderr[-20000:])
            print(f"leak check: {cycles_} cycle(s) failed (exit status {run.returncode})")
            return 1
        counts[cycles_] = suppressed_blocks(run.stderr)
        if counts[cycles_] is None:
            print("leak check: LeakSanitizer did not run (no suppressions table): is the ASan runtime preloaded?")
            return 1
    print(f"leak check: suppressed blocks after 1 cycle {counts[1]}, after {n} cycles {counts[n]}")
    if counts[n] > counts[1] + 10:  # a few: thread and allocator caches that vary run to run
        print("leak check: the suppressed leaks grow with the cycles: something leaks per cycle")
        return 1
    return 0


def main(argv) -> int:
    if argv[:1] == ["--check"]:
        return check(int(argv[1]) if len(argv) > 1 else 200)
    n = int(argv[0]) if argv else 200
    model = heavy_model(seed=6, fc=256, size=8, c=8)
    with tempfile.TemporaryDirectory() as tmp:
        cache = str(Path(tmp) / "m.fxc")
        budget = round(min_budget(model, "") * 1.2, 2)
        for label, options in (("no budget, in memory", {"cache_path": ""}),
                               ("no budget, cache file", {"cache_path": cache}),
                               (f"budget {budget} MB, in memory", {"cache_path": "", "budget": budget}),
                               (f"budget {budget} MB, cache file", {"cache_path": cache, "budget": budget, "num_threads": 2})):
            cycles(model, n, **options)
            print(f"{n} create/invoke/destroy cycles: {label}: ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
