"""Kernel choice degrades with the budget; graphs validate and hash stably."""
import pytest

from flexdelegate.planner import MB, BudgetTooSmall, Graph, GraphError, KernelOption, Layer, Tensor
from flexdelegate.planner import min_budget, plan, simulate
from flexdelegate.planner.check import verify
from flexdelegate.planner.choice import NoFit, choose_for_budget
from synthetic import Builder

ORDER = ["winograd6", "winograd4", "im2col", "direct"]


def one_conv(load_free=False):
    b = Builder()
    x = b.input(14, 14, 128)  # F(6,3) and F(4,3) need the same scratch here
    y = b.conv(x, 128, 3, 1)
    g = b.graph(y)
    if load_free:  # loading costs nothing: every planner variant then ranks by compute
        layers = [Layer(l.index, l.op, l.inputs, l.output,
                        [KernelOption(**{**o.__dict__, "load_us": 0.0}) for o in l.options])
                  for l in g.layers]
        g = Graph(list(g.tensors.values()), layers)
    return g


def test_choice_degrades_as_budget_shrinks():
    g = one_conv()
    acts = sum(t.nbytes for t in g.tensors.values())
    seen = []
    for k in range(160, 0, -1):
        budget = acts + k * 64 * 1024
        try:
            kernel = choose_for_budget(g, budget)[0].option.name
        except NoFit:
            break
        seen.append(kernel)
    ranks = [ORDER.index(k) for k in seen]
    assert ranks == sorted(ranks), seen
    assert {"winograd6", "winograd4", "im2col", "direct"} <= set(seen)


def test_plan_degrades_and_pins_at_large_budget():
    g = one_conv(load_free=True)
    lo, _ = min_budget(g)
    kernels = []
    for budget in range(lo + 40 * MB, lo - 1, -MB // 4):
        p = plan(g, budget)
        verify(p, g)
        kernels.append(p.layers[0].kernel)
    ranks = [ORDER.index(k) for k in kernels]
    assert ranks == sorted(ranks) and ranks[0] == 0 and ranks[-1] == 3
    big = plan(g, 1 << 34)
    assert big.layers[0].pinned and big.layers[0].kernel == "winograd6"
    assert simulate(big, g) == pytest.approx(min(o.compute_us for o in g.layers[0].options))
    with pytest.raises(BudgetTooSmall):
        plan(g, lo - 1)


def test_graph_validation_and_key():
    opt = [KernelOption("ref", 0, 0, 1.0, 0.0)]
    ts = [Tensor(0, 100, "input"), Tensor(1, 100), Tensor(2, 100, "output")]
    good = [Layer(0, "A", [0], 1, opt), Layer(1, "B", [1], 2, opt)]
    g = Graph(ts, good)
    assert g.key() == Graph(ts, list(good)).key()
    changed = [Tensor(0, 100, "input"), Tensor(1, 101), Tensor(2, 100, "output")]
    assert Graph(changed, good).key() != g.key()
    assert g.lifetimes() == {0: (0, 0), 1: (0, 1), 2: (1, 1)}
    with pytest.raises(GraphError):  # reads a tensor produced later
        Graph(ts, [Layer(0, "A", [1], 2, opt), Layer(1, "B", [0], 1, opt)])
    with pytest.raises(GraphError):  # unknown tensor
        Graph(ts, [Layer(0, "A", [7], 1, opt), Layer(1, "B", [1], 2, opt)])
    with pytest.raises(GraphError):  # index out of order
        Graph(ts, [Layer(1, "A", [0], 1, opt), Layer(0, "B", [1], 2, opt)])
    with pytest.raises(GraphError):  # no options
        Graph(ts, [Layer(0, "A", [0], 1, []), Layer(1, "B", [1], 2, opt)])
    with pytest.raises(GraphError):  # output never produced
        Graph(ts, [Layer(0, "A", [0], 1, opt)])
