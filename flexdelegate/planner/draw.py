"""Drawing a plan's time x address blocks (matplotlib, imported only here)."""
from __future__ import annotations

from .graph import MB
from .result import Plan

COLORS = {"activation": "#4c72b0", "weight": "#dd8452", "scratch": "#55a868"}


def draw(plan: Plan, path, title: str | None = None) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch, Rectangle
    except ImportError as e:
        raise ImportError("flexdelegate.planner.draw needs matplotlib: "
                          "pip install matplotlib") from e
    nsteps = max(len(plan.steps), 1)
    fig, ax = plt.subplots(figsize=(min(4 + nsteps / 8, 40), 6))
    for b in plan.blocks:
        ax.add_patch(Rectangle((b.t0, b.offset / MB), b.t1 - b.t0 + 1, b.nbytes / MB,
                               facecolor=COLORS[b.kind], edgecolor="black", linewidth=0.2,
                               alpha=0.5 if b.kind == "weight" and plan.layers[b.owner].pinned
                               else 0.9))  # pinned weights drawn lighter
    ax.set_xlim(0, nsteps)
    ax.set_ylim(0, max(plan.arena_bytes, 1) / MB)
    ax.set_xlabel("step (layer slice, compute order)")
    ax.set_ylabel("arena offset (MB)")
    ax.set_title(title or f"budget {plan.budget_bytes / MB:.1f} MB, arena "
                 f"{plan.arena_bytes / MB:.1f} MB, est. {plan.latency_us / 1e3:.1f} ms")
    ax.legend(handles=[Patch(color=c, label=k) for k, c in COLORS.items()], loc="upper right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def draw_curve(budgets_mb, latency_ms, path, minimum_mb: float, title: str = "") -> None:
    """The budget -> simulated latency curve of `flexdelegate plan MODEL`, the minimum marked."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(budgets_mb, latency_ms, marker="o", label="simulated latency")
    ax.axvline(minimum_mb, color="#c44e52", linestyle="--", label=f"minimum {minimum_mb:.2f} MB")
    ax.set_xlabel("memory budget (MB)")
    ax.set_ylabel("latency (ms, planner's estimate)")
    ax.set_title(title)
    ax.legend(loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
