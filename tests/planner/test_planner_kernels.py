"""Kernel choice for a Winograd conv as the runtime describes it (flex_layer_desc, through the
bridge): the whole Winograd blob when it fits, Winograd sliced by output-channel panels when only
slices fit, and its GEMM form when not even one Winograd panel fits beside the scratch."""
import pytest

from flexdelegate._native import ffi, lib
from flexdelegate.planner import bridge, min_budget, plan
from flexdelegate.planner.check import verify

NR, CIN, COUT, TILE, HW = 16, 64, 128, 6, 32
PANELS = COUT // NR
WINO_PANEL = (TILE + 2) ** 2 * NR * (CIN + 1) * 4  # one panel's transformed weights
GEMM_PANEL = NR * (9 * CIN + 1) * 4
WINO_SCRATCH = 512 << 10
IM2COL_SCRATCH = 256 * 9 * CIN * 4
GEMM_US = 20000.0
ACT = HW * HW * COUT * 4  # the conv's output, live while it runs


def conv_graph(direct=False):
    """CONV 3x3 (partition input 0 -> activation 1) -> RELU (-> partition output 2), described
    as the C runtime does: the conv offers Winograd, GEMM by channels and GEMM by rows (and,
    with direct, the same GEMM panels as a direct conv without scratch, a little slower)."""
    offered = [(lib.FLEX_KERNEL_WINOGRAD, 1, PANELS * WINO_PANEL, WINO_SCRATCH, GEMM_US / 2.5, NR),
               (lib.FLEX_KERNEL_GEMM, 1, PANELS * GEMM_PANEL, IM2COL_SCRATCH, GEMM_US, NR),
               (lib.FLEX_KERNEL_GEMM_ROWS, 2, PANELS * GEMM_PANEL, IM2COL_SCRATCH, GEMM_US, 8)]
    if direct:
        offered.append((lib.FLEX_KERNEL_DIRECT, 1, PANELS * GEMM_PANEL, 0, GEMM_US * 1.1, NR))
    kernels = ffi.new("flex_kernel_desc[]", len(offered))
    for i, (kernel, slicing, wb, sb, us, simd) in enumerate(offered):
        kernels[i] = {"kernel": kernel, "slicing": slicing, "weight_bytes": wb, "scratch_bytes": sb,
                      "compute_us": us, "load_us": wb / 3e3, "out_channels": COUT,
                      "out_rows": HW * HW, "simd": simd}
    relu = ffi.new("flex_kernel_desc *", {"kernel": lib.FLEX_KERNEL_NODE, "compute_us": 50.0, "simd": 1})
    ins = [ffi.new("int[1]", [0]), ffi.new("int[1]", [1])]
    layers = ffi.new("flex_layer_desc[2]")
    layers[0] = {"index": 0, "node": 0, "builtin": 3, "n_inputs": 1, "inputs": ins[0], "output": 1,
                 "n_kernels": len(offered), "kernels": kernels}
    layers[1] = {"index": 1, "node": 1, "builtin": 19, "n_inputs": 1, "inputs": ins[1], "output": 2,
                 "n_kernels": 1, "kernels": relu}
    tensors = ffi.new("flex_tensor_desc[3]", [{"id": 0, "kind": 1}, {"id": 1, "nbytes": ACT, "kind": 0},
                                              {"id": 2, "kind": 2}])
    desc = ffi.new("flex_graph_desc *", {"n_layers": 2, "n_tensors": 3, "threads": 1, "layers": layers,
                                         "tensors": tensors})
    return bridge.graph_from_desc(ffi, desc)


@pytest.fixture(scope="module")
def graph():
    return conv_graph()


def conv_plan(graph, budget):
    p = plan(graph, budget)
    verify(p, graph)
    steps = [s for s in bridge._steps(p) if s[0] == 0]  # what the runtime gets for the conv
    return p.layers[0], steps


def test_options_follow_the_description(graph):
    opts = {o.name: o for o in graph.layers[0].options}
    assert set(opts) == {"winograd", "gemm", "gemm-rows"}
    wino = opts["winograd"]
    assert (wino.slicing, wino.out_channels, wino.simd, wino.weight_bytes) == ("weights", COUT, NR, PANELS * WINO_PANEL)
    assert opts["gemm-rows"].slicing == "input" and opts["gemm"].slicing == "weights"
    assert [o.name for o in graph.layers[1].options] == ["relu"]


def test_winograd_whole_when_it_fits(graph):
    lp, steps = conv_plan(graph, 64 << 20)
    assert (lp.kernel, lp.slices) == ("winograd", 1)
    assert [s[2] for s in steps] == [lib.FLEX_KERNEL_WINOGRAD]


def test_winograd_sliced_by_panels_when_its_blob_does_not_fit(graph):
    room = 3 * WINO_PANEL + 4096  # beside the scratch: three panels, not all eight
    lp, steps = conv_plan(graph, ACT + WINO_SCRATCH + room)
    assert lp.kernel == "winograd" and 1 < lp.slices <= PANELS  # as few as fit, or finer to preload
    assert all(start % NR == 0 and count % NR == 0 for start, count in lp.slice_ranges)
    assert sum(count for _, count in lp.slice_ranges) == COUT
    assert max(s.nbytes for s in lp.weight_slots) <= room
    assert [(s[2], s[3]) for s in steps] == [(lib.FLEX_KERNEL_WINOGRAD, 1)] * lp.slices
    assert [(s[4], s[5]) for s in steps] == lp.slice_ranges


def test_gemm_when_not_even_one_winograd_panel_fits(graph):
    lo, _ = min_budget(graph)
    finest_winograd = ACT + WINO_PANEL + WINO_SCRATCH
    assert lo < finest_winograd  # the GEMM form is what makes these budgets feasible
    for budget in (lo, (lo + finest_winograd) // 2):
        lp, steps = conv_plan(graph, budget)
        assert lp.kernel in ("gemm", "gemm-rows")
        assert {s[2] for s in steps} <= {lib.FLEX_KERNEL_GEMM, lib.FLEX_KERNEL_GEMM_ROWS}


def test_ladder_ends_in_direct_at_the_smallest_budgets():
    """Winograd -> im2col GEMM -> direct: direct (no scratch, weights by channel panels) is what
    the smallest budgets run, and only those; with room for im2col, the faster GEMM runs."""
    g = conv_graph(direct=True)
    lo, _ = min_budget(g)
    assert lo < min_budget(conv_graph())[0]  # direct lowers the minimum
    lp, steps = conv_plan(g, lo)
    assert lp.kernel == "direct" and {s[2] for s in steps} == {lib.FLEX_KERNEL_DIRECT}
    gemm_fits = ACT + PANELS * GEMM_PANEL + IM2COL_SCRATCH + (64 << 10)
    assert conv_plan(g, gemm_fits)[0].kernel in ("gemm", "gemm-rows", "winograd")
    assert conv_plan(g, 64 << 20)[0].kernel == "winograd"


def test_verify_refuses_a_winograd_slice_with_part_of_the_scratch(graph):
    """Each output-channel slice transforms the whole input: its scratch slot must hold all of
    the kernel's scratch (the C loader refuses a smaller one per step). Splitting it among the
    slices keeps the total and is still refused."""
    from flexdelegate.planner.check import PlanInvalid
    lp, _ = conv_plan(graph, ACT + WINO_SCRATCH + 3 * WINO_PANEL + 4096)
    assert lp.kernel == "winograd" and lp.slices > 1 and len(lp.scratch) == lp.slices
    p = plan(graph, ACT + WINO_SCRATCH + 3 * WINO_PANEL + 4096)
    share = -(-WINO_SCRATCH // lp.slices)
    for sl in p.layers[0].scratch:  # the slots stay where they were placed, only smaller
        sl.nbytes = -(-share // 64) * 64
    assert sum(sl.nbytes for sl in p.layers[0].scratch) >= WINO_SCRATCH
    with pytest.raises(PlanInvalid, match="channel slice's scratch"):
        verify(p, graph)
