"""`flexdelegate plan MODEL --budget MB [--out plan.png]`: how the model runs under a budget,
per layer: kernel (winograd, gemm by output channels, gemm-rows by im2col rows, or the op's own),
slices and what they split (output channels or rows), preload distance, pinned or streamed;
optionally a picture of the plan as time x address blocks by kind.

`flexdelegate plan MODEL` (no --budget): the minimum feasible budget and a budget -> latency
table from it upwards (the planner's simulated latency); --out draws that curve."""
from __future__ import annotations

import math
import os

from . import common
from .common import CommandError


def main(argv=None) -> int:
    ap = common.parser("flexdelegate plan", __doc__, raw=True)
    ap.add_argument("--budget", type=float, default=None, metavar="MB",
                    help="memory budget in MB (absent: the minimum and a budget -> latency table)")
    ap.add_argument("--cache", default=None, metavar="FXC", help="packed-weight cache file (default: per model)")
    ap.add_argument("--out", metavar="PNG", help="write the plan picture (or the budget curve) here; needs matplotlib")
    return common.main(ap, _run, argv)


# The budgets of the table without --budget, as multiples of the minimum.
SWEEP = (1, 1.1, 1.25, 1.5, 2, 3, 4, 6, 8, 12, 16)


def _load(args):
    """(delegate, interpreter): the model loaded without a budget."""
    from .. import load_flex
    from ..run import make_interpreter
    opts = {"num_threads": args.threads}
    if args.cache is not None:
        opts["cache_path"] = args.cache
    delegate = load_flex(**opts)
    try:
        interpreter = make_interpreter(args.model, delegate=delegate, num_threads=args.threads)
    except (ValueError, RuntimeError) as e:
        raise CommandError(str(e).splitlines()[0]) from None
    return delegate, interpreter


def _load_under_budget(args):
    """The model loaded without a budget, then planned for args.budget through set_budget(),
    whose BudgetError names the minimum and its bottleneck as fields."""
    from .. import BudgetError
    delegate, interpreter = _load(args)
    try:
        delegate.set_budget(args.budget)
    except BudgetError as e:
        raise CommandError(f"budget {args.budget:g} MB is infeasible: the minimum is {e.min_budget_mb:.2f} MB "
                           f"(bottleneck: node {e.node}, {e.op})") from None
    return interpreter


def _need_matplotlib(args) -> None:
    """Before any planning: a missing matplotlib costs one line, not a wasted run."""
    if args.out:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise CommandError("--out needs matplotlib: pip install matplotlib (or flexdelegate[plot])") from None


def _sweep(args) -> int:
    """The minimum budget and simulated latency from it upwards, until every weight is pinned."""
    from .. import BudgetError
    from ..planner import bridge
    from ..planner.bridge import last_plan
    common.check_options(num_threads=args.threads)
    bridge.keep_plans = True
    delegate, interpreter = _load(args)  # noqa: F841 - its partitions hold the plans
    try:
        delegate.set_budget(0.01)
        raise CommandError("the model runs in 0.01 MB: nothing here needs a budget")
    except BudgetError as e:
        minimum, bottleneck = e.min_budget_mb, f"node {e.node}, {e.op}"
    rows = []
    for factor in SWEEP:
        budget = math.ceil(minimum * factor * 100) / 100  # MB, 2 decimals, never below the minimum
        try:
            delegate.set_budget(budget)
        except BudgetError:
            continue
        found = last_plan()
        if found is None:
            raise CommandError("nothing was delegated, so there is no plan")
        plan = found[0]
        rows.append((budget, plan.latency_us / 1e3, plan.arena_bytes / 2**20, plan.pinned_bytes / 2**20))
        if len(rows) > 2 and rows[-1][1:] == rows[-2][1:]:
            break  # everything pinned: more budget changes nothing
    print(f"minimum feasible budget: {minimum:.2f} MB (bottleneck: {bottleneck})")
    print("the budget holds the delegate's arena (activations, weight slots pinned or streamed, scratch), "
          "the partitions' input/output tensors and a fixed runtime reserve; the model file and the cache "
          "file's pages (page cache, read as weights stream) are outside it")
    print(f"{'budget MB':>10s} {'simulated ms':>13s} {'arena MB':>9s} {'pinned MB':>10s}")
    for budget, ms, arena, pinned in rows:
        print(f"{budget:10.2f} {ms:13.2f} {arena:9.2f} {pinned:10.2f}")
    if args.out:
        from ..planner.draw import draw_curve
        try:
            draw_curve([r[0] for r in rows], [r[1] for r in rows], args.out, minimum,
                       title=f"{os.path.basename(args.model)}: budget -> latency")
        except OSError as e:
            raise CommandError(f"{args.out}: {e.strerror or e}") from None
        print(f"wrote {args.out}")
    return 0


def _run(args) -> int:
    _need_matplotlib(args)
    if args.budget is None:
        return _sweep(args)
    if not args.budget > 0:
        raise CommandError("--budget must be > 0 MB")
    common.check_options(budget=args.budget, num_threads=args.threads)
    from ..planner import bridge
    from ..planner.bridge import last_plan
    bridge.keep_plans = True
    interpreter = _load_under_budget(args)  # noqa: F841 - its partitions hold the plan
    found = last_plan()
    if found is None:
        raise CommandError("nothing was delegated, so there is no plan")
    plan, graph, nodes = found
    print(f"budget {args.budget:.2f} MB: arena {plan.arena_bytes / 2**20:.2f} MB, minimum "
          f"{plan.min_budget_bytes / 2**20:.2f} MB, {len(plan.steps)} steps, pinned "
          f"{plan.pinned_bytes / 2**20:.2f} MB, simulated {plan.latency_us / 1e3:.1f} ms")
    print(f"{'node':>5s} {'op':22s} {'kernel':18s} {'slices':>6s} {'by':8s} {'weights MB':>10s} {'preload':>7s}  where")
    for lp, node in zip(plan.layers, nodes):
        wbytes = sum(s.nbytes for s in lp.weight_slots)
        if not lp.weight_slots:
            where, preload = "-", "-"
        elif lp.pinned:
            where, preload = "pinned", "-"
        else:
            where = "streamed"
            preload = str(lp.first_step - lp.load_after - 1 if lp.load_after >= 0 else lp.first_step)
        by = {"weights": "channels", "input": "rows"}.get(lp.slicing, "-") if lp.slices > 1 else "-"
        print(f"{node:5d} {lp.op:22s} {lp.kernel:18s} {lp.slices:6d} {by:8s} {wbytes / 2**20:10.2f} {preload:>7s}  {where}")
    if args.out:
        try:
            from ..planner.draw import draw
            draw(plan, args.out, title=f"{os.path.basename(args.model)} @ {args.budget:g} MB")
        except ImportError as e:
            raise CommandError(str(e)) from None
        print(f"wrote {args.out}")
    return 0
