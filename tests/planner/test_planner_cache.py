"""Plan cache on disk; drawing."""
import json
import os
import sys

import pytest

from flexdelegate.planner import MB, Plan, plan
from flexdelegate.planner.cache import PlanCache, cached_plan, default_dir, plan_key
from synthetic import mobilenet_v2


@pytest.fixture(scope="module")
def g():
    return mobilenet_v2()


def test_round_trip(tmp_path, g):
    p = plan(g, 12 * MB, threads=2, isa="avx512")
    cache = PlanCache(tmp_path)
    assert cache.get(g, 12 * MB, "avx512", 2) is None
    path = cache.put(g, p)
    assert path.exists() and not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    q = cache.get(g, 12 * MB, "avx512", 2)
    assert q == p and q.to_dict() == p.to_dict()
    assert Plan.from_json(p.to_json()) == p
    assert cache.get(g, 12 * MB, "avx2", 2) is None  # key covers isa, threads, budget
    assert cache.get(g, 13 * MB, "avx512", 2) is None


def test_corrupt_entries_are_ignored(tmp_path, g):
    key = plan_key(g, 12 * MB)
    cache = PlanCache(tmp_path)
    for junk in ["", "{", "[]", '{"format": 1}', json.dumps({"format": 1, "key": key,
                                                             "plan": {"layers": 3}})]:
        cache.path(key).write_text(junk)
        assert cache.get(g, 12 * MB) is None
    p = cached_plan(g, 12 * MB, directory=tmp_path)  # recomputed and rewritten
    assert cache.get(g, 12 * MB) == p
    assert cached_plan(g, 12 * MB, directory=tmp_path) == p


def test_default_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_dir() == tmp_path / "flexdelegate" / "plans"


def test_draw(tmp_path, g):
    pytest.importorskip("matplotlib")
    from flexdelegate.planner.draw import draw
    out = tmp_path / "plan.png"
    draw(plan(g, 12 * MB), out)
    assert out.stat().st_size > 1000


def test_draw_without_matplotlib(tmp_path, g, monkeypatch):
    from flexdelegate.planner.draw import draw
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        draw(plan(g, 12 * MB), tmp_path / "x.png")


@pytest.mark.parametrize("budget_mb", [10, 12, 40])
def test_figure_shows_the_budget_labels_pinned_weights_and_keeps_the_legend_off_the_data(g, budget_mb):
    pytest.importorskip("matplotlib")
    from flexdelegate.planner.draw import figure
    p = plan(g, budget_mb * MB)
    fig = figure(p)
    ax = fig.axes[0]
    budget_lines = [ln for ln in ax.get_lines() if ln.get_label().startswith("budget")]
    assert len(budget_lines) == 1 and budget_lines[0].get_ydata()[0] == pytest.approx(p.budget_bytes / MB)
    assert ax.get_ylim()[1] >= p.budget_bytes / MB  # the line is inside the picture
    has_pinned = any(p.layers[b.owner].pinned for b in p.blocks if b.kind == "weight")
    assert any(t.get_text() == "pinned weights" for t in ax.texts) == has_pinned
    fig.canvas.draw()
    legend, axes = ax.get_legend().get_window_extent(), ax.get_window_extent()
    assert legend.x0 >= axes.x1  # beside the axes, never over a block
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "weight (pinned)" in labels and any(label.startswith("budget") for label in labels)
    import matplotlib.pyplot as plt
    plt.close(fig)
