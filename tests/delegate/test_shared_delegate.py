"""One delegate serving several interpreters (several TfLiteContexts): each interpreter's
partitions leave the delegate's reports when it is destroyed, whatever order they go in."""
import gc

import numpy as np

from flexdelegate import load_flex
from flexdelegate.run import invoke, make_interpreter, max_error, random_inputs
from models import conv_net


def test_partitions_unregister_after_subgraphs_array_grew():
    model = conv_net(size=12)
    stock = make_interpreter(model)
    x = random_inputs(stock)
    ref = invoke(stock, x)
    d = load_flex(num_threads=2, cache_path="")
    # Each interpreter adds a subgraph record: the array moves, a partition must not keep a
    # pointer into it (unregister read the freed array).
    its = [make_interpreter(model, delegate=d) for _ in range(4)]
    for k in (0, 2, 1):
        del its[k]
        gc.collect()
    assert len(d.stats()["partitions_memory"]) == 1
    assert max_error(ref, invoke(its[0], x)) <= 1e-4
    del its
    gc.collect()
    assert d.stats()["partitions_memory"] == []


def test_interpreters_at_different_thread_counts_keep_their_pools():
    """A delegate without num_threads follows each interpreter's count: making a 2-thread
    interpreter must not free the pool a 1-thread one runs on (it did: use after free)."""
    model = conv_net(size=12)
    stock = make_interpreter(model)
    x = random_inputs(stock)
    ref = invoke(stock, x)
    d = load_flex(cache_path="")
    one = make_interpreter(model, delegate=d, num_threads=1)
    two = make_interpreter(model, delegate=d, num_threads=2)
    assert d.stats()["threads"] == 2
    for _ in range(20):
        for it in (one, two):
            assert max_error(ref, invoke(it, x)) <= 1e-4
    del one, two, it
    gc.collect()
    assert d.stats()["partitions_memory"] == []


def test_stats_break_coverage_down_per_interpreter():
    """Two interpreters on different models share one delegate: the totals stay sums, and
    by_subgraph gives each one's coverage (its fallbacks and ops under the same index)."""
    from flexdelegate.tflite.demo_model import build_demo_model
    from flexdelegate.tflite.writer import ModelBuilder
    b = ModelBuilder()  # one delegated node (an FC of 2 MFLOP: an island worth its boundary), one left to TFLite (FLOOR)
    x = b.input((16, 256), name="x")
    h, y = b.tensor((16, 256)), b.tensor((16, 256))
    w = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    b.op("FULLY_CONNECTED", [x, b.const(w), -1], [h])
    b.op("FLOOR", [h], [y])
    b.output(y)
    d = load_flex(cache_path="")
    first = make_interpreter(build_demo_model(), delegate=d)  # noqa: F841 - keeps its subgraph
    second = make_interpreter(b.build(), delegate=d)  # noqa: F841
    st = d.stats()
    per = st["by_subgraph"]
    assert [p["subgraph"] for p in per] == [0, 1]
    assert (per[0]["nodes_total"], per[0]["nodes_delegated"], per[0]["fallback"]) == (16, 16, 0)
    assert (per[1]["nodes_total"], per[1]["nodes_delegated"], per[1]["fallback"]) == (2, 1, 1)
    for key in ("nodes_total", "nodes_delegated", "nodes_folded", "partitions"):
        assert st[key] == sum(p[key] for p in per)
    assert [f["subgraph"] for f in st["fallback"]] == [1] and st["fallback"][0]["op"] == "FLOOR"
