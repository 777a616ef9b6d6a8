"""Drawing a plan's time x address blocks (matplotlib, imported only here)."""
from __future__ import annotations

from .graph import MB
from .result import Plan

COLORS = {"activation": "#4c72b0", "weight": "#dd8452", "scratch": "#55a868"}


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError("flexdelegate.planner.draw needs matplotlib: "
                          "pip install matplotlib") from e
    return plt


def figure(plan: Plan, title: str | None = None):
    """The plan's picture: blocks over (step, arena offset), the budget as a line, the pinned
    weights' address band labelled, the legend outside the axes (it never covers a block)."""
    plt = _pyplot()
    from matplotlib.patches import Patch, Rectangle
    nsteps = max(len(plan.steps), 1)
    fig, ax = plt.subplots(figsize=(min(5.5 + nsteps / 8, 40), 6))
    pinned = []
    for b in plan.blocks:
        is_pinned = b.kind == "weight" and plan.layers[b.owner].pinned
        if is_pinned:
            pinned.append((b.offset, b.offset + b.nbytes))
        ax.add_patch(Rectangle((b.t0, b.offset / MB), b.t1 - b.t0 + 1, b.nbytes / MB,
                               facecolor=COLORS[b.kind], edgecolor="black", linewidth=0.2,
                               alpha=0.5 if is_pinned else 0.9))  # pinned weights drawn lighter
    top = max(plan.arena_bytes, plan.budget_bytes, 1) / MB
    ax.set_xlim(0, nsteps)
    ax.set_ylim(0, top * 1.05)
    ax.axhline(plan.budget_bytes / MB, color="#c44e52", linestyle="--", linewidth=1.2,
               label=f"budget for the arena {plan.budget_bytes / MB:.1f} MB")
    if pinned:
        lo, hi = min(p[0] for p in pinned) / MB, max(p[1] for p in pinned) / MB
        ax.axhspan(lo, hi, xmin=0.995, xmax=1.0, color=COLORS["weight"])
        ax.annotate("pinned weights", xy=(1.0, (lo + hi) / 2), xycoords=("axes fraction", "data"),
                    xytext=(4, 0), textcoords="offset points", va="center", fontsize=8)
    ax.set_xlabel("step (layer slice, compute order)")
    ax.set_ylabel("arena offset (MB)")
    ax.set_title(title or f"budget {plan.budget_bytes / MB:.1f} MB, arena "
                 f"{plan.arena_bytes / MB:.1f} MB, est. {plan.latency_us / 1e3:.1f} ms")
    handles = [Patch(color=c, label=k) for k, c in COLORS.items()]
    handles.insert(2, Patch(color=COLORS["weight"], alpha=0.5, label="weight (pinned)"))
    handles += ax.get_legend_handles_labels()[0]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.09, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def draw(plan: Plan, path, title: str | None = None) -> None:
    plt = _pyplot()
    fig = figure(plan, title)
    fig.savefig(path)
    plt.close(fig)


def draw_curve(budgets_mb, latency_ms, path, minimum_mb: float, title: str = "") -> None:
    """The budget -> simulated latency curve of `flexdelegate plan MODEL`, the minimum marked."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(budgets_mb, latency_ms, marker="o", label="simulated latency")
    ax.axvline(minimum_mb, color="#c44e52", linestyle="--", label=f"minimum {minimum_mb:.2f} MB")
    ax.set_xlabel("memory budget (MB)")
    ax.set_ylabel("latency (ms, planner's estimate)")
    ax.set_title(title)
    ax.legend(loc="upper right")  # the curve falls from the left: the top right stays empty
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
