"""Property tests of the arena planner on random DAGs and budgets."""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from flexdelegate.planner import MB, BudgetTooSmall, min_budget, plan, simulate
from flexdelegate.planner.check import verify
from synthetic import random_graph

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def fastest_sum(g):
    return sum(min(o.compute_us for o in layer.options) for layer in g.layers)


@SETTINGS
@given(seed=st.integers(0, 2**31), frac=st.floats(0.0, 4.0), preload=st.sampled_from([0, 1, 3, 50]))
def test_random_plans_are_valid(seed, frac, preload):
    g = random_graph(seed)
    lo, bottleneck = min_budget(g)
    budget = int(lo * frac)
    if budget < lo:
        with pytest.raises(BudgetTooSmall) as e:
            plan(g, budget, max_preload=preload)
        err = e.value
        assert err.min_budget_bytes == lo and err.layer == bottleneck
        assert f"{lo / MB:.2f} MB" in str(err) and g.layers[bottleneck].op in str(err)
        p = plan(g, err.min_budget_bytes, max_preload=preload)  # the stated minimum works
        verify(p, g)
        with pytest.raises(BudgetTooSmall):
            plan(g, err.min_budget_bytes - MB, max_preload=preload)
        return
    p = plan(g, budget, max_preload=preload)
    verify(p, g)
    assert p.arena_bytes <= budget
    assert simulate(p, g) == pytest.approx(p.latency_us)
    assert p.latency_us >= sum(sum(lp.compute_us) for lp in p.layers) - 1e-6


@SETTINGS
@given(seed=st.integers(0, 2**31))
def test_unlimited_budget_pins_everything(seed):
    g = random_graph(seed)
    p = plan(g, 1 << 40)
    verify(p, g)
    assert all(lp.pinned for lp, layer in zip(p.layers, g.layers)
               if any(s.nbytes for s in lp.weight_slots))
    assert p.arena_bytes < 1 << 40  # the arena is what it needs, not the budget
    assert simulate(p, g) == pytest.approx(fastest_sum(g))


def test_verify_rejects_broken_plans():
    """The checker the properties rely on is not vacuous."""
    import copy

    from flexdelegate.planner.check import PlanInvalid
    from synthetic import vgg19
    g = vgg19(fuse=True)
    good = plan(g, 60 * MB)
    verify(good, g)

    def broken(edit):
        p = copy.deepcopy(good)
        edit(p)
        with pytest.raises(PlanInvalid):
            verify(p, g)

    acts = [i for i, b in enumerate(good.blocks) if b.kind == "activation"]
    weights = [i for i, b in enumerate(good.blocks) if b.kind == "weight"]

    def overlap(p):  # move a weight block onto an activation live at the same time
        w = p.blocks[weights[3]]
        a = next(b for b in p.blocks if b.kind == "activation" and b.t0 <= w.t1 and b.t1 >= w.t0)
        w.offset = a.offset
    broken(overlap)
    broken(lambda p: setattr(p.blocks[weights[-1]], "t0", p.blocks[weights[-1]].t1 + 1))
    broken(lambda p: setattr(p.blocks[acts[1]], "t1", p.blocks[acts[1]].t0 - 1))
    broken(lambda p: p.deps.__setitem__(0, 0))

    def eager(p):  # a loader allowed to run ahead loads before memory is free
        p.deps_start = len(p.steps) - 1
        p.deps = [len(p.steps) - 1] * len(p.steps)
    broken(eager)
    broken(lambda p: setattr(p, "arena_bytes", p.budget_bytes + 64))
