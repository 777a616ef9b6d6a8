"""Band-by-band execution of layer chains (native/ir/band.h): a chain computed a band of rows at
a time must give bit for bit the numbers of the same layers run one by one (FP32: each layer's
own kernel runs on a sub-image), and agree with stock TFLite like any delegated run.
FLEXDELEGATE_BAND=none runs every node alone, all:ROWS:STRIPS forces every chain band by band."""

import numpy as np
import pytest

from budgetcheck import measured_peak, min_budget, simulated_planning_heap
from flexdelegate import load_flex
from flexdelegate.run import invoke, make_interpreter, max_error, random_inputs
from flexdelegate.tflite.writer import ModelBuilder
from opcheck import TOL, window_out
from sanitizers import ASAN, MEASURES_MEMORY

MB = 1 << 20


def _w(rng, shape, fan_in):
    return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)


class Chain:
    """A writer-built model whose layers run one after another on one data tensor."""

    def __init__(self, shape, seed=0):
        self.b = ModelBuilder()
        self.rng = np.random.default_rng(seed)
        self.x = self.cur = self.b.input(shape, name="x")
        self.shape = tuple(shape)

    def _out(self, shape):
        self.shape = tuple(shape)
        t = self.b.tensor(self.shape)
        return t

    def conv(self, cout, k=1, stride=1, dilation=1, padding="SAME", act="NONE", residual=None):
        n, h, w, c = self.shape
        oh, ow = window_out(h, k, stride, dilation, padding), window_out(w, k, stride, dilation, padding)
        src = self.cur
        y = self._out((n, oh, ow, cout))
        self.b.op("CONV_2D", [src, self.b.const(_w(self.rng, (cout, k, k, c), k * k * c)),
                              self.b.const(_w(self.rng, (cout,), 4))], [y], padding=padding,
                  stride_w=stride, stride_h=stride, dilation_w_factor=dilation, dilation_h_factor=dilation,
                  fused_activation_function=act)
        self.cur = y
        return self

    def depthwise(self, k=3, stride=1, dilation=1, padding="SAME", act="RELU6"):
        n, h, w, c = self.shape
        oh, ow = window_out(h, k, stride, dilation, padding), window_out(w, k, stride, dilation, padding)
        src = self.cur
        y = self._out((n, oh, ow, c))
        self.b.op("DEPTHWISE_CONV_2D", [src, self.b.const(_w(self.rng, (1, k, k, c), k * k)),
                                        self.b.const(_w(self.rng, (c,), 4))], [y], padding=padding,
                  stride_w=stride, stride_h=stride, dilation_w_factor=dilation, dilation_h_factor=dilation,
                  depth_multiplier=1, fused_activation_function=act)
        self.cur = y
        return self

    def pool(self, op="MAX_POOL_2D", k=2, stride=2, padding="VALID"):
        n, h, w, c = self.shape
        src = self.cur
        y = self._out((n, window_out(h, k, stride, 1, padding), window_out(w, k, stride, 1, padding), c))
        self.b.op(op, [src], [y], padding=padding, stride_w=stride, stride_h=stride, filter_width=k,
                  filter_height=k, fused_activation_function="NONE")
        self.cur = y
        return self

    def add(self, other, act="NONE"):
        src = self.cur
        y = self._out(self.shape)
        self.b.op("ADD", [src, other], [y], fused_activation_function=act)
        self.cur = y
        return self

    def unary(self, op):
        src = self.cur
        y = self._out(self.shape)
        self.b.op(op, [src], [y])
        self.cur = y
        return self

    def swish(self):
        """x * LOGISTIC(x): fuse.c makes it the producer's activation (two fused tails)."""
        src = self.cur
        gate = self.b.tensor(self.shape)
        self.b.op("LOGISTIC", [src], [gate])
        return self.add_like("MUL", gate)

    def add_like(self, op, other, other_first=False):
        src = self.cur
        y = self._out(self.shape)
        self.b.op(op, [other, src] if other_first else [src, other], [y], fused_activation_function="NONE")
        self.cur = y
        return self

    def squeeze_excite(self, reduced=4, gate_first=False):
        """EfficientNet's SE: MEAN over rows and columns, two 1x1 convs, a sigmoid gate that
        multiplies the block's data (a per-image operand: it broadcasts over rows)."""
        n, h, w, c = self.shape
        data = self.cur
        m = self.b.tensor((n, 1, 1, c))
        self.b.op("MEAN", [data, self.b.const(np.array([1, 2], np.int32))], [m], keep_dims=True)
        self.cur, self.shape = m, (n, 1, 1, c)
        self.conv(reduced, act="RELU").conv(c)
        gate = self._out((n, 1, 1, c))
        self.b.op("LOGISTIC", [self.cur], [gate])
        self.cur, self.shape = data, (n, h, w, c)
        return self.add_like("MUL", gate, gate_first)

    def mbconv(self, expand=4, stride=1, gate_first=False):
        n, h, w, c = self.shape
        block_in = self.cur
        self.conv(c * expand).swish().depthwise(act="NONE", stride=stride).swish().squeeze_excite(gate_first=gate_first).conv(c)
        if stride == 1:
            self.add(block_in)
        return self

    def inverted_residual(self, expand=6, stride=1):
        n, h, w, c = self.shape
        block_in = self.cur
        self.conv(c * expand, act="RELU6").depthwise(stride=stride).conv(c)
        if stride == 1:
            self.add(block_in)
        return self

    def build(self):
        self.b.output(self.cur)
        return self.b.build()


def _run(model, inputs, threads, band, monkeypatch, winograd="off"):
    monkeypatch.setenv("FLEXDELEGATE_BAND", band)
    d = load_flex(cache_path="", winograd=winograd)  # Winograd layers run whole maps: never in a chain
    it = make_interpreter(model, delegate=d, num_threads=threads)
    out = invoke(it, inputs)
    stats = d.stats()
    assert stats["fallback"] == [], stats
    return out, [o["kernel"] for o in stats["ops"]]


def _banded(kernels):
    return sum(k.startswith("band x") for k in kernels)


def check_bands(model, *, threads=(1, 2), bands=("all", "all:1:1", "all:2:3", "all:3:2"), min_chains=1, seed=0,
                winograd="off"):
    """Every forced band height / strip count gives exactly the unbanded numbers, which agree
    with stock (3x3 convs as GEMM: the Winograd choice is off)."""
    ref_it = make_interpreter(model)
    inputs = random_inputs(ref_it, seed=seed)
    ref = invoke(ref_it, inputs)
    mp = pytest.MonkeyPatch()
    try:
        for t in threads:
            plain, kernels = _run(model, inputs, t, "none", mp, winograd)
            assert _banded(kernels) == 0
            assert max_error(ref, plain) <= TOL
            for band in bands:
                got, kernels = _run(model, inputs, t, band, mp, winograd)
                assert _banded(kernels) >= min_chains, (band, kernels)
                assert not any(k.startswith("band") and "winograd" in k for k in kernels), kernels
                for a, b in zip(plain, got):
                    assert np.array_equal(a, b), (t, band, float(np.max(np.abs(a - b))))
    finally:
        mp.undo()


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("shape", [(1, 17, 13, 8), (2, 12, 9, 8), (1, 7, 30, 16)], ids=str)
def test_inverted_residual(shape, stride):
    check_bands(Chain(shape).inverted_residual(stride=stride).build())


def test_two_blocks_and_odd_heights():
    """The first block's output has one reader: both blocks make one chain of six layers."""
    c = Chain((1, 23, 11, 8)).inverted_residual().inverted_residual(stride=2)
    check_bands(c.build())


@pytest.mark.parametrize("batch,gate_first", [(1, False), (3, False), (2, True)])
def test_mbconv_with_swish_and_squeeze_excite(batch, gate_first):
    """Chains through fused swish tails, ended by the SE's second reader, and headed by the
    SE's MUL (its gate broadcast over rows, one per image, on either side)."""
    c = Chain((batch, 15, 12, 8)).mbconv(gate_first=gate_first).mbconv(stride=2, gate_first=gate_first)
    check_bands(c.build(), min_chains=4)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("stride,dilation", [(1, 1), (2, 1), (1, 2), (3, 1)])
def test_conv_chains(padding, stride, dilation):
    c = Chain((1, 21, 10, 5)).conv(12, k=3, stride=stride, dilation=dilation, padding=padding, act="RELU")
    c.conv(7, k=3, padding=padding, dilation=dilation).conv(9, k=1)
    check_bands(c.build())


def test_pool_and_elementwise_layers():
    c = Chain((2, 19, 14, 6)).conv(16, k=3, act="RELU").pool("MAX_POOL_2D", 3, 2, "SAME").unary("TANH")
    c.pool("AVERAGE_POOL_2D", 2, 1, "VALID").conv(8, k=3, padding="VALID")
    check_bands(c.build())


def test_tall_kernels_and_short_outputs():
    """A 5x5 VALID conv and a stride-2 depthwise leave fewer rows than threads want strips."""
    c = Chain((1, 9, 6, 4)).conv(8, k=5, padding="VALID").depthwise(stride=2).conv(4)
    check_bands(c.build(), bands=("all", "all:1:1", "all:1:2", "all:5:3"))


def test_intermediate_read_twice_is_not_fused():
    """A tensor with a second reader must exist whole: the chain stops there."""
    c = Chain((1, 12, 12, 8))
    c.conv(16, act="RELU")
    mid = c.cur
    c.depthwise().conv(16).add(mid)
    check_bands(c.build())


def test_winograd_layers_stay_out():
    """A Winograd conv computes whole maps in tiles: the chain ends before it and starts after."""
    c = Chain((1, 16, 16, 16)).conv(32, act="RELU").conv(32, k=3, act="RELU").conv(16).depthwise().conv(8)
    check_bands(c.build(), winograd="all")


def test_default_is_the_rule_and_none_turns_it_off(monkeypatch):
    """The rule bands a chain whose intermediates pass its minimum and leaves a small one whole;
    unset and "auto" are the same; "none" runs every node alone. All give the same numbers."""
    big = Chain((1, 56, 56, 16)).inverted_residual().build()  # 56x56x96 intermediates: 1.2 MB each
    small = Chain((1, 8, 8, 16)).inverted_residual().build()  # 8x8x96: 24 KB
    for model, chains in ((big, 1), (small, 0)):
        x = random_inputs(make_interpreter(model))
        outs = []
        for band, want in (("", chains), ("auto", chains), ("none", 0)):
            out, kernels = _run(model, x, 1, band, monkeypatch)
            assert _banded(kernels) == want, (band, kernels)
            outs.append(out)
        assert all(np.array_equal(a, b) for o in outs[1:] for a, b in zip(outs[0], o))


@pytest.mark.parametrize("threads", [1, 2])
def test_rule_leaves_one_row_maps_to_the_layers_threads(threads, monkeypatch):
    """A 1-D conv graph's maps are one row high: a band would be the whole map on one thread,
    so the rule leaves the chain to its layers (each split across the threads); forced, the
    chain still gives the same numbers."""
    model = Chain((1, 1, 4096, 32)).conv(64, act="RELU").conv(32).build()  # 1 MB intermediate
    x = random_inputs(make_interpreter(model))
    plain, kernels = _run(model, x, threads, "auto", monkeypatch)
    assert _banded(kernels) == 0, kernels
    forced, kernels = _run(model, x, threads, "all", monkeypatch)
    assert _banded(kernels) == 1, kernels
    assert all(np.array_equal(a, b) for a, b in zip(plain, forced))


def test_budget_plans_run_chains_band_by_band_below_the_nodes_minimum(tmp_path, monkeypatch):
    """A budget plan runs a chain as one step, its weights whole in a slot, its intermediates
    never whole: the same numbers as the layers one by one at every budget and after
    set_budget back and forth, and a minimum budget below what running the nodes one by one
    needs (their expanded maps, in and out of the depthwise, whole)."""
    c = Chain((1, 64, 64, 16)).inverted_residual().inverted_residual(stride=2)  # 64x64x96 maps: 1.5 MB
    model = c.pool("AVERAGE_POOL_2D", 4, 4).conv(1024).conv(1024).build()  # 4 MB of weights: streamed
    ref_it = make_interpreter(model)
    x = random_inputs(ref_it, seed=3)
    plain, _ = _run(model, x, 1, "none", monkeypatch)
    low_nodes = min_budget(model, tmp_path / "n.fxc", winograd="off")
    monkeypatch.setenv("FLEXDELEGATE_BAND", "all")
    low = min_budget(model, tmp_path / "b.fxc", winograd="off")
    assert low < low_nodes - 0.5, (low, low_nodes)
    d = load_flex(cache_path=str(tmp_path / "m.fxc"), winograd="off")
    it = make_interpreter(model, delegate=d)
    for budget in (0.0, low, 0.0, low + 0.2, low_nodes + 0.2, 0.0):
        d.set_budget(budget)
        got = invoke(it, x)
        assert all(np.array_equal(a, b) for a, b in zip(plain, got)), budget
        ops = d.stats()["ops"]
        assert _banded([o["kernel"] for o in ops]) >= 2, (budget, ops)  # (the 4 MB one streams its nodes)
        if budget:
            assert any(o["slices"] > 1 for o in ops), "not a budget plan"


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("make", [lambda: Chain((2, 40, 30, 8)).inverted_residual().inverted_residual(stride=2),
                                  lambda: Chain((2, 31, 24, 8)).mbconv(gate_first=True).mbconv(stride=2)],
                         ids=["inverted-residual-batch2", "mbconv-se"])
def test_budget_chains_over_images_gates_and_threads(make, threads, tmp_path, monkeypatch):
    """At its minimum budget, chains over two images, headed by an SE gate made off the chain,
    in strips over two threads, give the numbers of the layers run one by one."""
    model = make().build()
    x = random_inputs(make_interpreter(model), seed=1)
    plain, _ = _run(model, x, threads, "none", monkeypatch)
    monkeypatch.setenv("FLEXDELEGATE_BAND", "all")
    low = min_budget(model, tmp_path / "b.fxc", winograd="off", num_threads=threads)
    d = load_flex(budget=low, cache_path=str(tmp_path / "m.fxc"), winograd="off", num_threads=threads)
    it = make_interpreter(model, delegate=d, num_threads=threads)
    for _ in range(2):
        got = invoke(it, x)
        assert all(np.array_equal(a, b) for a, b in zip(plain, got))
    assert _banded([o["kernel"] for o in d.stats()["ops"]]) >= 1
    assert d.stats()["partitions_memory"][0]["steps"] < len(d.stats()["ops"])  # a budget plan: chains as steps


def _heavy_chain() -> bytes:
    """Small maps, large weights: a chain whose weights (8 MB, held whole) a small budget cannot hold."""
    return Chain((1, 8, 8, 512)).conv(2048, act="RELU").conv(512).build()


def test_a_chain_whose_weights_the_budget_cannot_hold_runs_its_nodes(tmp_path, monkeypatch):
    """Small maps, large weights: held whole, the chain's weights (8 MB) would be the plan's
    bottleneck; so a budget below that runs its layers one by one, their weights sliced and
    streamed, with the same numbers, and the minimum named is that of the nodes."""
    model = _heavy_chain()
    x = random_inputs(make_interpreter(model), seed=5)
    plain, _ = _run(model, x, 1, "none", monkeypatch)
    monkeypatch.setenv("FLEXDELEGATE_BAND", "all")
    low = min_budget(model, tmp_path / "b.fxc", winograd="off")
    assert low < 8, low
    d = load_flex(cache_path=str(tmp_path / "m.fxc"), winograd="off")
    it = make_interpreter(model, delegate=d)
    for budget in (low, 0.0, low + 1):
        d.set_budget(budget)
        got = invoke(it, x)
        assert all(np.array_equal(a, b) for a, b in zip(plain, got)), budget
        ops = d.stats()["ops"]
        assert _banded([o["kernel"] for o in ops]) == (budget == 0), (budget, ops)


def test_a_retry_without_a_chain_counts_what_the_refused_plan_kept(tmp_path, monkeypatch):
    """The plan refused for a chain's weights kept heap resident (in a fresh process, the first
    plan's first-time costs): the retry that runs the chain's nodes holds the budget with it.
    Simulated: 2 MB kept from before the first attempt."""
    from flexdelegate.planner import bridge
    model = _heavy_chain()
    monkeypatch.setenv("FLEXDELEGATE_BAND", "all")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    budget = min_budget(model, tmp_path / "b.fxc", winograd="off") + 3  # below the chain's 8 MB
    limits = simulated_planning_heap(monkeypatch, [2] * 9)
    d = load_flex(budget=budget, cache_path=str(tmp_path / "m.fxc"), winograd="off")
    it = make_interpreter(model, delegate=d)
    invoke(it, random_inputs(it))
    assert _banded([o["kernel"] for o in d.stats()["ops"]]) == 0
    assert d.stats()["partitions_memory"][0]["arena_bytes"] + 2 * MB <= limits[0], limits
    bridge._memo.clear()


def _peak(model, tmp_path, name, budget):
    return measured_peak(model, tmp_path / f"{name}.tflite", tmp_path / f"{name}.fxc", budget, from_disk=True,
                         env={"FLEXDELEGATE_BAND": "all"})


@MEASURES_MEMORY
@pytest.mark.skipif(ASAN, reason="a 5.5 MB budget is within ASan's redzones and quarantine (7 MB measured there)")
def test_a_banded_budget_plan_stays_within_its_budget(tmp_path, monkeypatch):
    """A budget the layers one by one cannot meet (their 96x96x96 expanded maps, 3.5 MB in and
    out of the depthwise, whole), banded: a cold load and its invokes stay within it over the
    whole process, the stock interpreter's fixed cost aside (a tiny model from a file). (Not at
    the banded minimum itself: the delegate's own fixed part, 3.1-3.6 MB here, varies by 0.6 MB
    between LiteRT runs.)"""
    budget = 5.5
    model = Chain((1, 96, 96, 16)).inverted_residual().build()
    monkeypatch.setenv("FLEXDELEGATE_BAND", "none")
    assert min_budget(model, tmp_path / "nodes.fxc") > budget + 2
    monkeypatch.setenv("FLEXDELEGATE_BAND", "all")
    assert min_budget(model, tmp_path / "min.fxc") < budget
    fixed = _peak(Chain((1, 4, 4, 8)).conv(8).build(), tmp_path, "tiny", 0)["peak"]
    got = _peak(model, tmp_path, "chain", budget)
    assert _banded(got["kernels"]) == 1, got["kernels"]
    assert got["peak"] - fixed <= budget * MB, f"peak {got['peak'] / MB:.2f} MB, fixed {fixed / MB:.2f} MB"
