"""Which 3x3 convolutions run as Winograd (native/conv/choose.c and the `winograd` option)."""
import numpy as np
import pytest

from flexdelegate import _native_testing as testing, load_flex
from flexdelegate.run import make_interpreter
from opcheck import check, rand
from flexdelegate.tflite.writer import ModelBuilder

CH = 128  # F(4,3) weights of a 128x128 3x3 conv are 1.77 MB over the plain ones


def two_convs() -> bytes:
    """x 14x14 -> CONV 3x3 -> RESIZE_NEAREST x2 -> CONV 3x3 on 28x28. Both convs are Winograd
    candidates with equal extra bytes; the second, on the bigger map its tiles cover exactly,
    saves more time per byte."""
    b = ModelBuilder()
    x = b.input((1, 14, 14, CH), name="x")
    h = b.tensor((1, 14, 14, CH))
    b.op("CONV_2D", [x, b.const(rand((CH, 3, 3, CH), 1, 1 / 34)), b.const(rand((CH,), 2))], [h],
         padding="SAME", stride_w=1, stride_h=1, fused_activation_function="RELU")
    u = b.tensor((1, 28, 28, CH))
    b.op("RESIZE_NEAREST_NEIGHBOR", [h, b.const(np.array([28, 28], np.int32))], [u])
    y = b.tensor((1, 28, 28, CH))
    b.op("CONV_2D", [u, b.const(rand((CH, 3, 3, CH), 3, 1 / 34)), b.const(rand((CH,), 4))], [y],
         padding="SAME", stride_w=1, stride_h=1)
    b.output(y)
    return b.build()


def conv_kernels(stats):
    return [op["kernel"].split()[0] for op in stats["ops"] if op["op"] == "CONV_2D"]


def test_auto_spends_its_allowance_where_it_saves_most():
    """Two 1.77 MB candidates, a 2 MiB allowance (the floor: this model's weights are tiny):
    one is taken, and it is the one on the bigger map although it comes second. The other
    runs Winograd from its plain weights."""
    kernels = conv_kernels(check(two_convs(), flex={"cache_path": ""}))
    assert kernels == ["winograd-f4-rt", "winograd-f4"]


def one_conv(h, cin, cout, batch=1, residual=False, act="RELU6") -> bytes:
    """x -> CONV 3x3 SAME (-> ADD x when residual, cin == cout)."""
    b = ModelBuilder()
    x = b.input((batch, h, h, cin), name="x")
    y = b.tensor((batch, h, h, cout))
    b.op("CONV_2D", [x, b.const(rand((cout, 3, 3, cin), 1, 1 / (3 * cin ** 0.5))), b.const(rand((cout,), 2))],
         [y], padding="SAME", stride_w=1, stride_h=1, fused_activation_function="NONE" if residual else act)
    if residual:
        z = b.tensor((batch, h, h, cout))
        b.op("ADD", [y, x], [z], fused_activation_function=act)
        y = z
    b.output(y)
    return b.build()


# Weights whose Winograd form exceeds the 2 MiB allowance floor; maps with F4 / F6 tiles enough.
@pytest.mark.parametrize("h,cin,cout,batch,tile", [(14, 256, 256, 1, 4), (15, 300, 130, 2, 4), (48, 150, 150, 2, 6)])
@pytest.mark.parametrize("threads", [1, 2])
def test_runtime_winograd_matches_stock_and_packs_nothing_more(h, cin, cout, batch, tile, threads):
    """Past the allowance, a conv with tiles enough runs Winograd from its GEMM panels: the
    same answers as stock TFLite, and no more packed bytes than with Winograd off."""
    model = one_conv(h, cin, cout, batch)
    flex = {"cache_path": "", "winograd": "auto", "num_threads": threads}
    with_off = check(model, flex={**flex, "winograd": "off"}, num_threads=threads)
    stats = check(model, flex=flex, num_threads=threads)
    assert conv_kernels(stats)[0] == f"winograd-f{tile}-rt"
    assert conv_kernels(with_off)[0] != f"winograd-f{tile}-rt"
    assert stats["cache"]["bytes_packed"] == with_off["cache"]["bytes_packed"]


def test_runtime_winograd_applies_a_fused_residual_add():
    big = one_conv(14, 256, 256, residual=True)  # 7 MB of F4 weights: past the 2 MiB floor
    stats = check(big, flex={"cache_path": ""})
    assert [op["kernel"] for op in stats["ops"] if op["op"] == "CONV_2D"] == ["winograd-f4-rt f32-" +
                                                                            stats["gemm_kernel"][4:] + " +add"]


def test_small_maps_run_gemm_not_runtime_winograd():
    small = conv_kernels(check(one_conv(7, 64, 64), flex={"cache_path": ""}))[0]
    assert not small.endswith("-rt")  # too few tiles to pay for a filter transform per run
    if testing.chosen("gemm") == "f32-gemm-8x32-avx512f":  # conv/choose.c: GEMM beats F4 on 7x7 there
        assert not small.startswith("winograd")


def test_budget_plans_keep_runtime_winograd_within_the_budget():
    """Under a budget the planner offers Winograd from the plain panels (scratch only): a 4 MB
    budget on a 14x14x256 conv (2.4 MB of weights) keeps it, where it used to fall to GEMM;
    one too small for its scratch beside the weights slices it or falls back, stock's answer
    either way (check)."""
    stats = check(one_conv(14, 256, 256), flex={"cache_path": "", "budget": 4})
    assert conv_kernels(stats)[0] == "winograd-f4-rt"


def test_all_takes_every_layer_where_winograd_is_faster():
    kernels = conv_kernels(check(two_convs(), flex={"cache_path": "", "winograd": "all"}))
    assert kernels == ["winograd-f4", "winograd-f4"]


def test_off_packs_no_winograd_weights():
    stats = check(two_convs(), flex={"cache_path": "", "winograd": "off"})
    assert not any(k.startswith("winograd") for k in conv_kernels(stats))
    auto = load_flex(cache_path="")
    make_interpreter(two_convs(), delegate=auto)
    assert stats["cache"]["bytes_packed"] < auto.stats()["cache"]["bytes_packed"]


@pytest.mark.parametrize("value", ["ALL", "yes", "", "1"])
def test_bad_winograd_value_names_the_choices(value):
    with pytest.raises(ValueError, match="winograd.*auto, all or off"):
        load_flex(winograd=value)
