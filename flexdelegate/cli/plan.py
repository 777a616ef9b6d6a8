"""`flexdelegate plan MODEL --budget MB [--out plan.png]`: how the model runs under a budget,
per layer: kernel (winograd, gemm by output channels, gemm-rows by im2col rows, or the op's own),
slices and what they split (output channels or rows), preload distance, pinned or streamed;
optionally a picture of the plan as time x address blocks by kind."""
from __future__ import annotations

import os

from . import common
from .common import CommandError


def main(argv=None) -> int:
    ap = common.parser("flexdelegate plan", __doc__)
    ap.add_argument("--budget", type=float, required=True, help="memory budget in MB")
    ap.add_argument("--cache", default=None, help="packed-weight cache file (default: per model)")
    ap.add_argument("--out", help="write the plan picture here (.png; needs matplotlib)")
    return common.main(ap, _run, argv)


def _load_under_budget(args):
    """The model loaded without a budget, then planned for args.budget through set_budget(),
    whose BudgetError names the minimum and its bottleneck as fields."""
    from .. import BudgetError, load_flex
    from ..run import make_interpreter
    opts = {"num_threads": args.threads}
    if args.cache is not None:
        opts["cache_path"] = args.cache
    delegate = load_flex(**opts)
    try:
        interpreter = make_interpreter(args.model, delegate=delegate, num_threads=args.threads)
    except (ValueError, RuntimeError) as e:
        raise CommandError(str(e).splitlines()[0]) from None
    try:
        delegate.set_budget(args.budget)
    except BudgetError as e:
        raise CommandError(f"budget {args.budget:g} MB is infeasible: the minimum is {e.min_budget_mb:.2f} MB "
                           f"(bottleneck: node {e.node}, {e.op})") from None
    return interpreter


def _run(args) -> int:
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
