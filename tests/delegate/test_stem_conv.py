"""Stem conv (conv/stem.c, kernels/conv-stem/) inside the delegate: the first layer of image CNNs,
a 3x3 conv over 3 channels. Chosen at load by conv/choose.c where it measured faster (strides 1
and 2 on AVX2 and AVX-512: reported as "direct f32-conv-stem-..."), left to FLEXDELEGATE_DIRECT=all|none when that
is set, and always equal to stock TFLite: paddings, batch, odd channel counts, a fused residual
ADD and a SWISH, threads, and the slices of a budget plan."""
import numpy as np
import pytest

from budgetcheck import min_budget
from flexdelegate import _native_testing as testing, load_flex
from flexdelegate.run import invoke, make_interpreter, max_error, random_inputs
from flexdelegate.tflite.writer import ModelBuilder
from opcheck import check, conv_model

GEMM = testing.chosen("gemm")
# conv/choose.c's measured stem rules: the AVX2 and AVX-512 families, strides 1 and 2.
MEASURED_STEM = {"f32-gemm-6x16-avx2": "direct f32-conv-stem-6x16-avx2",
                 "f32-gemm-8x32-avx512f": "direct f32-conv-stem-8x32-avx512f"}


def conv_kernels(stats):
    return [o["kernel"] for o in stats["ops"] if o["op"] == "CONV_2D"]


def expect_stem(kernel):
    if GEMM in MEASURED_STEM:
        assert kernel.startswith(MEASURED_STEM[GEMM]), kernel
    else:  # no measurements for this ISA: im2col, as before
        assert kernel.startswith("gemm-im2col"), kernel


@pytest.mark.parametrize("x_shape,cout,opts", [
    ((1, 33, 31, 3), 32, dict(stride=(2, 2), act="RELU6")),      # SAME: bottom/right pad only
    ((2, 16, 17, 3), 17, dict(stride=(2, 2), padding="VALID")),  # batch 2, cout % NR != 0
    ((1, 2, 2, 3), 40, dict(stride=(2, 2), act="RELU_N1_TO_1")),  # smaller than the window
    ((1, 1, 9, 3), 8, dict(stride=(2, 2))),                       # one input row
    ((1, 64, 48, 3), 64, dict(stride=(2, 2), act="RELU")),
    ((1, 19, 23, 3), 24, dict(act="RELU6")),                      # stride 1, SAME: every side padded
    ((2, 9, 8, 3), 33, dict(padding="VALID")),                    # stride 1, batch 2
], ids=str)
@pytest.mark.parametrize("threads", [1, 2])
def test_stems_match_stock(x_shape, cout, opts, threads, monkeypatch):
    monkeypatch.delenv("FLEXDELEGATE_DIRECT", raising=False)
    (kernel,) = conv_kernels(check(conv_model(x_shape, cout, 3, 3, **opts), num_threads=threads))
    expect_stem(kernel)


def test_other_convs_keep_their_form(monkeypatch):
    monkeypatch.delenv("FLEXDELEGATE_DIRECT", raising=False)
    for x_shape, k, stride, dil in [((1, 16, 16, 3), 3, (1, 2), (1, 1)), ((1, 16, 16, 4), 3, (2, 2), (1, 1)),
                                    ((1, 16, 16, 3), 5, (2, 2), (1, 1)), ((1, 16, 16, 3), 3, (2, 2), (2, 2)),
                                    ((1, 16, 16, 3), 3, (3, 3), (1, 1))]:
        (kernel,) = conv_kernels(check(conv_model(x_shape, 16, k, k, stride=stride, dilation=dil)))
        assert "conv-stem" not in kernel, (x_shape, k, stride, dil)


def test_stride1_stem_takes_precedence_over_winograd_unless_forced(monkeypatch):
    """A 3-channel 3x3 stride-1 conv would take Winograd; where the stem rule holds it runs the
    stem kernel instead (measured faster), and winograd="all" still forces Winograd."""
    monkeypatch.delenv("FLEXDELEGATE_DIRECT", raising=False)
    model = conv_model((1, 40, 36, 3), 32, 3, 3, act="RELU")
    expect_stem(conv_kernels(check(model))[0])
    (forced,) = conv_kernels(check(model, flex=dict(winograd="all")))
    assert forced.startswith("winograd-"), forced


def test_winograd_stays_where_the_stem_kernel_would_not_run(monkeypatch):
    """Only a conv the stem kernel would run gives up Winograd: not an image wider than its
    zero row (5462+ pixels), nor any stem under FLEXDELEGATE_DIRECT=all|none (which leaves
    stems to igemm / im2col): those keep the Winograd they had before the stem rule."""
    monkeypatch.delenv("FLEXDELEGATE_DIRECT", raising=False)
    (wide,) = conv_kernels(check(conv_model((1, 4, 5500, 3), 16, 3, 3)))
    assert wide.startswith("winograd-"), wide
    model = conv_model((1, 40, 36, 3), 32, 3, 3, act="RELU")
    for force in ("all", "none"):
        monkeypatch.setenv("FLEXDELEGATE_DIRECT", force)
        (kernel,) = conv_kernels(check(model))
        assert kernel.startswith("winograd-"), (force, kernel)


def test_forced_direct_modes_leave_stems_to_igemm_or_im2col(monkeypatch):
    model = conv_model((1, 20, 20, 3), 32, 3, 3, stride=(2, 2))
    monkeypatch.setenv("FLEXDELEGATE_DIRECT", "all")
    assert conv_kernels(check(model))[0].startswith("direct f32-igemm-")
    monkeypatch.setenv("FLEXDELEGATE_DIRECT", "none")
    assert conv_kernels(check(model))[0].startswith("gemm-im2col")


def stem_block_model(size=24, c=24, seed=0, act="NONE") -> bytes:
    """x -> stem CONV 3x3 s2 (act) -> ADD(y, skip) RELU6 -> CONV 3x3 s1 -> output: the ADD fuses
    into the stem as its residual (SWISH: a CONV + LOGISTIC + MUL the delegate fuses)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input((1, size, size, 3), name="x")
    skip = b.input((1, size // 2, size // 2, c), name="skip")
    h = b.tensor((1, size // 2, size // 2, c))
    b.op("CONV_2D", [x, b.const((rng.standard_normal((c, 3, 3, 3)) * 0.3).astype(np.float32)),
                     b.const(rng.standard_normal(c).astype(np.float32))], [h], padding="SAME", stride_w=2,
         stride_h=2, fused_activation_function=act)
    s = b.tensor((1, size // 2, size // 2, c))
    b.op("ADD", [h, skip], [s], fused_activation_function="RELU6")
    y = b.tensor((1, size // 2, size // 2, c))
    b.op("CONV_2D", [s, b.const((rng.standard_normal((c, 3, 3, c)) * 0.1).astype(np.float32)),
                     b.const(np.zeros(c, np.float32))], [y], padding="SAME", stride_w=1, stride_h=1)
    b.output(y)
    return b.build()


@pytest.mark.parametrize("threads", [1, 2])
def test_fused_residual_add_matches_stock(threads, monkeypatch):
    monkeypatch.delenv("FLEXDELEGATE_DIRECT", raising=False)
    kernels = conv_kernels(check(stem_block_model(), num_threads=threads))
    expect_stem(kernels[0])
    assert kernels[0].endswith("+add"), kernels


def test_under_a_budget_gives_the_same_answer(tmp_path, monkeypatch):
    """A budget plan runs the stem's slices (rows x panels) through fx_conv_run_part."""
    monkeypatch.delenv("FLEXDELEGATE_DIRECT", raising=False)
    model = stem_block_model(size=96, c=64, seed=3)
    ref_it = make_interpreter(model)
    x = random_inputs(ref_it, seed=4)
    ref = invoke(ref_it, x)
    cache = tmp_path / "m.fxc"
    low = min_budget(model, cache)
    for budget in (low, low * 1.5, 64.0):
        d = load_flex(budget=budget, cache_path=str(cache))
        it = make_interpreter(model, delegate=d)
        assert max_error(ref, invoke(it, x)) <= 1e-4, budget
        expect_stem(conv_kernels(d.stats())[0])
