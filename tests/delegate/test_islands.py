"""The "never slower to turn on" rule (tflite/islands.c): when part of a graph stays with stock,
an island of delegated nodes with less arithmetic (convolutions, FC, BATCH_MATMUL, attention,
pooling) than FLEX_ISLAND_MIN_FLOPS stays with stock too,
with a reason; bigger islands, and graphs taken whole however small, are delegated. Answers
stay those of stock either way."""
from __future__ import annotations

import numpy as np

from opcheck import F32, rand
from flexdelegate import _native, load_flex
from flexdelegate.run import invoke, make_interpreter, max_error, random_inputs
from flexdelegate.tflite.writer import ModelBuilder

MIN_FLOPS = _native.lib.FLEX_ISLAND_MIN_FLOPS
UNSUPPORTED = "ROUND"  # an op stock (and XNNPack) run but the delegate does not


def _fc(b, x, rows, k, n, seed):
    y = b.tensor((rows, n))
    b.op("FULLY_CONNECTED", [x, b.const(rand((n, k), seed, 0.1)), b.const(rand((n,), seed + 1))], [y])
    return y


def _unary(b, op, x, shape):
    y = b.tensor(shape)
    b.op(op, [x], [y])
    return y


def split_graph(tiny_first=False, rows=16, k=256):
    """x -> big island (two FCs: 2 * 2*rows*k*k flops) -> ROUND -> tiny island (ADD, TANH on
    rows*k elements) -> y; tiny_first puts the tiny island before the unsupported op."""
    b = ModelBuilder()
    x = b.input((rows, k))
    shape = (rows, k)

    def big(h):
        return _fc(b, _fc(b, h, rows, k, k, 1), rows, k, k, 3)

    def tiny(h):
        a = b.tensor(shape)
        b.op("ADD", [h, b.const(rand(shape, 5))], [a])
        return _unary(b, "TANH", a, shape)

    h = tiny(x) if tiny_first else big(x)
    h = _unary(b, UNSUPPORTED, h, shape)
    h = big(h) if tiny_first else tiny(h)
    b.output(h)
    return b.build()


def _run(model, **flex):
    stock = make_interpreter(model)
    d = load_flex(**flex)
    it = make_interpreter(model, delegate=d)
    xs = random_inputs(stock, seed=1)
    assert max_error(invoke(stock, xs), invoke(it, xs)) <= 1e-4
    return d.stats()


def _ops(fallback, reason_start):
    return sorted(f["op"] for f in fallback if f["reason"].startswith(reason_start))


def test_tiny_island_after_the_unsupported_op_stays_with_stock():
    s = _run(split_graph())
    assert _ops(s["fallback"], "unsupported op") == [UNSUPPORTED]
    assert _ops(s["fallback"], "island too small") == ["ADD", "TANH"]
    assert s["nodes_delegated"] == 2 and s["partitions"] == 1
    small = [f["reason"] for f in s["fallback"] if f["op"] == "ADD"][0]
    assert f"island too small: 0 flops < {MIN_FLOPS}" in small  # element-wise ops count nothing


def test_tiny_island_before_the_unsupported_op_stays_with_stock():
    s = _run(split_graph(tiny_first=True))
    assert _ops(s["fallback"], "island too small") == ["ADD", "TANH"]
    assert s["nodes_delegated"] == 2 and s["partitions"] == 1


def test_two_big_islands_are_both_delegated():
    """A graph split by the unsupported op into two islands each above the threshold."""
    b = ModelBuilder()
    x = b.input((16, 256))
    h = _fc(b, _fc(b, x, 16, 256, 256, 1), 16, 256, 256, 3)
    h = _unary(b, UNSUPPORTED, h, (16, 256))
    h = _fc(b, _fc(b, h, 16, 256, 256, 5), 16, 256, 256, 7)
    b.output(h)
    s = _run(b.build())
    assert s["nodes_delegated"] == 4 and s["partitions"] == 2
    assert _ops(s["fallback"], "island too small") == []


def test_the_threshold_is_the_island_sum_not_each_node():
    """Each FC alone is below the threshold, the island of all of them above: kept."""
    rows, k = 8, 128  # 2*8*128*128 = 262144 flops per FC, four of them: 1.05 MFLOP
    assert 2 * rows * k * k < MIN_FLOPS <= 4 * 2 * rows * k * k
    b = ModelBuilder()
    x = b.input((rows, k))
    h = x
    for i in range(4):
        h = _fc(b, h, rows, k, k, 10 + i)
    h = _unary(b, UNSUPPORTED, h, (rows, k))
    b.output(h)
    s = _run(b.build())
    assert s["nodes_delegated"] == 4 and _ops(s["fallback"], "island too small") == []


def test_a_small_graph_taken_whole_is_delegated():
    """No stock node, no boundary: a tiny graph is still delegated whole."""
    b = ModelBuilder()
    x = b.input((2, 3))
    a = b.tensor((2, 3))
    b.op("ADD", [x, b.const(rand((2, 3), 1))], [a])
    b.output(_unary(b, "TANH", a, (2, 3)))
    s = _run(b.build())
    assert s["nodes_delegated"] == s["nodes_total"] == 2 and s["fallback"] == []


def test_folded_nodes_of_a_dropped_island_are_computed_by_stock():
    """A folded constant chain feeding only a tiny island: the whole island, folded nodes
    included, goes back to stock, which computes the same values."""
    b = ModelBuilder()
    x = b.input((4, 8))
    r = _unary(b, UNSUPPORTED, x, (4, 8))
    c = b.tensor((4, 8))
    b.op("FILL", [b.const(np.array([4, 8], np.int32)), b.const(np.array(0.25, F32))], [c])
    y = b.tensor((4, 8))
    b.op("ADD", [r, c], [y])
    b.output(y)
    s = _run(b.build())
    assert s["nodes_delegated"] == 0 and s["nodes_folded"] == 0
    assert _ops(s["fallback"], "island too small") == ["ADD", "FILL"]


def test_an_island_of_element_wise_ops_only_stays_with_stock_however_big():
    """Element-wise and layout ops are memory-bound: XNNPack runs them as fast, so an island of
    them (here 4M elements) never pays for its boundary."""
    shape = (1024, 4096)
    b = ModelBuilder()
    x = b.input(shape)
    r = _unary(b, UNSUPPORTED, x, shape)
    a = b.tensor(shape)
    b.op("ADD", [r, x], [a])
    b.output(_unary(b, "TANH", a, shape))
    s = _run(b.build())
    assert s["nodes_delegated"] == 0 and _ops(s["fallback"], "island too small") == ["ADD", "TANH"]
